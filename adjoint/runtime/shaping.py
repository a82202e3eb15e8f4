"""Helpers of shape rules whose undoing is more than one NumPy call (most are undone by the
inverse move, flip or roll, written in the rule itself)."""

from __future__ import annotations

import numpy as np

from .cotangents import is_differentiable

__all__ = ["atleast_bar"]


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
