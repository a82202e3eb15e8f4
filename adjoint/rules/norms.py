"""Norms: `np.linalg.norm` of vectors and matrices, every `ord`, `axis` and `keepdims`.

`axis` of one axis (or a 1-D array with `axis=None` and an `ord`) takes vector norms; a pair of
axes (or a 2-D array) matrix norms; `axis=None, ord=None` the 2-norm of the flattened array.
The cotangents (`adj.norm_bar`):

- 2-norm and Frobenius: `g conj(x) / ||x||`, and 0 at x = 0 (a subgradient, no NaN);
- vector `ord=1`: `g sign(x)`; `inf` / `-inf`: to the largest / smallest `|x_i|`, ties sharing
  equally; general `p`: `g sign(x) (|x| / ||x||_p)^(p - 1)`; `ord=0` counts nonzero entries, a
  piecewise constant function: its gradient is 0 (as JAX gives), not refused;
- matrix `1` / `-1` (`inf` / `-inf`): to the column (row) with the largest / smallest sum of
  `|x|`, ties sharing; `'nuc'`: `g conj(U V^H)` from the SVD; `2` / `-2`: `g conj(u v^H)` of
  the largest / smallest singular value.

`sign(x)` reads `conj(x) / |x|` for complex `x`, in JAX's convention. The tangent pairs those
partials with the tangent over each reduced slice (its real part: a norm is real).
"""

import numpy as np

from .. import runtime as adj
from ..registry import rrule
from .reductions import unary_frule


@rrule(np.linalg.norm, sequences=True)
def norm_rrule(x, ord=None, axis=None, keepdims=False):
    ans = np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)

    def norm_pullback(g):
        return (adj.norm_bar(g, x, ans, ord=ord, axis=axis, keepdims=keepdims),)

    return ans, norm_pullback


@unary_frule(np.linalg.norm)
def norm_jvp(t, x, ans, ord=None, axis=None, keepdims=False):
    partials = adj.norm_bar(1.0, x, ans, ord=ord, axis=axis, keepdims=keepdims)
    return np.sum(partials * t, axis=axis, keepdims=keepdims)
