"""Building and converting sequences: `list`, `tuple`, `np.array` of a list, float conversions.

A sequence's cotangent is a sequence of the same type with one cotangent per item; an array
built from items hands each item its slice of the array's cotangent (`np.stack` and the
other joins are in `assembly`). Building and converting are linear: the tangent is built or
converted as the value is.
"""

import builtins

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import rrule


# `list(xs)` and `tuple(xs)`: each item keeps its cotangent; an array's rows stack back.
@rrule(builtins.list, sequences=True)
def list_rrule(iterable=()):
    def list_pullback(g):
        return (adj.unpack_bar(list(g), iterable),)

    return list(iterable), list_pullback


@rrule(builtins.tuple, sequences=True)
def tuple_rrule(iterable=()):
    def tuple_pullback(g):
        return (adj.unpack_bar(list(g), iterable),)

    return tuple(iterable), tuple_pullback


linear(builtins.list, builtins.tuple)


# `np.array(xs)` of (nested) lists of numbers and arrays: each item gets its part.
@rrule(np.array, np.asarray, sequences=True)
def array_rrule(obj, dtype=None):
    def array_pullback(g):
        return _unarray(g, obj), None

    return np.array(obj, dtype=dtype), array_pullback


linear(np.array, np.asarray)


def _unarray(g, obj):
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unarray(g[i], item) for i, item in enumerate(obj))
    return adj.cotangent_like(g, obj)


linear(_unarray)  # in `g`: forward mode over `array_pullback` (a Hessian-vector product) uses it


# `np.float64(s)` and its kin: a conversion between floats; the gradient is cast back.
def _float_conversion(kind):
    def conversion_rrule(x=0.0):
        def conversion_pullback(g):
            return (adj.cotangent_like(g, x),)

        return kind(x), conversion_pullback

    conversion_rrule.__name__ = f"{kind.__name__}_rrule"
    return conversion_rrule


for _kind in (np.float64, np.float32, np.float16):
    rrule(_kind)(_float_conversion(_kind))
    linear(_kind)


# `x.item()`, `x.item(i)`, `x.item(i, j)`: one element as a Python number, its gradient put back.
@rrule(np.ndarray.item)
def item_rrule(x, *index):
    def item_pullback(g):
        return (adj.unitem(g, x, index),) + (None,) * len(index)

    return x.item(*index), item_pullback


linear(adj.unitem)


# Linear, but an array method called on NumPy scalars too (`np.float64(2.0).item()`), which
# `np.ndarray.item` itself refuses: the tangent's entry, read as the value's is.
@frule(np.ndarray.item)
def item_frule(primals, tangents):
    (x, *index), t = primals, tangents[0] if tangents else None
    ans = x.item(*index)
    return ans, adj.tangent_like(np.asarray(adj.tangent_or_zeros(t, x)).item(*index), ans)
