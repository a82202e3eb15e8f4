"""Forward rules of the runtime helpers that generated pullback code calls (`adj.unbroadcast`,
`adj.matmul_lhs_bar`...), so that forward mode runs over a gradient: Hessian-vector products.

A pullback is linear in its cotangent, and so are most helpers: `unbroadcast(g, x)` is linear in
`g`, while `x` only gives a shape and a dtype (`linear`). A product's helpers are linear in `g`
and in the other operand on its own (`multilinear`: `matmul_lhs_bar(g, a, b) = g @ b.T`). The
others also depend on a primal some other way (a variance's cotangent on the mean, a norm's on
the norm): their rules are the helper applied to `g`'s tangent plus the derivative of what
multiplies `g`. Helpers elementwise in every argument (`divide_or_zero`) get partials, which
give them a reverse rule too. Helpers that compute shapes, labels or flags have no derivative.

Arguments that only choose entries (ties in `unreduce_chosen(g, x, ans)`, ranks, NaNs) are
constant where the choice is: the tangent keeps the choice the primal made.

Buffers are updated in place (`scatter_add`), so a buffer's tangent is a buffer of its own:
`buffer_like`'s rule makes a fresh one (a call without a derivative would give it none),
`scatter_add`'s adds each value's tangent into it in place and returns both buffers, as the
helper returns its own, and `from_buffer`, linear, reads it out.
"""

import functools
import inspect
import math
import types

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear, multilinear
from ..registry import elementwise, non_differentiable
from ..runtime.cotangents import as_sequence, from_sequence, reduced_axes, spread, sum_to_shape
from ..runtime.reducing import (  # private: the pieces their cotangents are made of
    _as_cotangent, _average_parts, _exp_shares, _phase, _scanned, _shared, _suffix_scan, _weighing,
)

# ---- cotangents ------------------------------------------------------------------------------------

linear(adj.add, operands=(0, 1))
linear(adj.unbroadcast, adj.cotangent_like, adj.unreduce)
linear(adj.unreduce_chosen)  # `x` and `ans` say which entries were chosen: constant where that holds
non_differentiable(adj.zeros_like, adj.is_differentiable, adj.tie_weight, adj.structs.is_struct)


# prod_bar: g times the product of the other entries, with running products from either end.
@frule(adj.prod_bar)
def prod_bar_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.prod_bar, primals, tangents, kwargs)
    value = adj.prod_bar(*primals, **kwargs)
    if value is None or dots.x is None:
        return value, _tangent(_terms(adj.prod_bar, primals, tangents, kwargs), value)
    x, axis, keepdims = np.asarray(args.x), args.axis, args.keepdims
    x_dot = np.asarray(dots.x, dtype=x.dtype)
    axes = reduced_axes(axis, x.ndim)
    kept, moved = x.ndim - len(axes), tuple(range(x.ndim - len(axes), x.ndim))

    def rows(a):  # the reduced axes last, flattened into one
        a = np.moveaxis(a, axes, moved)
        return a.reshape(a.shape[:kept] + (math.prod(a.shape[kept:]),))

    before, before_dot = _prefix_products(rows(x), rows(x_dot))
    after, after_dot = (np.flip(p, -1) for p in _prefix_products(np.flip(rows(x), -1), np.flip(rows(x_dot), -1)))
    others_dot = before_dot * after + before * after_dot
    others_dot = np.moveaxis(others_dot.reshape(np.moveaxis(x, axes, moved).shape), moved, axes)
    term = as_sequence(adj.unreduce(args.g, x, axis=axis, keepdims=keepdims) * others_dot, args.x)
    return value, _tangent(adj.add(_terms(adj.prod_bar, primals, tangents, kwargs), term), value)


# ---- linear maps: products, transposes, layouts ----------------------------------------------------

multilinear(adj.matmul_lhs_bar, adj.dot_lhs_bar, operands=(0, 2))
multilinear(adj.matmul_rhs_bar, adj.dot_rhs_bar, operands=(0, 1))
linear(adj.unravel, adj.untranspose)
non_differentiable(adj.layout_order)

# ---- indexing, containers, objects and calls -------------------------------------------------------

linear(adj.unindex, adj.unpack_bar, adj.from_buffer, adj.setitem_bar, adj.append_bar)
linear(adj.field_bar, adj.item_bar, adj.unconcat)


@frule(adj.buffer_like)
def buffer_like_frule(primals, tangents):
    (x,) = primals
    return adj.buffer_like(x), adj.buffer_like(x)  # zeros, in a buffer `scatter_add` may fill


# scatter_add(buffer, index, value) adds in place and returns the buffer: so does its rule, into
# the tangent buffer (from `buffer_like`'s rule), which it needs whenever the value has a tangent.
@frule(adj.scatter_add)
def scatter_add_frule(primals, tangents):
    (buffer, index, value), (buffer_dot, _, value_dot) = primals, _padded(tangents, 3)
    adj.scatter_add(buffer, index, value)
    if value is not None and value_dot is not None:
        if buffer_dot is None:
            raise adj.RuleError("scatter_add's forward rule needs the buffer's tangent: a buffer from buffer_like's rule")
        adj.scatter_add(buffer_dot, index, value_dot)
    return buffer, buffer_dot


# ---- products ---------------------------------------------------------------------------------------

multilinear(
    adj.tensordot_lhs_bar, adj.inner_lhs_bar, adj.vecdot_lhs_bar, adj.matvec_lhs_bar, adj.vecmat_lhs_bar,
    adj.kron_lhs_bar, adj.cross_lhs_bar, adj.scaled_bar, operands=(0, 2),
)  # conjugating ones (vecdot, vecmat) are real-linear, all a tangent needs
multilinear(
    adj.tensordot_rhs_bar, adj.inner_rhs_bar, adj.vecdot_rhs_bar, adj.matvec_rhs_bar, adj.vecmat_rhs_bar,
    adj.kron_rhs_bar, adj.cross_rhs_bar, operands=(0, 1),
)
non_differentiable(adj.einsum_operands)


# Linear in `g` and in each matrix on its own, though the matrices come as one list: the sum of
# the cotangents with one matrix's tangent each, less the entry of that matrix (which does not read it).
@frule(adj.multi_dot_bars)
def multi_dot_bars_frule(primals, tangents):
    (g, arrays), (g_dot, arrays_dot) = primals, _padded(tangents, 2)
    value = adj.multi_dot_bars(g, arrays)
    terms = adj.multi_dot_bars(g_dot, arrays) if g_dot is not None else None
    for i, a_dot in enumerate(arrays_dot or ()):
        if a_dot is not None:
            term = adj.multi_dot_bars(g, type(arrays)([*arrays[:i], a_dot, *arrays[i + 1:]]))
            terms = adj.add(terms, type(arrays)(None if j == i else t for j, t in enumerate(term)))
    return value, _tangent(terms, value)


@frule(adj.einsum_bars)
def einsum_bars_frule(primals, tangents, **kwargs):
    (g, args), (g_dot, args_dot) = primals, _padded(tangents, 2)
    value = adj.einsum_bars(g, args, **kwargs)
    terms = adj.einsum_bars(g_dot, args, **kwargs) if g_dot is not None else None
    for p in adj.einsum_operands(args) if args_dot is not None else ():
        if args_dot[p] is not None:
            term = adj.einsum_bars(g, (*args[:p], args_dot[p], *args[p + 1:]), **kwargs)
            terms = adj.add(terms, tuple(None if j == p else t for j, t in enumerate(term)))
    return value, _tangent(terms, value)


# ---- pointwise ----------------------------------------------------------------------------------------

linear(adj.unbroadcast_float)


@elementwise(adj.divide_or_zero)  # n / d, 0 where d is: so are both partials
def d_divide_or_zero(ans, numerator, denominator):
    return adj.divide_or_zero(1.0, denominator), adj.divide_or_zero(-ans, denominator)


@elementwise(adj.sinc_derivative)
def d_sinc_derivative(ans, x):
    return _sinc_second_derivative(x)


@elementwise(adj.digamma)
def d_digamma(ans, x):
    return _trigamma(x)


def _sinc_second_derivative(x):
    """sinc''(x) = -pi^2 sinc(x) - 2 sinc'(x) / x, and -pi^2 / 3 at 0; `sinc_derivative` has the
    slope to double precision near 0, where it is x times a series, so dividing by x loses nothing."""
    wide = np.asarray(x, dtype=np.result_type(x, np.float64))
    at_zero = wide == 0
    over_x = np.where(at_zero, -np.pi ** 2 / 3, adj.sinc_derivative(wide) / np.where(at_zero, 1, wide))
    curvature = -np.pi ** 2 * np.sinc(wide) - 2 * over_x
    precision = getattr(x, "dtype", wide.dtype)
    return curvature.astype(precision if precision.kind in "fc" else wide.dtype)[()]


# psi_1(x) ~ 1/x + 1/2x^2 + sum_k B_2k / x^(2k + 1): from x = 10 on, the next term is below 6e-17.
_TRIGAMMA_SERIES = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510]


def _trigamma(x) -> float:
    """psi_1(x), digamma's derivative: as `digamma` computes, by reflection below 1/2
    (psi_1(1 - x) + psi_1(x) = pi^2 / sin^2(pi x)), the recurrence psi_1(x) = psi_1(x + 1) + 1 / x^2
    up to 10, and the asymptotic series there."""
    x = float(x)
    if x < 0.5:
        return (math.pi / math.sin(math.pi * (x - round(x)))) ** 2 - _trigamma(1 - x)
    shift = 0.0
    while x < 10.0:
        shift += 1 / (x * x)
        x += 1
    t, series = 1 / (x * x), 0.0
    for coefficient in reversed(_TRIGAMMA_SERIES):
        series = t * (coefficient + series)
    return shift + 1 / x + 0.5 * t + series / x


# ---- reductions, scans, averages and norms ----------------------------------------------------------

linear(adj.zero_at_nan, adj.cumsum_bar)
linear(adj.ptp_bar)  # `x` says which entries are extreme


@frule(adj.var_bar)  # g * 2 conj(x - mean) / (n - ddof): linear in g and in x on its own
def var_bar_frule(primals, tangents, **kwargs):
    value = adj.var_bar(*primals, **kwargs)
    return value, _tangent(_terms(adj.var_bar, primals, tangents, kwargs, operands=(0, 1)), value)


# nanvar_bar is linear in x too, for its NaNs where they are: x's tangent moves the other entries.
@frule(adj.nanvar_bar)
def nanvar_bar_frule(primals, tangents, **kwargs):
    value = adj.nanvar_bar(*primals, **kwargs)
    tangent = _terms(adj.nanvar_bar, primals, tangents, kwargs)
    (g, x, *rest), (_, x_dot, *_) = primals, _padded(tangents, len(primals))
    if value is not None and x_dot is not None:
        present = np.where(np.isnan(from_sequence(x)), np.nan, from_sequence(x_dot))
        tangent = adj.add(tangent, as_sequence(adj.nanvar_bar(g, present, *rest, **kwargs), x))
    return value, _tangent(tangent, value)


# cumprod_bar: x_bar_i = (x_0 ... x_(i-1)) s_i with s_i = g_i + x_(i+1) s_(i+1), a product of two
# scans: each one's tangent is a scan of the same kind.
@frule(adj.cumprod_bar)
def cumprod_bar_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.cumprod_bar, primals, tangents, kwargs)
    value = adj.cumprod_bar(*primals, **kwargs)
    if value is None or dots.x is None:
        return value, _tangent(_terms(adj.cumprod_bar, primals, tangents, kwargs), value)
    x, axis = from_sequence(args.x), args.axis
    line, g = _scanned(args.g, axis, args.include_initial)
    along = [np.moveaxis(np.ravel(v) if axis is None else np.asarray(v), line, -1) for v in (x, from_sequence(dots.x))]
    (values, values_dot), g = along, np.moveaxis(g, line, -1)
    g_dot = np.zeros_like(g) if dots.g is None else np.moveaxis(_scanned(dots.g, axis, args.include_initial)[1], line, -1)
    before, before_dot = _prefix_products(values, values_dot)
    after, after_dot = (np.concatenate([v[..., 1:], np.zeros_like(v[..., :1])], axis=-1) for v in (values, values_dot))
    s = _suffix_scan(g, after)
    s_next = np.concatenate([s[..., 1:], np.zeros_like(s[..., :1])], axis=-1)
    s_dot = _suffix_scan(g_dot + after_dot * s_next, after)
    bar_dot = np.moveaxis(before_dot * s + before * s_dot, -1, line)
    return value, _tangent(_as_cotangent(np.reshape(bar_dot, np.shape(x)), x, args.x), value)


def _prefix_products(v, v_dot):
    """The products of the entries before each, along the last axis (1 first), and their tangents:
    `p_k = p_(k-1) v_(k-1)` has `p_dot_k = v_(k-1) p_dot_(k-1) + p_(k-1) v_dot_(k-1)`, a linear
    recurrence, run backwards by `_suffix_scan` on the flipped axis. Divides by no entry."""
    ones = np.ones_like(v[..., :1])
    w, w_dot = np.concatenate([ones, v[..., :-1]], axis=-1), np.concatenate([0 * ones, v_dot[..., :-1]], axis=-1)
    p = np.cumprod(w, axis=-1)
    b = np.concatenate([0 * ones, p[..., :-1] * w_dot[..., 1:]], axis=-1)
    return p, np.flip(_suffix_scan(np.flip(b, -1), np.flip(w, -1)), -1)


# average_bar: g w / sum(w), whatever `a` is; the weights' tangent moves w and sum(w).
@frule(adj.average_bar)
def average_bar_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.average_bar, primals, tangents, kwargs)
    value = adj.average_bar(*primals, **kwargs)
    tangent = _terms(adj.average_bar, primals, tangents, kwargs)
    if value is not None and args.weights is not None and dots.weights is not None:
        x, axes, w, total = _weighing(args.a, args.weights, args.axis)
        _, _, w_dot, total_dot = _weighing(args.a, dots.weights, args.axis)
        g_average = spread(_average_parts(args.g, args.returned)[0], axes, args.keepdims)
        tangent = adj.add(tangent, _as_cotangent(g_average * (w_dot - w * total_dot / total) / total, x, args.a))
    return value, _tangent(tangent, value)


# average_weights_bar: g (a - average) / sum(w) (+ the sum's cotangent), linear in g and in `a`.
# Along the weights, only the average and the sum move, one number per slice: that is the same
# helper given, for the average, g times -sum(w)'s relative change, and for the sum, g times
# -average's change over sum(w).
@frule(adj.average_weights_bar)
def average_weights_bar_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.average_weights_bar, primals, tangents, kwargs)
    value = adj.average_weights_bar(*primals, **kwargs)
    tangent = _terms(adj.average_weights_bar, primals, tangents, kwargs)
    if value is None:
        return value, None
    g_average, _ = _average_parts(args.g, args.returned)
    rest = dict(axis=args.axis, returned=True, keepdims=args.keepdims)
    if dots.a is not None:
        tangent = adj.add(tangent, adj.average_weights_bar((g_average, None), dots.a, args.weights, **rest))
    if dots.weights is not None:
        x, axes, w, total = _weighing(args.a, args.weights, args.axis)
        _, _, w_dot, total_dot = _weighing(args.a, dots.weights, args.axis)
        average = np.sum(x * w, axis=axes, keepdims=True) / total
        average_dot = (np.sum(x * w_dot, axis=axes, keepdims=True) - average * total_dot) / total

        def per_slice(v):  # in g's shape
            return v if args.keepdims else np.squeeze(v, axis=axes)

        g_parts = (g_average * per_slice(-total_dot / total), g_average * per_slice(-average_dot / total))
        tangent = adj.add(tangent, adj.average_weights_bar(g_parts, args.a, args.weights, **rest))
    return value, _tangent(tangent, value)


# norm_bar: g times the norm's partial, a function of x and of the norm `ans`.
@frule(adj.norm_bar)
def norm_bar_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.norm_bar, primals, tangents, kwargs)
    value = adj.norm_bar(*primals, **kwargs)
    tangent = _terms(adj.norm_bar, primals, tangents, kwargs)
    if value is not None and (dots.x is not None or dots.ans is not None):
        x = from_sequence(args.x)
        x_dot = np.zeros_like(x) if dots.x is None else np.asarray(from_sequence(dots.x), dtype=x.dtype)
        axes = reduced_axes(args.axis, np.ndim(x))
        g, ans = spread(args.g, axes, args.keepdims), spread(args.ans, axes, args.keepdims)
        ans_dot = 0.0 if dots.ans is None else spread(dots.ans, axes, args.keepdims)
        partial_dot = _norm_partial_tangent(x, x_dot, ans, ans_dot, args.ord, args.axis, axes)
        tangent = adj.add(tangent, _as_cotangent(g * partial_dot, x, args.x))
    return value, _tangent(tangent, value)


def _norm_partial_tangent(x, x_dot, ans, ans_dot, ord, axis, axes):
    """The tangent of the partial `norm_bar` multiplies `g` by (0 where the partial is)."""
    matrix = len(axes) == 2 and not (axis is None and ord is None)
    if ord is None or (ord == "fro" and matrix) or (ord == 2 and not matrix):  # conj(x) / ans
        return adj.divide_or_zero(np.conj(x_dot), ans) - adj.divide_or_zero(np.conj(x) * ans_dot, ans ** 2)
    if matrix and ord in ("nuc", 2, -2):
        return np.moveaxis(np.conj(_singular_tangent(*(np.moveaxis(a, axes, (-2, -1)) for a in (x, x_dot)), ord)), (-2, -1), axes)
    if matrix:  # ord 1, -1, inf, -inf: the phase, at the largest or smallest sums of |x|
        summed, across = (axes[0], axes[1]) if ord in (1, -1) else (axes[1], axes[0])
        return _phase_tangent(x, x_dot) * _shared(np.sum(np.abs(x), axis=summed, keepdims=True), ord, across)
    if ord == 0:
        return np.zeros_like(x_dot)
    if ord == 1:
        return _phase_tangent(x, x_dot)
    if ord in (np.inf, -np.inf):
        return _phase_tangent(x, x_dot) * _shared(np.abs(x), ord, axes[0])
    # phase(x) r^(p - 1), r = |x| / ans, both 0 where |x| is
    r = adj.divide_or_zero(np.abs(x), ans)
    r_dot = adj.divide_or_zero(np.real(_phase(x) * x_dot) - r * ans_dot, ans)
    positive, safe = r > 0, np.where(r > 0, r, 1)
    factor, factor_dot = np.where(positive, safe ** (ord - 1), 0), np.where(positive, (ord - 1) * safe ** (ord - 2) * r_dot, 0)
    return _phase_tangent(x, x_dot) * factor + _phase(x) * factor_dot


def _phase_tangent(x, x_dot):
    """The tangent of `_phase(x)`, conj(x) / |x|: 0 for real `x` (its sign), and 0 where x is."""
    if not np.iscomplexobj(x):
        return np.zeros_like(x_dot)
    magnitude = np.abs(x)
    magnitude_dot = np.real(_phase(x) * x_dot)
    return adj.divide_or_zero(np.conj(x_dot) - _phase(x) * magnitude_dot, magnitude)


def _singular_tangent(x, x_dot, ord):
    """The tangent of `u v^H` for matrices x = U S V^H (thin, full rank): of all singular pairs
    (`ord="nuc"`, the polar factor), or of the largest (2) or smallest (-2), a simple one.

    With dP = U^H dX V: the polar factor moves by U ((dP - dP^H) / (s_i + s_j)) V^H plus the
    parts of dX outside the ranges of U and V, over S. One pair i moves by sum over j != i of
    c_j u_j v_i^H + b_j u_i v_j^H, with c_j = (s_j conj(dP_ij) + s_i dP_ji) / (s_i^2 - s_j^2) and
    b_j = (s_i dP_ij + s_j conj(dP_ji)) / (s_i^2 - s_j^2), plus i Im(dP_ii) / s_i u_i v_i^H and the
    same outside parts (the first-order change of the eigenprojector v_i v_i^H of X^H X, times X / s_i).
    """
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    uh, v = np.conj(np.swapaxes(u, -1, -2)), np.conj(np.swapaxes(vh, -1, -2))
    dp = uh @ x_dot @ v
    outside_v = x_dot @ v - u @ dp  # (I - U U^H) dX V
    outside_u = uh @ x_dot - dp @ vh  # U^H dX (I - V V^H)
    if ord == "nuc":
        skew = (dp - np.conj(np.swapaxes(dp, -1, -2))) / (s[..., :, None] + s[..., None, :])
        return u @ skew @ vh + (outside_v / s[..., None, :]) @ vh + u @ (outside_u / s[..., :, None])
    i = 0 if ord == 2 else -1
    si = s[..., i, None]
    gap = si ** 2 - s ** 2
    gap = np.where(gap == 0, np.inf, gap)  # j = i: no term
    row, column = dp[..., i, :], dp[..., :, i]
    c = (s * np.conj(row) + si * column) / gap  # of u_j v_i^H
    b = (si * row + s * np.conj(column)) / gap  # of u_i v_j^H
    ui, vhi = u[..., :, i, None], vh[..., i, None, :]
    turn = 1j * np.imag(dp[..., i, i, None, None]) if np.iscomplexobj(dp) else 0
    left = u @ c[..., :, None] + (outside_v[..., :, i, None] + turn * ui) / si[..., None]
    right = b[..., None, :] @ vh + outside_u[..., i, None, :] / si[..., None]
    return left @ vhi + ui @ right


# logsumexp: g times the weights b exp(a - ans), which move with a, ans and b (a's cotangent only).
@frule(adj.logsumexp_bar)
def logsumexp_bar_frule(primals, tangents, **kwargs):
    return _logsumexp_frule(adj.logsumexp_bar, primals, tangents, kwargs)


@frule(adj.logsumexp_b_bar)
def logsumexp_b_bar_frule(primals, tangents, **kwargs):
    return _logsumexp_frule(adj.logsumexp_b_bar, primals, tangents, kwargs)


def _logsumexp_frule(helper, primals, tangents, kwargs):
    args, dots = _arguments(helper, primals, tangents, kwargs)
    value = helper(*primals, **kwargs)
    tangent = _terms(helper, primals, tangents, kwargs)
    of_a = helper is adj.logsumexp_bar
    if value is None or dots.a is None and dots.ans is None and (dots.b is None or not of_a):
        return value, _tangent(tangent, value)
    a, b = from_sequence(args.a), from_sequence(args.b)
    shares = _exp_shares(args.g, a, args.ans, args.axis, b, args.keepdims)
    axes = reduced_axes(args.axis, shares.ndim)
    a_dot = 0.0 if dots.a is None else from_sequence(dots.a)
    ans_dot = 0.0 if dots.ans is None else spread(dots.ans, axes, args.keepdims)
    shares_dot = shares * (a_dot - ans_dot)
    if not of_a:
        return value, _tangent(adj.add(tangent, _as_cotangent(sum_to_shape(shares_dot, np.shape(b)), b, args.b)), value)
    bar_dot = shares_dot if b is None else shares_dot * b
    if dots.b is not None:
        bar_dot = bar_dot + shares * from_sequence(dots.b)
    return value, _tangent(adj.add(tangent, _as_cotangent(sum_to_shape(bar_dot, np.shape(a)), a, args.a)), value)


# ---- shapes and spacings ----------------------------------------------------------------------------

linear(adj.atleast_bar, adj.diff_bar)
linear(adj.diff_with_ends, operands=(0, 3, 4))  # the ends are joined: linear in them with `a`
non_differentiable(adj.rollaxis_destination, adj.gradient_spacings, adj.linspace_fractions)


# gradient_bars: f gets D^T(g_k) / h_k and each spacing -sum(g_k ans_k) / h_k. Along h, both are g_k
# scaled by -h_dot_k / h_k; along `ans`, only the spacings move. The spacings' tangents are those
# of `spacings`, spread over the axes as `gradient_spacings` spreads them into `along`.
@frule(adj.gradient_bars)
def gradient_bars_frule(primals, tangents, **kwargs):
    args, dots = _arguments(adj.gradient_bars, primals, tangents, kwargs)
    value = adj.gradient_bars(*primals, **kwargs)
    several, spacings = len(args.along) > 1, args.spacings
    g, ans, g_dot, ans_dot = (
        (v if several else (v,)) if v is not None else (None,) * len(args.along)
        for v in (args.g, args.ans, dots.g, dots.ans)
    )
    spacings_dot = dots.spacings or (None,) * len(spacings)
    h_dots = spacings_dot if len(spacings) > 1 else (spacings_dot[0] if spacings else None,) * len(args.along)
    scaled = tuple(
        adj.add(gd, None if gk is None or hd is None else -gk * (hd / h))
        for (_, h), gk, gd, hd in zip(args.along, g, g_dot, h_dots)
    )
    moved = adj.gradient_bars(scaled if several else scaled[0], args.f, spacings, args.along, args.ans, args.edge_order)
    by_ans = [
        0.0 if gk is None or ad is None else -np.sum(gk * ad) / h for (_, h), gk, ad in zip(args.along, g, ans_dot)
    ]
    by_ans = [sum(by_ans)] if len(spacings) == 1 else by_ans
    tangent = (moved[0], *(None if m is None else m + a for m, a in zip(moved[1:], by_ans)))
    return value, _tangent(tangent, value)


# ---- assembly, selections, spectra -----------------------------------------------------------------

linear(adj.as_column, adj.unconcatenate, adj.unstack, adj.unblock, adj.unsplit, adj.untile, adj.unrepeat)
linear(adj.copies_bar)
non_differentiable(adj.entry_labels, adj.pad_labels)
linear(adj.undiagonal, adj.diag_bar, adj.untake, adj.untake_along_axis, adj.unselect, adj.unselect_default)
linear(adj.unpartition)  # `a` and `ans` give the ranks: constant where they are distinct
linear(adj.unresize, adj.hermitian_fold)
non_differentiable(adj.fft_axes, adj.fft_lengths)


# ---- shared -----------------------------------------------------------------------------------------

def _arguments(helper, primals, tangents, kwargs):
    """A call's arguments by name, with defaults, and their tangents by name (None for keywords)."""
    signature = _signature(helper)
    bound = signature.bind(*primals, **kwargs)
    bound.apply_defaults()
    dots = dict.fromkeys(signature.parameters)
    dots.update(zip(signature.parameters, tangents))
    return types.SimpleNamespace(**bound.arguments), types.SimpleNamespace(**dots)


_signature = functools.cache(inspect.signature)


def _terms(helper, primals, tangents, kwargs, operands=(0,)):
    """The sum over `operands` that have a tangent of `helper` with that operand replaced by its
    tangent (`adj.add`, so containers add item by item): the tangent of a helper linear in each
    of them, where the others are held fixed. None if none has a tangent."""
    total = None
    for i, t in enumerate(_padded(tangents, len(primals))):
        if i in operands and t is not None:
            total = adj.add(total, helper(*primals[:i], t, *primals[i + 1:], **kwargs))
    return total


def _tangent(tangent, value):
    return adj.tangent_like(tangent, value) if value is not None else None


def _padded(tangents, count) -> tuple:
    tangents = tuple(tangents)[:count]
    return tangents + (None,) * (count - len(tangents))
