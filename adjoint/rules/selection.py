"""Selecting entries: diagonals, triangles, take, take_along_axis, sort, partition, select,
compress, real_if_close, unique, bincount.

A selection's pullback puts each entry of the cotangent back where the entry was selected
from, zeros elsewhere (`adj.untake` and its kin); an entry selected several times gets the sum.
Index, boolean-mask and condition operands get no cotangent. `np.unique` selects one copy of
each distinct value, standing for all of them: its cotangent is shared between the copies.
`np.bincount` adds each weight into its bin, and its pullback reads each bin's cotangent back.
The functions that only find indices or count (`np.argsort`, `np.nonzero`) carry no gradient,
and are declared at the end (their array methods, with the other methods, in `methods`).

Forward, a selection applied to the tangent selects the tangent's entries: the selections with
a fixed choice of entries are `linear`. Which entries `np.sort` and `np.partition` choose depends
on the values, so the tangent follows the value's permutation; a distinct value's tangent is the
mean of its copies'; and `np.real_if_close` drops the tangent's imaginary part where the value's
was dropped.
"""

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import non_differentiable, rrule


# ---- diagonals and triangles ----------------------------------------------------------------

@rrule(np.diag)
def diag_rrule(v, k=0):
    def diag_pullback(g):
        return (adj.diag_bar(g, v, k),)

    return np.diag(v, k), diag_pullback


linear(np.diag)


@rrule(np.diagonal, np.ndarray.diagonal)
def diagonal_rrule(a, offset=0, axis1=0, axis2=1):
    def diagonal_pullback(g):
        return (adj.undiagonal(g, a, offset, axis1, axis2),)

    return np.diagonal(a, offset, axis1, axis2), diagonal_pullback


linear(np.diagonal, np.ndarray.diagonal)


# The trace sums its diagonal: every diagonal entry gets the cotangent of the sum.
@rrule(np.trace, np.ndarray.trace)
def trace_rrule(a, offset=0, axis1=0, axis2=1, dtype=None):
    def trace_pullback(g):
        return (adj.undiagonal(np.expand_dims(g, -1), a, offset, axis1, axis2),)

    return np.trace(a, offset, axis1, axis2, dtype), trace_pullback


linear(np.trace, np.ndarray.trace)


# A vector `m` is broadcast to a square matrix first: its cotangent sums the rows.
@rrule(np.tril)
def tril_rrule(m, k=0):
    def tril_pullback(g):
        return (adj.unbroadcast(np.tril(g, k), m),)

    return np.tril(m, k), tril_pullback


linear(np.tril)


@rrule(np.triu)
def triu_rrule(m, k=0):
    def triu_pullback(g):
        return (adj.unbroadcast(np.triu(g, k), m),)

    return np.triu(m, k), triu_pullback


linear(np.triu)


# ---- taking entries by index ------------------------------------------------------------------

@rrule(np.take, np.ndarray.take)
def take_rrule(a, indices, axis=None, *, mode="raise"):
    def take_pullback(g):
        return adj.untake(g, a, indices, axis, mode), None

    return np.take(a, indices, axis, mode=mode), take_pullback


linear(np.take, np.ndarray.take)


@rrule(np.take_along_axis)
def take_along_axis_rrule(arr, indices, axis=-1):
    def take_along_axis_pullback(g):
        return adj.untake_along_axis(g, arr, indices, axis), None

    return np.take_along_axis(arr, indices, axis), take_along_axis_pullback


linear(np.take_along_axis)


# `compress` and `extract` take the entries where the condition is true.
@rrule(np.compress)
def compress_rrule(condition, a, axis=None):
    def compress_pullback(g):
        return None, adj.untake(g, a, np.flatnonzero(condition), axis)

    return np.compress(condition, a, axis), compress_pullback


linear(np.compress, operands=(1,))  # the condition comes first


@rrule(np.extract)
def extract_rrule(condition, arr):
    def extract_pullback(g):
        return None, adj.untake(g, arr, np.flatnonzero(condition))

    return np.extract(condition, arr), extract_pullback


linear(np.extract, operands=(1,))


# ---- sorting and choosing -----------------------------------------------------------------------

# Sorting permutes: the pullback applies the inverse permutation, `argsort(perm)`. Tied entries
# each get the cotangent of the slot the sort put them in (autograd does the same); the sorted
# values are not differentiable there. (`stable=True` is `kind="stable"`, spelled so for NumPy 1.)
@rrule(np.sort)
def sort_rrule(a, axis=-1, kind=None, *, stable=None):
    perm = np.argsort(a, axis=axis, kind="stable" if stable else kind)

    def sort_pullback(g):
        return (np.reshape(np.take_along_axis(g, np.argsort(perm, axis=axis), axis), np.shape(a)),)

    return np.take_along_axis(a, perm, axis), sort_pullback


# The tangent is sorted along with its array: by the same permutation.
@frule(np.sort)
def sort_frule(primals, tangents, **kwargs):
    def sort_jvp(a, axis=-1, kind=None, *, stable=None):
        perm = np.argsort(a, axis=axis, kind="stable" if stable else kind)
        value = np.take_along_axis(a, perm, axis)
        return value, adj.tangent_like(np.take_along_axis(adj.tangent_or_zeros(tangents[0], a), perm, axis), value)

    return sort_jvp(*primals, **kwargs)


# Partitioning permutes too, but the permutation of `np.argpartition` need not be the one
# `np.partition` made: `adj.unpartition` matches entries to slots by rank.
@rrule(np.partition)
def partition_rrule(a, kth, axis=-1, kind="introselect"):
    ans = np.partition(a, kth, axis, kind)

    def partition_pullback(g):
        return adj.unpartition(g, a, ans, axis), None

    return ans, partition_pullback


# Each slot's tangent is that of the entry of the same rank, as in the pullback.
@frule(np.partition)
def partition_frule(primals, tangents, **kwargs):
    def partition_jvp(a, kth, axis=-1, kind="introselect"):
        ans = np.partition(a, kth, axis, kind)
        return ans, adj.tangent_like(adj.partition_tangent(adj.tangent_or_zeros(tangents[0], a), a, ans, axis), ans)

    return partition_jvp(*primals, **kwargs)


# Each entry comes from the choice whose condition is the first true one, or from `default`.
@rrule(np.select, sequences=True)
def select_rrule(condlist, choicelist, default=0):
    def select_pullback(g):
        return None, adj.unselect(g, condlist, choicelist), adj.unselect_default(g, condlist, default)

    return np.select(condlist, choicelist, default), select_pullback


# With the conditions fixed, each entry is one of the choices' or the default's: linear in those jointly.
linear(np.select, operands=(1, 2))


# ---- dropping imaginary parts -----------------------------------------------------------------

# A complex `a` whose imaginary parts are all within `tol` becomes its real part: dL = g Re(da)
# = Re(g da), so `a`'s cotangent is `g`, as a complex array. Otherwise `a` is returned as it is.
@rrule(np.real_if_close)
def real_if_close_rrule(a, tol=100):
    def real_if_close_pullback(g):
        return (adj.cotangent_like(g, a),)

    return np.real_if_close(a, tol), real_if_close_pullback


# Whether the imaginary parts are dropped is the value's decision, not the tangent's: the
# tangent's real part for a real value, the tangent itself for a complex one.
@frule(np.real_if_close)
def real_if_close_frule(primals, tangents, **kwargs):
    value = np.real_if_close(*primals, **kwargs)
    return value, adj.tangent_like(adj.tangent_or_zeros(tangents[0], primals[0]), value)


# ---- distinct values and bins -----------------------------------------------------------------

# Each distinct value is the common value of its copies; moving them together (the only moves
# that keep the output's shape) moves it as much, so its cotangent is shared equally between
# them, as a maximum's is between ties. The indices and counts it may also return are integers.
@rrule(np.unique)
def unique_rrule(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, **kwargs):
    ans = np.unique(ar, return_index, return_inverse, return_counts, axis, **kwargs)

    def unique_pullback(g):
        g = g[0] if return_index or return_inverse or return_counts else g
        return (None if g is None else adj.cotangent_like(_shared_between_copies(g, ar, axis, kwargs), ar),)

    return ans, unique_pullback


@frule(np.unique)
def unique_frule(primals, tangents, **kwargs):
    def unique_jvp(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, **kwargs):
        ans = np.unique(ar, return_index, return_inverse, return_counts, axis, **kwargs)
        several = return_index or return_inverse or return_counts
        dar = tangents[0] if tangents else None
        values_dot = None if dar is None else _mean_of_copies(dar, ar, axis, kwargs)
        return ans, adj.tangent_like((values_dot, *(None,) * (len(ans) - 1)) if several else values_dot, ans)

    return unique_jvp(*primals, **kwargs)


def _copies(ar, axis, kwargs):
    """Which distinct value (or slice along `axis`) each entry of `ar` is a copy of, and how many
    copies each has."""
    _, inverse, counts = np.unique(ar, return_inverse=True, return_counts=True, axis=axis, **kwargs)
    return inverse.ravel(), counts


def _shared_between_copies(g, ar, axis, kwargs):
    inverse, counts = _copies(ar, axis, kwargs)
    if axis is None:
        return (g / counts)[inverse].reshape(np.shape(ar))
    along = [-1 if a == axis % np.ndim(g) else 1 for a in range(np.ndim(g))]
    return np.take(g / counts.reshape(along), inverse, axis)


def _mean_of_copies(t, ar, axis, kwargs):
    inverse, counts = _copies(ar, axis, kwargs)
    moved = np.ravel(t) if axis is None else np.moveaxis(np.asarray(t), axis, 0)
    total = np.zeros((len(counts),) + moved.shape[1:], dtype=np.result_type(moved, float))
    np.add.at(total, inverse, moved)
    mean = total / counts.reshape((-1,) + (1,) * (moved.ndim - 1))
    return mean if axis is None else np.moveaxis(mean, 0, axis)


# Each bin sums the weights of the entries in it: linear in the weights, each of which gets its
# bin's cotangent. Without weights, the counts are integers.
@rrule(np.bincount)
def bincount_rrule(x, /, weights=None, minlength=0):
    def bincount_pullback(g):
        return None, (None if weights is None else adj.unbroadcast_float(np.take(g, x), weights))

    return np.bincount(x, weights, minlength), bincount_pullback


linear(np.bincount, operands=(1,))


# ---- finding indices and counting: no gradient ------------------------------------------------
# `np.histogram` is not here: its bin edges move with the data's range.

non_differentiable(
    np.argmax, np.argmin, np.argsort, np.argpartition, np.searchsorted, np.nonzero, np.flatnonzero,
    np.argwhere, np.count_nonzero, np.digitize, np.isin, np.isreal, np.iscomplex, np.isrealobj, np.iscomplexobj,
    np.isscalar, np.nanargmax, np.nanargmin, np.lexsort, np.all, np.any,
)

# indices of a shape: of its diagonal, its triangles, every entry
non_differentiable(
    np.unravel_index, np.ravel_multi_index, np.indices, np.ndindex, np.diag_indices, np.diag_indices_from,
    np.tril_indices, np.tril_indices_from, np.triu_indices, np.triu_indices_from, np.mask_indices,
)
