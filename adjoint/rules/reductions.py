"""Reductions and scans: the cotangent of a reduced value is spread back over the reduced axes.

Conventions of the family:

- Each rule serves the array method of the same name too (`x.sum(axis=0)`), whose parameters
  after the array line up with the function's. NumPy 2 has no `x.ptp()`.
- Parameters NumPy takes after `out` (`ddof`, `keepdims`) are keyword-only, so a positional
  `out` is not misread; `out=`, `where=`, `initial=` are not in any signature, and refused.
- A list or tuple operand (`np.sum(losses)`) is reduced as the array it makes, and gets one
  cotangent per item (`sequences=True`).
- Ties (max, min, ptp) share the cotangent equally, as in autograd. The NaN-ignoring functions
  (`nansum`...) give NaN entries a zero cotangent.
- `dtype=` changes the value's type only: the cotangent has the input's dtype.

Forward rules: sums, means and running sums are linear. Each output of any other reduction
depends on its slice alone, so its tangent pairs the partials (the cotangent its pullback gives
for `g = 1`) with the tangent over the slice: `sum(partials * t)`, the real part for a real value.
Ties, NaN entries and zeros are thus treated as in the pullback.
"""

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear, lookup
from ..registry import rrule


def unary_frule(*primitives):
    """Register `jvp(t, a, ans, *args, **kwargs) -> tangent` as the forward rule of `primitives`,
    functions of their first argument alone (the others are held constant): `ans` is the value,
    computed by the first primitive (an array method's function, which takes NumPy scalars too);
    `a` the argument and `t` its tangent, a list or tuple read as the array its items make. `jvp`
    is called only for an `a` of floats with a tangent; the tangent is then made `ans`'s
    (`adj.tangent_like`), else zeros."""

    def register(jvp):
        def forward(primals, tangents, **kwargs):
            value = primitives[0](*primals, **kwargs)
            a, t = _as_array(primals[0]), tangents[0] if tangents else None
            if t is None or not adj.is_differentiable(a):
                return value, adj.zero_tangent(value)
            t = _as_array(adj.tangent_or_zeros(t, primals[0]))
            return value, adj.tangent_like(jvp(t, a, value, *primals[1:], **kwargs), value)

        forward.__name__ = forward.__qualname__ = jvp.__name__.replace("_jvp", "_frule")
        frule(*primitives)(forward)
        return jvp

    return register


def _as_array(x):
    return np.asarray(x) if type(x) is list or type(x) is tuple else x


def _method(method, function):
    """Give an array method its function's linear rule: it is called with NumPy scalars too
    (`np.float64(2.0).sum()`), which `np.ndarray.sum` itself refuses."""
    frule(method)(lookup(function).frule)

# ---- sums and means -----------------------------------------------------------------------------

@rrule(np.sum, np.ndarray.sum, sequences=True)
def sum_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def sum_pullback(g):
        return (adj.unreduce(g, a, axis=axis, keepdims=keepdims),)

    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims), sum_pullback


linear(np.sum)
_method(np.ndarray.sum, np.sum)


@rrule(np.mean, np.ndarray.mean, sequences=True)
def mean_rrule(a, axis=None, dtype=None, *, keepdims=False):
    ans = np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean_pullback(g):
        return (adj.unreduce(g * (np.size(ans) / np.size(a)), a, axis=axis, keepdims=keepdims),)

    return ans, mean_pullback


linear(np.mean)
_method(np.ndarray.mean, np.mean)


@rrule(np.nansum, sequences=True)
def nansum_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nansum_pullback(g):
        return (adj.zero_at_nan(adj.unreduce(g, a, axis=axis, keepdims=keepdims), a),)

    return np.nansum(a, axis=axis, dtype=dtype, keepdims=keepdims), nansum_pullback


@unary_frule(np.nansum)
def nansum_jvp(t, a, ans, axis=None, dtype=None, *, keepdims=False):
    return np.sum(adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims)


# Each entry that is not NaN weighs 1 / (the count of such entries in its slice).
@rrule(np.nanmean, sequences=True)
def nanmean_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nanmean_pullback(g):
        count = np.maximum(np.count_nonzero(~np.isnan(a), axis=axis, keepdims=keepdims), 1)
        return (adj.zero_at_nan(adj.unreduce(g / count, a, axis=axis, keepdims=keepdims), a),)

    return np.nanmean(a, axis=axis, dtype=dtype, keepdims=keepdims), nanmean_pullback


@unary_frule(np.nanmean)
def nanmean_jvp(t, a, ans, axis=None, dtype=None, *, keepdims=False):
    count = np.maximum(np.count_nonzero(~np.isnan(a), axis=axis, keepdims=keepdims), 1)
    return np.sum(adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims) / count


# `np.average`: `sum(w a) / sum(w)`. `weights` get a cotangent when passed by position, like
# every argument (`np.average(a, 0, w)`); `returned=True` also returns the sum of the weights.
@rrule(np.average, sequences=True)
def average_rrule(a, axis=None, weights=None, returned=False, *, keepdims=False):
    def average_pullback(g):
        return (
            adj.average_bar(g, a, weights, axis=axis, returned=returned, keepdims=keepdims),
            None,
            adj.average_weights_bar(g, a, weights, axis=axis, returned=returned, keepdims=keepdims),
        )

    return np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims), average_pullback


@frule(np.average)
def average_frule(primals, tangents, **kwargs):
    def average_jvp(a, axis=None, weights=None, returned=False, *, keepdims=False):
        ans = np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)
        t_a, _, t_weights = (tuple(tangents) + (None,) * 3)[:3]
        tangent = adj.average_tangent(t_a, t_weights, a, weights, axis=axis, returned=returned, keepdims=keepdims)
        return ans, adj.tangent_like(tangent, ans)

    return average_jvp(*primals, **kwargs)


# ---- extremes -----------------------------------------------------------------------------------

@rrule(np.max, np.amax, np.ndarray.max, sequences=True)
def max_rrule(a, axis=None, *, keepdims=False):
    ans = np.max(a, axis=axis, keepdims=keepdims)

    def max_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, max_pullback


# The tangent at the extremum (ties: the mean of theirs, as the cotangent is shared), for max and min.
@unary_frule(np.max, np.amax, np.ndarray.max)
def extremum_jvp(t, a, ans, axis=None, *, keepdims=False):
    return np.sum(adj.unreduce_chosen(1.0, a, ans, axis=axis, keepdims=keepdims) * t, axis=axis, keepdims=keepdims)


@rrule(np.min, np.amin, np.ndarray.min, sequences=True)
def min_rrule(a, axis=None, *, keepdims=False):
    ans = np.min(a, axis=axis, keepdims=keepdims)

    def min_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, min_pullback


unary_frule(np.min, np.amin, np.ndarray.min)(extremum_jvp)


# NaN entries never equal the extremum, so they get nothing; an all-NaN slice gets zeros.
@rrule(np.nanmax, sequences=True)
def nanmax_rrule(a, axis=None, *, keepdims=False):
    ans = np.nanmax(a, axis=axis, keepdims=keepdims)

    def nanmax_pullback(g):
        return (adj.zero_at_nan(adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims), a),)

    return ans, nanmax_pullback


@unary_frule(np.nanmax)
def nan_extremum_jvp(t, a, ans, axis=None, *, keepdims=False):
    chosen = adj.unreduce_chosen(1.0, a, ans, axis=axis, keepdims=keepdims)  # never a NaN entry
    return np.sum(chosen * adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims)


@rrule(np.nanmin, sequences=True)
def nanmin_rrule(a, axis=None, *, keepdims=False):
    ans = np.nanmin(a, axis=axis, keepdims=keepdims)

    def nanmin_pullback(g):
        return (adj.zero_at_nan(adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims), a),)

    return ans, nanmin_pullback


unary_frule(np.nanmin)(nan_extremum_jvp)


@rrule(np.ptp, sequences=True)
def ptp_rrule(a, axis=None, *, keepdims=False):
    def ptp_pullback(g):
        return (adj.ptp_bar(g, a, axis=axis, keepdims=keepdims),)

    return np.ptp(a, axis=axis, keepdims=keepdims), ptp_pullback


@unary_frule(np.ptp)
def ptp_jvp(t, a, ans, axis=None, *, keepdims=False):
    return np.sum(adj.ptp_bar(1.0, a, axis=axis, keepdims=keepdims) * t, axis=axis, keepdims=keepdims)


# ---- products -----------------------------------------------------------------------------------

# Exact where entries are zero: each entry's cotangent is the product of the others.
@rrule(np.prod, np.ndarray.prod, sequences=True)
def prod_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def prod_pullback(g):
        return (adj.prod_bar(g, a, axis=axis, keepdims=keepdims),)

    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims), prod_pullback


@unary_frule(np.prod, np.ndarray.prod)
def prod_jvp(t, a, ans, axis=None, dtype=None, *, keepdims=False):
    return np.sum(adj.prod_bar(1.0, a, axis=axis, keepdims=keepdims) * t, axis=axis, keepdims=keepdims)


# NaN entries count as 1 in the product, and get zero.
@rrule(np.nanprod, sequences=True)
def nanprod_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nanprod_pullback(g):
        ones_at_nan = np.where(np.isnan(a), 1, a)
        return (adj.zero_at_nan(adj.prod_bar(g, ones_at_nan, axis=axis, keepdims=keepdims), a),)

    return np.nanprod(a, axis=axis, dtype=dtype, keepdims=keepdims), nanprod_pullback


@unary_frule(np.nanprod)
def nanprod_jvp(t, a, ans, axis=None, dtype=None, *, keepdims=False):
    others = adj.prod_bar(1.0, np.where(np.isnan(a), 1, a), axis=axis, keepdims=keepdims)
    return np.sum(others * adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims)


# ---- moments ------------------------------------------------------------------------------------

# var = mean(|a - mean(a)|^2) * n / (n - ddof); std = sqrt(var), so std's cotangent is var's for
# g / (2 std), and 0 for a constant slice (std 0), a subgradient.
@rrule(np.var, np.ndarray.var, sequences=True)
def var_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    def var_pullback(g):
        return (adj.var_bar(g, a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims), var_pullback


@unary_frule(np.var, np.ndarray.var)
def var_jvp(t, a, ans, axis=None, dtype=None, *, ddof=0, keepdims=False):
    return np.sum(adj.var_bar(1.0, a, axis=axis, ddof=ddof, keepdims=keepdims) * t, axis=axis, keepdims=keepdims)


@rrule(np.std, np.ndarray.std, sequences=True)
def std_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std_pullback(g):
        return (adj.var_bar(adj.divide_or_zero(g, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return ans, std_pullback


@unary_frule(np.std, np.ndarray.std)
def std_jvp(t, a, ans, axis=None, dtype=None, *, ddof=0, keepdims=False):
    partials = adj.var_bar(adj.divide_or_zero(1.0, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims)
    return np.sum(partials * t, axis=axis, keepdims=keepdims)


@rrule(np.nanvar, sequences=True)
def nanvar_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    def nanvar_pullback(g):
        return (adj.nanvar_bar(g, a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return np.nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims), nanvar_pullback


@unary_frule(np.nanvar)
def nanvar_jvp(t, a, ans, axis=None, dtype=None, *, ddof=0, keepdims=False):
    partials = adj.nanvar_bar(1.0, a, axis=axis, ddof=ddof, keepdims=keepdims)
    return np.sum(partials * adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims)


@rrule(np.nanstd, sequences=True)
def nanstd_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.nanstd(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def nanstd_pullback(g):
        return (adj.nanvar_bar(adj.divide_or_zero(g, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return ans, nanstd_pullback


@unary_frule(np.nanstd)
def nanstd_jvp(t, a, ans, axis=None, dtype=None, *, ddof=0, keepdims=False):
    partials = adj.nanvar_bar(adj.divide_or_zero(1.0, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims)
    return np.sum(partials * adj.zero_at_nan(t, a), axis=axis, keepdims=keepdims)


# ---- running sums and products ------------------------------------------------------------------

# `axis=None` scans the flattened array. cumprod's cotangent divides by no entry, so it is exact
# where the input has zeros.
@rrule(np.cumsum, np.ndarray.cumsum, sequences=True)
def cumsum_rrule(a, axis=None, dtype=None):
    def cumsum_pullback(g):
        return (adj.cumsum_bar(g, a, axis=axis),)

    return np.cumsum(a, axis=axis, dtype=dtype), cumsum_pullback


linear(np.cumsum)
_method(np.ndarray.cumsum, np.cumsum)


@rrule(np.cumprod, np.ndarray.cumprod, sequences=True)
def cumprod_rrule(a, axis=None, dtype=None):
    def cumprod_pullback(g):
        return (adj.cumprod_bar(g, a, axis=axis),)

    return np.cumprod(a, axis=axis, dtype=dtype), cumprod_pullback


@unary_frule(np.cumprod, np.ndarray.cumprod)
def cumprod_jvp(t, a, ans, axis=None, dtype=None):
    return adj.cumprod_tangent(t, a, axis=axis)


# NaN entries count as 0 in the running sum (1 in the product), and get zero.
@rrule(np.nancumsum, sequences=True)
def nancumsum_rrule(a, axis=None, dtype=None):
    def nancumsum_pullback(g):
        return (adj.zero_at_nan(adj.cumsum_bar(g, a, axis=axis), a),)

    return np.nancumsum(a, axis=axis, dtype=dtype), nancumsum_pullback


@unary_frule(np.nancumsum)
def nancumsum_jvp(t, a, ans, axis=None, dtype=None):
    return np.cumsum(adj.zero_at_nan(t, a), axis=axis)


@rrule(np.nancumprod, sequences=True)
def nancumprod_rrule(a, axis=None, dtype=None):
    def nancumprod_pullback(g):
        ones_at_nan = np.where(np.isnan(a), 1, a)
        return (adj.zero_at_nan(adj.cumprod_bar(g, ones_at_nan, axis=axis), a),)

    return np.nancumprod(a, axis=axis, dtype=dtype), nancumprod_pullback


@unary_frule(np.nancumprod)
def nancumprod_jvp(t, a, ans, axis=None, dtype=None):
    return adj.cumprod_tangent(adj.zero_at_nan(t, a), np.where(np.isnan(a), 1, a), axis=axis)


# NumPy 2.1's array-API scans; `include_initial` puts the empty sum (product) first.
if hasattr(np, "cumulative_sum"):
    @rrule(np.cumulative_sum, sequences=True)
    def cumulative_sum_rrule(x, *, axis=None, dtype=None, include_initial=False):
        def cumulative_sum_pullback(g):
            return (adj.cumsum_bar(g, x, axis=axis, include_initial=include_initial),)

        return np.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=include_initial), cumulative_sum_pullback

    linear(np.cumulative_sum)

    @rrule(np.cumulative_prod, sequences=True)
    def cumulative_prod_rrule(x, *, axis=None, dtype=None, include_initial=False):
        def cumulative_prod_pullback(g):
            return (adj.cumprod_bar(g, x, axis=axis, include_initial=include_initial),)

        return np.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial), cumulative_prod_pullback

    @unary_frule(np.cumulative_prod)
    def cumulative_prod_jvp(t, x, ans, *, axis=None, dtype=None, include_initial=False):
        return adj.cumprod_tangent(t, x, axis=axis, include_initial=include_initial)
