"""Array methods: a sum or mean of a value certainly made by NumPy is called as its method.

Assumes: generated code (a forward function with its pullback, or a JVP function) whose calls
carry `CALLEE` (the user's calls) or `FOLDABLE` (calls in adjoint's rules).
Guarantees: `np.sum(x, ...)` and `np.mean(x, ...)`, with at most `axis` and `keepdims`, become
`x.sum(...)` and `x.mean(...)` where `x` is bound once, to what a NumPy ufunc of one result
or a matrix product returns, a reduction of such a value, or arithmetic with one on the left
(or on the right of a number): a NumPy array or scalar (or an array type overriding NumPy's ufuncs), whose own
method `np.sum` would call, or run as `ndarray.sum` does. (A ufunc of a 0-d object array
returns the Python object: differentiated code computes with float arrays.) The method skips `np.sum`'s dispatch in Python, which costs more than
summing a small array. A parameter may be a list or a Python number, which have no such
methods: its reductions stay as written.

Before:  e = np.exp(z); s = np.sum(e, axis=1, keepdims=True); t = np.sum(x)
After:   e = np.exp(z); s = e.sum(axis=1, keepdims=True);     t = np.sum(x)
"""

from __future__ import annotations

import gast
import numpy as np

from . import annotations as anno
from . import syntax
from .context import Context

_METHODS = {id(np.sum): "sum", id(np.mean): "mean"}  # by identity: a callee need not be hashable
# NumPy functions that return an array or a NumPy scalar of numbers (not a tuple, nor a Python
# object from an object array: a value differentiated code computes with is a float array)
_ARRAY_MAKERS = frozenset(id(f) for f in (np.matmul, np.dot, np.outer, np.tensordot, np.einsum))
_BINDING = frozenset({gast.Store, gast.Param})
_Name, _Assign, _Call = gast.Name, gast.Assign, gast.Call
_REDUCING = frozenset(id(f) for f in (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod))
_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow, gast.MatMult)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Call the sums and means of `node` (and the functions nested in it) on values NumPy made
    as their methods."""
    nodes = syntax.walk(node)  # one walk: the calls, then (if there are any) the names' kinds
    calls = [(n, _METHODS[id(f)]) for n in nodes if type(n) is _Call and id(f := _function(n)) in _METHODS]
    if not calls:
        return node
    arrays = names_binding_arrays(nodes)
    for call, method in calls:
        if _as_method(call, arrays):
            receiver = call.args.pop(0)
            call.func = gast.Attribute(value=receiver, attr=method, ctx=gast.Load())
    return node


def extremum_method(call, arrays) -> str | None:
    """"max" or "min" if `call` is `np.max(x, ...)`/`np.min(x, ...)` (or `amax`, `amin`) that
    may be called as `x`'s method (`x` among `arrays`, only `axis` and `keepdims` given).
    Forward mode takes a max's tangent from `np.max` inline, from a method at run time: `fuse`
    asks for the max it holds constant, whose tangent is never taken."""
    return _EXTREMA.get(id(_function(call))) if _as_method(call, arrays) else None


_EXTREMA = {id(np.max): "max", id(np.amax): "max", id(np.min): "min", id(np.amin): "min"}


def array_names(node) -> set[str]:
    """The names `node` (with what is nested in it) binds once, to a NumPy array or scalar.

    >>> import gast
    >>> tree = gast.parse("h = x @ W\\nz = h + b\\ny = x + b\\nfor i in r:\\n    q = z * 2\\n    q = q + 1")
    >>> sorted(array_names(tree))
    ['h', 'z']
    """
    return names_binding_arrays(syntax.walk(node))


def names_binding_arrays(nodes: list) -> set[str]:
    """`array_names` of the tree whose every node (`syntax.walk`'s list) is in `nodes`: a pass
    that walks the tree anyway shares its walk.

    >>> import gast
    >>> from adjoint.compiler import syntax
    >>> sorted(names_binding_arrays(syntax.walk(gast.parse("h = x @ W\\ny = [h]"))))
    ['h']
    """
    stores, values = {}, {}
    for leaf in nodes:  # (every node: its classes are module names, looked up faster)
        kind = type(leaf)
        if kind is _Name:
            if type(leaf.ctx) in _BINDING:
                stores[leaf.id] = stores.get(leaf.id, 0) + 1
        elif kind is _Assign and len(leaf.targets) == 1 and type(leaf.targets[0]) is _Name:
            values[leaf.targets[0].id] = leaf.value
    values = {name: value for name, value in values.items() if stores.get(name) == 1}
    readers: dict[str, list] = {}  # name -> the names whose values read it
    for name, value in values.items():
        for read in _operand_names(value):
            readers.setdefault(read, []).append(name)
    arrays: set[str] = set()
    todo = list(values)
    while todo:  # a value may be read before, in a loop, what binds it: what a new array reaches, again
        name = todo.pop()
        if name not in arrays and _makes_array(values[name], arrays):
            arrays.add(name)
            todo.extend(readers.get(name, ()))
    return arrays


def _operand_names(value) -> list:
    """The names whose array-ness `_makes_array` reads in `value`."""
    if isinstance(value, gast.BinOp):
        return [side.id for side in (value.left, value.right) if isinstance(side, gast.Name)]
    if isinstance(value, gast.UnaryOp) and isinstance(value.operand, gast.Name):
        return [value.operand.id]
    if isinstance(value, gast.Call) and value.args and isinstance(value.args[0], gast.Name):
        return [value.args[0].id]
    return []


def _makes_array(value, arrays) -> bool:
    """Whether `value` certainly makes a NumPy array or scalar, given the names in `arrays`."""
    if isinstance(value, gast.BinOp) and isinstance(value.op, _ARITHMETIC):
        if isinstance(value.op, gast.MatMult):
            return True  # lists and Python numbers have no `@`
        # an array's operator method runs first; on the right, only after a number's: a list's
        # repeats it (`[0.5] * n`, `n` a NumPy int), an object's makes what it likes
        left, right = (getattr(side, "id", None) in arrays for side in (value.left, value.right))
        return left or right and _is_number(value.left)
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
        return getattr(value.operand, "id", None) in arrays
    if isinstance(value, gast.Call) and value.args:
        function = _function(value)
        if isinstance(function, np.ufunc):
            return function.nout == 1  # (`np.modf` returns a tuple)
        if id(function) in _REDUCING:  # of an array: an array or a NumPy scalar
            return getattr(value.args[0], "id", None) in arrays
        return id(function) in _ARRAY_MAKERS
    return False


def _is_number(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _function(call):
    """The object a call calls, as `resolve` or `inline` recorded it (None if unknown)."""
    callee = anno.get(call, anno.CALLEE)
    if callee is not None:
        return None if callee.method else callee.obj
    folded = anno.get(call, anno.FOLDABLE)
    return folded.obj if folded is not None else None


def _as_method(call, arrays) -> bool:
    """Whether `np.sum(x, ...)` may be written `x.sum(...)`: `x` a NumPy array or scalar, and
    only `axis` (by position or keyword) and `keepdims` given."""
    if not call.args or not isinstance(call.args[0], gast.Name) or call.args[0].id not in arrays:
        return False
    if len(call.args) > 2 or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    allowed = {"keepdims"} if len(call.args) == 2 else {"axis", "keepdims"}
    return all(k.arg in allowed for k in call.keywords)
