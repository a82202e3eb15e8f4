"""Helpers of shape rules whose undoing is more than one NumPy call (most are undone by the
inverse move, flip or roll, written in the rule itself), and of the spacing rules: `np.diff` and
`np.gradient` are linear difference operators, undone on a cotangent by their transposes (and
applied to a tangent as they are), and `np.linspace` places each value a fixed fraction of the
way from `start` to `stop`."""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError, cotangent_like, is_differentiable
from .tangents import tangent_or_zeros

__all__ = [
    "atleast_bar", "rollaxis_destination", "diff_with_ends", "diff_bar", "diff_tangent", "gradient_spacings",
    "gradient_bars", "gradient_tangent", "linspace_fractions",
]


def atleast_bar(g, arys):
    """Cotangents of `arys` in `np.atleast_1d(*arys)` (or `_2d`, `_3d`): each back in its
    array's shape. One array gets `g`; several get one item of the tuple `g` each, None where
    nothing flowed into the item or the array is not a float one.

    >>> atleast_bar((np.ones((1, 2)), None), (np.zeros(2), 1.5))
    (array([1., 1.]), None)
    """
    items = (g,) if len(arys) == 1 else g
    return tuple(
        np.reshape(item, np.shape(a)) if item is not None and is_differentiable(a) else None
        for item, a in zip(items, arys)
    )


def rollaxis_destination(ndim, axis, start=0):
    """The position `np.rollaxis(a, axis, start)` moves axis `axis` of an `ndim`-dimensional `a`
    to: it is `np.moveaxis(a, axis, destination)`, undone by `np.moveaxis(g, destination, axis)`.

    >>> rollaxis_destination(3, 0, 3), rollaxis_destination(3, -1, 0), rollaxis_destination(3, 1, -1)
    (2, 0, 1)
    """
    axis, start = axis % ndim, start + ndim if start < 0 else start
    return start - 1 if axis < start else start


# ---- differences ------------------------------------------------------------------------------

def diff_with_ends(a, n=1, axis=-1, prepend=None, append=None):
    """`np.diff(a, n, axis)` of `a` with `prepend` and `append` joined at the ends of the axis,
    as NumPy's keywords of those names do; None joins nothing.

    >>> diff_with_ends(np.array([1.0, 4.0]), prepend=0.0)
    array([1., 3.])
    """
    ends = {name: end for name, end in (("prepend", prepend), ("append", append)) if end is not None}
    return np.diff(a, n, axis, **ends)


def diff_bar(g, a, n=1, axis=-1, prepend=None, append=None):
    """Cotangent of `a` in `np.diff(a, n, axis, prepend=prepend, append=append)` (None: not
    given). A difference `y_i = x_(i+1) - x_i` has the transpose `x_bar_i = g_(i-1) - g_i`, with
    zeros beyond `g`'s ends: `-np.diff(g)` of `g` padded with a zero at each end, applied `n`
    times. `a` gets its part of the result; the ends, being keywords, get none.

    >>> diff_bar(np.array([1.0, 2.0]), np.zeros(3))
    array([-1., -1.,  2.])
    """
    if not is_differentiable(a):
        return None
    for _ in range(n):
        g = -np.diff(g, axis=axis, prepend=0, append=0)
    if n > 0:  # with n = 0, NumPy returns `a` as it is, ends ignored
        before = 0 if prepend is None else (1 if np.ndim(prepend) == 0 else np.shape(prepend)[axis])
        g = np.take(g, np.arange(before, before + np.shape(a)[axis]), axis=axis)
    return cotangent_like(g, a)


def diff_tangent(t, a, n=1, axis=-1, prepend=None, append=None):
    """Tangent of `np.diff(a, n, axis, prepend=prepend, append=append)` for the tangent `t` of
    `a` (None: constant): the same differences of `t`, with zeros for the ends, which are
    constants (a nonzero end makes `np.diff` affine in `a`, not linear).

    >>> diff_tangent(np.array([1.0, 2.0]), np.zeros(2), prepend=5.0)
    array([1., 1.])
    """
    ends = [None if end is None else np.zeros_like(end) for end in (prepend, append)]
    return diff_with_ends(tangent_or_zeros(t, a), n, axis, *ends)


# ---- np.gradient --------------------------------------------------------------------------------
# np.gradient(f, h) along an axis is D(f) / h, with D the difference stencil of unit spacing:
# central differences (f_(i+1) - f_(i-1)) / 2 inside; at the ends, one-sided differences of first
# or second order (`edge_order`), whose weights on the first entries are below. The last entry's
# weights are their negatives, on the last entries, from the end inwards.
_EDGE_WEIGHTS = {1: (-1.0, 1.0), 2: (-1.5, 2.0, -0.5)}


def gradient_spacings(f, spacings, axis=None):
    """The axes `np.gradient(f, *spacings, axis=axis)` differentiates along, each with its
    spacing: 1 where none is given, the same where one is given for all. Only scalar spacings
    are supported: arrays of coordinates are refused.

    >>> gradient_spacings(np.ones((2, 3)), (0.5,))
    [(0, 0.5), (1, 0.5)]
    """
    if any(np.ndim(h) != 0 for h in spacings):
        raise RuleError("adjoint differentiates np.gradient with scalar spacings only, not arrays of coordinates")
    axes = [int(a) % np.ndim(f) for a in (range(np.ndim(f)) if axis is None else np.atleast_1d(axis))]
    if len(spacings) <= 1:
        spacings = (spacings[0] if spacings else 1.0,) * len(axes)
    return list(zip(axes, spacings))


def gradient_bars(g, f, spacings, along, ans, edge_order=1):
    """Cotangents `(f_bar, *spacing_bars)` of `ans = np.gradient(f, *spacings, axis=...,
    edge_order=edge_order)`, whose axes and their spacings are `along` (`gradient_spacings`).
    Along each axis `ans_k = D(f) / h`: `f` gets the transposed stencil of the cotangent `g_k`
    over `h`, and `h` gets `-sum(g_k ans_k) / h` (summed over the axes, for one spacing given
    for all). `g` and `ans` are tuples for several axes; an item of `g` that nothing flowed
    into is None.

    >>> f, h = np.array([0.0, 1.0, 4.0]), 2.0
    >>> gradient_bars(np.array([1.0, 0.0, 0.0]), f, (h,), [(0, h)], np.gradient(f, h))
    (array([-0.5,  0.5,  0. ]), -0.25)
    """
    if len(along) == 1:
        g, ans = (g,), (ans,)
    f_bar = np.zeros(np.shape(f), dtype=np.result_type(f, 0.0))
    h_bars = []
    for (axis, h), g_k, ans_k in zip(along, g, ans):
        if g_k is None:
            h_bars.append(0.0)
            continue
        f_bar = f_bar + np.moveaxis(_unit_gradient_transposed(np.moveaxis(g_k, axis, -1), edge_order), -1, axis) / h
        h_bars.append(-np.sum(g_k * ans_k) / h)
    if len(spacings) == 1:
        h_bars = [sum(h_bars)]
    return (cotangent_like(f_bar, f), *(cotangent_like(h_bar, h) for h_bar, h in zip(h_bars, spacings)))


def gradient_tangent(t_f, t_spacings, f, spacings, along, ans, edge_order=1):
    """Tangent of `ans = np.gradient(f, *spacings, axis=..., edge_order=edge_order)` for the
    tangents of `f` and of the scalar spacings (None: constant), whose axes and spacings are
    `along` (`gradient_spacings`). Along each axis `ans_k = D(f) / h`: `D(t_f) / h - ans_k t_h / h`.
    A tuple for several axes, as `ans` is.

    >>> f, h = np.array([0.0, 1.0, 4.0]), 2.0
    >>> gradient_tangent(np.ones(3), (1.0,), f, (h,), [(0, h)], np.gradient(f, h))
    array([-0.25, -0.5 , -0.75])
    """
    axes = tuple(axis for axis, _ in along)
    tangent = np.gradient(tangent_or_zeros(t_f, f), *spacings, axis=axes, edge_order=edge_order)
    tangent, ans = (tangent, ans) if len(along) > 1 else ((tangent,), (ans,))
    t_spacings = (tuple(t_spacings) + (None,) * len(spacings))[: len(spacings)]
    if len(spacings) <= 1:  # none given, or one for every axis
        t_spacings = (t_spacings[0] if spacings else None,) * len(along)
    parts = [
        part if t_h is None else part - ans_k * t_h / h
        for part, ans_k, t_h, (_, h) in zip(tangent, ans, t_spacings, along)
    ]
    return tuple(parts) if len(along) > 1 else parts[0]


def _unit_gradient_transposed(g, edge_order):
    """The transpose of the unit-spacing stencil D along the last axis, applied to `g`."""
    bar = np.zeros(g.shape, dtype=np.result_type(g, 0.0))
    half = g[..., 1:-1] / 2  # an inner slope (f_(i+1) - f_(i-1)) / 2: +half to f_(i+1), -half to f_(i-1)
    bar[..., 2:] += half
    bar[..., :-2] -= half
    for offset, weight in enumerate(_EDGE_WEIGHTS[edge_order]):
        bar[..., offset] += weight * g[..., 0]
        bar[..., -1 - offset] -= weight * g[..., -1]
    return bar


# ---- np.linspace ------------------------------------------------------------------------------

def linspace_fractions(num, endpoint, axis, ndim):
    """How far from `start` to `stop` each value of `np.linspace(start, stop, num, endpoint,
    axis=axis)` lies, as an array along `axis` that broadcasts against the `ndim`-dimensional
    result: `value = (1 - fraction) start + fraction stop`.

    >>> linspace_fractions(3, True, -1, 2)
    array([[0. , 0.5, 1. ]])
    """
    fractions = np.linspace(0.0, 1.0, num, endpoint=endpoint)
    return np.moveaxis(np.reshape(fractions, (-1,) + (1,) * (ndim - 1)), 0, axis)
