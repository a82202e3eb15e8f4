"""compiler.emit: comments and headers stay valid Python whatever the user's file is called."""

import numpy as np

import adjoint

from support import load_module


def test_source_file_with_newline_in_path(tmp_path):
    # expected: gradient 2x (or AdjointError); actual: SyntaxError from loader (filename in the header comment)
    path = tmp_path / "a\nb.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    module = load_module(str(path), "review3_newline")
    np.testing.assert_allclose(adjoint.grad(module.f)(np.arange(3.0)), [0.0, 2.0, 4.0])
