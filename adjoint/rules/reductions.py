"""Reductions: the cotangent of the reduced value is spread back over the reduced axes.

Each rule serves the array method of the same name too (`x.sum(axis=0)`), whose parameters
after the array line up with the function's.
"""

import numpy as np

from .. import runtime as adj
from ..registry import rrule


@rrule(np.sum, np.ndarray.sum)
def sum_rrule(a, axis=None, dtype=None, keepdims=False):
    def sum_pullback(g):
        return (adj.unreduce(g, a, axis=axis, keepdims=keepdims),)

    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims), sum_pullback


@rrule(np.mean, np.ndarray.mean)
def mean_rrule(a, axis=None, dtype=None, keepdims=False):
    ans = np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean_pullback(g):
        return (adj.unreduce(g * (np.size(ans) / np.size(a)), a, axis=axis, keepdims=keepdims),)

    return ans, mean_pullback


# Ties share the cotangent equally, as autograd does.
@rrule(np.max, np.amax, np.ndarray.max)
def max_rrule(a, axis=None, keepdims=False):
    ans = np.max(a, axis=axis, keepdims=keepdims)

    def max_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, max_pullback


@rrule(np.min, np.amin, np.ndarray.min)
def min_rrule(a, axis=None, keepdims=False):
    ans = np.min(a, axis=axis, keepdims=keepdims)

    def min_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, min_pullback


@rrule(np.prod, np.ndarray.prod)
def prod_rrule(a, axis=None, dtype=None, keepdims=False):
    def prod_pullback(g):
        return (adj.prod_bar(g, a, axis=axis, keepdims=keepdims),)

    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims), prod_pullback


# d var / d a = 2 (a - mean) / (n - ddof), n the count of reduced entries; std = sqrt(var).
# `ddof` and `keepdims` are keyword-only: NumPy's next positional parameter is `out`.
@rrule(np.var, np.ndarray.var)
def var_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def var_pullback(g):
        centered = a - np.mean(a, axis=axis, keepdims=True)
        scale = 2 / (np.size(a) / np.size(ans) - ddof)
        return (adj.unreduce(g, a, axis=axis, keepdims=keepdims) * centered * scale,)

    return ans, var_pullback


@rrule(np.std, np.ndarray.std)
def std_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std_pullback(g):
        centered = a - np.mean(a, axis=axis, keepdims=True)
        scale = 1 / (np.size(a) / np.size(ans) - ddof)
        return (adj.unreduce(g / ans, a, axis=axis, keepdims=keepdims) * centered * scale,)

    return ans, std_pullback
