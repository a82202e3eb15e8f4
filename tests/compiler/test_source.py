"""compiler.source: finding a function's tree in its file, and refusing when there is none."""

import ast
import importlib
import importlib.util
import inspect
import linecache
import os
import sys
import textwrap

import gast
import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

from support import load_module
from adjoint.compiler import syntax
from adjoint.compiler.source import get_source


def decorated(x):
    return x


def with_docstring_at_column_zero(x):
    """A docstring whose second line
starts at column zero, which breaks textwrap.dedent on methods."""
    return x * 2.0


class Model:
    def method(self, x):
        text = """
multi-line string at column zero
"""
        return x


def test_finds_function_with_true_line_numbers():
    found = get_source(with_docstring_at_column_zero)
    assert found.node.name == "with_docstring_at_column_zero"
    assert found.node.lineno == with_docstring_at_column_zero.__code__.co_firstlineno
    assert found.filename == __file__


def test_finds_method_containing_multiline_string():
    found = get_source(Model.method)
    assert found.node.name == "method"
    assert [a.id for a in found.node.args.args] == ["self", "x"]


def test_finds_decorated_function():
    @adjoint.differentiable
    def inner(x):
        return x + 1.0

    assert get_source(inner).node.name == "inner"


def test_lambda_becomes_a_function_returning_its_body():
    square = lambda x: x * x  # noqa: E731
    node = get_source(square).node
    assert isinstance(node.body[0], gast.Return)
    assert get_source(square).name == "<lambda>"


def test_statements_carry_their_origin_line():
    from adjoint.compiler import annotations as anno

    node = get_source(with_docstring_at_column_zero).node
    assert anno.get(node.body[-1], anno.ORIGIN) == node.body[-1].lineno


def test_exec_defined_function_is_refused_with_what_to_do():
    namespace = {}
    exec("def f(x):\n    return x\n", namespace)
    with pytest.raises(adjoint.AdjointError, match="exec") as info:
        get_source(namespace["f"])
    assert "@adjoint.rrule" in str(info.value)


def test_builtin_is_refused_with_what_to_do():
    with pytest.raises(adjoint.AdjointError, match="not a Python function"):
        get_source(len)


def test_file_edited_after_import_is_detected(tmp_path, monkeypatch):
    module_file = tmp_path / "edited_module.py"
    module_file.write_text("def f(x, y):\n    return x * y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("edited_module")
    try:
        module_file.write_text("def f(a, b):\n    return a * b\n")
        linecache.checkcache(str(module_file))
        with pytest.raises(adjoint.AdjointError, match="edited"):
            get_source(module.f)
    finally:
        sys.modules.pop("edited_module", None)


def test_notebook_cells_registered_in_linecache_work():
    name = "<ipython-input-1-abc>"
    text = textwrap.dedent(
        """
        def cell_function(x):
            return x * 3.0
        """
    )
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace = {}
    exec(compile(text, name, "exec"), namespace)
    assert adjoint.grad(namespace["cell_function"])(1.0) == pytest.approx(3.0)


def test_source_edited_after_import_is_detected(tmp_path):
    # expected: AdjointError "file was edited" (or the running code's gradient); actual: differentiates the edited body, value 9 != f(x) = 5
    path = tmp_path / "review3_stale.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    module = load_module(str(path), "review3_stale")
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 3)  # edited\n")
    linecache.checkcache(str(path))  # as tracebacks and inspect do: the new text is what is read
    with pytest.raises(adjoint.AdjointError, match="edited"):
        adjoint.pullback(module.f, np.arange(3.0))


# ---- a function's own lines are parsed, once per text ------------------------------------------

TWO_FUNCTIONS = "import numpy as np\n\ndef f(x):\n    return np.sum(x ** {power})\n\ndef g(x):\n    return f(x) * 2.0\n"


def test_a_function_is_parsed_from_its_own_lines_once(tmp_path, monkeypatch):
    from adjoint.compiler import source

    path = tmp_path / "parsed_once.py"
    path.write_text(TWO_FUNCTIONS.format(power=2))
    module = load_module(str(path), "parsed_once")
    parses = []
    monkeypatch.setattr(source.syntax, "parse_stdlib", lambda text, parse=source.syntax.parse_stdlib: parses.append(text) or parse(text))
    assert (get_source(module.f).node.name, get_source(module.g).node.name) == ("f", "g")
    assert get_source(module.f).node.lineno == 3
    assert [("def f" in text, "def g" in text, "import" in text) for text in parses] == [(True, False, False), (False, True, False)]


OWN_LINES = '''import numpy as np


class Model:
    @staticmethod
    def scaled(
        x,
        scale=2.0,
    ):
        """Its docstring
at column zero."""
        return np.sum(x * scale)

    @staticmethod
    def shifted(x, y):
        return np.sum(x + y)  # no statement follows at this indent: the class is read to its end


try:
    import math
except ImportError:
    pass
else:
    def padded(x, y):
        # a comment at column zero, then more of the body:
# and one
        return np.sum(x *
  y) + math.pi
    def indented(x, y):
        return np.sum(np.sin(x) * y)
    other = 1


def last(x, y):
    return np.linalg.norm(x) * y
    pass'''


@pytest.mark.parametrize("name, alone", [
    ("Model.scaled", False), ("Model.shifted", True), ("padded", False), ("indented", True), ("last", True),
])
def test_a_definition_read_from_its_own_lines_is_the_one_in_its_file(name, alone, tmp_path, monkeypatch):
    from adjoint.compiler import source

    path = tmp_path / "own_lines.py"
    path.write_text(OWN_LINES)
    fn = load_module(str(path), "own_lines")
    for part in name.split("."):
        fn = getattr(fn, part)
    parses = []
    monkeypatch.setattr(source.syntax, "parse_stdlib", lambda text, parse=source.syntax.parse_stdlib: parses.append(text) or parse(text))
    node = get_source(fn).node
    written = next(n for n in ast.walk(ast.parse(OWN_LINES)) if isinstance(n, ast.FunctionDef) and n.name == fn.__name__)
    assert (node.lineno, node.col_offset, node.end_lineno) == (written.lineno, written.col_offset, written.end_lineno)
    assert syntax.unparse(node) == ast.unparse(written)
    assert ("import numpy" not in parses[-1]) == alone  # (read alone where its lines tell where it ends)
    check_grad(fn, np.arange(1.0, 4.0), 2.0)


def test_a_function_whose_module_binds_a_module_without_import_is_not_taken_for_edited(tmp_path):
    # a method call on a name an `import` binds compiles otherwise than one on any other name
    path = tmp_path / "imported_otherwise.py"
    path.write_text("import importlib\nnp = importlib.import_module('numpy')\n\ndef f(x):\n    return np.sum(x * x)\n")
    module = load_module(str(path), "imported_otherwise")
    np.testing.assert_allclose(adjoint.grad(module.f)(np.arange(3.0)), 2 * np.arange(3.0))


def test_a_function_edited_under_the_same_imports_is_detected(tmp_path):
    path = tmp_path / "edited_alone.py"
    path.write_text(TWO_FUNCTIONS.format(power=2))
    module = load_module(str(path), "edited_alone")
    path.write_text(TWO_FUNCTIONS.format(power=2).replace("x ** 2", "x ** 3"))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    linecache.checkcache(str(path))
    with pytest.raises(adjoint.AdjointError, match="edited"):
        get_source(module.f)
    assert get_source(module.g).node.name == "g"


def test_each_function_gets_its_own_copy_of_the_tree():
    from adjoint.compiler import annotations as anno

    first = get_source(with_docstring_at_column_zero).node
    first.body.clear()
    second = get_source(with_docstring_at_column_zero).node
    assert second.body and anno.get(second.body[-1], anno.ORIGIN) == second.body[-1].lineno


def test_each_source_walks_its_own_tree():
    # `FunctionSource.nodes` is walked once per tree: a second source of the function is a new tree
    first = get_source(with_docstring_at_column_zero)
    assert any(isinstance(n, gast.Return) for n in first.nodes)
    first.node.body.clear()
    second = get_source(with_docstring_at_column_zero)
    assert second.nodes is not first.nodes and any(isinstance(n, gast.Return) for n in second.nodes)
    assert [type(n) for n in second.nodes] == [type(n) for n in syntax.walk(second.node)]


def test_a_file_edited_and_reloaded_after_a_first_transform_is_read_again(tmp_path):
    path = tmp_path / "reloaded_module.py"
    path.write_text(TWO_FUNCTIONS.format(power=2))
    x = np.arange(3.0)
    np.testing.assert_allclose(adjoint.grad(load_module(str(path), "reloaded_module").f)(x), 2 * x)
    path.write_text(TWO_FUNCTIONS.format(power=3))  # as long as before: only the time tells
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    reloaded = load_module(str(path), "reloaded_module")
    np.testing.assert_allclose(adjoint.grad(reloaded.f)(x), 3 * x ** 2)


# ---- a definition's lines, read by its code object's line numbers ------------------------------

ENDINGS = '''import functools


def trailing_string(x):
    y = x * 2
    "a string statement compiles to nothing"


def trailing_pass(x):
    if x:
        y = x
    else:
        pass


def decorator(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)

    return wrapper


@decorator
def decorated(
    x,
    scale=2.0,
):
    return (x *
        scale)
'''


@pytest.mark.parametrize("name", ["trailing_string", "trailing_pass", "decorated", "decorator"])
def test_definition_lines_are_those_inspect_finds(name, tmp_path):
    from adjoint.compiler.source import definition_lines

    path = tmp_path / "endings.py"
    path.write_text(ENDINGS)
    fn = getattr(load_module(str(path), "endings"), name)
    assert definition_lines(fn) == inspect.getsourcelines(fn)[0]


@pytest.mark.parametrize("name", ["trailing_string", "trailing_pass", "decorated"])
@pytest.mark.parametrize("positions", ["none recorded", "the last line lost"])
def test_definition_lines_the_code_cannot_tell_are_those_inspect_finds(name, positions, tmp_path, monkeypatch):
    from adjoint.compiler import source

    path = tmp_path / "endings.py"
    path.write_text(ENDINGS)
    fn = getattr(load_module(str(path), "endings"), name)
    recorded = source._last_line
    monkeypatch.setattr(source, "_last_line", lambda code: None if positions == "none recorded" else recorded(code) - 1)
    assert source.definition_lines(fn) == inspect.getsourcelines(fn)[0]
