"""compiler.simplify: the hand algebra applied to stitched rule expressions."""

import pytest

from adjoint.compiler import syntax
from adjoint.compiler.simplify import simplify


@pytest.mark.parametrize(
    "before, after",
    [
        ("g * 1", "g"),
        ("1 * g", "g"),
        ("g * -1", "-g"),
        ("g * (1 / b)", "g / b"),
        ("g * (2 * x ** (2 - 1))", "g * (2 * x)"),
        ("x ** 1", "x"),
        ("--x", "x"),
        ("a if None is None else b", "a"),
        ("a if 1 is None else b", "b"),
        ("g * (1 - y ** 2)", "g * (1 - y ** 2)"),
    ],
)
def test_rewrites(before, after):
    assert syntax.unparse(simplify(syntax.template(before))) == after
