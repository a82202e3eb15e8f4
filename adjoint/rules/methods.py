"""NumPy's array methods whose parameters differ from their functions' (`x.reshape(2, 3)`).

A method's rule is keyed by the unbound method (`np.ndarray.reshape`) and takes the array
first, as `np.ndarray.reshape(x, 2, 3)` does; `registry.lookup` and `runtime.vjp` map a bound
`x.reshape` to it. Methods that take the same arguments as their function (`x.sum(axis=0)`,
`x.dot(b)`, `x.clip(0, 1)`) share the function's rule, registered with it in its family.

Forward, each method here is `linear` in its array, as its function is.
"""

import numpy as np

from .. import runtime as adj
from ..frules import linear
from ..registry import non_differentiable, rrule
from .shape import reshape_rrule, transpose_rrule


def _packed(args):
    """`x.reshape(2, 3)` means `x.reshape((2, 3))`: NumPy's methods take either."""
    return args[0] if len(args) == 1 else args


@rrule(np.ndarray.reshape)
def reshape_method_rrule(a, *shape, order="C"):
    return reshape_rrule(a, _packed(shape), order=order)


linear(np.ndarray.reshape)


@rrule(np.ndarray.transpose)
def transpose_method_rrule(a, *axes):
    return transpose_rrule(a, _packed(axes) if axes else None)


linear(np.ndarray.transpose)


@rrule(np.ndarray.flatten)
def flatten_rrule(a, order="C"):
    def flatten_pullback(g):
        return (adj.unravel(g, a, order=order),)

    return a.flatten(order), flatten_pullback


linear(np.ndarray.flatten)


@rrule(np.ndarray.copy)
def copy_rrule(a, order="C"):
    def copy_pullback(g):
        return (g,)

    return a.copy(order), copy_pullback


linear(np.ndarray.copy)


# `x.compress(condition)` is `np.compress(condition, x)`: the array comes first here.
@rrule(np.ndarray.compress)
def compress_method_rrule(a, condition, axis=None):
    def compress_method_pullback(g):
        return adj.untake(g, a, np.flatnonzero(condition), axis), None

    return a.compress(condition, axis), compress_method_pullback


linear(np.ndarray.compress)  # in the array, the receiver: the condition is a mask


# Between float dtypes the cotangent is cast back to `a`'s; an integer or bool result has none.
@rrule(np.ndarray.astype)
def astype_rrule(a, dtype, order="K", casting="unsafe", subok=True, copy=True):
    ans = a.astype(dtype, order=order, casting=casting, subok=subok, copy=copy)

    def astype_pullback(g):
        return (adj.unbroadcast(g, a) if adj.is_differentiable(ans) else None,)

    return ans, astype_pullback


linear(np.ndarray.astype)


non_differentiable(
    np.ndarray.argmax, np.ndarray.argmin, np.ndarray.argsort, np.ndarray.argpartition, np.ndarray.searchsorted,
    np.ndarray.nonzero, np.ndarray.any, np.ndarray.all, np.ndarray.tobytes, np.ndarray.tofile, np.ndarray.dump,
    np.ndarray.dumps,
)
