"""compiler.naming and compiler.syntax helpers."""

from adjoint.compiler import syntax
from adjoint.compiler.naming import Namer


def test_namer_avoids_taken_names_and_builtins():
    namer = Namer({"x", "x_bar"})
    assert namer.new("x_bar") == "x_bar_1"
    assert namer.new("y") == "y"
    assert namer.new("y") == "y_1"
    assert namer.new("sum") == "sum_1"
    assert namer.new("2d") == "_2d"


def test_unparse_writes_numpy_slices_correctly():
    for text in ["a[:, 0]", "a[1:, :-1]", "a[..., None]", "a[::2, 1:3:1]"]:
        assert syntax.unparse(syntax.parse(text)) == text


def test_template_fills_placeholders():
    (stmt,) = syntax.template("target = value + 1", target="y", value=syntax.name("x"))
    assert syntax.unparse(stmt) == "y = x + 1"


def test_comment_nodes_unparse_as_comments():
    assert syntax.unparse(syntax.comment("line 3: y = f(x)")) == "# line 3: y = f(x)"


def test_namer_cleans_what_is_no_identifier_and_keeps_what_is():
    namer = Namer()
    assert [namer.new(base) for base in ("h_matmul", "a.b", "_x_", "__", "é", "a\u0301")] == [
        "h_matmul", "a_b", "x", "value", "é", "a"]  # (a combining accent is no letter: replaced, then stripped)
