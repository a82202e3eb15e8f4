"""In-place: refuse updates that adjoint's non-mutating code would not reproduce.

Assumes: a normalized, SSA, resolved function with activity annotations.
Guarantees: reports a problem for
- `x += d` (rewritten as `x = x + d` by `normalize`, never mutating) where the array `x` may
  also be reached another way: `x` is a copy of another name, a view (`v[0:2]`, `v.T`, a
  reshape), a part of something unpacked, or the result of a call that may return its input;
  or `x` itself was copied, put in a tuple or list, viewed, or passed to a function. In plain
  Python those other references would see the update; in adjoint's code they would not.
- an expression statement passing a differentiable value to anything but a non-differentiable
  function (`np.maximum(h, 0, out=h)`, `h.fill(0)`, `record(h)`): a call made for its effect,
  which may update that value in place.

Before:  y = x[0:2]; y += 1.0       After: TransformError at `y += 1.0`
"""

from __future__ import annotations

import gast
import numpy as np

from . import annotations as anno
from . import resolve, syntax
from .context import Context

# Primitives whose result may share memory with their first argument.
_VIEWS = {id(f) for f in (np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.swapaxes,
                          np.moveaxis, np.broadcast_to, np.asarray, np.asanyarray, np.diagonal,
                          np.real, np.imag, np.ndarray.T, np.atleast_1d, np.atleast_2d, np.atleast_3d)}


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Report in-place updates and effect-only calls that cannot be differentiated faithfully."""
    varied = anno.get(node, anno.VARIED)
    params = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    definitions = {t: stmt for stmt in node.body if isinstance(stmt, gast.Assign) for t in _stored(stmt)}
    shared = set().union(*(_aliased_by(stmt) for stmt in node.body))
    for stmt in node.body:
        update = anno.get(stmt, anno.IN_PLACE)
        if update is not None:
            updated = stmt.value.left.id
            fresh = updated in params or _is_fresh(definitions.get(updated))
            if updated in shared or not fresh:
                ctx.problem(
                    update, f"`{update.target.id}` may also be reached through another name or view "
                    "here, and adjoint does not update arrays in place",
                    f"write `{update.target.id} = {update.target.id} {syntax.symbol(update.op)} ...` "
                    "to make the new value explicit",
                )
        elif isinstance(stmt, gast.Expr) and _passes_varied_values(stmt.value, varied):
            ctx.problem(
                stmt.value, "this call is made for its effect on a differentiable value, which "
                "adjoint cannot differentiate",
                "assign its result instead, or mark the function @adjoint.non_differentiable",
            )
    return node


def _stored(stmt):
    return [n.id for n in gast.walk(stmt.targets[0]) if isinstance(n, gast.Name)]


def _is_fresh(definition) -> bool:
    """Whether the statement defining a name makes a new array no other name refers to."""
    if definition is None or isinstance(definition.targets[0], gast.Tuple):
        return False
    value = definition.value
    if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant)):
        return True
    callee = anno.get(value, anno.CALLEE)
    return (
        isinstance(value, gast.Call) and callee is not None
        and callee.kind in (resolve.RULE, resolve.NON_DIFFERENTIABLE) and id(callee.obj) not in _VIEWS
    )


def _aliased_by(stmt) -> set[str]:
    """Names whose arrays `stmt` makes reachable another way (copy, container, view, call)."""
    value = getattr(stmt, "value", None)
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.Tuple, gast.List)):
        return {e.id for e in value.elts if isinstance(e, gast.Name)}
    if isinstance(value, (gast.Subscript, gast.Attribute)) and isinstance(value.value, gast.Name):
        return {value.value.id}
    callee = anno.get(value, anno.CALLEE) if isinstance(value, gast.Call) else None
    if callee is not None and (callee.kind not in (resolve.RULE, resolve.NON_DIFFERENTIABLE) or id(callee.obj) in _VIEWS):
        return {a.id for a in value.args if isinstance(a, gast.Name)}
    return set()


def _passes_varied_values(value, varied) -> bool:
    if not isinstance(value, gast.Call):
        return False
    callee = anno.get(value, anno.CALLEE)
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        return False
    return bool(syntax.load_names(value) & varied)
