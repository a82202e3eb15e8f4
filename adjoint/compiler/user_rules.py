"""Users' rules: when one may be inlined (see `inline`).

Generated code computes a call's value with the user's own statement and stitches in only the
rule's pullback. That is right for adjoint's rules, whose values are their primitives', but a
rule of yours may compute its value its own way (a stable log-sum-exp): it is inlined only when
its value is, literally, its primitive called on its parameters, its pullback returns no `None`
that is not written literally (inlined code cannot turn one into zeros), and it reads no item of
its cotangent (a tuple value's unused item has the cotangent None, which only the called rule
fills). Any other rule of yours is called, and its value is the one used.
"""

from __future__ import annotations

import inspect

import gast
import numpy as np

from .. import runtime
from . import syntax


def inlinable(rule_fn, primitive, value, pullback, results, assigned, global_objects) -> bool:
    """Whether a user's rule for `primitive` may be inlined: `value` is its returned value's
    expression, `results` its pullback's returned cotangents, `assigned` its locals."""
    return (
        computes_primitive(value, rule_fn, primitive, global_objects)
        and all(r is None or never_none(r, assigned, global_objects) for r in results)
        and not reads_items(pullback, pullback.args.args[0].id)
    )


def reads_items(pullback, cotangent) -> bool:
    """Whether a pullback reads items or fields of its cotangent (`g[0]`, `g.mean`): a tuple's
    or an object's cotangent may hold None for an unused part, which only the called rule fills."""
    return any(
        isinstance(n, (gast.Subscript, gast.Attribute)) and isinstance(n.value, gast.Name) and n.value.id == cotangent
        for n in syntax.walk(pullback)
    )


def computes_primitive(value, rule_fn, primitive, global_objects) -> bool:
    """Whether a rule's value is literally its primitive called on the rule's parameters, each
    passed once, in order or by its own name (`f(x, w=w)`), the rule's parameters being the
    primitive's (names, kinds, defaults): then the user's `f(x)` is the rule's `f(x, w=1.0)`."""
    if not isinstance(value, gast.Call) or syntax.evaluate_dotted(value.func, global_objects) is not primitive:
        return False
    params = list(inspect.signature(rule_fn).parameters)
    passed = [a.id if isinstance(a, gast.Name) else None for a in value.args]
    in_order = passed == params[: len(passed)]
    passed += [k.arg if isinstance(k.value, gast.Name) and k.value.id == k.arg else None for k in value.keywords]
    return in_order and len(passed) == len(params) and set(passed) == set(params) and _same_parameters(rule_fn, primitive)


def _same_parameters(rule_fn, primitive) -> bool:
    try:
        ours, theirs = (list(inspect.signature(f).parameters.values()) for f in (rule_fn, primitive))
    except (TypeError, ValueError):
        return False
    return [(p.name, p.kind) for p in ours] == [(p.name, p.kind) for p in theirs] and all(
        _same_default(a.default, b.default) for a, b in zip(ours, theirs)
    )


def _same_default(ours, theirs) -> bool:
    return ours is theirs or ((ours is None or type(ours) in (bool, int, float, str)) and type(ours) is type(theirs) and ours == theirs)


def never_none(expr, assigned, global_objects) -> bool:
    """Whether `expr` certainly evaluates to a value: arithmetic, or NumPy and runtime calls."""
    if isinstance(expr, gast.Constant):
        return expr.value is not None
    if isinstance(expr, (gast.BinOp, gast.UnaryOp, gast.Compare)):
        return True
    if isinstance(expr, gast.Name) and expr.id in assigned:
        return never_none(assigned[expr.id], assigned, global_objects)
    if isinstance(expr, gast.Call) and syntax.dotted(expr.func):
        root = global_objects.get(syntax.root_name(expr.func))
        return root is np or root is runtime
    return False
