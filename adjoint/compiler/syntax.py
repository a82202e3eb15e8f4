"""All AST plumbing in one place: parsing, unparsing, node builders and templates, and (from
`traversal`) walks, name sets and copies.

Passes build nodes only through these helpers, so every node has the fields `gast.unparse`
needs. Emission uses the standard library's unparser via `printing` (never astunparse, which
writes invalid code for NumPy slices such as `a[:, 0]`).
"""

from __future__ import annotations

import ast

import gast

from . import printing, stdlib_ast
from .traversal import (  # noqa: F401 (the passes reach them as `syntax.walk`, ...)
    Transformer, all_statements, child_nodes, copy_node, default_values, free_names, load_names, name_nodes, scope_reads,
    stored_names, substitute, walk, walk_local,
)

LOAD, STORE = gast.Load, gast.Store
_Name, _Assign = gast.Name, gast.Assign


_SYMBOLS = {
    gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//", gast.Mod: "%",
    gast.Pow: "**", gast.MatMult: "@", gast.LShift: "<<", gast.RShift: ">>", gast.BitAnd: "&",
    gast.BitOr: "|", gast.BitXor: "^", gast.USub: "-", gast.UAdd: "+", gast.Invert: "~", gast.Not: "not",
}


def symbol(op) -> str:
    """How operator node `op` is written: `+` for `gast.Add()`."""
    return _SYMBOLS[type(op)]


def parse(text: str) -> gast.Module:
    """Parse Python source into a gast module."""
    return stdlib_ast.to_gast(ast.parse(text))


def parse_stdlib(text: str) -> ast.Module:
    """Parse Python source into the standard library's tree, to convert only the part of it
    that is wanted (`from_stdlib`)."""
    return ast.parse(text)


def from_stdlib(node):
    """The gast tree of a standard library tree `node` (a new tree, with its positions).

    >>> unparse(from_stdlib(parse_stdlib("y = f(x)").body[0]))
    'y = f(x)'
    """
    return stdlib_ast.to_gast(node)


def unparse(node) -> str:
    """Python source for a gast node (see `printing`)."""
    return printing.unparse(node)


def copy_location(new, old):
    """`gast.copy_location(new, old)`: `old`'s position given to `new` (where both have one),
    without its four checks per attribute for the nodes that have them all.

    >>> copy_location(name("y"), parse("x").body[0].value).col_offset
    0
    """
    if new._attributes != _POSITION or old._attributes != _POSITION:
        return gast.copy_location(new, old)
    fields = new.__dict__
    for attribute in _POSITION:
        value = getattr(old, attribute, _MISSING)  # (an expression's end is None where never set)
        if value is not _MISSING:
            fields[attribute] = value
    return new


_POSITION, _MISSING = ("lineno", "col_offset", "end_lineno", "end_col_offset"), object()


def name(identifier: str, ctx=LOAD) -> gast.Name:
    # the node gast's constructor makes, without its call in Python: passes make thousands
    node = _Name.__new__(_Name)
    fields = node.__dict__
    fields["id"], fields["ctx"], fields["annotation"], fields["type_comment"] = identifier, ctx.__new__(ctx), None, None
    return node


def store(identifier: str) -> gast.Name:
    return name(identifier, STORE)


def const(value) -> gast.Constant:
    return gast.Constant(value=value, kind=None)


def attr(value, attribute: str) -> gast.Attribute:
    if isinstance(value, str):
        value = name(value)
    return gast.Attribute(value=value, attr=attribute, ctx=gast.Load())


def call(func, args=(), keywords=()) -> gast.Call:
    """A call; `keywords` is a dict of name -> value, or a list of `keyword` nodes."""
    if isinstance(func, str):
        func = dotted_expr(func)
    if isinstance(keywords, dict):
        keywords = [gast.keyword(arg=k, value=v) for k, v in keywords.items()]
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def binop(left, op, right) -> gast.BinOp:
    """`left <op> right`; `op` is a gast operator node or class (`gast.Add`)."""
    return gast.BinOp(left=left, op=op() if isinstance(op, type) else op, right=right)


def unary(op, operand) -> gast.UnaryOp:
    return gast.UnaryOp(op=op() if isinstance(op, type) else op, operand=operand)


def compare(left, ops, comparators) -> gast.Compare:
    return gast.Compare(left=left, ops=list(ops), comparators=list(comparators))


def subscript(value, index) -> gast.Subscript:
    if not isinstance(index, gast.AST):
        index = const(index)
    return gast.Subscript(value=value, slice=index, ctx=gast.Load())


def slice_(lower, upper, step) -> gast.Slice:
    return gast.Slice(lower=lower, upper=upper, step=step)


def expression_statement(value) -> gast.Expr:
    return gast.Expr(value=value)


def dotted_expr(path: str):
    """`"np.linalg.inv"` as an expression."""
    head, *rest = path.split(".")
    node = name(head)
    for part in rest:
        node = attr(node, part)
    return node


def tuple_(elts, ctx=LOAD) -> gast.Tuple:
    return gast.Tuple(elts=list(elts), ctx=ctx())


def list_(elts) -> gast.List:
    return gast.List(elts=list(elts), ctx=gast.Load())


def assign(target, value) -> gast.Assign:
    if isinstance(target, str):
        target = store(target)
    node = _Assign.__new__(_Assign)  # (as in `name`)
    fields = node.__dict__
    fields["targets"], fields["value"], fields["type_comment"] = [target], value, None
    return node


def returns(value) -> gast.Return:
    return gast.Return(value=value)


def function(fname: str, args: gast.arguments, body: list) -> gast.FunctionDef:
    return gast.FunctionDef(
        name=fname, args=args, body=body, decorator_list=[], returns=None,
        type_comment=None, type_params=[],
    )


def positional_args(names, defaults=()) -> gast.arguments:
    """Parameters `names`, the last `len(defaults)` of them with those default values."""
    return gast.arguments(
        args=[store_param(n) for n in names], posonlyargs=[], vararg=None, kwonlyargs=[],
        kw_defaults=[], kwarg=None, defaults=list(defaults),
    )


def store_param(identifier: str) -> gast.Name:
    return gast.Name(id=identifier, ctx=gast.Param(), annotation=None, type_comment=None)


def dotted(node) -> str | None:
    """`"np.linalg.inv"` for a chain of attribute reads on a name, else None."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def evaluate_dotted(expr, namespace):
    """What a name or dotted name (`np.linalg.inv`) means in `namespace`, or None (a local, an
    expression, or a name it does not hold)."""
    text = dotted(expr)
    if text is None:
        return None
    head, *rest = text.split(".")
    value = namespace.get(head)
    for part in rest:
        value = getattr(value, part, None)
    return value


def root_name(node) -> str | None:
    """The name at the root of an attribute chain (`np` in `np.linalg.inv`)."""
    while isinstance(node, gast.Attribute):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def is_atom(node) -> bool:
    """A name, a constant, or a tuple of constants (`(-1,)` in `np.reshape(x, (-1,))`)."""
    if isinstance(node, gast.Tuple):
        return all(isinstance(e, gast.Constant) or (isinstance(e, gast.Tuple) and is_atom(e)) for e in node.elts)
    return isinstance(node, (gast.Name, gast.Constant))


def template(text: str, **replacements):
    """Parse a snippet of real Python and fill its placeholder names (see `substitute`).

    Returns the statement list, or the expression for a one-expression snippet.

    >>> unparse(template("a_bar = a_bar + g", a_bar="x_bar", g=name("y_bar"))[0])
    'x_bar = x_bar + y_bar'
    """
    body = parse(text).body
    body = [substitute(stmt, replacements) for stmt in body]
    if len(body) == 1 and isinstance(body[0], gast.Expr):
        return body[0].value
    return body


class Comment:
    """A comment line in emitted code; `ast.unparse` writes a constant's `repr` verbatim."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return "# " + self.text


def comment(text: str) -> gast.Expr:
    return expression_statement(const(Comment(text)))


# ---- structured statements ------------------------------------------------------------------

_BODIES = {
    gast.If: ("body", "orelse"), gast.For: ("body", "orelse"), gast.While: ("body", "orelse"),
    gast.With: ("body",), gast.Try: ("body", "finalbody"),
}


def bodies(stmt) -> list[list]:
    """The statement lists nested directly in a compound statement (none for a simple one)."""
    return [getattr(stmt, field) for field in _BODIES.get(type(stmt), ())]


def statements(body):
    """Every statement of `body`, nested ones included, in source order (compound ones before
    their bodies). Nested function definitions are yielded but not entered. (A body changed
    while it is walked is walked as it is when reached, as by nested `for` loops.)"""
    todo = [iter(body)]  # the bodies being walked, innermost last
    while todo:
        for stmt in todo[-1]:
            yield stmt
            fields = _BODIES_LAST_FIRST.get(type(stmt))
            if fields is not None:
                todo.extend([iter(getattr(stmt, field)) for field in fields])
                break  # (on with its first body; this one resumes after it)
        else:
            todo.pop()


_BODIES_LAST_FIRST = {kind: tuple(reversed(fields)) for kind, fields in _BODIES.items()}


def is_break_check(stmt) -> bool:
    """`if broke: break`, the one form of `break` left after `control`."""
    return (
        isinstance(stmt, gast.If) and len(stmt.body) == 1 and isinstance(stmt.body[0], gast.Break)
        and not stmt.orelse
    )


def target_names(target) -> list[str]:
    """The names an assignment target binds, in order (`a, (b, *c)` -> a, b, c)."""
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, gast.Starred):
        return target_names(target.value)
    if not isinstance(target, (gast.Tuple, gast.List)):
        return [target_root(target)]
    return [n for element in target.elts for n in target_names(element)]


def target_root(target) -> str:
    """The name at the root of an assignment target: `y` in `y[i][j]` or `y.field`."""
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else "item"


def index_expression(index, slice_name):
    """An index as an ordinary expression: `1:3` becomes `slice(1, 3, None)`."""
    if isinstance(index, gast.Slice):
        parts = [const(None) if p is None else p for p in (index.lower, index.upper, index.step)]
        return call(slice_name, parts)
    if isinstance(index, gast.Tuple):
        return tuple_([index_expression(e, slice_name) for e in index.elts])
    return index


def plain_arguments(args: gast.arguments) -> gast.arguments:
    """A function's parameters without annotations or defaults (generated code gets the
    defaults when it is loaded)."""
    def plain(a):
        return None if a is None else store_param(a.id)

    return gast.arguments(
        args=[plain(a) for a in args.args], posonlyargs=[plain(a) for a in args.posonlyargs],
        vararg=plain(args.vararg), kwonlyargs=[plain(a) for a in args.kwonlyargs],
        kw_defaults=[None] * len(args.kwonlyargs), kwarg=plain(args.kwarg), defaults=[],
    )
