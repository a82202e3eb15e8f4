"""Reductions: the cotangent of the reduced value is spread back over the reduced axes."""

import numpy as np

from .. import runtime as adj
from ..registry import rrule


@rrule(np.sum)
def sum_rrule(a, axis=None, dtype=None, keepdims=False):
    def sum_pullback(g):
        return (adj.unreduce(g, a, axis=axis, keepdims=keepdims),)

    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims), sum_pullback


@rrule(np.mean)
def mean_rrule(a, axis=None, dtype=None, keepdims=False):
    ans = np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean_pullback(g):
        return (adj.unreduce(g * (np.size(ans) / np.size(a)), a, axis=axis, keepdims=keepdims),)

    return ans, mean_pullback


# Ties share the cotangent equally, as autograd does.
@rrule(np.max, np.amax)
def max_rrule(a, axis=None, keepdims=False):
    ans = np.max(a, axis=axis, keepdims=keepdims)

    def max_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, max_pullback


@rrule(np.min, np.amin)
def min_rrule(a, axis=None, keepdims=False):
    ans = np.min(a, axis=axis, keepdims=keepdims)

    def min_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, min_pullback
