"""Tangents in forward mode: zeros for what nothing varies, and tangents made to match their value.

A tangent mirrors its value: the same shape and dtype for a float or complex number or array,
the same container for a tuple, list or dict, 0 for an int (so arithmetic on a size read out of
a model goes on) and float zeros for an int or bool array, and `None` for anything else (a string, a function, an object's tangent
nothing was given for).
"""

from __future__ import annotations

import numpy as np

__all__ = ["zero_tangent", "tangent_or_zeros", "tangent_like", "complete_tangent", "holds_floats"]


def zero_tangent(value):
    """The zero tangent of `value`.

    >>> zero_tangent({"w": np.ones(2), "n": 3, "name": "a", "b": (1.5,)})
    {'w': array([0., 0.]), 'n': 0, 'name': None, 'b': (0.0,)}
    """
    kind = type(value)
    if kind is float:
        return 0.0
    if kind is complex:
        return 0j
    if kind is int or kind is bool:
        return 0
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "fc":
            return np.zeros_like(value)
        # an int or bool array does not move: float zeros, so arithmetic with its tangent is float
        return np.zeros(np.shape(value)) if value.dtype.kind in "iub" else None
    if kind is tuple:
        return tuple(zero_tangent(v) for v in value)
    if isinstance(value, tuple) and hasattr(kind, "_fields"):
        return kind._make(zero_tangent(v) for v in value)
    if kind is list:
        return [zero_tangent(v) for v in value]
    if kind is dict:
        return {k: zero_tangent(v) for k, v in value.items()}
    return None


def tangent_or_zeros(tangent, value):
    """`tangent`, with zeros where it is None (also for the items of a list or tuple).

    >>> tangent_or_zeros([None, np.ones(1)], [np.ones(2), np.ones(1)])
    [array([0., 0.]), array([1.])]
    """
    if tangent is None:
        return zero_tangent(value)
    if type(tangent) in (list, tuple) and type(value) in (list, tuple):
        return type(tangent)(tangent_or_zeros(t, v) for t, v in zip(tangent, value))
    return tangent


def tangent_like(tangent, value):
    """`tangent` as the tangent of `value`: broadcast to its shape, its real part for a real
    value, and its dtype (a float32 value keeps a float32 tangent); tuples item by item.

    >>> tangent_like(np.array([1.0, 2.0]), np.zeros((2, 2), dtype=np.float32))
    array([[1., 2.],
           [1., 2.]], dtype=float32)
    """
    if type(tangent) is np.ndarray and type(value) is np.ndarray and tangent.shape == value.shape and (
        tangent.dtype == value.dtype and value.dtype.kind in "fc"
    ):
        return tangent  # the common case, kept cheap
    if type(value) in (tuple, list) and type(tangent) in (tuple, list):
        return type(value)(tangent_like(t, v) for t, v in zip(tangent, value))
    if tangent is None:
        return zero_tangent(value)
    if type(value) is float:
        return float(np.real(tangent)) if np.ndim(tangent) == 0 else tangent
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return 0 if type(value) in (int, bool) else tangent
    if dtype.kind not in "fc":  # an int result does not move
        return zero_tangent(value)
    if np.iscomplexobj(tangent) and dtype.kind == "f":
        tangent = np.real(tangent)
    shape = np.shape(value)
    if np.shape(tangent) != shape:
        tangent = np.array(np.broadcast_to(tangent, shape))
    if getattr(tangent, "dtype", None) != dtype:
        tangent = np.asarray(tangent, dtype=dtype) if isinstance(value, np.ndarray) else dtype.type(tangent)
    return tangent


def complete_tangent(tangent, value):
    """A tangent in which every number of `value` has one: zeros where it has None."""
    if tangent is None:
        return zero_tangent(value)
    if type(value) in (tuple, list) and type(tangent) in (tuple, list):
        return type(value)(complete_tangent(t, v) for t, v in zip(tangent, value))
    if type(value) is dict and type(tangent) is dict:
        return {k: complete_tangent(tangent.get(k), v) for k, v in value.items()}
    return tangent


def holds_floats(value) -> bool:
    """Whether `value` is a float or complex number or array, or a list, tuple or dict (whose
    items may be): what a tangent can move.

    >>> holds_floats(np.zeros(2)), holds_floats(np.zeros(2, dtype=int)), holds_floats([1])
    (True, False, True)
    """
    if type(value) in (list, tuple, dict):
        return True
    dtype = getattr(value, "dtype", None)
    return isinstance(value, (float, complex)) or dtype is not None and dtype.kind in "fc"
