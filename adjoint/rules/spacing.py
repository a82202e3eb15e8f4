"""Differences between neighbours and evenly spaced values: np.diff, np.gradient, np.linspace.

`np.diff` and `np.gradient` are linear in the array, so its cotangent is the transposed
difference operator applied to the cotangent (`adj.diff_bar`, `adj.gradient_bars`: at the
ends, the transposes of the one-sided differences). `np.diff`'s `prepend=` and `append=` are
taken by keyword only, and so get no cotangent; `np.gradient` takes scalar spacings `h`, whose
cotangents come from the value's dependence on `1 / h` (arrays of coordinates are refused). `np.linspace` is linear in `start` and `stop`, each value
a fixed fraction of the way from one to the other; `retstep=True` is refused.

Forward: `np.diff` is linear only without ends (a constant end makes it affine), so its
tangent is the difference of the tangent with zero ends; `np.gradient` is linear in `f` and
goes as `1 / h` in each spacing; `np.linspace` is linear in `start` and `stop` jointly.
"""

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import rrule


# NumPy would take `prepend` and `append` by position too; by keyword only, they are never
# differentiated.
@rrule(np.diff)
def diff_rrule(a, n=1, axis=-1, *, prepend=None, append=None):
    def diff_pullback(g):
        return (adj.diff_bar(g, a, n, axis, prepend, append),)

    return adj.diff_with_ends(a, n, axis, prepend, append), diff_pullback


@frule(np.diff)
def diff_frule(primals, tangents, **kwargs):
    def diff_jvp(a, n=1, axis=-1, *, prepend=None, append=None):
        ans = adj.diff_with_ends(a, n, axis, prepend, append)
        return ans, adj.tangent_like(adj.diff_tangent(tangents[0], a, n, axis, prepend, append), ans)

    return diff_jvp(*primals, **kwargs)


# One array for one axis, a tuple of arrays for several, as NumPy returns.
@rrule(np.gradient)
def gradient_rrule(f, *varargs, axis=None, edge_order=1):
    ans = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    along = adj.gradient_spacings(f, varargs, axis)

    def gradient_pullback(g):
        return adj.gradient_bars(g, f, varargs, along, ans, edge_order)

    return ans, gradient_pullback


@frule(np.gradient)
def gradient_frule(primals, tangents, **kwargs):
    def gradient_jvp(f, *varargs, axis=None, edge_order=1):
        ans = np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
        along = adj.gradient_spacings(f, varargs, axis)
        tangent = adj.gradient_tangent(tangents[0], tuple(tangents[1:]), f, varargs, along, ans, edge_order)
        return ans, adj.tangent_like(tangent, ans)

    return gradient_jvp(*primals, **kwargs)


@rrule(np.linspace)
def linspace_rrule(start, stop, num=50, endpoint=True, *, dtype=None, axis=0):  # `retstep` refused
    def linspace_pullback(g):
        fraction = adj.linspace_fractions(num, endpoint, axis, np.ndim(g))
        return (
            adj.unbroadcast_float(np.sum(g * (1 - fraction), axis), start),
            adj.unbroadcast_float(np.sum(g * fraction, axis), stop),
        )

    return np.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis), linspace_pullback


linear(np.linspace, operands=(0, 1))
