"""Decorators: `@adjoint.checkpoint` on a function defined inside the differentiated one is
written as the call it means, after the `def`, so the checkpointed closure carries the gradient
of what it closes over like any other call of `adjoint.checkpoint`.

Other decorators are left as they are (a decorated nested function that closes over varied
values is refused later, with this as the way out).

Assumes: a `FunctionDef` from `source` that `fence` accepted.
Guarantees: no nested `def` in the function's own body keeps an `adjoint.checkpoint` decorator
(called or not) as its outermost decorators; the names they were reached by are recorded.

Before:  @adjoint.checkpoint          After:  def block(h):
         def block(h):                            return np.tanh(W @ h)
             return np.tanh(W @ h)            block = adjoint.checkpoint(block)
"""

from __future__ import annotations

import gast

from ..steering import checkpoint
from . import resolve, syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Write the `adjoint.checkpoint` decorators of nested functions in `node` as calls."""
    node.body = _body(node.body, ctx)
    return node


def _body(body: list, ctx: Context) -> list:
    out = []
    for stmt in body:
        if isinstance(stmt, gast.FunctionDef):
            out += _undecorated(stmt, ctx)
            continue
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, field, None), list):
                setattr(stmt, field, _body(getattr(stmt, field), ctx))
        out.append(stmt)
    return out


def _undecorated(function: gast.FunctionDef, ctx: Context) -> list:
    """`function` and, for its outermost `adjoint.checkpoint` decorators, the calls they mean."""
    calls = []
    while function.decorator_list and _is_checkpoint(function.decorator_list[0], ctx):
        calls.insert(0, function.decorator_list.pop(0))  # the outermost is applied last
    assigns = [
        gast.copy_location(syntax.assign(syntax.store(function.name), syntax.call(d, [syntax.name(function.name)])), function)
        for d in calls
    ]
    return [function, *assigns]


def _is_checkpoint(decorator, ctx: Context) -> bool:
    """`@adjoint.checkpoint` or `@adjoint.checkpoint(preserve_rng_state=...)`."""
    target = decorator.func if isinstance(decorator, gast.Call) else decorator
    text = syntax.dotted(target)
    if text is None:
        return False
    found = resolve.lookup_dotted(text, ctx)
    if found is not checkpoint:
        return False
    ctx.rely_on(text, found)
    return True
