"""gast trees to and from the standard library's `ast`: what `syntax.parse` and `syntax.unparse`
run on every rule and function adjoint reads and every function it writes.

Gives the trees `gast.ast_to_gast` and `gast.gast_to_ast` give (gast's own converters visit
every node through a generic transformer, which costs more than parsing or printing them).
Only the nodes gast writes differently are special: a parameter is a `Name` in gast, an `arg`
in `ast`; an `except ... as e` names `e` with a `Name`; a function or class has `type_params`
in gast before Python 3.12 gave them one.
"""

from __future__ import annotations

import ast
import math
import sys

import gast

_TYPE_PARAMS_IN_AST = sys.version_info >= (3, 12)


def to_gast(node):
    """The gast tree of `ast` tree `node`, with its positions.

    >>> to_gast(ast.parse("f(x)").body[0].value).args[0].annotation is None
    True
    """
    if type(node) is list:
        return [to_gast(n) for n in node]
    if not isinstance(node, ast.AST):
        return node
    kind = type(node)
    if kind is ast.Name:
        new = gast.Name(id=node.id, ctx=to_gast(node.ctx), annotation=None, type_comment=None)
    elif kind is ast.arg:
        new = gast.Name(
            id=node.arg, ctx=gast.Param(), annotation=to_gast(node.annotation), type_comment=node.type_comment,
        )
    elif kind is ast.ExceptHandler and node.name:
        name = gast.Name(id=node.name, ctx=gast.Store(), annotation=None, type_comment=None)
        new = gast.ExceptHandler(type=to_gast(node.type), name=name, body=to_gast(node.body))
    elif kind.__name__ in _GAST_SPECIAL:
        return gast.ast_to_gast(node)  # (type parameters on Python 3.12: rare enough to leave to gast)
    else:
        target = _gast_classes.get(kind) or _gast_class(kind)
        new = target.__new__(target)
        converted = new.__dict__  # (where a node's constructor puts its fields too)
        for key, value in node.__dict__.items():  # its fields and its position, as the parser set them
            converted[key] = to_gast(value) if type(value) is list or isinstance(value, ast.AST) else value
        if not _TYPE_PARAMS_IN_AST and kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            new.type_params = []
        return new
    for attribute in node._attributes:
        if hasattr(node, attribute):
            setattr(new, attribute, getattr(node, attribute))
    return new


_gast_classes: dict[type, type] = {}


def _gast_class(kind) -> type:
    found = _gast_classes[kind] = getattr(gast, kind.__name__)
    return found


# Nodes gast converts its own way on this Python only.
_GAST_SPECIAL = {"TypeVar", "TypeVarTuple", "ParamSpec"} if sys.version_info[:2] == (3, 12) else set()


def to_ast(node):
    """The standard library's tree for gast tree `node`, ready for `ast.unparse` (positions are
    not kept: the unparser reads none but a statement's `lineno`).

    >>> ast.unparse(to_ast(gast.parse("def f(a, *b): return a").body[0]))
    'def f(a, *b):\\n    return a'
    """
    if type(node) is list:
        return [to_ast(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    kind = type(node)
    if kind is gast.Name:
        return ast.Name(id=node.id, ctx=_shared(type(node.ctx)))
    if kind is gast.Constant and _negative(node.value):  # a folded `-2.0`: `(-2.0) ** 0.5`, not `-2.0 ** 0.5`
        return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-node.value))
    if kind is gast.arguments:
        return ast.arguments(
            posonlyargs=[_arg(a) for a in node.posonlyargs], args=[_arg(a) for a in node.args],
            vararg=_arg(node.vararg), kwonlyargs=[_arg(a) for a in node.kwonlyargs],
            kw_defaults=to_ast(node.kw_defaults), kwarg=_arg(node.kwarg), defaults=to_ast(node.defaults),
        )
    if kind is gast.ExceptHandler and node.name is not None:
        new = ast.ExceptHandler(type=to_ast(node.type), name=node.name.id, body=to_ast(node.body))
    elif kind is gast.Assign:
        new = ast.Assign(targets=to_ast(node.targets), value=to_ast(node.value))  # (no type comment, as gast)
    else:
        target, fields = _stdlib_class(kind)
        if not fields and not issubclass(target, ast.stmt):
            return _shared(kind)
        state = node.__dict__
        new = target(**{f: to_ast(state.get(f)) for f in fields})
    if isinstance(new, ast.stmt):
        new.lineno = getattr(node, "lineno", 0)  # what the unparser looks type comments up by
    return new


def _negative(value) -> bool:
    """Whether `value` is a negative int or float (-0.0 too), which source text writes as the
    negation of a literal.

    >>> _negative(-2.0), _negative(-0.0), _negative(0.0), _negative(True)
    (True, True, False, False)
    """
    return type(value) in (int, float) and (value < 0 or (type(value) is float and math.copysign(1.0, value) < 0))


def _arg(name):
    if name is None:
        return None
    return ast.arg(arg=name.id, annotation=to_ast(name.annotation), type_comment=name.type_comment)


_stdlib_classes: dict[type, tuple] = {}
_instances: dict[type, ast.AST] = {}


def _stdlib_class(kind) -> tuple:
    """The `ast` class of gast class `kind`, and its fields (gast's extra ones are dropped)."""
    found = _stdlib_classes.get(kind)
    if found is None:
        target = getattr(ast, kind.__name__)
        found = _stdlib_classes[kind] = (target, target._fields)
    return found


def _shared(kind) -> ast.AST:
    """The one `ast` node for gast class `kind` of nodes without fields (`Load`, `Add`): the
    unparser only reads their class, as `ast.parse` shares them too."""
    found = _instances.get(kind)
    if found is None:
        found = _instances[kind] = _stdlib_class(kind)[0]()
    return found
