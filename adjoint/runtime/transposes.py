"""Transposes of the helpers that generated pullback code calls, for reverse mode over a pullback
(reverse-over-reverse): each `<helper>_transpose(c, ...)` is the cotangent of the helper's
cotangent operand `g`, given the cotangent `c` of what the helper returned.

A pullback is linear in its cotangent, and so are these helpers: `unbroadcast(g, x)` sums `g`
down to `x`'s shape, so its transpose copies `c` back up to `g`'s shape; `unreduce` spreads, its
transpose sums; `unindex` scatters, its transpose gathers; `unstack` cuts, its transpose stacks.
The other operands only give shapes, kinds and positions. Cotangents keep the runtime's
conventions: `g`'s shape and dtype (the real part for a real `g`), None for zero inside a
container, and zeros for a float `g` that nothing flowed into; the cotangent of an object's
cotangent (a `Tangent`) is a `Tangent` of it, as `field_bar` makes for a read of its field.
"""

from __future__ import annotations

import types

import numpy as np

from .cotangents import (
    RuleError, cotangent_like, from_sequence, is_differentiable, spread, sum_to_shape, unbroadcast, zeros_like,
)
from .structs import Tangent, is_namedtuple, is_struct, tangent_fields
from .tangents import holds_floats
from .marks import marked

__all__ = [
    "zero_cotangent", "unbroadcast_transpose", "unbroadcast_float_transpose", "cotangent_like_transpose",
    "unreduce_transpose", "unreduce_chosen_transpose", "add_transpose", "vjp_forward", "float_positions",
]


def zero_cotangent(x):
    """The cotangent of an operand a helper reads only for its shape, kind or positions (`x` in
    `unbroadcast(g, x)`): zeros for a float or float array, which generated code adds up, and
    None for anything else, containers included, where None is zero and costs nothing.

    >>> zero_cotangent(np.ones(2, dtype=np.float32)), zero_cotangent((1.0, np.ones(2))), zero_cotangent(3)
    (array([0., 0.], dtype=float32), None, None)
    """
    return zeros_like(x) if is_differentiable(x) else None


# ---- broadcasting and reductions -------------------------------------------------------------

def unbroadcast_transpose(c, g):
    """`g`'s cotangent in `unbroadcast(g, x)`: `c` copied back along the axes the sum removed
    (the transpose of a sum is a copy), in `g`'s shape and dtype.

    >>> unbroadcast_transpose(np.array([[1.0, 2.0]], dtype=np.float32), np.zeros((3, 2)))
    array([[1., 2.],
           [1., 2.],
           [1., 2.]])
    """
    if c is None:
        return zeros_like(g)
    return cotangent_like(broadcast_back(c, np.shape(g)), g)


def broadcast_back(c, shape):
    """`c` broadcast to `shape`, less the leading axes of length 1 that `sum_to_shape` gives a
    cotangent of fewer axes than its operand."""
    c = np.asarray(c)
    if c.ndim > len(shape):
        c = c.reshape(c.shape[c.ndim - len(shape):])
    return np.broadcast_to(c, shape)


def unbroadcast_float_transpose(c, g, x):
    """`g`'s cotangent in `unbroadcast_float(g, x)`: as for `unbroadcast`, a list or tuple `x`'s
    cotangent read as the array NumPy made of it (zeros for its ints).

    >>> unbroadcast_float_transpose([1.0, None], np.zeros((2, 2)), [0.5, 1])
    array([[1., 0.],
           [1., 0.]])
    """
    if c is None:
        return zeros_like(g)
    return unbroadcast_transpose(dense_cotangent(c, x), g)


def cotangent_like_transpose(c, g, x):
    """`g`'s cotangent in `cotangent_like(g, x)`: `c` (a list's items joined) in `g`'s shape.

    >>> cotangent_like_transpose(np.array([1.0, 2.0]), np.zeros((1, 2)), np.zeros(2))
    array([[1., 2.]])
    """
    if c is None:
        return zeros_like(g)
    return cotangent_like(dense_cotangent(c, x), g)


def unreduce_transpose(c, g, x, axis=None, keepdims=False):
    """`g`'s cotangent in `unreduce(g, x, axis, keepdims)`: `c` summed over the axes `g` was
    spread along (a list or tuple `x`'s items as the rows of an array).

    >>> unreduce_transpose(np.ones((2, 3)), np.zeros(2), np.zeros((2, 3)), axis=1)
    array([3., 3.])
    """
    if c is None:
        return zeros_like(g)
    return cotangent_like(sum_to_shape(dense_cotangent(c, x), np.shape(spread(g, axis, keepdims))), g)


def unreduce_chosen_transpose(c, g, x, ans, axis=None, keepdims=False):
    """`g`'s cotangent in `unreduce_chosen(g, x, ans, axis, keepdims)`: the chosen entries of `c`,
    weighted as `g` was shared between ties, summed over the reduced axes.

    >>> x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    >>> unreduce_chosen_transpose(np.arange(6.0).reshape(2, 3), np.zeros(2), x, np.max(x, axis=1), axis=1)
    array([1.5, 3. ])
    """
    if c is None:
        return zeros_like(g)
    array = from_sequence(x)
    chosen = array == spread(ans, axis, keepdims)
    count = np.maximum(np.sum(chosen, axis=axis, keepdims=True), 1)
    return cotangent_like(sum_to_shape(dense_cotangent(c, x) * chosen / count, np.shape(spread(g, axis, keepdims))), g)


def dense_cotangent(c, x):
    """`c`, the cotangent of `x`, as the array `x` reads as: a list's or tuple's items stacked,
    and the items (or the whole) that got none (None) as zeros."""
    if type(x) is list or type(x) is tuple:
        parts = [None] * len(x) if c is None else c
        return np.array([dense_cotangent(part, item) for part, item in zip(parts, x)])
    if c is None:
        return np.zeros(np.shape(x), dtype=np.result_type(x, 0.0) if is_float(x) else np.float64)
    return np.asarray(c)


def is_float(x) -> bool:
    return np.asarray(x).dtype.kind in "fc"


# ---- sums of cotangents ----------------------------------------------------------------------

def add_transpose(c, a, b):
    """`(a_bar, b_bar)` in `add(a, b)`: each operand's share of `c`, which is all of it (summed
    where the operand was broadcast), container by container; None for a None operand.

    >>> add_transpose({"w": 1.0, "b": 2.0}, {"w": 0.5}, {"b": 0.5, "w": 0.5})
    ({'w': 1.0}, {'b': 2.0, 'w': 1.0})
    """
    return _share(c, a), _share(c, b)


def _share(c, v):
    if v is None or c is None:
        return None
    if isinstance(v, Tangent):  # a Tangent's cotangent is a Tangent of it, as `field_bar` makes one
        fields = tangent_fields(c) if isinstance(c, Tangent) else {}
        return Tangent(type(v), {k: _share(fields.get(k), part) for k, part in tangent_fields(v).items()})
    if isinstance(v, dict):
        return {k: _share(c.get(k), part) for k, part in v.items()}
    if isinstance(v, (tuple, list)):
        parts = [_share(part_c, part) for part_c, part in zip(c, v)]
        return type(v)._make(parts) if is_namedtuple(v) else type(v)(parts)
    if not is_float(v):
        return None
    if type(c) is list or type(c) is tuple:  # a list's cotangent, added to a reduction's array
        c = np.array([np.zeros(np.shape(row)) if part is None else part for part, row in zip(c, v)])
    return unbroadcast(c, v)


# ---- calls into other functions --------------------------------------------------------------

def vjp_forward(wrt, fn, args):
    """The generated forward function that `vjp(wrt, fn, *args)` runs, for a Python function
    `fn`: it returns `fn`'s value and its pullback, so reverse mode over it is reverse mode over
    the call and the pullback both. Refused for the other callees (rules, methods, partials,
    objects, gradients), whose pullbacks adjoint cannot differentiate again yet.
    """
    from .. import registry  # noqa: PLC0415  (the registry imports this package)
    from . import _transform_hook  # noqa: PLC0415

    if (
        not isinstance(fn, types.FunctionType) or marked(fn, "__adjoint_rrule__", None) is not None
        or registry.lookup(fn) is not None or registry.is_non_differentiable(fn) or _transform_hook is None
    ):
        raise RuleError(_refusal(fn))
    forward = _transform_hook(fn, wrt, args)
    if forward.__adjoint_arity__ != len(args):
        raise RuleError(_refusal(fn, "a function taking *args"))
    return forward


def _refusal(fn, what=None) -> str:
    what = what or f"`{getattr(fn, '__qualname__', None) or type(fn).__name__}`"
    return (
        f"adjoint cannot differentiate again the pullback of {what} called from differentiated code "
        "(reverse mode over reverse mode goes into plain Python functions only): call a plain function "
        "of the arrays instead"
    )


def float_positions(args) -> tuple:
    """The positions of the arguments that may carry cotangents: floats, float arrays, containers
    and objects (whose fields may hold floats).

    >>> float_positions((np.ones(2), 3, [1.0], "name"))
    (0, 2)
    """
    return tuple(i for i, a in enumerate(args) if holds_floats(a) or is_struct(a))
