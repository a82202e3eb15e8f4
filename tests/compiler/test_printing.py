"""`printing.unparse` writes the text the standard library writes for the converted tree."""

import ast
import pathlib

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import pipeline, printing, stdlib_ast, syntax

PACKAGE = pathlib.Path(adjoint.__file__).parent


def reference(node) -> str:
    return ast.unparse(stdlib_ast.to_ast(node))


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_adjoint_own_modules_print_as_the_standard_library_prints_them(path):
    tree = syntax.parse(path.read_text())
    assert printing.unparse(tree) == reference(tree)


SNIPPETS = [
    "if a:\n    x = 1\nelif b:\n    x = 2\nelse:\n    x = 3",
    "y = a[1, 2:3, ...]\nz = a[()]\nw = a[(1, 2),]",
    "def f(a, /, b: int = 1, *c, d=-2, **e) -> int:\n    '''doc'''\n    return 3 .real",
    "try:\n    pass\nexcept ValueError as error:\n    raise\nexcept:\n    pass\nfinally:\n    del x",
    "try:\n    pass\nexcept* KeyError as group:\n    pass",
    "x: int = 1\n(y): int\nz = f'{a!r:>{width}} and {b}'",
    "match p:\n    case [1, *rest]:\n        pass\n    case {'k': v, **others}:\n        pass\n    case P(x=1) as q:\n        pass",
    "class C(B, metaclass=M):\n    '''doc'''\n    lam = lambda a=-1, *, b=2: a\n    async def g(self):\n        async for i in it:\n            await i",
    "x = (yield)\ny = [i for i in z if i]\nz = {k: v for k, v in d.items()}\nnonlocal q",
]


@pytest.mark.parametrize("text", SNIPPETS)
def test_statements_gast_writes_otherwise_print_as_the_standard_library_prints_them(text):
    tree = syntax.parse(text)
    assert printing.unparse(tree) == reference(tree)


@pytest.mark.parametrize("value", [-2.0, -0.0, -3, 2, True, 1.5])
@pytest.mark.parametrize("text", ["y = C ** 2", "y = x ** C", "y = C .real", "y = -C", "y = a[C, C:]", "y = f(C, k=C)",
                                  "y = C * x - C", "y = not C", "def f(a=C):\n    return C", "y = (C,)"])
def test_a_folded_negative_constant_prints_as_the_standard_library_prints_its_negation(text, value):
    tree = syntax.parse(text)
    for node in gast.walk(tree):
        if isinstance(node, gast.Name) and node.id == "C":  # a constant as `simplify` folds it: negative
            node.__class__ = gast.Constant
            node.value, node.kind = value, None
    assert printing.unparse(tree) == reference(tree)


def _gru_like(W, U, xs, clip=5.0):
    h = np.zeros(U.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ xs[t] + U @ h)
        if np.sum(h * h) > clip:
            h = h / 2.0
    return np.sum(h ** -2.0) - np.max(h)


def test_a_generated_gradient_prints_as_the_standard_library_prints_it():
    node, _ = pipeline.lower(_gru_like, (0, 1))
    assert printing.unparse(node) == reference(node)
