"""Shapes: which names certainly hold a value of the same shape and dtype as another's, so that
an elementwise adjoint needs no `adj.unbroadcast` where nothing was broadcast, and a cotangent
flowing to a `keepdims` reduction is a plain sum over the reduced axes.

A name's class is one of:
- `Like(root)`: the shape and dtype of `root`'s value (a name defined once; a parameter, or
  what a matrix product or a user function made);
- `Kept(root, axes)`: what `np.max(root, axis=axes, keepdims=True)` and its like give;
- `PYTHON_NUMBER`: a Python int or float (a literal, `len`, `x.shape[0]`, a `math` function):
  NumPy never lets one change an array's shape or dtype (NEP 50);
- `OPAQUE`: nothing known.
A name defined more than once (a loop-carried value) may join a class but is never a root: its
shape may change from one iteration to the next.

Before:  Z = X + b; m = np.max(Z, axis=1, keepdims=True); d = Z - m; e = np.exp(d)
After:   Z: Like(Z); m: Kept(Z, (1,)); d: Like(Z); e: Like(Z)
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import gast
import numpy as np

from .. import runtime, steering
from . import annotations as anno
from . import syntax


# (tuples, not dataclasses: the analysis compares classes often, and tuples compare in C)
class Like(NamedTuple):
    root: str


class Kept(NamedTuple):
    root: str
    axes: tuple


PYTHON_NUMBER = "a Python number"
SHAPE = "an array's shape"
OPAQUE = "opaque"
_NUMBER = object()  # a definition known to bind a Python number
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_SCOPE_KINDS = frozenset(_SCOPES)
_BINDING_CONTEXTS = frozenset({gast.Store, gast.Del})
# the nodes but names that may bind one, or declare one `global` or `nonlocal`
_MAY_BIND = frozenset({gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.MatchAs, gast.MatchStar,
                       gast.MatchMapping, gast.Global, gast.Nonlocal})

# Elementwise functions whose result has the dtype of their float operands (not `abs`, `real`,
# `angle`: they make a complex array real).
_PRESERVING = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg, operator.pos,
    np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.power, np.negative, np.positive,
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p, np.sqrt, np.cbrt, np.square,
    np.reciprocal, np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
    np.arcsinh, np.arccosh, np.arctanh, np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2, np.hypot,
    np.logaddexp, np.logaddexp2, np.conjugate, np.deg2rad, np.rad2deg,
}
_OPERATORS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
              gast.Div: operator.truediv, gast.Pow: operator.pow, gast.USub: operator.neg, gast.UAdd: operator.pos}
_REDUCTIONS = {np.sum, np.max, np.min, np.amax, np.amin, np.mean, np.prod}
# runtime helpers (in generated pullbacks) whose result has the shape and dtype of an operand:
# the position of that operand
_SHAPED_AS_OPERAND = {
    id(runtime.unbroadcast): 1, id(runtime.unreduce): 1, id(runtime.matmul_lhs_bar): 1, id(runtime.matmul_rhs_bar): 2,
}
_REDUCING_METHODS = {"sum", "max", "min", "mean", "prod"}
_PYTHON_NUMBER_MAKERS = {len, float, int}
# `math` functions that may return something else than a number (a tuple; `prod` of arrays).
_NOT_NUMBERS = {math.modf, math.frexp, math.prod} | ({math.sumprod} if hasattr(math, "sumprod") else set())


def classes(node: gast.FunctionDef, numbers=frozenset(), python_numbers=()) -> dict:
    """The class of every name `node` assigns or takes as a parameter (see the module docstring).
    `numbers` certainly hold numbers or arrays (`kinds.certain_numbers`: their `.shape` is a
    shape); the parameters named in `python_numbers` hold Python floats (the code is specialised
    on it)."""
    definitions = _definitions(node)
    for name in python_numbers:
        if definitions.get(name) == [None]:  # never rebound
            definitions[name] = [_NUMBER]
    # what a name defined once is where nothing better is known (made once each)
    fresh = {name: Like(name) if len(values) == 1 else OPAQUE for name, values in definitions.items()}
    readers: dict[str, set] = {}  # the names whose definitions read a name
    for name, values in definitions.items():
        for value in values:
            for read in _reads(value):
                readers.setdefault(read, set()).add(name)
    known: dict = {}
    order = {name: position for position, name in enumerate(definitions)}
    pending = list(definitions)
    stale = set(definitions)  # an operand changed since the name was last looked at
    for _ in range(2 * len(definitions) + 2):  # loops make definitions circular: iterate to a fixpoint
        if not pending:
            return {name: known.get(name, OPAQUE) for name in definitions}
        changed = set()
        for name in pending:  # in order: most names settle in the first round
            if name not in stale:  # (looked at again, it would give what it gave)
                continue
            stale.discard(name)
            values = definitions[name]
            found = [_class_of(v, fresh[name], known, definitions, numbers) for v in values]
            if name in known:
                found = [known[name] if f is None else f for f in found]
            joined = _join(found, fresh[name])
            if joined is not None and known.get(name) != joined:
                known[name] = joined
                changed |= readers.get(name, set())
                stale |= readers.get(name, set())
        pending = sorted(changed, key=order.__getitem__)
    return dict.fromkeys(definitions, OPAQUE)  # not settled: claim nothing


def _reads(value) -> set:
    """The names whose class may decide `value`'s: the names it reads."""
    if value is None or value is _NUMBER or type(value) is gast.Constant:
        return set()
    if type(value) is gast.Name:
        return {value.id}
    return syntax.load_names(value)


def _definitions(node) -> dict:
    """Each name's definitions: the values of the `name = value` statements binding it, None
    for every other binding (a parameter, a loop target, an unpacking, a `match` capture). A
    name declared `global` or `nonlocal` anywhere inside may change behind any call."""
    stores: dict[str, int] = {}
    shared = set()
    plain = _plain_names(node)
    if plain is not None:  # (most functions: counted without looking at each node's kind)
        for bound in [n.id for n in plain if type(n.ctx) in _BINDING_CONTEXTS]:
            stores[bound] = stores.get(bound, 0) + 1
        everything = ()
    else:
        everything = syntax.walk(node)
        if any(type(c) in _SCOPE_KINDS and c is not node for c in everything):
            everything = _in_this_scope(node, shared)
    for child in everything:
        kind = type(child)
        if kind is gast.Name:  # (most nodes: `_bound_by`, inlined)
            bound = child.id if type(child.ctx) in _BINDING_CONTEXTS else None
        elif kind in _MAY_BIND and child is not node:
            if kind is gast.Global or kind is gast.Nonlocal:
                shared.update(child.names)
            bound = _bound_by(child)
        else:
            continue
        if bound:
            stores[bound] = stores.get(bound, 0) + 1
    args = node.args
    for param in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
        stores[param.id] = stores.get(param.id, 0) + 1
    definitions: dict[str, list] = {name: [] for name in stores}
    for stmt in syntax.statements(node.body):
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
            definitions[stmt.targets[0].id].append(stmt.value)
        elif isinstance(stmt, gast.For) and isinstance(stmt.target, gast.Name) and _counts(stmt.iter):
            definitions[stmt.target.id].append(_NUMBER)  # `for i in range(n)`: an int
    for name, count in stores.items():
        definitions[name] += [None] * (count - len(definitions[name]) + (2 if name in shared else 0))
    return definitions


def _plain_names(node) -> list | None:
    """The `Name` nodes `syntax.walk(node)` finds, where only names bind in `node` and no scope
    is nested in it (as in most functions); else None. (No walk: names are all that is needed.)"""
    if type(node) is not gast.FunctionDef or any(type(s) in _BINDS_BUT_NAMES for s in syntax.all_statements(node.body)):
        return None
    args = node.args
    if any(a.annotation is not None for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a):
        return None  # (`name_nodes` does not enter annotations)
    # (in `walk`'s order, which orders the definitions: None where a lambda is)
    return syntax.name_nodes(gast.Module(body=syntax.child_nodes(node), type_ignores=[]))


_BINDS_BUT_NAMES = _MAY_BIND | {gast.Match}  # statements


def _bound_by(node) -> str | None:
    """The name `node` binds in the scope it is in, if any."""
    if isinstance(node, gast.Name):
        return node.id if isinstance(node.ctx, (gast.Store, gast.Del)) else None
    if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.MatchAs, gast.MatchStar)):
        return node.name
    return node.rest if isinstance(node, gast.MatchMapping) else None


def _in_this_scope(node, shared: set) -> list:
    """The nodes of `node` that run in its scope: not a nested function's or class's body, but
    its defaults and decorators (a `:=` there binds here). The `global` and `nonlocal` names
    declared anywhere inside go into `shared`."""
    found, todo = [], [(node, False)]  # (node, inside a nested scope)
    while todo:
        child, nested = todo.pop()
        if nested:
            if isinstance(child, (gast.Global, gast.Nonlocal)):
                shared.update(child.names)
        else:
            found.append(child)
        if child is not node and isinstance(child, _SCOPES) and not nested:
            outer = syntax.default_values(child) if not isinstance(child, gast.ClassDef) else []
            outer += list(getattr(child, "decorator_list", []))
            todo.extend((part, False) for part in outer)
            ids = {id(part) for part in outer}
            todo.extend((grandchild, True) for grandchild in syntax.child_nodes(child) if id(grandchild) not in ids)
        else:
            todo.extend((grandchild, nested) for grandchild in syntax.child_nodes(child))
    return found


def _join(found, fresh):
    """The class of a name whose definitions give the classes `found` (None: not known yet);
    `fresh`: its class when they differ."""
    if len(found) == 1:  # (most names)
        first = found[0]
        return first if first is None or first != OPAQUE else fresh
    settled = [f for f in found if f is not None]
    if not settled:
        return None
    first = settled[0]
    if all(f == first for f in settled) and first != OPAQUE:
        return first
    return fresh


def _class_of(value, fresh, known, defined, numbers):
    """The class `value` gives the name it is assigned to (None: an operand's class is not known
    yet); `fresh`: the name's class where `value` tells nothing."""
    if value is None:
        return fresh
    if value is _NUMBER:
        return PYTHON_NUMBER
    if isinstance(value, gast.Constant):
        return PYTHON_NUMBER if type(value.value) in (int, float) else fresh
    if isinstance(value, gast.Name):
        return _operand(value, known, defined)
    if isinstance(value, gast.Attribute):  # an array's `.ndim`, `.size`, `.shape` (not a model's field)
        if not (isinstance(value.value, gast.Name) and value.value.id in numbers):
            return fresh
        return PYTHON_NUMBER if value.attr in ("ndim", "size") else SHAPE if value.attr == "shape" else fresh
    if isinstance(value, gast.Subscript):  # `x.shape[0]`
        shape = _operand(value.value, known, defined) if isinstance(value.value, gast.Name) else OPAQUE
        if shape is None:
            return None
        index = value.slice
        return PYTHON_NUMBER if shape == SHAPE and isinstance(index, gast.Constant) and type(index.value) is int else fresh
    if isinstance(value, (gast.BinOp, gast.UnaryOp)):
        if _OPERATORS.get(type(value.op)) is None:
            return fresh
        operands = [value.left, value.right] if isinstance(value, gast.BinOp) else [value.operand]
        kind = _elementwise(operands, known, defined, fresh)
        if kind == PYTHON_NUMBER and isinstance(value.op, gast.Pow) and not _is_int(value.right):
            return fresh  # `(-2.0) ** 0.5` is complex: a Python float's power may not be a float
        return kind
    if isinstance(value, gast.Call):
        obj = getattr(anno.get(value, anno.CALLEE), "obj", None)
        if _member(obj, _PYTHON_NUMBER_MAKERS) or (
            getattr(obj, "__module__", None) == "math" and not _member(obj, _NOT_NUMBERS) and not value.keywords
        ):
            return PYTHON_NUMBER
        if _member(obj, _PRESERVING) and not value.keywords:
            return _elementwise(value.args, known, defined, fresh)
        if obj is steering.stop_gradient and len(value.args) == 1 and isinstance(value.args[0], gast.Name):
            return _operand(value.args[0], known, defined)  # the value itself
        shaped_as = _SHAPED_AS_OPERAND.get(id(obj))
        if shaped_as is not None and len(value.args) > shaped_as and isinstance(value.args[shaped_as], gast.Name):
            return _operand(value.args[shaped_as], known, defined)  # a cotangent shaped as its primal
        return _reduction(value, obj, known, defined, fresh)
    return fresh


def _operand(node, known, defined):
    """A name's class as an operand: OPAQUE for a name not of this function (a global)."""
    return known.get(node.id) if node.id in defined else OPAQUE


def _elementwise(operands, known, defined, fresh):
    found = []
    for operand in operands:
        if isinstance(operand, gast.Constant) and type(operand.value) in (int, float):
            continue
        if not isinstance(operand, gast.Name):
            return fresh
        kind = _operand(operand, known, defined)
        if kind is None:
            return None
        if kind != PYTHON_NUMBER:
            found.append(kind)
    if not found:
        return PYTHON_NUMBER
    like = None
    for kind in found:  # (a loop, not comprehensions: this runs for most definitions)
        if not isinstance(kind, (Like, Kept)) or kind.root != found[0].root:
            return fresh
        if like is None and isinstance(kind, Like):
            like = kind
    if like is not None:
        return like
    return found[0] if found.count(found[0]) == len(found) else fresh


def _reduction(call, obj, known, defined, fresh):
    """`Kept(root, axes)` for a reduction with `keepdims=True` over literal axes of a `Like(root)`."""
    if not call.keywords:
        return fresh  # (most calls: no `keepdims=True`)
    keywords = {k.arg: k.value for k in call.keywords}
    if _member(obj, _REDUCTIONS) and len(call.args) == 1:
        operand = call.args[0]
    elif (
        isinstance(call.func, gast.Attribute) and call.func.attr in _REDUCING_METHODS and not call.args
        and getattr(anno.get(call, anno.CALLEE), "method", False)
    ):
        operand = call.func.value
    else:
        return fresh
    keep, axes = keywords.get("keepdims"), _literal_axes(keywords.get("axis"))
    if set(keywords) != {"axis", "keepdims"} or axes is None or not (isinstance(keep, gast.Constant) and keep.value is True):
        return fresh
    if not isinstance(operand, gast.Name):
        return fresh
    kind = _operand(operand, known, defined)
    if kind is None:
        return None
    return Kept(kind.root, axes) if isinstance(kind, Like) else fresh


def _is_int(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) is int


def _counts(node) -> bool:
    """Whether a loop walks `range(...)`, whose items are ints (`normalize` keeps the call only
    where `range` is the builtin)."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id == "range"


def _literal_axes(node):
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return (node.value,)
    if isinstance(node, gast.Tuple) and node.elts and all(
        isinstance(e, gast.Constant) and type(e.value) is int for e in node.elts
    ):
        return tuple(e.value for e in node.elts)
    return None


def preserves_dtype(primitive) -> bool:
    """Whether the elementwise `primitive` gives float operands' dtype to its result.

    >>> preserves_dtype(np.tanh), preserves_dtype(np.abs)
    (True, False)
    """
    return _member(primitive, _PRESERVING)


def _member(obj, group) -> bool:
    try:
        return obj in group
    except TypeError:  # an unhashable callee
        return False
