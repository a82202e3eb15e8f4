"""Transposes of the pullback helpers that read and write items of containers and buffers, and
that cut joins back into their parts, for reverse mode over a pullback (see `transposes`):
`unindex` scatters, so its transpose gathers; `unstack` cuts, its transpose stacks.
"""

from __future__ import annotations

import numpy as np

from .cotangents import RuleError, cotangent_like, from_sequence, is_differentiable, spread, sum_to_shape, zeros_like
from .indexing import _ObjectBuffer
from .structs import Tangent, _attribute_kind, field_bar, is_namedtuple, is_struct, tangent_fields
from .tangents import holds_floats
from .transposes import broadcast_back, dense_cotangent, is_float, zero_cotangent

__all__ = [
    "unindex_transpose",
    "scatter_add_transpose",
    "from_buffer_transpose",
    "item_bar_transpose",
    "field_bar_transpose",
    "field_bars_transpose",
    "unpack_bar_transpose",
    "append_bar_transpose",
    "setitem_bar_transpose",
    "unconcat_transpose",
    "unstack_transpose",
    "unconcatenate_transpose",
    "unsplit_transpose",
    "undiagonal_transpose",
]


# ---- items and buffers -----------------------------------------------------------------------

def unindex_transpose(c, g, x, index):
    """`g`'s cotangent in `unindex(g, x, index)`: the entries of `c` at `index` (a gather, the
    transpose of a scatter), fitted to `g`.

    >>> unindex_transpose(np.array([3.0, 1.0, 5.0]), np.zeros(2), np.zeros(3), [0, 0])
    array([3., 3.])
    >>> unindex_transpose({"b": 2.0}, 1.0, {"a": 1.0, "b": 2.0}, "b")
    2.0
    """
    if g is None:
        return None
    return _gathered(c, x, index, g)


def scatter_add_transpose(c, buffer, index, value):
    """`value`'s cotangent in `scatter_add(buffer, index, value)`: the entries of the buffer's
    cotangent `c` at `index`, fitted to `value` (the buffer's own cotangent is `c`).

    >>> scatter_add_transpose(np.array([1.0, 2.0, 3.0]), np.zeros(3), slice(1, None), 0.5)
    5.0
    """
    if value is None:
        return None
    return _gathered(c, buffer, index, value)


def _gathered(c, container, index, value):
    """The cotangent of `value`, added into `container[index]`, from the container's `c`."""
    if isinstance(container, _ObjectBuffer) or is_struct(container):
        raise RuleError(
            "adjoint cannot differentiate again the cotangent of an object read with `x[i]` (its "
            "`__getitem__` differentiated once): iterate over the list it holds instead"
        )
    if c is None:
        return zeros_like(value)
    if isinstance(container, dict):
        part = c.get(index)
    elif isinstance(container, (list, tuple)):
        if isinstance(index, slice):
            parts = [c[p] for p in range(len(container))[index]]
            return type(value)(parts) if type(value) in (list, tuple) else np.array(parts)
        part = c[index]
    else:
        part = _fitted(np.asarray(c)[index], value)
    return zeros_like(value) if part is None else part


def _fitted(slot, value):
    """A slot's cotangent as that of the `value` added into it: summed where NumPy broadcast
    `value` over the slot, copied where the value was summed into the slot."""
    if np.shape(slot) != np.shape(value) and np.size(slot) > np.size(value):
        slot = sum_to_shape(slot, np.shape(value))
    elif np.shape(slot) != np.shape(value):
        slot = broadcast_back(slot, np.shape(value))
    return cotangent_like(slot, value) if is_float(value) else None


def from_buffer_transpose(c, buffer, x):
    """The buffer's cotangent in `from_buffer(buffer, x)`: `c` as the buffer holds `x`'s
    cotangent (a list for a tuple, a 0-d array for a NumPy scalar).

    >>> from_buffer_transpose((1.0, None), [None, None], (0.5, 0.5))
    [1.0, None]
    """
    if isinstance(buffer, _ObjectBuffer):
        raise RuleError("adjoint cannot differentiate again the cotangent of an object walked in a loop")
    if isinstance(buffer, np.ndarray):
        return cotangent_like(np.zeros_like(buffer) if c is None else c, buffer)
    if isinstance(buffer, list):
        return [None] * len(buffer) if c is None else list(c)
    return {} if c is None else c


def item_bar_transpose(c, g, key):
    """`g`'s cotangent in `item_bar(g, key, value)`: `c` under `key`, nothing elsewhere (None for
    a `g` that held nothing there, whose item was a constant zero).

    >>> item_bar_transpose(np.ones(2), (np.zeros(2), np.zeros(3)), 0)
    (array([1., 1.]), None)
    >>> item_bar_transpose(2.0, {"W": 1.0, "b": 3.0}, "W")
    {'W': 2.0}
    """
    if type(g) is dict:
        return {key: c} if g.get(key) is not None else {}
    if isinstance(g, Tangent):
        return Tangent(type(g), {key: c} if tangent_fields(g).get(key) is not None else {})
    if isinstance(g, (tuple, list)):
        position = range(len(g))[key]
        parts = [c if i == position and g[i] is not None else None for i in range(len(g))]
        return type(g)._make(parts) if is_namedtuple(g) else type(g)(parts)
    if isinstance(g, np.ndarray) and isinstance(key, int):
        g_bar = np.zeros(np.shape(g), dtype=g.dtype)
        g_bar[key] = c if g.dtype.kind == "c" else np.real(c)
        return g_bar
    return None


def field_bar_transpose(c, g, obj, name, value):
    """`g`'s cotangent in `value = field_bar(g, obj, name)`: the field `name` of `c` (all of `c`
    where `value` is `g` itself, a method's cotangent being its receiver's).

    >>> class Model:
    ...     pass
    >>> m = Model(); m.W = 1.0
    >>> field_bar_transpose(Tangent(Model, W=2.0), 0.5, m, "W", Tangent(Model, W=0.5))
    2.0
    """
    if g is None:
        return None
    if callable(_attribute_kind(type(obj), name)):
        raise RuleError(
            f"adjoint cannot differentiate again the cotangent of the property `{type(obj).__name__}.{name}` "
            "(its getter differentiated once): read the field it computes from instead"
        )
    if value is g:
        part = c
    elif isinstance(c, Tangent):
        part = tangent_fields(c).get(name)
    elif isinstance(c, dict):
        part = c.get(name)
    else:
        part = getattr(c, name, None)  # a namedtuple's
    return zeros_like(g) if part is None else part


def field_bars_transpose(c, gs, obj):
    """`gs`'s cotangent in `field_bars(gs, obj)`: each field's `field_bar_transpose`, by name.

    >>> class Model:
    ...     pass
    >>> m = Model(); m.W, m.b = 1.0, 2.0
    >>> field_bars_transpose(Tangent(Model, W=2.0, b=3.0), {"W": 0.5, "b": None}, m)
    {'W': 2.0, 'b': None}
    """
    return {name: field_bar_transpose(c, g, obj, name, field_bar(g, obj, name)) for name, g in gs.items()}


def unpack_bar_transpose(c, parts, x):
    """The parts' cotangents in `unpack_bar(parts, x)`: `c`'s items (an array's rows), None for
    a part that was None (a constant zero).

    >>> unpack_bar_transpose(np.array([[1.0, 2.0], [3.0, 4.0]]), [np.zeros(2), None], np.zeros((2, 2)))
    [array([1., 2.]), None]
    """
    if is_struct(x):
        raise RuleError("adjoint cannot differentiate again the cotangent of an object unpacked into its items")
    items = [None] * len(parts) if c is None else list(c)
    bars = [
        None if part is None or item is None else cotangent_like(item, part) if isinstance(x, np.ndarray) else item
        for part, item in zip(parts, items)
    ]
    return type(parts)(bars) if type(parts) in (list, tuple) else bars


def append_bar_transpose(c, g):
    """`g`'s cotangent in `append_bar(g, v)`: the list's cotangent, then the value's (None where
    `g`'s last item was None: a constant zero).

    >>> append_bar_transpose(([1.0], 2.0), [0.5, 0.5])
    [1.0, 2.0]
    """
    if g is None:
        return None
    head, last = (None, None) if c is None else c
    return ([None] * (len(g) - 1) if head is None else list(head)) + [None if g[-1] is None else last]


def setitem_bar_transpose(c, g, x, index, value):
    """`g`'s cotangent in `setitem_bar(g, x, index, value)`, from the cotangent `c = (x_bar_bar,
    value_bar_bar)` of its pair: the first outside the written slot, the second inside it.

    >>> setitem_bar_transpose((np.array([1.0, 2.0, 3.0]), 5.0), np.zeros(3), np.zeros(3), slice(0, 2), 0.0)
    array([5., 5., 3.])
    """
    if g is None:
        return None
    x_c, value_c = (None, None) if c is None else c
    if isinstance(x, dict):
        g_bar = {k: None if x_c is None else x_c.get(k) for k in x if k != index and g.get(k) is not None}
        if g.get(index) is not None:
            g_bar[index] = value_c
        return g_bar
    if isinstance(x, list):
        return _list_setitem_bar_transpose(x_c, value_c, g, x, index, value)
    g_bar = np.zeros_like(g) if x_c is None else np.array(x_c, dtype=np.result_type(g))
    g_bar[index] = 0
    if value_c is not None and is_float(x) and (is_float(value) or type(value) in (list, tuple)):
        slot = g_bar[index]
        g_bar[index] = broadcast_back(dense_cotangent(value_c, value), np.shape(slot)).astype(slot.dtype, copy=False)
    return cotangent_like(g_bar, g)


def _list_setitem_bar_transpose(x_c, value_c, g, x, index, value):
    head = [None] * len(x) if x_c is None else list(x_c)
    if not isinstance(index, slice):
        head[index] = value_c if g[index] is not None else None
        return head
    positions = range(len(x))[index]
    if positions.step == 1:  # a run replaced by `inserted` items
        start, inserted = positions.start, len(g) - len(x) + len(positions)
        parts = unpack_bar_transpose(value_c, list(g[start : start + inserted]), value)
        return head[:start] + list(parts) + head[start + len(positions):]
    parts = unpack_bar_transpose(value_c, [g[p] for p in positions], value)
    for position, part in zip(positions, parts):
        head[position] = part
    return head


# ---- joins and cuts --------------------------------------------------------------------------

def unconcat_transpose(c, g, a, b):
    """`g`'s cotangent in `unconcat(g, a, b)`: the two parts' cotangents joined again.

    >>> unconcat_transpose(((1.0,), None), (0.0, 0.0, 0.0), (0.0,), (0.0, 0.0))
    (1.0, None, None)
    """
    if g is None:
        return None
    a_c, b_c = (None, None) if c is None else c
    parts = ([None] * len(a) if a_c is None else list(a_c)) + ([None] * len(b) if b_c is None else list(b_c))
    if isinstance(g, np.ndarray):  # a list's cotangent that a reduction made an array
        return cotangent_like(np.array([np.zeros(g.shape[1:]) if p is None else p for p in parts]), g)
    return type(g)(parts)


def unstack_transpose(c, g, arrays, axis=0):
    """`g`'s cotangent in `unstack(g, arrays, axis)`: the items' cotangents stacked along `axis`.

    >>> unstack_transpose((np.array([1.0, 3.0]), None), np.zeros((2, 2)), (np.zeros(2), np.zeros(2)), axis=1)
    array([[1., 0.],
           [3., 0.]])
    """
    axis = axis % np.ndim(g)
    shape = np.shape(g)[:axis] + np.shape(g)[axis + 1:]  # an item's: g's without `axis`
    items = [None] * len(arrays) if c is None else list(c)
    stacked = np.stack([np.zeros(shape) if item is None else np.reshape(item, shape) for item in items], axis=axis)
    return cotangent_like(stacked, g)


def unconcatenate_transpose(c, g, arrays, axis=0, promote=np.asanyarray):
    """`g`'s cotangent in `unconcatenate(g, arrays, axis, promote)`: the items' cotangents
    joined again along `axis` (flattened, for `axis=None`).

    >>> unconcatenate_transpose([np.ones(2), None], np.zeros(5), [np.zeros(2), np.zeros(3)])
    array([1., 1., 0., 0., 0.])
    """
    items = [None] * len(arrays) if c is None else list(c)
    shapes = [(np.size(a),) if axis is None else np.shape(promote(a)) for a in arrays]
    parts = [np.zeros(shape) if item is None else np.reshape(item, shape) for item, shape in zip(items, shapes)]
    return cotangent_like(np.concatenate(parts, axis=0 if axis is None else axis), g)


def unsplit_transpose(c, g, pieces, axis=0):
    """`g`'s cotangent in `unsplit(g, pieces, ary, axis)`: `c` cut into the pieces again (None
    for a piece that got none, a constant zero).

    >>> unsplit_transpose(np.arange(3.0), [None, np.zeros(1)], [np.zeros(2), np.zeros(1)])
    [None, array([2.])]
    """
    sizes = [np.shape(p)[axis] for p in pieces]
    shape = list(np.shape(pieces[0]))
    shape[axis] = sum(sizes)
    cut = np.split(np.reshape(np.zeros(shape) if c is None else c, shape), np.cumsum(sizes)[:-1], axis=axis)
    parts = [None if b is None else cotangent_like(part, b) for part, b in zip(cut, g)]
    return type(g)(parts) if type(g) in (list, tuple) else parts


def undiagonal_transpose(c, g, a, offset=0, axis1=0, axis2=1):
    """`g`'s cotangent in `undiagonal(g, a, offset, axis1, axis2)`: the diagonal of `c` (summed,
    for a `g` whose last axis of length 1 was broadcast along it).

    >>> undiagonal_transpose(np.arange(6.0).reshape(2, 3), np.zeros(2), np.zeros((2, 3)), offset=1)
    array([1., 5.])
    """
    if c is None:
        return zeros_like(g)
    return cotangent_like(sum_to_shape(np.diagonal(c, offset, axis1, axis2), np.shape(g)), g)
