"""Products: `matmul` (and the `@` operator) and `dot`, for every combination of dimensions."""

import operator

import numpy as np

from .. import runtime as adj
from ..registry import rrule


@rrule(operator.matmul, np.matmul)
def matmul_rrule(a, b):
    def matmul_pullback(g):
        return adj.matmul_lhs_bar(g, a, b), adj.matmul_rhs_bar(g, a, b)

    return a @ b, matmul_pullback


@rrule(np.dot, np.ndarray.dot)
def dot_rrule(a, b):
    def dot_pullback(g):
        return adj.dot_lhs_bar(g, a, b), adj.dot_rhs_bar(g, a, b)

    return np.dot(a, b), dot_pullback
