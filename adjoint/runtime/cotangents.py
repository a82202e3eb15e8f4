"""Cotangent values: what carries one, zeros, sums, and undoing broadcasting and reductions."""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import AdjointError


class RuleError(AdjointError):
    """A rule or a runtime helper was used against its contract.

    >>> isinstance(RuleError("no rule"), AdjointError)  # caught with adjoint's other errors
    True
    """


# ---- what carries a gradient ----------------------------------------------------------------

def is_differentiable(value) -> bool:
    """Whether `value` is a float or complex scalar or array, the values that get cotangents.

    >>> is_differentiable(1.5), is_differentiable(np.ones(2, dtype=np.float32)), is_differentiable(2j)
    (True, True, True)
    >>> is_differentiable(3), is_differentiable(np.arange(2)), is_differentiable([1.5])
    (False, False, False)
    """
    if isinstance(value, (float, complex)):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and isinstance(value, (np.ndarray, np.generic)) and dtype.kind in "fc"


def zeros_like(value):
    """The zero cotangent of `value`: 0.0 for a float, zeros for an array, None for the rest.

    Tuples, lists, namedtuples and dicts get the same container of zeros; other objects
    get None (their cotangents are sparse: see `structs`).

    >>> zeros_like({"w": np.ones(2), "n": 3, "b": (1.5,)})
    {'w': array([0., 0.]), 'n': None, 'b': (0.0,)}
    """
    if type(value) is float:
        return 0.0
    if type(value) is complex:
        return 0j
    if type(value) is np.ndarray and value.flags.c_contiguous and value.dtype.kind in "fc":
        return np.zeros(value.shape, value.dtype)  # (what `np.zeros_like` makes, without its Python layers)
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "fc":
        return np.zeros_like(value)
    if type(value) is tuple:
        return tuple(zeros_like(v) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a namedtuple: the same type
        return type(value)._make(zeros_like(v) for v in value)
    if type(value) is list:
        return [zeros_like(v) for v in value]
    if type(value) is dict:
        return {k: zeros_like(v) for k, v in value.items()}
    if isinstance(value, (float, complex)):  # a subclass of float or complex
        return 0j if isinstance(value, complex) else 0.0
    return None


def cotangent_like(g, x):
    """`g`, which has as many entries as `x`, as `x`'s cotangent: in `x`'s shape and dtype (the
    real part for a real `x`), a scalar of `x`'s type for a Python or NumPy scalar, and None
    for an `x` that carries no gradient (an int, a bool).

    >>> cotangent_like(np.array([[1.5 + 1j, 2.5]]), np.zeros(2, dtype=np.float32))
    array([1.5, 2.5], dtype=float32)
    >>> cotangent_like(np.array([2.0]), 1.0), cotangent_like(2j, np.complex64(1)), cotangent_like(2.0, 1)
    (2.0, np.complex64(2j), None)
    >>> cotangent_like(np.array([1.0, 2.0]), [0.5, 3])
    [1.0, None]
    """
    if type(x) is list or type(x) is tuple:  # a nested list joined as the array it makes
        g = np.reshape(g, np.shape(x))
        return type(x)(cotangent_like(g[i], item) for i, item in enumerate(x))
    if not is_differentiable(x):
        return None
    if not np.iscomplexobj(x):
        g = np.real(g)
    g = np.reshape(g, np.shape(x))
    if isinstance(x, (float, complex)):  # a Python scalar, or NumPy's float64 and complex128
        return type(x)(g[()])
    matched = np.asarray(g, dtype=x.dtype)
    return matched if isinstance(x, np.ndarray) else matched[()]


def add(a, b):
    """Sum of two cotangents, where `None` is zero and tuples, lists and dicts add elementwise.

    Dicts add by key, over the keys of either; namedtuples by field; `Tangent`s (objects'
    cotangents) by field, over the fields of either.

    >>> add({"w": 1.0, "b": None}, {"b": 2.0, "c": 3.0})
    {'w': 1.0, 'b': 2.0, 'c': 3.0}
    """
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is tuple or type(a) is list:
        return type(a)(add(x, y) for x, y in zip(a, b))
    if type(b) is tuple or type(b) is list:  # a list's cotangent, and one a reduction made an array
        return add(b, a)
    if isinstance(a, dict):
        return {k: add(a.get(k), b.get(k)) for k in {**a, **b}}
    if isinstance(a, tuple) and hasattr(type(a), "_fields"):
        return type(a)._make(add(x, y) for x, y in zip(a, b))
    return a + b


# ---- broadcasting and reductions -------------------------------------------------------------

_FLOAT64 = (float, np.float64)
_FLOAT_SCALARS = frozenset({float, np.float64, np.float32, np.float16})  # real scalars kept on fast paths


def unbroadcast(g, x):
    """Sum `g` over the axes NumPy broadcast `x` along, and cast it to `x`'s float dtype (the
    real part for a real `x`).

    >>> unbroadcast(np.ones((2, 3)), np.zeros((1, 3), dtype=np.float32))
    array([[2., 2., 2.]], dtype=float32)
    >>> unbroadcast(np.array([1 + 2j, 3 - 1j]), np.zeros(2)), unbroadcast(np.ones(3), 0.5)
    (array([1., 3.]), np.float64(3.0))
    """
    if type(g) is np.ndarray and type(x) is np.ndarray and g.dtype == x.dtype:
        if g.shape == x.shape:
            return g
        extra = g.ndim - x.ndim  # a bias broadcast along leading axes: the common case, kept cheap
        if extra > 0 and g.shape[extra:] == x.shape:
            return g.sum(axis=0) if extra == 1 else g.sum(axis=tuple(range(extra)))
    if type(x) in _FLOAT64 and type(g) in _FLOAT64:  # scalar loops: the common case, kept cheap
        return g
    if type(g) is type(x) and type(x) in _FLOAT_SCALARS:  # a float32 model's loss: as cheap
        return g
    if isinstance(x, (float, int)) and np.iscomplexobj(g):  # a real operand of a complex result
        g = np.real(g)
    if type(x) is tuple or type(x) is list:
        raise RuleError(
            f"a {type(x).__name__} was used in arithmetic (`+` concatenates, `*` repeats): adjoint "
            "cannot differentiate that; operate on arrays"
        )
    if x is not None and not isinstance(x, (np.ndarray, np.generic, numbers.Number)):
        raise RuleError(
            f"a `{type(x).__name__}` object was used in arithmetic, which calls its own operator method "
            "(`__add__`, `__mul__`...): adjoint does not follow those. Call a method that does the "
            "arithmetic on its fields instead (`a.plus(b)`)"
        )
    if np.shape(g) != np.shape(x):
        g = sum_to_shape(g, np.shape(x))
    dtype = getattr(x, "dtype", None)
    if dtype is not None and dtype.kind in "fc" and getattr(g, "dtype", None) != dtype:
        g = np.asarray(g if dtype.kind == "c" else np.real(g), dtype=dtype)
    return g


def sum_to_shape(g, shape):
    """`g` summed over the axes broadcasting stretched an operand of `shape` along: its extra
    leading axes, and the axes where `shape` has length 1 (kept, as length 1).

    >>> sum_to_shape(np.ones((4, 2, 3)), (1, 3))
    array([[8., 8., 8.]])
    """
    g = np.asarray(g)
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    elif extra < 0:  # the operand had leading axes of length 1 that the operation dropped
        g = np.reshape(g, (1,) * -extra + g.shape)
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=stretched, keepdims=True) if stretched else g


def reduced_axes(axis, ndim) -> tuple:
    """The axes a reduction over `axis` (None: all) of an array with `ndim` axes removes,
    non-negative, in the order `axis` gives them.

    >>> reduced_axes(None, 2), reduced_axes(-1, 3), reduced_axes((2, 0), 3)
    ((0, 1), (2,), (2, 0))
    """
    if axis is None:
        return tuple(range(ndim))
    return tuple(int(a) % ndim for a in np.atleast_1d(axis))


def spread(reduced, axis, keepdims=False):
    """A reduction's result over `axis`, or its cotangent, with the reduced axes put back as
    length 1, so that it broadcasts against the reduced array; as it is for `keepdims`, for
    `axis=None` or a scalar (which broadcast as they are).

    >>> spread(np.ones(2), (0, 2)).shape, spread(np.ones(2), 1, keepdims=True).shape
    ((1, 2, 1), (2,))
    """
    if keepdims or axis is None or np.ndim(reduced) == 0:
        return reduced
    return np.expand_dims(reduced, axis)


def unreduce(g, x, axis=None, keepdims=False):
    """Spread the cotangent `g` of a reduction of `x` over `axis` back to `x`'s shape, as `x`'s
    cotangent (`cotangent_like`): in `x`'s dtype, the real part for a real `x`, None for an
    `x` of ints or bools, and one item per row for a list or tuple `x` (`as_sequence`).
    With `axis=None` `g` is anything that broadcasts to `x`'s shape.

    >>> unreduce(np.array([1.0, 2.0]), np.zeros((2, 2), dtype=np.float32), axis=1)
    array([[1., 1.],
           [2., 2.]], dtype=float32)
    >>> unreduce(1 + 1j, [1.0, 2.0]), unreduce(1.0, np.arange(2))
    ([np.float64(1.0), np.float64(1.0)], None)
    """
    if type(x) is float:  # scalar code: kept cheap
        return float(np.real(g))
    if type(x) is np.ndarray and x.dtype.kind == "f" and x.size <= 4096:  # a small array: filling beats a view
        if axis is None and type(g) in _FLOAT_SCALARS:
            spread_out = np.empty_like(x)  # (filled: `np.full` costs more in Python than filling)
            spread_out.fill(g)
            return spread_out
        if keepdims and type(g) is np.ndarray and g.dtype == x.dtype:
            spread_out = np.empty_like(x)
            spread_out[...] = g
            return spread_out
    array = from_sequence(x)
    g = spread(g, axis, keepdims)
    if type(array) is np.ndarray and array.dtype.kind in "fc":  # cast the small `g`, then broadcast it
        g = np.asarray(g if array.dtype.kind == "c" else np.real(g), dtype=array.dtype)
        return as_sequence(np.broadcast_to(g, array.shape), x)
    return as_sequence(cotangent_like(np.broadcast_to(g, np.shape(array)), array), x)


def from_sequence(x):
    """A list or tuple `x` as the array its items make, as a reduction reads it (`np.sum([a,
    b])`); any other `x` as it is.

    >>> from_sequence([np.zeros(3), np.ones(3)]).shape, from_sequence(1.5)
    ((2, 3), 1.5)
    """
    return np.asarray(x) if type(x) is list or type(x) is tuple else x


def as_sequence(cotangent, x):
    """The cotangent of a list or tuple `x` that a reduction read as the array it makes
    (`np.sum([a, b])`): the same kind of sequence, one row per item; `cotangent` for others.

    >>> as_sequence(np.array([[1.0, 2.0], [3.0, 4.0]]), (np.zeros(2), np.zeros(2)))
    (array([1., 2.]), array([3., 4.]))
    """
    if cotangent is not None and (type(x) is list or type(x) is tuple):
        return type(x)(list(cotangent))
    return cotangent


def unreduce_chosen(g, x, ans, axis=None, keepdims=False):
    """Cotangent of `max`/`min`: to the chosen entries, shared equally between ties. A list or
    tuple (`np.max(losses)`) is reduced as the array it makes, and gets that array's cotangent.

    >>> x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]])
    >>> unreduce_chosen(np.array([1.0, 1.0]), x, np.max(x, axis=1), axis=1)
    array([[0. , 0.5, 0.5],
           [1. , 0. , 0. ]])
    """
    items, x = x, from_sequence(x)
    g, ans = spread(g, axis, keepdims), spread(ans, axis, keepdims)
    chosen = x == ans
    if _one_each(chosen, ans):
        return as_sequence(unbroadcast(g * chosen, x), items)
    count = np.maximum(np.sum(chosen, axis=axis, keepdims=True), 1)  # 0 where the extremum is NaN
    return as_sequence(unbroadcast(g * chosen / count, x), items)


def add_chosen(total, g, x, ans, axis=None, keepdims=False):
    """`total + unreduce_chosen(g, x, ans, axis, keepdims)`, added into `total` in place where
    it is an array of `x`'s shape that the caller owns (a pullback accumulating a max's
    cotangent): only the chosen entries are touched, and no array of `x`'s size is made.

    >>> total = np.ones((2, 3))
    >>> x = np.array([[1.0, 3.0, 2.0], [0.0, 5.0, 5.0]])
    >>> add_chosen(total, np.array([[2.0], [4.0]]), x, np.max(x, axis=1, keepdims=True), axis=1, keepdims=True)
    array([[1., 3., 1.],
           [1., 3., 3.]])
    """
    if type(total) is np.ndarray and type(x) is np.ndarray and total.shape == x.shape and total.flags.writeable:
        g_spread, ans_spread = spread(g, axis, keepdims), spread(ans, axis, keepdims)
        if np.result_type(total, g_spread) == total.dtype:
            chosen = x == ans_spread
            if _one_each(chosen, ans_spread):
                return np.add(total, g_spread, out=total, where=chosen)
    return total + unreduce_chosen(g, x, ans, axis=axis, keepdims=keepdims)


def _one_each(chosen, ans) -> bool:
    """Whether every slice chose exactly one entry: no ties, and no NaN extremum (which
    chooses none, so that a tie elsewhere could make up the count)."""
    return np.count_nonzero(chosen) == np.size(ans) and not np.isnan(ans).any()


def tie_weight(x, ans, other):
    """Share of `maximum(x, other)`'s cotangent that goes to `x`: 1, 0, or 1/2 at ties.

    >>> x, other = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 1.0])
    >>> tie_weight(x, np.maximum(x, other), other)
    array([0. , 0.5, 1. ])
    """
    return (x == ans) / (1.0 + (x == other))


def prod_bar(g, x, axis=None, keepdims=False):
    """Cotangent of `x` in `np.prod(x, axis)`: `g` times the product of the other entries (None
    for an `x` of ints or bools).

    Running products from either end give each entry the product of the others without
    dividing by it, so the cotangent is exact where `x` has zeros (`ans / x` would be nan).

    >>> prod_bar(1.0, np.array([2.0, 0.0, 3.0]))
    array([0., 6., 0.])
    """
    items, x = x, np.asarray(x)
    if x.dtype.kind not in "fc":
        return None
    axes = reduced_axes(axis, x.ndim)
    kept = x.ndim - len(axes)
    reduced = tuple(range(kept, x.ndim))
    moved = np.moveaxis(x, axes, reduced)  # the reduced axes last, flattened into one
    rows = moved.reshape(moved.shape[:kept] + (math.prod(moved.shape[kept:]),))
    ones = np.ones_like(rows[..., :1])
    before = np.cumprod(np.concatenate([ones, rows[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, rows[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    others = np.moveaxis((before * after).reshape(moved.shape), reduced, axes)
    return as_sequence(unreduce(g, x, axis=axis, keepdims=keepdims) * others, items)
