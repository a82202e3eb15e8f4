"""Spreads: a reduction's cotangent that an exponential's rule multiplies straight back into
the array it reduced is not spread out first.

Assumes: the output of `products`.
Guarantees: where the forward function defines `e = np.exp(...)` once, and the pullback
spreads a sum's cotangent back over it, `e_bar = adj.unreduce(g, e, ...)`, and reads `e_bar`
only once after that, as `e_bar * e` (or `e * e_bar`, the exponential's rule), the spread
goes and the product reads `g * e`: NumPy's broadcasting spreads `g` as the product is made,
which `adj.unreduce` would have done into an array of its own (`g` has the shape of the sum,
which broadcasts against `e`, or `unreduce` would have failed). `e` holds floats (an
exponential's), so `unreduce` would not have made None of `g`; where `g` is less precise than
`e` the product is `e`'s precision rather than `g`'s, and the gradient is cast to its
argument's dtype in the end.

Before:  e_bar = adj.unreduce(s_bar, e, axis=1, keepdims=True)
         z_bar = e_bar * e
After:   z_bar = s_bar * e
"""

from __future__ import annotations

import collections

import gast
import numpy as np

from . import annotations as anno
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Multiply reductions' cotangents into exponentials unspread, in the pullback nested in
    `node` (see the module docstring).

    >>> from adjoint.compiler import pipeline
    >>> def f(z):
    ...     return np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    >>> node, ctx = pipeline.lower(f, (0,), until="spreads")
    >>> pullback = syntax.unparse(node.body[-2])
    >>> "unreduce" in pullback, "z_bar = f_sum_bar * f_exp" in pullback
    (False, True)
    """
    pullback_name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == pullback_name)
    # the pattern is spotted first, and the names counted only where it occurs (seldom)
    candidates = _candidates(pullback, f"{ctx.runtime_alias}.unreduce")
    if not candidates:
        return node
    exponentials = _exponentials(node, pullback, {reduced for *_, reduced, _ in candidates})
    stores, loads = _counts(pullback, {bar for _, _, bar, *_ in candidates})
    for body, spread, bar, cotangent, reduced, product in candidates:
        if reduced in exponentials and reduced not in stores and stores[bar] == 1 and loads[bar] == 1:
            if product.left.id == bar:
                product.left = cotangent
            else:
                product.right = cotangent
            body.remove(spread)
    return node


def _candidates(pullback, unreduce) -> list:
    """`(body, spread, e_bar, g, e, product)` for each `e_bar = adj.unreduce(g, e, ...)` of the pullback
    that the next statement of its body multiplies by `e` (`e_bar * e` or `e * e_bar`)."""
    found = []
    for body in [pullback.body] + [b for s in syntax.statements(pullback.body) for b in syntax.bodies(s)]:
        for stmt, after in zip(body, body[1:]):
            spread = _spread(stmt, unreduce)
            if spread is not None:
                product = _product_of(after, spread[0], spread[2])
                if product is not None:
                    found.append((body, stmt, *spread, product))
    return found


def _exponentials(node, pullback, names) -> set[str]:
    """Those of `names` that the forward function (outside the pullback) binds once, to `np.exp(...)`."""
    stores: collections.Counter = collections.Counter()
    found = set()
    for stmt in node.body:
        if stmt is pullback:
            continue
        for current in syntax.walk(stmt):
            if type(current) is gast.Name and current.id in names and isinstance(current.ctx, gast.Store):
                stores[current.id] += 1
        if (
            isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
            and stmt.targets[0].id in names and isinstance(stmt.value, gast.Call)
            and getattr(anno.get(stmt.value, anno.CALLEE, None), "obj", None) is np.exp
        ):
            found.add(stmt.targets[0].id)
    return {name for name in found if stores[name] == 1}


def _counts(pullback, names) -> tuple[collections.Counter, collections.Counter]:
    """How often the pullback assigns each name, and how often it reads (or deletes) each of `names`."""
    stores, loads = collections.Counter(), collections.Counter()
    for current in syntax.walk(pullback):
        if type(current) is gast.Name:
            if isinstance(current.ctx, gast.Store):
                stores[current.id] += 1
            elif current.id in names:
                loads[current.id] += 1
    return stores, loads


def _spread(stmt, unreduce):
    """`(e_bar, g, e)` for `e_bar = adj.unreduce(g, e, ...)` (of a name `e`), else None."""
    value = getattr(stmt, "value", None)
    if not (
        isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
        and isinstance(value, gast.Call) and syntax.dotted(value.func) == unreduce and len(value.args) == 2
        and all(k.arg in ("axis", "keepdims") for k in value.keywords)
    ):
        return None
    options = {k.arg: k.value for k in value.keywords}
    if not _is_constant(options.get("axis"), None) and not _is_constant(options.get("keepdims"), True):
        return None  # (a sum over an axis that dropped it: `g` would broadcast along the wrong axes)
    cotangent, reduced = value.args
    if not (isinstance(cotangent, gast.Name) and isinstance(reduced, gast.Name)):
        return None
    return stmt.targets[0].id, cotangent, reduced.id


def _product_of(stmt, bar, reduced):
    """The `bar * reduced` (or `reduced * bar`) that `stmt` assigns, else None."""
    value = getattr(stmt, "value", None)
    if not (isinstance(stmt, gast.Assign) and isinstance(value, gast.BinOp) and isinstance(value.op, gast.Mult)):
        return None
    operands = value.left, value.right
    if not all(isinstance(o, gast.Name) for o in operands):
        return None
    return value if sorted(o.id for o in operands) == sorted((bar, reduced)) and bar != reduced else None


def _is_constant(expr, value) -> bool:
    """Whether `expr` is the constant `value` written out, or missing where that is its default."""
    if expr is None:
        return value is None
    return isinstance(expr, gast.Constant) and expr.value is value
