"""compiler.traversal: walks, name sets and copies, against gast's own walk and transformer."""

import pathlib

import gast
import pytest

import adjoint
from adjoint.compiler import annotations as anno
from adjoint.compiler import syntax, traversal

SAMPLE = pathlib.Path(adjoint.__file__).parent / "compiler" / "normalize.py"


def _nodes():
    tree = gast.parse(SAMPLE.read_text() + "\nglobal g\nlambda x=a, *, y=b: x + y + c\n")
    return [n for n in gast.walk(tree) if isinstance(n, (gast.stmt, gast.expr))]


def test_walk_is_gasts_walk_in_its_order():
    tree = gast.parse(SAMPLE.read_text())
    assert [id(n) for n in traversal.walk(tree)] == [id(n) for n in gast.walk(tree)]


def test_child_nodes_are_gasts():
    for node in _nodes()[:400]:
        assert [id(n) for n in traversal.child_nodes(node)] == [id(n) for n in gast.iter_child_nodes(node)]


def test_load_names_are_the_loaded_names_gast_walks_to():
    for node in _nodes():
        expected = {n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        assert traversal.load_names(node) == expected


@pytest.mark.parametrize("text, stored", [
    ("a, (b, *c) = f(d)", {"a", "b", "c"}),
    ("for i, (j, k) in pairs:\n    m = i", {"i", "j", "k", "m"}),
    ("y = [t for t in xs]", {"y", "t"}),
    ("def f(p=(q := 1)):\n    r = p", {"f"}),  # a function statement binds its name only
    ("if x:\n    def g(u=(v := 2)):\n        w = u", {"g", "v"}),  # its default binds here, its body not
    ("h = lambda s=(n := 3): (z := s)", {"h", "n"}),
])
def test_stored_names(text, stored):
    assert traversal.stored_names(gast.parse(text).body[0]) == stored


@pytest.mark.parametrize("text, read", [
    ("y = f(lambda t, k=c: t + x)", {"f", "c", "x"}),
    ("def g(a=b):\n    return a + e", {"b", "e"}),
    ("z = [u * v for u in w]", {"u", "v", "w"}),
])
def test_scope_reads(text, read):
    assert traversal.scope_reads(gast.parse(text).body[0]) == read


def test_a_copy_is_equal_and_shares_nothing_but_annotation_values():
    tree = gast.parse(SAMPLE.read_text())
    function = next(n for n in tree.body if isinstance(n, gast.FunctionDef))
    anno.set_(function.body[0], anno.ORIGIN, 7)
    copy = traversal.copy_node(function)
    assert gast.dump(copy, include_attributes=True) == gast.dump(function, include_attributes=True)
    assert not {id(n) for n in gast.walk(copy)} & {id(n) for n in gast.walk(function)}
    anno.set_(copy.body[0], anno.ORIGIN, 8)
    assert anno.get(function.body[0], anno.ORIGIN) == 7
    copy.body.clear()
    assert function.body


def test_substitute_renames_everywhere_and_replaces_reads():
    stmt = syntax.parse("y = x + f(x, k=x)").body[0]
    result = traversal.substitute(stmt, {"y": "out", "x": syntax.const(2.0)})
    assert syntax.unparse(result) == "out = 2.0 + f(2.0, k=2.0)"
    assert syntax.unparse(stmt) == "y = x + f(x, k=x)"  # the original is left as it was
    with pytest.raises(ValueError, match="cannot store"):
        traversal.substitute(stmt, {"y": syntax.name("z")})


class _Edits:
    """One transformer's edits, for either base class: drop `pass`, replace a name, expand an
    expression statement into two."""

    def visit_Pass(self, node):
        return None

    def visit_Name(self, node):
        return gast.Name(id=node.id.upper(), ctx=node.ctx, annotation=None, type_comment=None) if node.id == "x" else node

    def visit_Expr(self, node):
        self.generic_visit(node)
        return [node, gast.Expr(value=gast.Constant(value=1, kind=None))]


class _Fast(_Edits, traversal.Transformer):
    pass


class _Gasts(_Edits, gast.NodeTransformer):
    pass


def test_transformer_edits_as_gasts_does():
    text = "def f(x):\n    pass\n    print(x)\n    if x:\n        y = x + 1\n        pass\n    return x\n"
    expected = gast.dump(_Gasts().visit(gast.parse(text)))
    assert gast.dump(_Fast().visit(gast.parse(text))) == expected
