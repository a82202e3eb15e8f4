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
    return _to_gast(node)


def _to_gast(node):
    """`to_gast` of a node, by its class's converter."""
    return _converters[type(node)](node)


class _Converters(dict):
    """The function converting `ast` nodes of each class, made once per class (a chain of
    checks on every node costs as much as the copy); a value that is no node (a `global`'s
    names, a dict display's missing keys) stays as it is."""

    def __missing__(self, kind):
        found = self[kind] = _converter(kind) if issubclass(kind, _AST) else _unchanged
        return found


def _converter(kind):
    """Most nodes copy their fields as they are, then convert the ones that may hold nodes;
    the few gast writes differently are special."""
    target = getattr(gast, kind.__name__, None)  # (None for `arg`: special)
    nodes = tuple(
        f for f in kind._fields
        if (f not in _NEVER_NODES or (kind.__name__, f) in _NODES_NAMED_AS_LEAVES) and (kind, f) != (ast.Constant, "value")
    )
    gains_type_params = kind in _GAINS_TYPE_PARAMS
    convert, new_node = _converters, _new_node

    def converted(node):
        new = new_node(target)
        state = node.__dict__
        new.__dict__ = fields = state.copy()  # its fields and its position, as the parser set them; then the nodes among them converted
        for key in nodes:
            value = state.get(key)
            if type(value) is list:
                fields[key] = [convert[type(v)](v) for v in value]  # (no field holds lists of lists)
            elif value is not None:
                fields[key] = convert[type(value)](value)
        if gains_type_params:
            new.type_params = []
        return new

    special = _SPECIAL_TO_GAST.get(kind)
    if special is not None:
        def converted_specially(node):
            new = special(node)
            if new is None:  # (as any other node)
                return converted(node)
            fields = new.__dict__
            for attribute in node._attributes:
                value = getattr(node, attribute, _MISSING)
                if value is not _MISSING:
                    fields[attribute] = value
            return new
        return converted_specially
    if not nodes and not gains_type_params and not kind._attributes:
        return lambda node: target.__new__(target)  # a context or an operator: nothing to copy
    return converted


def _unchanged(value):
    return value


_AST, _MISSING = ast.AST, object()
# fields that hold no node (not looked into), but in the classes `_NODES_NAMED_AS_LEAVES` names:
# the `name` of a `type` statement (Python 3.12 on) is a `Name`
_NEVER_NODES = frozenset({"id", "attr", "arg", "name", "kind", "type_comment", "level", "module", "conversion",
                          "is_async", "simple", "kwd_attrs", "rest", "tag"})
_NODES_NAMED_AS_LEAVES = frozenset({("TypeAlias", "name")})
_converters = _Converters()


def _name_to_gast(node):
    """A `Name`, the commonest node, converted whole (its position too) without a wrapper's calls."""
    new = _new_node(_Name)
    new.__dict__ = fields = node.__dict__.copy()  # its id, context and position
    context = fields["ctx"]
    fields["ctx"] = _converters[type(context)](context)
    fields["annotation"] = fields["type_comment"] = None
    return new


def _arg_to_gast(node):
    return _gast_name(node.arg, gast.Param(), to_gast(node.annotation), node.type_comment)


def _gast_name(identifier, ctx, annotation, type_comment):
    """The `gast.Name` its constructor makes, without its constructor's calls in Python."""
    new = _Name.__new__(_Name)
    new.__dict__.update(id=identifier, ctx=ctx, annotation=annotation, type_comment=type_comment)
    return new


_Name, _new_node = gast.Name, ast.AST.__new__


def _handler_to_gast(node):
    if not node.name:
        return None  # (as any other node)
    name = gast.Name(id=node.name, ctx=gast.Store(), annotation=None, type_comment=None)
    return gast.ExceptHandler(type=to_gast(node.type), name=name, body=to_gast(node.body))


_converters[ast.Name] = _name_to_gast
_SPECIAL_TO_GAST = {ast.arg: _arg_to_gast, ast.ExceptHandler: _handler_to_gast}  # (their positions copied after)
if sys.version_info[:2] == (3, 12):  # type parameters, converted their own way on this Python only: left to gast
    _SPECIAL_TO_GAST.update({getattr(ast, kind): gast.ast_to_gast for kind in ("TypeVar", "TypeVarTuple", "ParamSpec")})
_GAINS_TYPE_PARAMS = () if _TYPE_PARAMS_IN_AST else (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
    return _to_ast(node)


def _to_ast(node):
    """`to_ast` of a node, its class's conversion looked up once (as in `_to_gast`)."""
    kind = type(node)
    special = _SPECIAL_TO_AST.get(kind)
    if special is not None:
        new = special(node)
        if new is not None:
            return new
    target, fields, statement = _stdlib_classes.get(kind) or _stdlib_class(kind)
    if not fields and not statement:
        return _shared(kind)
    new = target.__new__(target)
    converted = new.__dict__  # (where its constructor would put the fields)
    state = node.__dict__
    for field in fields:
        value = state.get(field)
        if type(value) is list:
            value = [_to_ast(v) if isinstance(v, _GAST) else v for v in value]  # (no field holds lists of lists)
        elif isinstance(value, _GAST):
            value = _to_ast(value)
        converted[field] = value
    if statement:
        new.lineno = getattr(node, "lineno", 0)  # what the unparser looks type comments up by
    return new


_GAST = gast.AST


def _name_to_ast(node):
    return ast.Name(id=node.id, ctx=_shared(type(node.ctx)))


def _constant_to_ast(node):
    if not negative(node.value):
        return None  # (as any other node)
    return ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-node.value))  # a folded `-2.0`: `(-2.0) ** 0.5`


def _arguments_to_ast(node):
    return ast.arguments(
        posonlyargs=[_arg(a) for a in node.posonlyargs], args=[_arg(a) for a in node.args],
        vararg=_arg(node.vararg), kwonlyargs=[_arg(a) for a in node.kwonlyargs],
        kw_defaults=to_ast(node.kw_defaults), kwarg=_arg(node.kwarg), defaults=to_ast(node.defaults),
    )


def _handler_to_ast(node):
    if node.name is None:
        return None
    return ast.ExceptHandler(type=to_ast(node.type), name=node.name.id, body=to_ast(node.body))


def _assign_to_ast(node):
    new = ast.Assign(targets=to_ast(node.targets), value=to_ast(node.value))  # (no type comment, as gast)
    new.lineno = getattr(node, "lineno", 0)
    return new


_SPECIAL_TO_AST = {
    gast.Name: _name_to_ast, gast.Constant: _constant_to_ast, gast.arguments: _arguments_to_ast,
    gast.ExceptHandler: _handler_to_ast, gast.Assign: _assign_to_ast,
}


def negative(value) -> bool:
    """Whether `value` is a negative int or float (-0.0 too), which source text writes as the
    negation of a literal.

    >>> negative(-2.0), negative(-0.0), negative(0.0), negative(True)
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
    """The `ast` class of gast class `kind`, its fields (gast's extra ones are dropped), and
    whether it is a statement."""
    found = _stdlib_classes.get(kind)
    if found is None:
        target = getattr(ast, kind.__name__)
        found = _stdlib_classes[kind] = (target, target._fields, issubclass(target, ast.stmt))
    return found


def _shared(kind) -> ast.AST:
    """The one `ast` node for gast class `kind` of nodes without fields (`Load`, `Add`): the
    unparser only reads their class, as `ast.parse` shares them too."""
    found = _instances.get(kind)
    if found is None:
        found = _instances[kind] = _stdlib_class(kind)[0]()
    return found
