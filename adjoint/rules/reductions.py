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
"""

import numpy as np

from .. import runtime as adj
from ..registry import rrule

# ---- sums and means -----------------------------------------------------------------------------

@rrule(np.sum, np.ndarray.sum, sequences=True)
def sum_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def sum_pullback(g):
        return (adj.unreduce(g, a, axis=axis, keepdims=keepdims),)

    return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims), sum_pullback


@rrule(np.mean, np.ndarray.mean, sequences=True)
def mean_rrule(a, axis=None, dtype=None, *, keepdims=False):
    ans = np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean_pullback(g):
        return (adj.unreduce(g * (np.size(ans) / np.size(a)), a, axis=axis, keepdims=keepdims),)

    return ans, mean_pullback


@rrule(np.nansum, sequences=True)
def nansum_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nansum_pullback(g):
        return (adj.zero_at_nan(adj.unreduce(g, a, axis=axis, keepdims=keepdims), a),)

    return np.nansum(a, axis=axis, dtype=dtype, keepdims=keepdims), nansum_pullback


# Each entry that is not NaN weighs 1 / (the count of such entries in its slice).
@rrule(np.nanmean, sequences=True)
def nanmean_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nanmean_pullback(g):
        count = np.maximum(np.count_nonzero(~np.isnan(a), axis=axis, keepdims=keepdims), 1)
        return (adj.zero_at_nan(adj.unreduce(g / count, a, axis=axis, keepdims=keepdims), a),)

    return np.nanmean(a, axis=axis, dtype=dtype, keepdims=keepdims), nanmean_pullback


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


# ---- extremes -----------------------------------------------------------------------------------

@rrule(np.max, np.amax, np.ndarray.max, sequences=True)
def max_rrule(a, axis=None, *, keepdims=False):
    ans = np.max(a, axis=axis, keepdims=keepdims)

    def max_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, max_pullback


@rrule(np.min, np.amin, np.ndarray.min, sequences=True)
def min_rrule(a, axis=None, *, keepdims=False):
    ans = np.min(a, axis=axis, keepdims=keepdims)

    def min_pullback(g):
        return (adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims),)

    return ans, min_pullback


# NaN entries never equal the extremum, so they get nothing; an all-NaN slice gets zeros.
@rrule(np.nanmax, sequences=True)
def nanmax_rrule(a, axis=None, *, keepdims=False):
    ans = np.nanmax(a, axis=axis, keepdims=keepdims)

    def nanmax_pullback(g):
        return (adj.zero_at_nan(adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims), a),)

    return ans, nanmax_pullback


@rrule(np.nanmin, sequences=True)
def nanmin_rrule(a, axis=None, *, keepdims=False):
    ans = np.nanmin(a, axis=axis, keepdims=keepdims)

    def nanmin_pullback(g):
        return (adj.zero_at_nan(adj.unreduce_chosen(g, a, ans, axis=axis, keepdims=keepdims), a),)

    return ans, nanmin_pullback


@rrule(np.ptp, sequences=True)
def ptp_rrule(a, axis=None, *, keepdims=False):
    def ptp_pullback(g):
        return (adj.ptp_bar(g, a, axis=axis, keepdims=keepdims),)

    return np.ptp(a, axis=axis, keepdims=keepdims), ptp_pullback


# ---- products -----------------------------------------------------------------------------------

# Exact where entries are zero: each entry's cotangent is the product of the others.
@rrule(np.prod, np.ndarray.prod, sequences=True)
def prod_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def prod_pullback(g):
        return (adj.prod_bar(g, a, axis=axis, keepdims=keepdims),)

    return np.prod(a, axis=axis, dtype=dtype, keepdims=keepdims), prod_pullback


# NaN entries count as 1 in the product, and get zero.
@rrule(np.nanprod, sequences=True)
def nanprod_rrule(a, axis=None, dtype=None, *, keepdims=False):
    def nanprod_pullback(g):
        ones_at_nan = np.where(np.isnan(a), 1, a)
        return (adj.zero_at_nan(adj.prod_bar(g, ones_at_nan, axis=axis, keepdims=keepdims), a),)

    return np.nanprod(a, axis=axis, dtype=dtype, keepdims=keepdims), nanprod_pullback


# ---- moments ------------------------------------------------------------------------------------

# var = mean(|a - mean(a)|^2) * n / (n - ddof); std = sqrt(var), so std's cotangent is var's for
# g / (2 std), and 0 for a constant slice (std 0), a subgradient.
@rrule(np.var, np.ndarray.var, sequences=True)
def var_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    def var_pullback(g):
        return (adj.var_bar(g, a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims), var_pullback


@rrule(np.std, np.ndarray.std, sequences=True)
def std_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.std(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def std_pullback(g):
        return (adj.var_bar(adj.divide_or_zero(g, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return ans, std_pullback


@rrule(np.nanvar, sequences=True)
def nanvar_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    def nanvar_pullback(g):
        return (adj.nanvar_bar(g, a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return np.nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims), nanvar_pullback


@rrule(np.nanstd, sequences=True)
def nanstd_rrule(a, axis=None, dtype=None, *, ddof=0, keepdims=False):
    ans = np.nanstd(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def nanstd_pullback(g):
        return (adj.nanvar_bar(adj.divide_or_zero(g, 2 * ans), a, axis=axis, ddof=ddof, keepdims=keepdims),)

    return ans, nanstd_pullback


# ---- running sums and products ------------------------------------------------------------------

# `axis=None` scans the flattened array. cumprod's cotangent divides by no entry, so it is exact
# where the input has zeros.
@rrule(np.cumsum, np.ndarray.cumsum, sequences=True)
def cumsum_rrule(a, axis=None, dtype=None):
    def cumsum_pullback(g):
        return (adj.cumsum_bar(g, a, axis=axis),)

    return np.cumsum(a, axis=axis, dtype=dtype), cumsum_pullback


@rrule(np.cumprod, np.ndarray.cumprod, sequences=True)
def cumprod_rrule(a, axis=None, dtype=None):
    def cumprod_pullback(g):
        return (adj.cumprod_bar(g, a, axis=axis),)

    return np.cumprod(a, axis=axis, dtype=dtype), cumprod_pullback


# NaN entries count as 0 in the running sum (1 in the product), and get zero.
@rrule(np.nancumsum, sequences=True)
def nancumsum_rrule(a, axis=None, dtype=None):
    def nancumsum_pullback(g):
        return (adj.zero_at_nan(adj.cumsum_bar(g, a, axis=axis), a),)

    return np.nancumsum(a, axis=axis, dtype=dtype), nancumsum_pullback


@rrule(np.nancumprod, sequences=True)
def nancumprod_rrule(a, axis=None, dtype=None):
    def nancumprod_pullback(g):
        ones_at_nan = np.where(np.isnan(a), 1, a)
        return (adj.zero_at_nan(adj.cumprod_bar(g, ones_at_nan, axis=axis), a),)

    return np.nancumprod(a, axis=axis, dtype=dtype), nancumprod_pullback


# NumPy 2.1's array-API scans; `include_initial` puts the empty sum (product) first.
if hasattr(np, "cumulative_sum"):
    @rrule(np.cumulative_sum, sequences=True)
    def cumulative_sum_rrule(x, *, axis=None, dtype=None, include_initial=False):
        def cumulative_sum_pullback(g):
            return (adj.cumsum_bar(g, x, axis=axis, include_initial=include_initial),)

        return np.cumulative_sum(x, axis=axis, dtype=dtype, include_initial=include_initial), cumulative_sum_pullback

    @rrule(np.cumulative_prod, sequences=True)
    def cumulative_prod_rrule(x, *, axis=None, dtype=None, include_initial=False):
        def cumulative_prod_pullback(g):
            return (adj.cumprod_bar(g, x, axis=axis, include_initial=include_initial),)

        return np.cumulative_prod(x, axis=axis, dtype=dtype, include_initial=include_initial), cumulative_prod_pullback
