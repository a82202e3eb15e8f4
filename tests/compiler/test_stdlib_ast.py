"""compiler.stdlib_ast: gast trees to and from the standard library's `ast`, as gast converts them."""

import ast
import pathlib
import sys

import gast
import pytest

import adjoint
from adjoint.compiler import stdlib_ast

SOURCES = sorted(pathlib.Path(adjoint.__file__).parent.rglob("*.py"))

SNIPPETS = [
    "def f(a, /, b=1, *args, c, d=2, **kw) -> int:\n    return a\n",
    "async def g():\n    async with a as b:\n        await b\n",
    "try:\n    x = 1\nexcept (ValueError, KeyError) as error:\n    raise\nexcept Exception:\n    pass\nfinally:\n    y = 2\n",
    "y = [v for v in range(3) if v]; z = {k: v for k, v in d.items()}; w = lambda t, k=2: t ** k\n",
    "f'{x!r:>{width}}'; a[1:2, ::3, ...]; b = not -c @ d; global q\n",
    "match p:\n    case [1, *rest]:\n        pass\n    case {'k': v, **others}:\n        pass\n    case Point(x=0) | None as q:\n        pass\n",
    "class C(Base, metaclass=M):\n    x: int = 1\n    @property\n    def f(self):\n        return (yield from self.g())\n",
]
if sys.version_info >= (3, 12):  # (a `type` statement's name is a `Name` node, unlike other names)
    SNIPPETS.append("def f(x):\n    type Vector = list[float]\n    return x\n")


def _texts():
    return [path.read_text() for path in SOURCES] + SNIPPETS


IDS = [p.name for p in SOURCES] + [f"snippet{i}" for i in range(len(SNIPPETS))]


@pytest.mark.parametrize("text", _texts(), ids=IDS)
def test_to_gast_gives_the_tree_gast_gives(text):
    expected = gast.dump(gast.ast_to_gast(ast.parse(text)), include_attributes=True)
    assert gast.dump(stdlib_ast.to_gast(ast.parse(text)), include_attributes=True) == expected


@pytest.mark.parametrize("text", _texts(), ids=IDS)
def test_to_ast_unparses_as_gasts_conversion_does(text):
    tree = gast.parse(text)
    expected = ast.unparse(ast.fix_missing_locations(gast.gast_to_ast(tree)))
    assert ast.unparse(stdlib_ast.to_ast(tree)) == expected


def test_built_nodes_without_positions_unparse():
    from adjoint.compiler import syntax

    body = [syntax.assign("y", syntax.name("x")), syntax.returns(syntax.name("y"))]
    function = syntax.function("f", syntax.positional_args(["x"]), body)
    assert ast.unparse(stdlib_ast.to_ast(function)) == "def f(x):\n    y = x\n    return y"


def power_of_a_negative_constant(x):
    return x * (-2.0) ** 2 + x * (-0.0) ** 1


def test_a_folded_negative_constant_keeps_its_parentheses():
    import numpy as np

    import adjoint
    from adjoint.testing import check_grad

    assert "(-2.0) ** 2" in adjoint.source(power_of_a_negative_constant)
    value, _ = adjoint.pullback(power_of_a_negative_constant, np.ones(2))
    np.testing.assert_array_equal(value, power_of_a_negative_constant(np.ones(2)))
    check_grad(power_of_a_negative_constant, np.array([0.5, -1.5]))
