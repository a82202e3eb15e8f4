"""compiler.emit: comments and headers stay valid Python whatever the user's file is called."""

import importlib.util

import numpy as np

import adjoint

def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_source_file_with_newline_in_path(tmp_path):
    # expected: gradient 2x (or AdjointError); actual: SyntaxError from loader (filename in the header comment)
    path = tmp_path / "a\nb.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    module = _load(str(path), "review3_newline")
    np.testing.assert_allclose(adjoint.grad(module.f)(np.arange(3.0)), [0.0, 2.0, 4.0])
