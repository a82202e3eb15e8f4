"""Forward rules of the runtime helpers of reductions, scans, averages and norms that generated
pullback code calls (`adj.var_bar`, `adj.norm_bar`...), so that forward mode runs over a
gradient: Hessian-vector products. The other helpers' rules, and the pieces these share
(`named_arguments`, `linear_terms`...), are in `pullbacks`.

A reduction's cotangent spreads `g` back over the reduced axes, linear in `g`; most also depend
on a primal some other way (a variance's cotangent on the mean, an average's on the sum of
weights, a norm's on the norm): their rules are the helper applied to `g`'s tangent plus the
derivative of what multiplies `g`, made of the pieces the helper is made of
(`adjoint.runtime.reducing`) and their tangents (`adjoint.runtime.reducing_tangents`). A scan's
cotangent is a suffix scan, whose tangent is a scan of the same kind: no entry is divided by.

Arguments that only choose entries (the extremes of `ptp_bar`, a norm's ties, NaNs) are
constant where the choice is: the tangent keeps the choice the primal made.
"""

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..runtime.cotangents import as_sequence, from_sequence, reduced_axes, spread, sum_to_shape
from ..runtime.reducing import as_cotangent, average_parts, exp_shares, scanned, suffix_scan, weighing
from ..runtime.reducing_tangents import norm_partial_tangent, prefix_products
from .pullbacks import as_tangent, linear_terms, named_arguments, padded_tangents

# ---- reductions, scans, averages and norms ----------------------------------------------------------

linear(adj.zero_at_nan, adj.cumsum_bar)
linear(adj.ptp_bar)  # `x` says which entries are extreme


@frule(adj.var_bar)  # g * 2 conj(x - mean) / (n - ddof): linear in g and in x on its own
def var_bar_frule(primals, tangents, **kwargs):
    value = adj.var_bar(*primals, **kwargs)
    return value, as_tangent(linear_terms(adj.var_bar, primals, tangents, kwargs, operands=(0, 1)), value)


# nanvar_bar is linear in x too, for its NaNs where they are: x's tangent moves the other entries.
@frule(adj.nanvar_bar)
def nanvar_bar_frule(primals, tangents, **kwargs):
    value = adj.nanvar_bar(*primals, **kwargs)
    tangent = linear_terms(adj.nanvar_bar, primals, tangents, kwargs)
    (g, x, *rest), (_, x_dot, *_) = primals, padded_tangents(tangents, len(primals))
    if value is not None and x_dot is not None:
        present = np.where(np.isnan(from_sequence(x)), np.nan, from_sequence(x_dot))
        tangent = adj.add(tangent, as_sequence(adj.nanvar_bar(g, present, *rest, **kwargs), x))
    return value, as_tangent(tangent, value)


# cumprod_bar: x_bar_i = (x_0 ... x_(i-1)) s_i with s_i = g_i + x_(i+1) s_(i+1), a product of two
# scans: each one's tangent is a scan of the same kind.
@frule(adj.cumprod_bar)
def cumprod_bar_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.cumprod_bar, primals, tangents, kwargs)
    value = adj.cumprod_bar(*primals, **kwargs)
    if value is None or dots.x is None:
        return value, as_tangent(linear_terms(adj.cumprod_bar, primals, tangents, kwargs), value)
    x, axis = from_sequence(args.x), args.axis
    line, g = scanned(args.g, axis, args.include_initial)
    along = [np.moveaxis(np.ravel(v) if axis is None else np.asarray(v), line, -1) for v in (x, from_sequence(dots.x))]
    (values, values_dot), g = along, np.moveaxis(g, line, -1)
    g_dot = np.zeros_like(g) if dots.g is None else np.moveaxis(scanned(dots.g, axis, args.include_initial)[1], line, -1)
    before, before_dot = prefix_products(values, values_dot)
    after, after_dot = (np.concatenate([v[..., 1:], np.zeros_like(v[..., :1])], axis=-1) for v in (values, values_dot))
    s = suffix_scan(g, after)
    s_next = np.concatenate([s[..., 1:], np.zeros_like(s[..., :1])], axis=-1)
    s_dot = suffix_scan(g_dot + after_dot * s_next, after)
    bar_dot = np.moveaxis(before_dot * s + before * s_dot, -1, line)
    return value, as_tangent(as_cotangent(np.reshape(bar_dot, np.shape(x)), x, args.x), value)


# average_bar: g w / sum(w), whatever `a` is; the weights' tangent moves w and sum(w).
@frule(adj.average_bar)
def average_bar_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.average_bar, primals, tangents, kwargs)
    value = adj.average_bar(*primals, **kwargs)
    tangent = linear_terms(adj.average_bar, primals, tangents, kwargs)
    if value is not None and args.weights is not None and dots.weights is not None:
        x, axes, w, total = weighing(args.a, args.weights, args.axis)
        _, _, w_dot, total_dot = weighing(args.a, dots.weights, args.axis)
        g_average = spread(average_parts(args.g, args.returned)[0], axes, args.keepdims)
        tangent = adj.add(tangent, as_cotangent(g_average * (w_dot - w * total_dot / total) / total, x, args.a))
    return value, as_tangent(tangent, value)


# average_weights_bar: g (a - average) / sum(w) (+ the sum's cotangent), linear in g and in `a`.
# Along the weights, only the average and the sum move, one number per slice: that is the same
# helper given, for the average, g times -sum(w)'s relative change, and for the sum, g times
# -average's change over sum(w).
@frule(adj.average_weights_bar)
def average_weights_bar_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.average_weights_bar, primals, tangents, kwargs)
    value = adj.average_weights_bar(*primals, **kwargs)
    tangent = linear_terms(adj.average_weights_bar, primals, tangents, kwargs)
    if value is None:
        return value, None
    g_average, _ = average_parts(args.g, args.returned)
    rest = dict(axis=args.axis, returned=True, keepdims=args.keepdims)
    if dots.a is not None:
        tangent = adj.add(tangent, adj.average_weights_bar((g_average, None), dots.a, args.weights, **rest))
    if dots.weights is not None:
        x, axes, w, total = weighing(args.a, args.weights, args.axis)
        _, _, w_dot, total_dot = weighing(args.a, dots.weights, args.axis)
        average = np.sum(x * w, axis=axes, keepdims=True) / total
        average_dot = (np.sum(x * w_dot, axis=axes, keepdims=True) - average * total_dot) / total

        def per_slice(v):  # in g's shape
            return v if args.keepdims else np.squeeze(v, axis=axes)

        g_parts = (g_average * per_slice(-total_dot / total), g_average * per_slice(-average_dot / total))
        tangent = adj.add(tangent, adj.average_weights_bar(g_parts, args.a, args.weights, **rest))
    return value, as_tangent(tangent, value)


# norm_bar: g times the norm's partial, a function of x and of the norm `ans`.
@frule(adj.norm_bar)
def norm_bar_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.norm_bar, primals, tangents, kwargs)
    value = adj.norm_bar(*primals, **kwargs)
    tangent = linear_terms(adj.norm_bar, primals, tangents, kwargs)
    if value is not None and (dots.x is not None or dots.ans is not None):
        x = from_sequence(args.x)
        x_dot = np.zeros_like(x) if dots.x is None else np.asarray(from_sequence(dots.x), dtype=x.dtype)
        axes = reduced_axes(args.axis, np.ndim(x))
        g, ans = spread(args.g, axes, args.keepdims), spread(args.ans, axes, args.keepdims)
        ans_dot = 0.0 if dots.ans is None else spread(dots.ans, axes, args.keepdims)
        partial_dot = norm_partial_tangent(x, x_dot, ans, ans_dot, args.ord, args.axis, axes)
        tangent = adj.add(tangent, as_cotangent(g * partial_dot, x, args.x))
    return value, as_tangent(tangent, value)


# logsumexp: g times the weights b exp(a - ans), which move with a, ans and b (a's cotangent only).
@frule(adj.logsumexp_bar)
def logsumexp_bar_frule(primals, tangents, **kwargs):
    return _logsumexp_frule(adj.logsumexp_bar, primals, tangents, kwargs)


@frule(adj.logsumexp_b_bar)
def logsumexp_b_bar_frule(primals, tangents, **kwargs):
    return _logsumexp_frule(adj.logsumexp_b_bar, primals, tangents, kwargs)


def _logsumexp_frule(helper, primals, tangents, kwargs):
    args, dots = named_arguments(helper, primals, tangents, kwargs)
    value = helper(*primals, **kwargs)
    tangent = linear_terms(helper, primals, tangents, kwargs)
    of_a = helper is adj.logsumexp_bar
    if value is None or dots.a is None and dots.ans is None and (dots.b is None or not of_a):
        return value, as_tangent(tangent, value)
    a, b = from_sequence(args.a), from_sequence(args.b)
    shares = exp_shares(args.g, a, args.ans, args.axis, b, args.keepdims)
    axes = reduced_axes(args.axis, shares.ndim)
    a_dot = 0.0 if dots.a is None else from_sequence(dots.a)
    ans_dot = 0.0 if dots.ans is None else spread(dots.ans, axes, args.keepdims)
    shares_dot = shares * (a_dot - ans_dot)
    if not of_a:
        return value, as_tangent(adj.add(tangent, as_cotangent(sum_to_shape(shares_dot, np.shape(b)), b, args.b)), value)
    bar_dot = shares_dot if b is None else shares_dot * b
    if dots.b is not None:
        bar_dot = bar_dot + shares * from_sequence(dots.b)
    return value, as_tangent(adj.add(tangent, as_cotangent(sum_to_shape(bar_dot, np.shape(a)), a, args.a)), value)
