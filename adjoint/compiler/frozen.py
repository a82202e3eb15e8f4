"""Frozen: mark the reads of fields that the arguments' classes or the call froze.

Assumes: a normalized, SSA, resolved function; `ctx.frozen` maps parameter positions to the
paths frozen in those arguments (`.encoder`, `.layers[0].W`, `['W1']`: see `adjoint.trainable`).
Guarantees: a statement reading a frozen path (`t = m.encoder`, `u = t.W`, `w = p['W1']`)
carries `FROZEN`, and so does a method call whose callee is a frozen field (`m.encoder(x)`,
whose receiver then carries no gradient into the call). Paths are followed through attribute
reads and constant indices; `activity` treats what a frozen read defines as a constant, so no
adjoint work is spent on it.

Before:  h = m.encoder; y = h(x)     After: `h = m.encoder` annotated FROZEN (h is not varied)
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Annotate the frozen reads of `node` (nothing to do when nothing is frozen)."""
    if not ctx.frozen:
        return node
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    paths = {params[i]: "" for i in ctx.frozen if i < len(params)}
    frozen = {params[i]: tuple(p) for i, p in ctx.frozen.items() if i < len(params)}
    roots = {params[i]: params[i] for i in ctx.frozen if i < len(params)}
    for stmt in syntax.statements(node.body):
        value = getattr(stmt, "value", None)
        if not isinstance(stmt, gast.Assign) or not isinstance(stmt.targets[0], gast.Name):
            continue
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute):
            receiver = value.func.value
            if isinstance(receiver, gast.Name) and receiver.id in paths:
                path = f"{paths[receiver.id]}.{value.func.attr}"
                if _is_frozen(path, frozen[roots[receiver.id]]):
                    anno.set_(value, anno.FROZEN, True)
            continue
        step = _step(value)
        if step is None or not (isinstance(value.value, gast.Name) and value.value.id in paths):
            continue
        source = value.value.id
        path = paths[source] + step
        if _is_frozen(path, frozen[roots[source]]):
            anno.set_(stmt, anno.FROZEN, True)
        else:
            target = stmt.targets[0].id
            paths[target], roots[target] = path, roots[source]
    return node


def _step(value) -> str | None:
    """`.W` for `x.W`, `[0]` for `x[0]`, None for anything else."""
    if isinstance(value, gast.Attribute):
        return f".{value.attr}"
    if isinstance(value, gast.Subscript) and isinstance(value.slice, gast.Constant):
        return f"[{value.slice.value!r}]"
    return None


def _is_frozen(path: str, frozen: tuple) -> bool:
    return any(path == f or path.startswith((f + ".", f + "[")) for f in frozen)
