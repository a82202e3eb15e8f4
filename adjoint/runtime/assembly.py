"""Helpers of assembly rules: cutting a cotangent back into the pieces an array was built from.

Joining arrays (`np.concatenate`, the stacks, `np.block`) is a linear map whose transpose cuts
the cotangent into the items' parts; splitting is the converse. Functions that copy entries
around (`np.pad`, `np.insert`, `np.delete`) are differentiated by applying them to entry labels
(`entry_labels`): where each label lands says which entry each output entry copies, and the
cotangent adds back along those copies (`copies_bar`).
"""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError, cotangent_like, is_differentiable

__all__ = [
    "as_column", "unconcatenate", "unstack", "unblock", "unsplit", "untile", "unrepeat",
    "entry_labels", "copies_bar", "pad_labels", "pad_tangent",
]


def _sequence_like(parts, items):
    """The cotangent of the operand `items` of a join, from its items' cotangents: the same kind
    of sequence, or the stacked array if the operand was an array (joined along its rows)."""
    if isinstance(items, np.ndarray):
        return cotangent_like(np.stack(parts), items)
    return type(items)(parts) if type(items) in (list, tuple) else tuple(parts)


def as_column(x):
    """`x` as `np.column_stack` reads it: a 1-D array (or a scalar) as a column.

    >>> as_column(np.ones(3)).shape, as_column(np.ones((3, 2))).shape
    ((3, 1), (3, 2))
    """
    x = np.asanyarray(x)
    return np.array(x, copy=None, ndmin=2).T if x.ndim < 2 else x


def unconcatenate(g, arrays, axis=0, promote=np.asanyarray):
    """Cotangents of the items of `np.concatenate(arrays, axis)`, each its part of `g` along
    `axis`, in the item's shape and dtype. `axis=None` joins the items flattened; `promote` is
    how the function read each item before joining (`np.atleast_2d` for `np.vstack`).

    >>> unconcatenate(np.arange(5.0), [np.zeros(2), np.zeros(3, dtype=np.float32)])
    [array([0., 1.]), array([2., 3., 4.], dtype=float32)]
    >>> unconcatenate(np.arange(3.0), (1.0, np.zeros((1, 2))), axis=None)
    (0.0, array([[1., 2.]]))
    """
    if axis is None:
        g, axis = np.ravel(g), 0
        sizes = [np.size(a) for a in arrays]
    else:
        sizes = [np.shape(promote(a))[axis] for a in arrays]
    parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return _sequence_like([cotangent_like(p, a) for p, a in zip(parts, arrays)], arrays)


def unstack(g, arrays, axis=0):
    """Cotangents of the items of `np.stack(arrays, axis)`: item i gets slice i along `axis`.

    >>> unstack(np.array([[1.0, 2.0], [3.0, 4.0]]), (np.zeros(2), 0.0 * np.ones(2)), axis=1)
    (array([1., 3.]), array([2., 4.]))
    """
    parts = np.moveaxis(g, axis, 0)
    return _sequence_like([cotangent_like(p, a) for p, a in zip(parts, arrays)], arrays)


def unblock(g, arrays):
    """Cotangents of the items of `np.block(arrays)`, as the same nesting of lists.

    The innermost lists join along the last axis, the lists holding them along the one before,
    and so on; each item is first given leading axes of length 1 up to the result's rank.

    >>> a, b, c = np.zeros((1, 1)), np.zeros((1, 2)), np.zeros(3)
    >>> unblock(np.arange(6.0).reshape(2, 3), [[a, b], [c]])
    [[array([[0.]]), array([[1., 2.]])], [array([3., 4., 5.])]]
    """
    depth = 0
    inner = arrays
    while type(inner) is list:
        depth, inner = depth + 1, inner[0]
    return _unblock(g, arrays, -depth)


def _unblock(g, item, axis):
    if type(item) is not list:
        return cotangent_like(g, item)
    sizes = [_block_extent(x, axis, axis + 1) for x in item]
    parts = np.split(g, np.cumsum(sizes)[:-1], axis=axis)
    return [_unblock(p, x, axis + 1) for p, x in zip(parts, item)]


def _block_extent(item, axis, joined):
    """The length along `axis` (negative) of `np.block` of `item`, a list joined along `joined`."""
    if type(item) is not list:
        shape = np.shape(item)
        return shape[axis] if -axis <= len(shape) else 1
    if joined == axis:
        return sum(_block_extent(x, axis, joined + 1) for x in item)
    return _block_extent(item[0], axis, joined + 1)


def unsplit(g, pieces, ary, axis=0):
    """Cotangent of `ary` that `np.split` (and its kin) cut into `pieces` along `axis`: the
    pieces' cotangents joined back, zeros for the pieces nothing flowed into (None).

    >>> unsplit([None, np.ones(1)], [np.zeros(2), np.zeros(1)], np.zeros(3))
    array([0., 0., 1.])
    """
    parts = [np.zeros_like(p) if b is None else b for b, p in zip(g, pieces)]
    return cotangent_like(np.concatenate(parts, axis=axis), ary)


def untile(g, x, reps):
    """Cotangent of `x` in `np.tile(x, reps)`: the sum of the cotangents of its copies.

    >>> untile(np.arange(6.0).reshape(2, 3), np.zeros(3), (2, 1))
    array([3., 5., 7.])
    """
    reps = tuple(np.atleast_1d(reps))
    shape = np.shape(x)
    rank = max(len(shape), len(reps))
    shape, reps = (1,) * (rank - len(shape)) + shape, (1,) * (rank - len(reps)) + reps
    copies = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])  # (copy, entry) axis pairs
    return cotangent_like(copies.sum(axis=tuple(range(0, 2 * rank, 2))), x)


def unrepeat(g, x, repeats, axis=None):
    """Cotangent of `x` in `np.repeat(x, repeats, axis)`: each entry sums its repeats' cotangents.

    >>> unrepeat(np.arange(5.0), np.zeros(3), [2, 0, 3])
    array([1., 0., 9.])
    """
    return copies_bar(g, x, np.repeat(entry_labels(x), repeats, axis))


def entry_labels(x):
    """Each entry of `x` labelled by its flat index: the labels a copying function moves about.

    >>> entry_labels(np.zeros((2, 2)))
    array([[0, 1],
           [2, 3]])
    """
    return np.arange(np.size(x)).reshape(np.shape(x))


def copies_bar(g, x, source):
    """Cotangent of `x` for an array whose entry k copies `x.flat[source[k]]` (or nothing of
    `x` where `source[k]` is -1): each entry of `x` sums the cotangents of its copies.

    >>> copies_bar(np.array([1.0, 2.0, 4.0]), np.zeros(2), np.array([1, -1, 1]))
    array([0., 5.])
    """
    if not is_differentiable(x):
        return None
    source, g = np.ravel(source), np.ravel(g)
    copied = source >= 0
    if not copied.all():
        source, g = source[copied], g[copied]
    total = np.bincount(source, weights=np.real(g), minlength=np.size(x))
    if np.iscomplexobj(g) and np.iscomplexobj(x):
        total = total + 1j * np.bincount(source, weights=np.imag(g), minlength=np.size(x))
    return cotangent_like(total, x)


# The modes of `np.pad` that copy entries of the array (the others compute new values).
_COPYING_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def _check_pad_mode(mode):
    if mode not in _COPYING_PAD_MODES:
        raise RuleError(
            f"adjoint's rule for np.pad supports the modes {', '.join(map(repr, _COPYING_PAD_MODES))}, "
            f"not {mode!r}: pad with one of those, or register a rule for the mode with @adjoint.rrule"
        )


def pad_labels(array, pad_width, mode="constant"):
    """`np.pad` of `array`'s entry labels (-1 for the constant padding): which entry of `array`
    each entry of the padded array copies. Modes that compute values are refused.

    >>> pad_labels(np.zeros(3), 1, "edge"), pad_labels(np.zeros(2), (1, 0))
    (array([0, 0, 1, 2, 2]), array([-1,  0,  1]))
    """
    _check_pad_mode(mode)
    labels = entry_labels(array)
    if mode == "constant":
        return np.pad(labels, pad_width, constant_values=-1)
    return np.pad(labels, pad_width, mode)


def pad_tangent(t, pad_width, mode="constant"):
    """Tangent of `np.pad(array, pad_width, mode, constant_values=...)` for the tangent `t` of
    `array`: `t` padded the same way, with zeros where the constants go (they do not move).
    Modes that compute values are refused, as by `pad_labels`.

    >>> pad_tangent(np.ones(2), 1), pad_tangent(np.array([1.0, 2.0]), (0, 2), "wrap")
    (array([0., 1., 1., 0.]), array([1., 2., 1., 2.]))
    """
    _check_pad_mode(mode)
    return np.pad(t, pad_width) if mode == "constant" else np.pad(t, pad_width, mode)

