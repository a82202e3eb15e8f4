"""Array reductions: a reduction called as a method of a value NumPy made is its NumPy function.

Assumes: a normalized, SSA, resolved function.
Guarantees: `x.sum(...)`, `x.mean(...)`, `x.max(...)`, `x.min(...)` and `x.prod(...)`, given
at most `axis` (by position or keyword) and `keepdims`, where `x` is certainly a NumPy array
or scalar (`array_methods.array_names`: a ufunc's or a matrix product's result, or arithmetic
with one on the left), become `np.sum(x, ...)` and so on, resolved to NumPy's rule: stitched
into the generated code as any `np.sum` is, where a method of a value whose type is known only
at run time goes through `adj.method_vjp`. For a NumPy array `np.sum(x, ...)` is what
`x.sum(...)` computes. (`array_methods` calls the sums and means as methods again at the end,
which costs less to run.)

Before:  h = np.tanh(a); m = h.max(axis=1, keepdims=True)
After:   h = np.tanh(a); m = np.max(h, axis=1, keepdims=True)
"""

from __future__ import annotations

import gast
import numpy as np

from . import annotations as anno
from . import array_methods, resolve, syntax
from .context import Context

_REDUCTIONS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Call the reductions of arrays NumPy made in `node` as NumPy's functions.

    >>> from adjoint.compiler import pipeline
    >>> def f(a):
    ...     h = np.tanh(a)
    ...     return h.max(axis=1).sum()
    >>> node, ctx = pipeline.lower(f, (0,), until="array_reductions")
    >>> print(syntax.unparse(node.body[1]).strip(), "|", syntax.unparse(node.body[2]).strip())
    f_max = np.max(h, axis=1) | f = np.sum(f_max)
    """
    calls = [
        stmt.value for stmt in syntax.statements(node.body)
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) and _reduction_method(stmt.value)
    ]
    while calls:  # a reduction rewritten makes an array known, whose own reductions are next
        arrays = array_methods.array_names(node)
        rewritten = [call for call in calls if _as_function(call, arrays, ctx)]
        if not rewritten:
            break
        calls = [call for call in calls if call not in rewritten]
    return node


def _as_function(call, arrays, ctx) -> bool:
    """Rewrite `x.sum(...)` as `np.sum(x, ...)` if `x` is among `arrays` and only `axis` and
    `keepdims` are given; whether it did."""
    receiver = call.func.value
    if not (isinstance(receiver, gast.Name) and receiver.id in arrays) or anno.get(call, anno.FROZEN):
        return False
    if len(call.args) > 1 or any(isinstance(a, gast.Starred) for a in call.args):
        return False
    allowed = {"keepdims"} if call.args else {"axis", "keepdims"}
    if not all(k.arg in allowed for k in call.keywords):
        return False
    function = _REDUCTIONS[call.func.attr]
    text = f"{ctx.reach('np', np)}.{function.__name__}"
    call.func = syntax.dotted_expr(text)
    call.args.insert(0, receiver)
    anno.set_(call, anno.CALLEE, resolve.classify(function, text))
    return True


def _reduction_method(call) -> bool:
    callee = anno.get(call, anno.CALLEE)
    return (
        callee is not None and callee.method and isinstance(call.func, gast.Attribute) and call.func.attr in _REDUCTIONS
    )
