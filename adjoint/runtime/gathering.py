"""Helpers of selection rules: scattering a cotangent back to the entries that were selected.

Each helper undoes a selection on a cotangent: it starts from zeros shaped like the array the
entries were selected from, in its dtype, and puts (or, where one entry was selected several
times, adds) each entry of the cotangent back where it came from.
"""

from __future__ import annotations

import functools

import numpy as np

from .cotangents import is_differentiable, unbroadcast

__all__ = ["undiagonal", "diag_bar", "untake", "untake_along_axis", "unselect", "unselect_default"]


def _zeros(a, shape=None):
    """A zero cotangent for `a` (a float array or a Python float), of `shape` if given."""
    return np.zeros(np.shape(a) if shape is None else shape, dtype=np.result_type(a))


def undiagonal(g, a, offset=0, axis1=0, axis2=1):
    """Undo `np.diagonal(a, offset, axis1, axis2)` on a cotangent: zeros shaped like `a`, with
    `g` on that diagonal (along `g`'s last axis, where `np.diagonal` puts it; a last axis of
    length 1 is broadcast along the diagonal, as the trace's cotangent is).

    >>> undiagonal(np.array([1.0, 2.0]), np.ones((2, 3)), offset=1)
    array([[0., 1., 0.],
           [0., 0., 2.]])
    """
    a_bar = _zeros(a)
    planes = np.moveaxis(a_bar, (axis1, axis2), (-2, -1))  # a view: writing it writes a_bar
    rows, columns = planes.shape[-2] - max(-offset, 0), planes.shape[-1] - max(offset, 0)
    steps = np.arange(max(min(rows, columns), 0))
    planes[..., steps + max(-offset, 0), steps + max(offset, 0)] = g
    return a_bar


def diag_bar(g, v, k=0):
    """Cotangent of `v` in `np.diag(v, k)`: the diagonal `k` of `g` for a vector `v` (which
    `diag` spread into a matrix), `g` on that diagonal of zeros for a matrix `v`.

    >>> diag_bar(np.arange(9.0).reshape(3, 3), np.ones(2), k=1)
    array([1., 5.])
    """
    if np.ndim(v) == 1:
        return np.diagonal(g, k).astype(np.result_type(v), copy=False)
    return undiagonal(g, v, k)


def untake(g, a, indices, axis=None, mode="raise"):
    """Undo `np.take(a, indices, axis, mode=mode)` on a cotangent: each entry of `g` added at
    the entry of `a` it was taken from, so an entry taken twice gets both.

    >>> untake(np.array([1.0, 2.0, 4.0]), np.ones(3), [0, 2, 0])
    array([5., 0., 2.])
    """
    a_bar = _zeros(a, np.size(a) if axis is None else None)  # `axis=None` takes from `a` flattened
    axis = 0 if axis is None else axis % a_bar.ndim
    count = a_bar.shape[axis]
    if mode == "wrap":
        indices = np.mod(indices, count)
    elif mode == "clip":  # NumPy clips negative indices to 0 too
        indices = np.clip(indices, 0, count - 1)
    np.add.at(a_bar, (slice(None),) * axis + (indices,), g)
    return np.reshape(a_bar, np.shape(a))


def untake_along_axis(g, arr, indices, axis=-1):
    """Undo `np.take_along_axis(arr, indices, axis)` on a cotangent: each entry of `g` added at
    the entry of `arr` it was taken from (an entry taken twice, or read by a broadcast row of
    `indices`, gets the sum).

    >>> untake_along_axis(np.array([[1.0, 2.0]]), np.ones((1, 3)), np.array([[2, 2]]), axis=1)
    array([[0., 0., 3.]])
    """
    arr_bar = _zeros(arr, np.size(arr) if axis is None else None)
    if axis is None:
        np.add.at(arr_bar, indices, g)
        return np.reshape(arr_bar, np.shape(arr))
    where = list(np.indices(arr_bar.shape, sparse=True))  # each axis's positions, broadcastable
    where[axis] = indices
    np.add.at(arr_bar, tuple(where), g)
    return arr_bar


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
    bars = (
        unbroadcast(np.where(chosen, g, 0), choice) if is_differentiable(choice) else None
        for chosen, choice in zip(_first_true(condlist), choicelist)
    )
    return type(choicelist)(bars) if type(choicelist) in (list, tuple) else list(bars)


def unselect_default(g, condlist, default):
    """Cotangent of `default` in `np.select(condlist, choicelist, default)`: `g` where no
    condition holds; None for an integer `default`.

    >>> unselect_default(np.ones(3), [np.array([True, False, False])], 0.5)
    np.float64(2.0)
    """
    if not is_differentiable(default):
        return None
    none_true = np.logical_not(functools.reduce(np.logical_or, condlist, False))
    return unbroadcast(np.where(none_true, g, 0), default)
