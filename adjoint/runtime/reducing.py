"""Helpers of reductions, scans and norms: spreading a reduced cotangent back over its axes.

Each `<name>_bar(g, x, ...)` returns the cotangent of `x`: `x`'s shape and dtype (the real part
for a real `x`), one item per row for a list or tuple `x` (`np.var([a, b])` reduces the array
the items make), and None for an `x` of ints or bools. Where a formula would divide 0 by 0 at a
point where the function is finite (`std` of a constant, a norm at 0), the cotangent is 0 there,
a subgradient, rather than NaN. Complex inputs follow JAX's convention (`dL = Re(sum(x_bar
* dx))`): holomorphic maps take no conjugate, magnitudes (`|x|`, variances) do.

Forward mode: most reductions' tangents pair such a cotangent for `g = 1` (the partials) with
the tangent over each slice, `sum(partials * t)`, in the rules themselves; each
`<name>_tangent(t, x, ...)` here is a forward rule that is more than that. The tangents of the
pieces below, for forward mode over these helpers (over a gradient), are in `reducing_tangents`.
"""

from __future__ import annotations

import math

import numpy as np

from .cotangents import (
    as_sequence, from_sequence, is_differentiable, reduced_axes, spread, sum_to_shape, unreduce, unreduce_chosen,
)
from .pointwise import divide_or_zero
from .tangents import tangent_or_zeros

__all__ = [
    "zero_at_nan", "var_bar", "nanvar_bar", "ptp_bar", "cumsum_bar", "cumprod_bar",
    "average_bar", "average_weights_bar", "norm_bar", "logsumexp_bar", "logsumexp_b_bar",
    "cumprod_tangent", "average_tangent", "logsumexp_tangent",
]


# ---- shared -----------------------------------------------------------------------------------

def zero_at_nan(bar, x):
    """`bar`, the cotangent of `x` in a NaN-ignoring function (`np.nansum`), with zeros where `x`
    is NaN; None for an `x` of ints or bools.

    >>> zero_at_nan(np.array([1.0, 2.0, 3.0]), np.array([0.5, np.nan, 1.0]))
    array([1., 0., 3.])
    """
    items, x = x, from_sequence(x)
    if bar is None or not is_differentiable(x):
        return None
    return as_cotangent(np.where(np.isnan(x), 0, np.asarray(bar)), x, items)


def as_cotangent(bar, x, items):
    """`bar`, which broadcasts to the shape of `x` (`items`, read as an array), as the cotangent
    of `items` (see the module docstring).

    >>> as_cotangent(np.array(2.0), np.zeros(2), [0.0, 0.0])
    [np.float64(2.0), np.float64(2.0)]
    """
    return as_sequence(unreduce(bar, x), items)


# ---- moments ----------------------------------------------------------------------------------

def var_bar(g, x, axis=None, ddof=0, keepdims=False):
    """Cotangent of `x` in `np.var(x, axis, ddof=ddof)`: `g * 2 conj(x - mean) / (n - ddof)`, `n`
    the count of entries each variance reduces.

    >>> var_bar(1.0, np.array([1.0, 2.0, 3.0, 6.0]))
    array([-1. , -0.5,  0. ,  1.5])
    """
    return _variance_bar(g, x, axis, ddof, keepdims, skip_nan=False)


def nanvar_bar(g, x, axis=None, ddof=0, keepdims=False):
    """Cotangent of `x` in `np.nanvar(x, axis, ddof=ddof)`: as `var_bar` over the entries that are
    not NaN, and 0 at NaNs.

    >>> nanvar_bar(1.0, np.array([1.0, np.nan, 3.0]))
    array([-1.,  0.,  1.])
    """
    return _variance_bar(g, x, axis, ddof, keepdims, skip_nan=True)


def _variance_bar(g, x, axis, ddof, keepdims, skip_nan):
    items, x = x, from_sequence(x)
    if not is_differentiable(x):
        return None
    axes = reduced_axes(axis, np.ndim(x))
    if skip_nan:
        present = ~np.isnan(x)
        count = np.sum(present, axis=axes, keepdims=True)
        centered = np.where(present, x - np.nanmean(x, axis=axes, keepdims=True), 0)
    else:
        count = math.prod(np.shape(x)[a] for a in axes)
        centered = x - np.mean(x, axis=axes, keepdims=True)
    return as_cotangent(spread(g, axes, keepdims) * 2 * np.conj(centered) / (count - ddof), x, items)


# ---- extremes ---------------------------------------------------------------------------------

def ptp_bar(g, x, axis=None, keepdims=False):
    """Cotangent of `x` in `np.ptp(x, axis)`, `max - min`: `g` to the largest entries and `-g` to
    the smallest, shared equally between ties (a constant slice gets 0).

    >>> ptp_bar(1.0, np.array([3.0, -1.0, 3.0]))
    array([ 0.5, -1. ,  0.5])
    """
    items, x = x, from_sequence(x)
    if not is_differentiable(x):
        return None
    highest = unreduce_chosen(g, x, np.max(x, axis=axis, keepdims=keepdims), axis=axis, keepdims=keepdims)
    lowest = unreduce_chosen(g, x, np.min(x, axis=axis, keepdims=keepdims), axis=axis, keepdims=keepdims)
    return as_cotangent(highest - lowest, x, items)


# ---- scans ------------------------------------------------------------------------------------

def cumsum_bar(g, x, axis=None, include_initial=False):
    """Cotangent of `x` in `np.cumsum(x, axis)` (flattened for `axis=None`): the reversed running
    sum of `g`. `include_initial` is `np.cumulative_sum`'s: `g`'s leading 0 entry is dropped.

    >>> cumsum_bar(np.array([1.0, 2.0, 3.0]), np.zeros(3))
    array([6., 5., 3.])
    """
    items, x = x, from_sequence(x)
    if not is_differentiable(x):
        return None
    line, g = scanned(g, axis, include_initial)
    return as_cotangent(np.reshape(np.flip(np.cumsum(np.flip(g, line), axis=line), line), np.shape(x)), x, items)


def cumprod_bar(g, x, axis=None, include_initial=False):
    """Cotangent of `x` in `np.cumprod(x, axis)` (flattened for `axis=None`), exact where `x` has
    zeros: no entry is divided by.

    `y_k = x_0 ... x_k`, so `x_i`'s cotangent is `(x_0 ... x_{i-1}) s_i` with `s_i = sum over
    k >= i of g_k x_{i+1} ... x_k`, the suffix scan `s_i = g_i + x_{i+1} s_{i+1}`.

    >>> cumprod_bar(np.ones(3), np.array([2.0, 0.0, 3.0]))
    array([1., 8., 0.])
    """
    items, x = x, from_sequence(x)
    if not is_differentiable(x):
        return None
    line, g = scanned(g, axis, include_initial)
    values = np.moveaxis(np.ravel(x) if axis is None else np.asarray(x), line, -1)
    before = np.cumprod(np.concatenate([np.ones_like(values[..., :1]), values[..., :-1]], axis=-1), axis=-1)
    after = np.concatenate([values[..., 1:], np.zeros_like(values[..., :1])], axis=-1)
    bar = np.moveaxis(before * suffix_scan(np.moveaxis(g, line, -1), after), -1, line)
    return as_cotangent(np.reshape(bar, np.shape(x)), x, items)


def scanned(g, axis, include_initial):
    """The scanned axis of a scan's cotangent `g` (0 for a flattened scan), and `g` without the
    initial entry `include_initial` put first along it.

    >>> scanned(np.array([0.0, 1.0, 2.0]), None, True)
    (0, array([1., 2.]))
    """
    g = np.asarray(g)
    line = 0 if axis is None else int(axis) % g.ndim
    if include_initial:
        g = g[(slice(None),) * line + (slice(1, None),)]
    return line, g


def suffix_scan(b, c):
    """`s` with `s_i = b_i + c_i s_{i+1}` along the last axis (0 past the end), in log2(n)
    vectorised doubling steps: each step keeps `s_i = s'_i + c'_i s_{i+step}` true.

    >>> suffix_scan(np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, 2.0]))
    array([7., 3., 1.])
    """
    s, step = b, 1
    while step < b.shape[-1]:
        s = np.concatenate([s[..., :-step] + c[..., :-step] * s[..., step:], s[..., -step:]], axis=-1)
        c = np.concatenate([c[..., :-step] * c[..., step:], np.zeros_like(c[..., -step:])], axis=-1)
        step *= 2
    return s


def cumprod_tangent(t, x, axis=None, include_initial=False):
    """Tangent of `np.cumprod(x, axis)` (flattened for `axis=None`) for the tangent `t` of `x`,
    exact where `x` has zeros: no entry is divided by. `include_initial` is
    `np.cumulative_prod`'s: the leading 1 has tangent 0.

    `y_k = y_(k-1) x_k`, so `dy_k = x_k dy_(k-1) + y_(k-1) t_k`: a linear recurrence, which is
    `suffix_scan`'s run backwards.

    >>> cumprod_tangent(np.array([1.0, 0.0, 0.0]), np.array([2.0, 0.0, 3.0]))
    array([1., 0., 0.])
    """
    line = 0 if axis is None else int(axis) % np.ndim(x)
    values = np.moveaxis(np.ravel(x) if axis is None else np.asarray(x), line, -1)
    t = np.moveaxis(np.reshape(t, values.shape) if axis is None else np.asarray(t), line, -1)
    before = np.cumprod(np.concatenate([np.ones_like(values[..., :1]), values[..., :-1]], axis=-1), axis=-1)
    dy = np.flip(suffix_scan(np.flip(before * t, -1), np.flip(values, -1)), -1)
    if include_initial:
        dy = np.concatenate([np.zeros_like(dy[..., :1]), dy], axis=-1)
    return np.moveaxis(dy, -1, line)


# ---- weighted averages ------------------------------------------------------------------------

def average_bar(g, a, weights=None, axis=None, returned=False, keepdims=False):
    """Cotangent of `a` in `np.average(a, axis, weights, returned)`: `g w / sum(w)` over each
    reduced slice. With `returned=True`, `g` is the pair of cotangents of the average and of the
    sum of weights (None for one nothing flowed into).

    >>> average_bar(1.0, np.array([5.0, 7.0]), np.array([1.0, 3.0]))
    array([0.25, 0.75])
    """
    items, a = a, from_sequence(a)
    if not is_differentiable(a):
        return None
    _, axes, w, total = weighing(a, weights, axis)
    g_average, _ = average_parts(g, returned)
    return as_cotangent(spread(g_average, axes, keepdims) * w / total, a, items)


def average_weights_bar(g, a, weights=None, axis=None, returned=False, keepdims=False):
    """Cotangent of `weights` in `np.average(a, axis, weights, returned)`: `g (a - average) /
    sum(w)` over each reduced slice, plus the sum of weights' cotangent (`returned=True`).

    >>> average_weights_bar(1.0, np.array([5.0, 7.0]), np.array([1.0, 3.0]))
    array([-0.375,  0.125])
    """
    items, weights = weights, from_sequence(weights)
    if not is_differentiable(weights):
        return None
    x, axes, w, total = weighing(a, weights, axis)
    average = np.sum(x * w, axis=axes, keepdims=True) / total
    g_average, g_total = average_parts(g, returned)
    bar = spread(g_average, axes, keepdims) * (x - average) / total + spread(g_total, axes, keepdims)
    aligned = sum_to_shape(np.broadcast_to(bar, x.shape), w.shape)
    if np.shape(weights) != x.shape:  # undo NumPy's alignment of the reduced axes' weights
        order = np.argsort(axes)
        aligned = np.transpose(np.reshape(aligned, np.transpose(weights, order).shape), np.argsort(order))
    return as_cotangent(aligned, weights, items)


def weighing(a, weights, axis):
    """`(a as an array, its reduced axes, weights aligned with it, their sum per slice)`.

    As NumPy does, weights of another shape than `a`'s are those of the reduced axes, in the
    order `axis` lists them (1-D for one axis).

    >>> weighing(np.array([5.0, 7.0]), np.array([1.0, 3.0]), None)
    (array([5., 7.]), (0,), array([1., 3.]), array([4.]))
    """
    x = np.asarray(a)
    axes = reduced_axes(axis, x.ndim)
    if weights is None:
        w = np.ones((1,) * x.ndim, dtype=np.result_type(x, 1.0))
    else:
        w = np.asarray(weights)
        if w.shape != x.shape:
            w = np.reshape(np.transpose(w, np.argsort(axes)), [n if i in axes else 1 for i, n in enumerate(x.shape)])
    total = np.sum(np.broadcast_to(w, np.broadcast_shapes(w.shape, x.shape)), axis=axes, keepdims=True)
    return x, axes, w, total


def average_parts(g, returned):
    """The cotangents of the average and of the sum of weights, 0.0 for one nothing flowed into.

    >>> average_parts((None, 2.0), returned=True), average_parts(1.0, returned=False)
    ((0.0, 2.0), (1.0, 0.0))
    """
    g_average, g_total = g if returned else (g, None)
    return (0.0 if g_average is None else g_average), (0.0 if g_total is None else g_total)


def average_tangent(t_a, t_weights, a, weights=None, axis=None, returned=False, keepdims=False):
    """Tangent of `np.average(a, axis, weights, returned)` for the tangents `t_a` and `t_weights`
    (None: constant): `sum(w t_a + t_w (a - average)) / sum(w)` over each reduced slice, and with
    `returned=True` also that of the sum of weights, `sum(t_w)`.

    >>> average_tangent(np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([5.0, 7.0]), np.array([1.0, 3.0]))
    np.float64(0.375)
    """
    x, axes, w, total = weighing(a, weights, axis)
    average = np.sum(x * w, axis=axes, keepdims=True) / total
    change, total_change = np.zeros_like(average), np.zeros_like(total)
    if t_a is not None:
        change = change + np.sum(w * np.asarray(tangent_or_zeros(t_a, a)), axis=axes, keepdims=True)
    if t_weights is not None and weights is not None:
        _, _, t_w, total_change = weighing(a, tangent_or_zeros(t_weights, weights), axis)
        change = change + np.sum(t_w * (x - average), axis=axes, keepdims=True)
    tangents = (change / total, total_change)
    if not keepdims:
        tangents = tuple(np.squeeze(part, axis=axes)[()] for part in tangents)
    return tangents if returned else tangents[0]


# ---- norms ------------------------------------------------------------------------------------

def norm_bar(g, x, ans, ord=None, axis=None, keepdims=False):
    """Cotangent of `x` in `ans = np.linalg.norm(x, ord, axis, keepdims)`, for vectors and matrices.

    Ties (`inf`, `1`... norms) share the cotangent equally; a vector's `ord=0`, a count, has
    gradient 0; at 0 the cotangent is 0, a subgradient. `ord=2` and `-2` of a matrix follow the
    singular vectors NumPy's SVD gives, even where the extreme singular value is repeated.

    >>> norm_bar(1.0, np.array([3.0, -4.0]), 5.0)
    array([ 0.6, -0.8])
    """
    items, x = x, from_sequence(x)
    if not is_differentiable(x):
        return None
    axes = reduced_axes(axis, np.ndim(x))
    g, ans = spread(g, axes, keepdims), spread(ans, axes, keepdims)
    matrix = len(axes) == 2 and not (axis is None and ord is None)
    if ord is None or (ord == "fro" and matrix) or (ord == 2 and not matrix):
        bar = g * divide_or_zero(np.conj(x), ans)
    elif matrix:
        bar = g * _matrix_norm_partial(x, ord, axes)
    else:
        bar = g * _vector_norm_partial(x, ans, ord, axes[0])
    return as_cotangent(bar, x, items)


def phase(x):
    """`d|x| = Re(phase * dx)`: `sign(x)` for real `x`, `conj(x) / |x|` for complex, 0 at 0 (the
    partial of `np.abs`).

    >>> phase(np.array([-2.0, 0.0, 3.0]))
    array([-1.,  0.,  1.])
    """
    return divide_or_zero(np.conj(x), np.abs(x))


def _vector_norm_partial(x, ans, ord, axis):
    magnitude = np.abs(x)
    if ord == 0:  # the count of nonzero entries: piecewise constant
        return np.zeros_like(magnitude)
    if ord == 1:
        return phase(x)
    if ord in (np.inf, -np.inf):
        return phase(x) * shared(magnitude, ord, axis)
    # d ||x||_p = (|x| / ||x||_p)^(p - 1) d|x|; 0 where |x| = 0, even for p < 1
    ratio = divide_or_zero(magnitude, ans)
    return phase(x) * np.where(ratio > 0, np.where(ratio > 0, ratio, 1) ** (ord - 1), 0)


def _matrix_norm_partial(x, ord, axes):
    rows, columns = axes
    if ord in ("nuc", 2, -2):
        # d sigma_i = Re(u_i^H dx v_i): sigma_i's partial is conj(u_i v_i^H)
        u, _, vh = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), full_matrices=False)
        if ord != "nuc":
            chosen = slice(0, 1) if ord == 2 else slice(-1, None)
            u, vh = u[..., :, chosen], vh[..., chosen, :]
        return np.moveaxis(np.conj(u @ vh), (-2, -1), axes)
    # ord 1 / -1: the largest / smallest sum of |x| over rows (a column's); inf / -inf: over columns
    summed, across = (rows, columns) if ord in (1, -1) else (columns, rows)
    return phase(x) * shared(np.sum(np.abs(x), axis=summed, keepdims=True), ord, across)


def shared(values, ord, axis):
    """1 / (number of ties) at the largest (`ord > 0`) or smallest of `values` along `axis`, else 0.

    >>> shared(np.array([3.0, 1.0, 3.0]), np.inf, 0)
    array([0.5, 0. , 0.5])
    """
    extreme = (np.max if ord > 0 else np.min)(values, axis=axis, keepdims=True)
    chosen = values == extreme
    return chosen / np.sum(chosen, axis=axis, keepdims=True)


# ---- log-sum-exp ------------------------------------------------------------------------------

def logsumexp_bar(g, a, ans, axis=None, b=None, keepdims=False):
    """Cotangent of `a` in `ans = scipy.special.logsumexp(a, axis, b)`: `g` spread by the softmax
    weights `b exp(a - ans)`.

    >>> logsumexp_bar(1.0, np.log(np.array([1.0, 3.0])), np.log(4.0))
    array([0.25, 0.75])
    """
    items, a = a, from_sequence(a)
    if not is_differentiable(a):
        return None
    shares = exp_shares(g, a, ans, axis, b, keepdims)
    return as_cotangent(sum_to_shape(shares if b is None else shares * b, np.shape(a)), a, items)


def logsumexp_b_bar(g, a, ans, axis=None, b=None, keepdims=False):
    """Cotangent of `b` in `ans = scipy.special.logsumexp(a, axis, b)`: `g exp(a - ans)`.

    >>> logsumexp_b_bar(1.0, np.zeros(2), np.log(3.0), b=np.array([1.0, 2.0]))
    array([0.33333333, 0.33333333])
    """
    items, b = b, from_sequence(b)
    if not is_differentiable(b):
        return None
    return as_cotangent(sum_to_shape(exp_shares(g, a, ans, axis, b, keepdims), np.shape(b)), b, items)


def logsumexp_tangent(t_a, t_b, a, ans, axis=None, b=None, keepdims=False):
    """Tangent of `ans = scipy.special.logsumexp(a, axis, b)` for the tangents `t_a` and `t_b`
    (None: constant): `sum(exp(a - ans) (b t_a + t_b))` over each reduced slice.

    >>> logsumexp_tangent(np.array([1.0, 1.0]), None, np.log(np.array([1.0, 3.0])), np.log(4.0))
    np.float64(1.0)
    """
    change = 0.0 if t_a is None else np.asarray(tangent_or_zeros(t_a, a)) * (1.0 if b is None else np.asarray(b))
    if t_b is not None:
        change = change + np.asarray(tangent_or_zeros(t_b, b))
    shares = exp_shares(1.0, a, ans, axis, b, keepdims)
    return np.sum(shares * change, axis=reduced_axes(axis, shares.ndim), keepdims=keepdims)[()]


def exp_shares(g, a, ans, axis, b, keepdims):
    """`g exp(a - ans)` over `a` broadcast against `b`, whose shape the reduction reads.

    >>> exp_shares(1.0, np.log(np.array([1.0, 3.0])), np.log(4.0), None, None, False)
    array([0.25, 0.75])
    """
    x = np.asarray(a)
    x = np.broadcast_to(x, np.broadcast_shapes(x.shape, np.shape(b)))
    axes = reduced_axes(axis, x.ndim)
    return spread(g, axes, keepdims) * np.exp(x - spread(ans, axes, keepdims))
