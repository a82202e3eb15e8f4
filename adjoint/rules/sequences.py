"""Building and converting sequences: `list`, `tuple`, `np.stack`, `np.array` of a list.

A sequence's cotangent is a sequence of the same type with one cotangent per item; an array
built from items hands each item its slice of the array's cotangent.
"""

import builtins

import numpy as np

from .. import runtime as adj
from ..registry import rrule


# `list(xs)` and `tuple(xs)`: each item keeps its cotangent; an array's rows stack back.
@rrule(builtins.list)
def list_rrule(iterable=()):
    def list_pullback(g):
        return (adj.unpack_bar(list(g), iterable),)

    return list(iterable), list_pullback


@rrule(builtins.tuple)
def tuple_rrule(iterable=()):
    def tuple_pullback(g):
        return (adj.unpack_bar(list(g), iterable),)

    return tuple(iterable), tuple_pullback


# `np.stack(xs, axis)`: item i gets the slice i of the cotangent along `axis`.
@rrule(np.stack)
def stack_rrule(arrays, axis=0):
    def stack_pullback(g):
        parts = list(np.moveaxis(g, axis, 0))
        return adj.unpack_bar([_like(p, a) for p, a in zip(parts, arrays)], arrays), None

    return np.stack(arrays, axis=axis), stack_pullback


# `np.array(xs)` of (nested) lists of numbers and arrays: each item gets its part.
@rrule(np.array, np.asarray)
def array_rrule(obj, dtype=None):
    def array_pullback(g):
        return _unarray(g, obj), None

    return np.array(obj, dtype=dtype), array_pullback


def _unarray(g, obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unarray(g[i], item) for i, item in enumerate(obj))
    return _like(g, obj)


def _like(g, x):
    """`g` as the cotangent of `x`: a Python float for a float, an array of x's dtype else."""
    if not adj.is_differentiable(x):
        return None
    if isinstance(x, float):
        return float(g)
    return np.asarray(g, dtype=np.result_type(x)).reshape(np.shape(x))



# `np.float64(s)` and its kin: a conversion between floats; the gradient is cast back.
def _float_conversion(kind):
    def conversion_rrule(x=0.0):
        def conversion_pullback(g):
            return (_like(g, x),)

        return kind(x), conversion_pullback

    conversion_rrule.__name__ = f"{kind.__name__}_rrule"
    return conversion_rrule


for _kind in (np.float64, np.float32, np.float16):
    rrule(_kind)(_float_conversion(_kind))


# `x.item()`, `x.item(i)`, `x.item(i, j)`: one element as a Python number, its gradient put back.
@rrule(np.ndarray.item)
def item_rrule(x, *index):
    def item_pullback(g):
        x_bar = np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))
        if len(index) > 1:
            x_bar[index] = g
        else:
            x_bar.flat[index[0] if index else 0] = g
        return (x_bar if isinstance(x, np.ndarray) else x_bar[()], *(None for _ in index))

    return x.item(*index), item_pullback
