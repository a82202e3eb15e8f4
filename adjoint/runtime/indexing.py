"""Indexing and containers: reading items, writing them, appending, and the cotangents of each.

Reads (`y = x[i]`) in a loop add to `x`'s cotangent a slot at a time: generated code keeps
one mutable buffer for it (`buffer_like`), adds into it in place (`scatter_add`), and reads
the cotangent out at the end (`from_buffer`). Writes (`x[i] = v`) and appends
(`xs.append(v)`) become `setitem` and `append`, which return new containers and never update
their input, so the pullback still sees every value the forward pass read.
"""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError, add, is_differentiable, unbroadcast, zeros_like
from .structs import is_struct

# ---- reading items ---------------------------------------------------------------------------

def unindex(g, x, index):
    """Cotangent of `x` in `x[index]`: `g` scattered into zeros, repeated indices adding up.

    `x` may also be a tuple or list (indexed by an int or a slice), whose cotangent is the same
    kind of container, or a dict (by a key), whose cotangent holds only that key: reading one
    weight of a dict of many costs one entry (absent keys count as zero). `g` None is zero.

    >>> unindex(np.array([1.0, 2.0]), np.zeros(3), [0, 0])
    array([3., 0., 0.])
    >>> unindex(5.0, {"a": 1.0, "b": 2.0}, "b")
    {'b': 5.0}
    """
    if type(x) is dict:
        return {} if g is None else {index: g}
    if is_struct(x):  # an object with `__getitem__` (a `Sequential`): run it again, differentiated
        from . import vjp  # noqa: PLC0415  (the package imports this module)

        return None if g is None else vjp((0,), type(x).__getitem__, x, index)[1](g)[0]
    buffer = buffer_like(x)
    scatter_add(buffer, index, g)
    return from_buffer(buffer, x)


def unpack_bar(parts, x):
    """Cotangent of `x` in `a, b = x`, from the cotangents of the parts (None for zero).

    Unpacking an array iterates its first axis, so the parts stack back into an array.

    >>> unpack_bar([np.array([1.0, 2.0]), None], np.zeros((2, 2)))
    array([[1., 2.],
           [0., 0.]])
    >>> unpack_bar([1.0, None], (0.5, 3))  # an int part has no cotangent
    (1.0, None)
    """
    if is_struct(x):  # `enc, dec = model`: each part through the object's `__getitem__`
        buffer = _ObjectBuffer(x)
        for index, part in enumerate(parts):
            buffer.add(index, part)
        return buffer.total
    parts = [zeros_like(v) if p is None else p for p, v in zip(parts, x)]
    if isinstance(x, np.ndarray):
        return np.stack(parts).astype(x.dtype, copy=False)
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)._make(parts)
    return type(x)(parts) if type(x) in (tuple, list) else tuple(parts)


# ---- accumulating a cotangent slot by slot ---------------------------------------------------

def buffer_like(x):
    """A fresh zero cotangent of `x` that `scatter_add` adds into in place.

    An array or NumPy scalar gets a float array of its shape, a tuple or list a list of
    `None` (zero: an item nothing flowed into costs nothing), a dict an empty dict.

    >>> buffer_like((1.0, np.ones(2), 3))
    [None, None, None]
    """
    if isinstance(x, (tuple, list)):
        return [None] * len(x)
    if isinstance(x, dict):
        return {}
    if is_struct(x):
        return _ObjectBuffer(x)
    return np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))


class _ObjectBuffer:
    """The cotangent of an object read with `x[i]` in a loop (or walked by one), summed read
    by read, each read checked against what iterating the object gives."""

    def __init__(self, obj):
        self.obj, self.total, self.items = obj, None, None

    def add(self, index, value):
        if self.items is None:
            self.items = _items(self.obj)
        _check_item(self.obj, self.items, index)
        self.total = add(self.total, unindex(value, self.obj, index))


def _item(obj, index):
    try:
        return obj[index]
    except (KeyError, IndexError, TypeError):  # a `__getitem__` of names: not its iteration's order
        return _NO_ITEM


_NO_ITEM = object()


def _items(obj):
    """The items iterating `obj` gives, or None if it cannot be iterated; refused if it has
    no `__getitem__`, through which adjoint sends its items' gradients back."""
    kind = type(obj).__name__
    if not hasattr(type(obj), "__getitem__"):
        raise RuleError(
            f"adjoint sends the gradients of a `{kind}`'s items back through its `__getitem__`, which it does "
            f"not have: iterate over the list it holds instead (`for layer in {kind.lower()}.layers`)"
        )
    return list(obj) if hasattr(type(obj), "__iter__") else None


def _check_item(obj, items, index) -> None:
    if items is not None and isinstance(index, int) and not (index < len(items) and _item(obj, index) is items[index]):
        kind = type(obj).__name__
        raise RuleError(
            f"iterating over a `{kind}` gives other items than `{kind.lower()}[i]`, through which adjoint "
            "sends their gradients back: iterate over the list it holds instead"
        )


def unitem(g, x, index):
    """The cotangent of `x` in `x.item(*index)`: zeros with `g` at the item (`index` is the
    method's arguments: none, a flat position, or a position per axis or as one tuple).

    >>> unitem(2.0, np.ones((2, 2)), (1, 0))
    array([[0., 0.],
           [2., 0.]])
    """
    x_bar = np.zeros(np.shape(x), dtype=np.result_type(x, 0.0))
    if len(index) > 1:
        x_bar[index] = g
    elif index and isinstance(index[0], tuple):  # `x.item((i, j))`
        x_bar[index[0]] = g
    else:
        x_bar.flat[index[0] if index else 0] = g
    return x_bar if isinstance(x, np.ndarray) else x_bar[()]


def scatter_add(buffer, index, value):
    """Add `value` into `buffer[index]`, updating `buffer` in place (the caller owns it), and
    return `buffer`.

    In an array, repeated integer indices add up and a value broadcast over the slot is summed
    to its shape. A list takes an int or a slice (a slice's value is a sequence), a dict a key.
    `value` None adds nothing.

    >>> buffer = buffer_like(np.ones(3))
    >>> scatter_add(buffer, [0, 0, 2], np.array([1.0, 2.0, 5.0]))
    array([3., 0., 5.])
    """
    if value is None:
        return buffer
    if isinstance(buffer, _ObjectBuffer):
        buffer.add(index, value)
    elif isinstance(buffer, np.ndarray):
        if type(index) is int and type(value) in (float, np.float64) and buffer.ndim == 1:
            buffer[index] += value  # one item of a vector: the common case in loops, kept cheap
        elif type(index) is int and type(value) is np.ndarray and value.dtype == buffer.dtype and value.shape == buffer.shape[1:]:
            buffer[index] += value  # one row of a matrix: the common case in loops, kept cheap
        elif _is_advanced(index):
            np.add.at(buffer, index, value)  # `buffer[index] += value` would keep one of the repeats
        else:
            buffer[index] += unbroadcast(value, buffer[index])
    elif isinstance(buffer, dict):
        buffer[index] = add(buffer.get(index), value)
    elif isinstance(index, slice):
        for position, part in zip(range(len(buffer))[index], value):
            buffer[position] = add(buffer[position], part)
    else:
        buffer[index] = add(buffer[index], value)
    return buffer


def from_buffer(buffer, x):
    """The cotangent of `x` held in its `buffer`: a tuple for a tuple, a NumPy scalar for one.

    >>> from_buffer([1.0, 2.0], (0.5, 0.5))
    (1.0, 2.0)
    """
    if isinstance(buffer, _ObjectBuffer):
        return buffer.total
    if isinstance(x, tuple):
        return type(x)._make(buffer) if hasattr(type(x), "_fields") else tuple(buffer)
    if isinstance(x, np.generic):
        return buffer[()]
    return buffer


def _is_advanced(index) -> bool:
    """Whether `index` selects with integer arrays or boolean masks (NumPy's advanced indexing)."""
    parts = index if type(index) is tuple else (index,)
    return any(isinstance(p, (list, tuple, np.ndarray, bool, np.bool_)) for p in parts)  # `x[(0, 0), 1]` too


# ---- writing items ---------------------------------------------------------------------------

def setitem(x, index, value):
    """A copy of `x` with `copy[index] = value`; `x` itself is not changed.

    Generated code writes `x = adj.setitem(x, i, v)` for `x[i] = v`, so the pullback still
    reads the values the assignment overwrote. Arrays, lists and dicts can be written.

    >>> x = np.zeros(3)
    >>> setitem(x, 1, 5.0), x
    (array([0., 5., 0.]), array([0., 0., 0.]))
    """
    if isinstance(x, np.ndarray):
        result = x.copy(order="K")  # keep the layout, which `reshape(order="A")` reads
    elif isinstance(x, (list, dict)):
        result = x.copy()
    elif hasattr(type(x), "__setitem__"):
        raise RuleError(f"adjoint differentiates item assignment to arrays, lists and dicts, not to a {type(x).__name__}")
    else:
        raise TypeError(f"'{type(x).__name__}' object does not support item assignment")
    result[index] = value
    return result


def add_at(x, index, value):
    """A copy of `x` with `np.add.at(copy, index, value)` applied; `x` itself is not changed.

    Generated code writes `x = adj.add_at(x, i, v)` for the statement `np.add.at(x, i, v)`:
    repeated indices add up, as they do in NumPy.

    >>> x = np.zeros(3)
    >>> add_at(x, [0, 2, 0], 1.0), x
    (array([2., 0., 1.]), array([0., 0., 0.]))
    """
    result = np.array(x, copy=True, order="K")
    np.add.at(result, index, value)
    return result


def setitem_bar(g, x, index, value):
    """Cotangents `(x_bar, value_bar)` of `y = setitem(x, index, value)`, given `y`'s `g`.

    The overwritten slot of `x` gets zero; `value` gets the slot's cotangent, summed over the
    axes NumPy broadcast it along. An integer-array index must not repeat a position: NumPy
    keeps only the last of the repeated writes, so the gradient would be ambiguous.

    >>> setitem_bar(np.array([1.0, 2.0, 3.0]), np.zeros(3), slice(0, 2), 0.0)
    (array([0., 0., 3.]), 3.0)
    """
    if g is None:
        return None, None
    if isinstance(x, dict):
        x_bar = {k: g.get(k) for k in x}
        if index in x:
            x_bar[index] = zeros_like(x[index])
        return x_bar, g.get(index)
    if isinstance(x, list):
        return _list_setitem_bar(g, x, index, value)
    _refuse_repeated(x, index)
    x_bar = np.array(g)
    x_bar[index] = 0
    if np.asarray(x).dtype.kind not in "fc":  # written into ints or bools: truncated, no gradient
        return x_bar, zeros_like(value)
    return x_bar, _value_bar(np.asarray(g)[index], value)


def _list_setitem_bar(g, x, index, value):
    if not isinstance(index, slice):
        x_bar = list(g)
        x_bar[index] = None
        return x_bar, zeros_like(value) if g[index] is None else g[index]
    positions = range(len(x))[index]
    if positions.step == 1:  # `x[a:b] = v` replaces a run, perhaps by one of another length
        start, inserted = positions.start, len(g) - len(x) + len(positions)
        x_bar = list(g[:start]) + [None] * len(positions) + list(g[start + inserted :])
        parts = g[start : start + inserted]
    else:
        x_bar = list(g)
        for position in positions:
            x_bar[position] = None
        parts = [g[position] for position in positions]
    return x_bar, unpack_bar(parts, value)


def _value_bar(g_slot, value):
    """The assigned `value`'s cotangent: the slot's, summed where NumPy broadcast `value`."""
    if type(value) is tuple or type(value) is list:  # `x[0:2] = [a, b]`: one part per item
        spread = unbroadcast(g_slot, np.empty(np.shape(value)))
        return type(value)(_value_bar(part, v) for part, v in zip(spread, value))
    if not is_differentiable(value):
        return None
    reduced = unbroadcast(g_slot, value)
    return float(reduced) if type(value) is float else reduced


def _refuse_repeated(x, index):
    if not _is_advanced(index):
        return
    written = np.arange(np.size(x)).reshape(np.shape(x))[index]
    if np.unique(written).size != np.size(written):
        raise RuleError(
            "an assignment `x[index] = value` wrote to the same position twice (a repeated entry "
            "in an integer-array index): NumPy keeps only the last write, so its gradient is "
            "ambiguous. Avoid repeated indices in assignments, e.g. with np.unique(index)."
        )


# ---- appending -------------------------------------------------------------------------------

def append(lst, v):
    """`lst + [v]`, a new list: `lst` itself is not changed.

    Generated code writes `xs = adj.append(xs, v)` for `xs.append(v)`.

    >>> xs = [1.0]
    >>> append(xs, 2.0), xs
    ([1.0, 2.0], [1.0])
    """
    if not isinstance(lst, list):
        raise TypeError(f"append needs a list, not a {type(lst).__name__}")
    return lst + [v]


def append_bar(g, v):
    """Cotangents `(lst_bar, v_bar)` of `lst_1 = append(lst, v)`, given `lst_1`'s `g` (whose
    items may be None: zero).

    >>> append_bar([1.0, 2.0, 3.0], 0.5), append_bar([1.0, None], np.ones(2))
    (([1.0, 2.0], 3.0), ([1.0], array([0., 0.])))
    """
    if g is None:
        return None, zeros_like(v)
    return g[:-1], zeros_like(v) if g[-1] is None else g[-1]
