"""Activity: which values carry gradient from the requested inputs to the output.

Assumes: a normalized, SSA, resolved function.
Guarantees: the function carries `VARIED`, the names whose values depend differentiably on
the parameters in `ctx.wrt`, and `USEFUL`, the names whose values reach the returned value
along differentiable paths. A statement needs an adjoint only if its target is in both.
Comparisons, non-differentiable calls, shape queries and constants vary with nothing.

Before:  n = len(x); y = x * n; return y      After: VARIED {x, y}; USEFUL {y, x, n}
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import resolve
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Annotate `node` with its varied and useful names."""
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    varied = {params[i] for i in ctx.wrt if i < len(params)}
    for stmt in node.body:
        if isinstance(stmt, gast.Assign) and differentiable_operands(stmt.value) & varied:
            varied |= targets(stmt)
    useful = set()
    for stmt in reversed(node.body):
        if isinstance(stmt, gast.Return):
            useful |= syntax.load_names(stmt.value)
        elif isinstance(stmt, gast.Assign) and targets(stmt) & useful:
            useful |= differentiable_operands(stmt.value)
    anno.set_(node, anno.VARIED, varied)
    anno.set_(node, anno.USEFUL, useful)
    return node


def targets(stmt: gast.Assign) -> set[str]:
    return {n.id for n in gast.walk(stmt.targets[0]) if isinstance(n, gast.Name)}


def differentiable_operands(value) -> set[str]:
    """Names read by `value` through which a derivative can flow."""
    if isinstance(value, (gast.Compare, gast.JoinedStr, gast.Constant)):
        return set()
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.FloorDiv):
        return set()
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.Not, gast.Invert)):
        return set()
    callee = anno.get(value, anno.CALLEE)
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        return set()
    if isinstance(value, gast.Subscript):
        return syntax.load_names(value.value)  # indices carry no gradient
    if isinstance(value, gast.Call) and callee is not None and (callee.method or isinstance(value.func, gast.Name)):
        return syntax.load_names(value)  # the receiver, or a local callable (`m = x.mean; m()`), too
    if isinstance(value, gast.Call):
        return set().union(*(syntax.load_names(a) for a in value.args + [k.value for k in value.keywords]))
    return syntax.load_names(value)
