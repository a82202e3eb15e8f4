"""Shifts: the stabilising shift of a log-sum-exp carries no derivative.

Assumes: a normalized, SSA, resolved function.
Guarantees: in each log-sum-exp written with a shift, `m = max(z)` then
`log(sum(exp(z - m))) + m` (over the same axes, kept, or over all of them), the statements
`z - m` and `... + m` carry `CANCELLED` naming `m`: for any `m` constant along the summed axes
the result is `log(sum(exp(z)))`, so `m`'s two contributions cancel exactly, and `activity`
and `reverse` leave them out. Where `m` is read nowhere else, the max gets no adjoint at all
(no search for the entries it chose). Each intermediate must be read once, by the next step
only: another reader would see `m`'s influence, which does not cancel there; and each name
must be bound once (a name bound on both arms of a branch may hold another value on one).

Before:  m = np.max(z, axis=1, keepdims=True); d = z - m; e = np.exp(d)
         s = np.sum(e, axis=1, keepdims=True); l = np.log(s); y = l + m
After:   the same, with `d = z - m` and `y = l + m` annotated CANCELLED {m}:
         the pullback is `z_bar = y_bar / s * e` (softmax), and `m` gets nothing
"""

from __future__ import annotations

import collections

import gast
import numpy as np

from . import annotations as anno
from . import syntax
from .context import Context

# by identity: a callee need not be hashable (a dataclass instance with `__call__`)
_SHIFTS = {id(np.max): "max", id(np.amax): "max", id(np.min): "min", id(np.amin): "min"}


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Annotate the cancelling reads of the shifts of `node`'s log-sum-exps."""
    definitions, reads, bindings = {}, collections.Counter(), collections.Counter()
    for stmt in syntax.statements(node.body):
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
            definitions[stmt.targets[0].id] = stmt
    shifts = {name for name, stmt in definitions.items() if _reduction(stmt, _SHIFTS.values())}
    ends = [stmt for stmt in definitions.values() if _adds_back(stmt.value, shifts)]
    if not ends:
        return node  # no max or min added back to a result: no shift, and no need to count the names
    for leaf in syntax.walk(node):
        if type(leaf) is gast.Name:
            (reads if type(leaf.ctx) is gast.Load else bindings)[leaf.id] += 1
    # a name bound twice (on two arms of a branch, which `ssa` leaves one name) may not be what
    # the pattern saw on every path
    definitions = {name: stmt for name, stmt in definitions.items() if bindings[name] == 1}
    for stmt in ends:
        shift = _shift_of(stmt, definitions, reads) if bindings[stmt.targets[0].id] == 1 else None
        if shift is not None:
            subtract, add, m = shift
            anno.set_(subtract, anno.CANCELLED, frozenset({m}))
            anno.set_(add, anno.CANCELLED, frozenset({m}))
    return node


def _adds_back(value, shifts) -> bool:
    """Whether `value` is `a + m` or `m + a` of two names, `m` among `shifts`: how a log-sum-exp
    with a shift ends."""
    return (
        isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)
        and isinstance(value.left, gast.Name) and isinstance(value.right, gast.Name)
        and (value.left.id in shifts or value.right.id in shifts)
    )


def _shift_of(add, definitions, reads):
    """`(z - m statement, l + m statement, m)` if `add` ends a shifted log-sum-exp, else None."""
    value = add.value
    if not (isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)):
        return None
    for log_side, m_side in ((value.left, value.right), (value.right, value.left)):
        if not (isinstance(log_side, gast.Name) and isinstance(m_side, gast.Name)):
            continue
        m = m_side.id
        chain = _steps(log_side.id, definitions, reads)
        if chain is None:
            continue
        subtract, summed = chain
        reduced = _reduction(definitions.get(m), _SHIFTS.values())
        difference = subtract.value
        if (
            reduced is not None and reduced[1:] == summed[1:]
            and isinstance(difference.left, gast.Name) and difference.left.id == reduced[0]
            and isinstance(difference.right, gast.Name) and difference.right.id == m
        ):
            return subtract, add, m
    return None


def _steps(log_name, definitions, reads):
    """Follow `l = log(s)`, `s = sum(e, ...)`, `e = exp(d)`, `d = z - m` back from `l`, each
    read once: `(the subtraction, (its sum's operand, axis, keepdims))`, or None."""
    log = _single_call(log_name, definitions, reads, np.log)
    if log is None or not isinstance(log.args[0], gast.Name):
        return None
    summed = _reduction(_read_once(log.args[0].id, definitions, reads), ("sum",))
    if summed is None:
        return None
    exp = _single_call(summed[0], definitions, reads, np.exp)
    if exp is None or not isinstance(exp.args[0], gast.Name):
        return None
    subtract = _read_once(exp.args[0].id, definitions, reads)
    if subtract is None or not (isinstance(subtract.value, gast.BinOp) and isinstance(subtract.value.op, gast.Sub)):
        return None
    return subtract, summed


def _read_once(name, definitions, reads):
    """The statement defining `name`, if the function reads `name` exactly once."""
    return definitions.get(name) if reads[name] == 1 else None


def _single_call(name, definitions, reads, function):
    """The call `function(a)` defining `name` (read once), or None."""
    stmt = _read_once(name, definitions, reads)
    call = getattr(stmt, "value", None)
    callee = anno.get(call, anno.CALLEE) if isinstance(call, gast.Call) else None
    if callee is None or callee.obj is not function or len(call.args) != 1 or call.keywords:
        return None
    return call


def _reduction(stmt, kinds):
    """`(operand, axis, keepdims)` of `np.sum(x, axis, keepdims=True)`-like statements (`kinds`:
    "sum", "max", "min", as a NumPy function or an array method) reducing a name over the
    literal axes `axis` with kept dimensions, or over every axis (`axis` None)."""
    call = getattr(stmt, "value", None)
    callee = anno.get(call, anno.CALLEE) if isinstance(call, gast.Call) else None
    if callee is None:
        return None
    if callee.method and isinstance(call.func, gast.Attribute):
        kind, operand, rest = call.func.attr, call.func.value, list(call.args)
    else:
        kind = _SHIFTS.get(id(callee.obj), "sum" if callee.obj is np.sum else None)
        operand, rest = (call.args[0], list(call.args[1:])) if call.args else (None, [])
    if kind not in kinds or not isinstance(operand, gast.Name) or len(rest) > 1:
        return None
    options = {k.arg: k.value for k in call.keywords}
    if rest:
        if "axis" in options:
            return None
        options["axis"] = rest[0]
    if set(options) - {"axis", "keepdims"}:
        return None
    axis, keepdims = _literal(options.get("axis")), _literal(options.get("keepdims"))
    if axis is _UNKNOWN or keepdims is _UNKNOWN:
        return None
    if axis is None or keepdims is True:  # not `axis=1` unkept: `z - m` would broadcast `m` along a row
        return operand.id, axis, bool(keepdims)
    return None


_UNKNOWN = object()


def _literal(node):
    """The value of an int, bool, None or tuple-of-ints literal (None for no node), else `_UNKNOWN`."""
    if node is None:
        return None
    if isinstance(node, gast.Constant) and (node.value is None or type(node.value) in (int, bool)):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _literal(node.operand)
        return -inner if type(inner) is int else _UNKNOWN
    if isinstance(node, gast.Tuple):
        items = tuple(_literal(e) for e in node.elts)
        return items if all(type(i) is int for i in items) else _UNKNOWN
    return _UNKNOWN
