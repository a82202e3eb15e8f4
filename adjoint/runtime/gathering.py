"""Helpers of selection rules: scattering a cotangent back to the entries that were selected.

Each helper undoes a selection on a cotangent: it puts (or, where one entry was selected several
times, adds) each entry of the cotangent back where it came from, zeros elsewhere, in the shape
and dtype of the array the entries were selected from (None for one of ints or bools).
Selections that copy entries (`np.take` and its kin) are undone as `assembly.copies_bar` undoes
any copying: the selection applied to entry labels says which entry each result entry copies.
"""

from __future__ import annotations

import functools

import numpy as np

from .assembly import copies_bar, entry_labels
from .cotangents import cotangent_like, is_differentiable
from .pointwise import unbroadcast_float

__all__ = [
    "undiagonal", "diag_bar", "untake", "untake_along_axis", "unpartition", "partition_tangent", "unselect",
    "unselect_default",
]


def undiagonal(g, a, offset=0, axis1=0, axis2=1):
    """Undo `np.diagonal(a, offset, axis1, axis2)` on a cotangent: zeros shaped like `a`, with
    `g` on that diagonal (along `g`'s last axis, where `np.diagonal` puts it; a last axis of
    length 1 is broadcast along the diagonal, as the trace's cotangent is).

    >>> undiagonal(np.array([1.0, 2.0]), np.ones((2, 3)), offset=1)
    array([[0., 1., 0.],
           [0., 0., 2.]])
    """
    if not is_differentiable(a):
        return None
    a_bar = np.zeros(np.shape(a), dtype=np.result_type(a))
    planes = np.moveaxis(a_bar, (axis1, axis2), (-2, -1))  # a view: writing it writes a_bar
    rows, columns = planes.shape[-2] - max(-offset, 0), planes.shape[-1] - max(offset, 0)
    steps = np.arange(max(min(rows, columns), 0))
    planes[..., steps + max(-offset, 0), steps + max(offset, 0)] = g if np.iscomplexobj(a) else np.real(g)
    return a_bar


def diag_bar(g, v, k=0):
    """Cotangent of `v` in `np.diag(v, k)`: the diagonal `k` of `g` for a vector `v` (which
    `diag` spread into a matrix), `g` on that diagonal of zeros for a matrix `v`.

    >>> diag_bar(np.arange(9.0).reshape(3, 3), np.ones(2), k=1)
    array([1., 5.])
    """
    if not is_differentiable(v):
        return None
    if np.ndim(v) == 1:
        return cotangent_like(np.diagonal(g, k), v)
    return undiagonal(g, v, k)


def untake(g, a, indices, axis=None, mode="raise"):
    """Undo `np.take(a, indices, axis, mode=mode)` on a cotangent: each entry of `g` added at
    the entry of `a` it was taken from, so an entry taken twice gets both.

    >>> untake(np.array([1.0, 2.0, 4.0]), np.ones(3), [0, 2, 0])
    array([5., 0., 2.])
    """
    return copies_bar(g, a, np.take(entry_labels(a), indices, axis, mode=mode))


def untake_along_axis(g, arr, indices, axis=-1):
    """Undo `np.take_along_axis(arr, indices, axis)` on a cotangent: each entry of `g` added at
    the entry of `arr` it was taken from (an entry taken twice, or read by a broadcast row of
    `indices`, gets the sum).

    >>> untake_along_axis(np.array([[1.0, 2.0]]), np.ones((1, 3)), np.array([[2, 2]]), axis=1)
    array([[0., 0., 3.]])
    """
    return copies_bar(g, arr, np.take_along_axis(entry_labels(arr), indices, axis))


def unpartition(g, a, ans, axis=-1):
    """Undo `ans = np.partition(a, kth, axis)` on a cotangent: each entry of `g` goes to the
    entry of `a` that its slot holds (`axis=None` partitions `a` flattened).

    A partition permutes each lane, so ranks say which entry went where: the k-th smallest
    entry of `ans`'s lane is the k-th smallest of `a`'s. (`np.argpartition` cannot say: it may
    order the entries between the kth ones differently from `np.partition`.) Tied entries are
    equal, so it does not matter which of their slots each is matched with: each gets one
    slot's cotangent, as in `np.sort`'s rule.

    >>> unpartition(np.array([10.0, 20.0, 30.0]), np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    array([30., 10., 20.])
    """
    if not is_differentiable(a):
        return None
    lanes, axis = (np.ravel(a), -1) if axis is None else (np.asarray(a), axis)
    a_bar = np.empty(lanes.shape, dtype=np.result_type(g))
    ranked = np.take_along_axis(g, np.argsort(ans, axis=axis), axis)
    np.put_along_axis(a_bar, np.argsort(lanes, axis=axis), ranked, axis)
    return cotangent_like(a_bar, a)


def partition_tangent(t, a, ans, axis=-1):
    """Tangent of `ans = np.partition(a, kth, axis)` for the tangent `t` of `a`: each slot of
    `ans` gets the tangent of the entry of `a` it holds, matched by rank as in `unpartition`
    (whose transpose this is). `axis=None` partitions `a` flattened.

    >>> partition_tangent(np.array([10.0, 20.0, 30.0]), np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0]))
    array([20., 30., 10.])
    """
    lanes, t, axis = (np.ravel(a), np.ravel(t), -1) if axis is None else (np.asarray(a), np.asarray(t), axis)
    ans_dot = np.empty(np.shape(ans), dtype=t.dtype)
    ranked = np.take_along_axis(t, np.argsort(lanes, axis=axis), axis)
    np.put_along_axis(ans_dot, np.argsort(ans, axis=axis), ranked, axis)
    return ans_dot


def _first_true(condlist):
    """Per condition of `np.select`, where it is the first true one (where it picks its choice)."""
    taken = False
    for cond in condlist:
        yield np.logical_and(cond, np.logical_not(taken))
        taken = np.logical_or(taken, cond)


def unselect(g, condlist, choicelist):
    """Cotangents of `choicelist` in `np.select(condlist, choicelist, default)`: each choice
    gets `g` where its condition is the first true one, zero elsewhere; a list for a list, a
    tuple for a tuple, and None for an integer choice.

    >>> unselect(np.ones(3), [np.array([1, 0, 1]) > 0, np.array([1, 1, 0]) > 0], [np.ones(3), 2.0])
    [array([1., 0., 1.]), np.float64(1.0)]
    """
    bars = (unbroadcast_float(np.where(chosen, g, 0), choice) for chosen, choice in zip(_first_true(condlist), choicelist))
    return type(choicelist)(bars) if type(choicelist) in (list, tuple) else list(bars)


def unselect_default(g, condlist, default):
    """Cotangent of `default` in `np.select(condlist, choicelist, default)`: `g` where no
    condition holds; None for an integer `default`.

    >>> unselect_default(np.ones(3), [np.array([True, False, False])], 0.5)
    np.float64(2.0)
    """
    none_true = np.logical_not(functools.reduce(np.logical_or, condlist, False))
    return unbroadcast_float(np.where(none_true, g, 0), default)
