"""Assembling and splitting arrays: concatenate, the stacks, the splits, tile, repeat, pad.

Each of these functions copies entries, so each is linear and its pullback is its plain
transpose (no conjugate for complex arrays): a join cuts its cotangent into the items' parts,
a split joins its pieces' cotangents back, and an entry copied several times sums the
cotangents of its copies.

A join's operand is a list or tuple of arrays (`sequences=True`; Python floats and 0-d arrays
too where NumPy takes them). Its cotangent is the same kind of sequence with one part per
item, in that item's shape and dtype: a float32 item gets a float32 part next to a float64
one, and an item that carries no gradient (an int array) gets None. A split returns a list,
whose cotangent may hold None for a piece nothing flowed into: zero.

Forward, each is `linear`: the tangents are joined, split or copied as their arrays are, zeros
standing in for the items of a sequence that carry none (nested lists too, for `np.block`).
Only `np.pad` is written out: its constant padding is no copy of the array.
"""

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import rrule


# ---- joining a sequence of arrays ---------------------------------------------------------------

@rrule(np.concatenate, sequences=True)
def concatenate_rrule(arrays, axis=0, *, dtype=None, casting="same_kind"):
    def concatenate_pullback(g):
        return (adj.unconcatenate(g, arrays, axis=axis),)

    return np.concatenate(arrays, axis=axis, dtype=dtype, casting=casting), concatenate_pullback


linear(np.concatenate)


@rrule(np.stack, sequences=True)
def stack_rrule(arrays, axis=0, *, dtype=None, casting="same_kind"):
    def stack_pullback(g):
        return (adj.unstack(g, arrays, axis=axis),)

    return np.stack(arrays, axis=axis, dtype=dtype, casting=casting), stack_pullback


linear(np.stack)


@rrule(np.hstack, sequences=True)
def hstack_rrule(tup, *, dtype=None, casting="same_kind"):
    value = np.hstack(tup, dtype=dtype, casting=casting)
    axis = int(value.ndim > 1)  # 1-D items join along their one axis, others along their second

    def hstack_pullback(g):
        return (adj.unconcatenate(g, tup, axis=axis, promote=np.atleast_1d),)

    return value, hstack_pullback


linear(np.hstack)


@rrule(np.vstack, sequences=True)
def vstack_rrule(tup, *, dtype=None, casting="same_kind"):
    def vstack_pullback(g):
        return (adj.unconcatenate(g, tup, axis=0, promote=np.atleast_2d),)

    return np.vstack(tup, dtype=dtype, casting=casting), vstack_pullback


linear(np.vstack)


@rrule(np.dstack, sequences=True)
def dstack_rrule(tup):
    def dstack_pullback(g):
        return (adj.unconcatenate(g, tup, axis=2, promote=np.atleast_3d),)

    return np.dstack(tup), dstack_pullback


linear(np.dstack)


@rrule(np.column_stack, sequences=True)
def column_stack_rrule(tup):
    def column_stack_pullback(g):
        return (adj.unconcatenate(g, tup, axis=1, promote=adj.as_column),)

    return np.column_stack(tup), column_stack_pullback


linear(np.column_stack)


@rrule(np.block, sequences=True)
def block_rrule(arrays):
    def block_pullback(g):
        return (adj.unblock(g, arrays),)

    return np.block(arrays), block_pullback


linear(np.block)


@rrule(np.append)
def append_rrule(arr, values, axis=None):
    def append_pullback(g):
        parts = adj.unconcatenate(g, (arr, values), axis=axis)
        return parts[0], parts[1]

    return np.append(arr, values, axis=axis), append_pullback


linear(np.append, operands=(0, 1))


# ---- splitting an array into a list of pieces ---------------------------------------------------

@rrule(np.split)
def split_rrule(ary, indices_or_sections, axis=0):
    pieces = np.split(ary, indices_or_sections, axis=axis)

    def split_pullback(g):
        return (adj.unsplit(g, pieces, ary, axis=axis),)

    return pieces, split_pullback


linear(np.split)


@rrule(np.array_split)
def array_split_rrule(ary, indices_or_sections, axis=0):
    pieces = np.array_split(ary, indices_or_sections, axis=axis)

    def array_split_pullback(g):
        return (adj.unsplit(g, pieces, ary, axis=axis),)

    return pieces, array_split_pullback


linear(np.array_split)


@rrule(np.hsplit)
def hsplit_rrule(ary, indices_or_sections):
    pieces = np.hsplit(ary, indices_or_sections)
    axis = int(np.ndim(ary) > 1)  # a 1-D array splits along its one axis, others along their second

    def hsplit_pullback(g):
        return (adj.unsplit(g, pieces, ary, axis=axis),)

    return pieces, hsplit_pullback


linear(np.hsplit)


@rrule(np.vsplit)
def vsplit_rrule(ary, indices_or_sections):
    pieces = np.vsplit(ary, indices_or_sections)

    def vsplit_pullback(g):
        return (adj.unsplit(g, pieces, ary, axis=0),)

    return pieces, vsplit_pullback


linear(np.vsplit)


@rrule(np.dsplit)
def dsplit_rrule(ary, indices_or_sections):
    pieces = np.dsplit(ary, indices_or_sections)

    def dsplit_pullback(g):
        return (adj.unsplit(g, pieces, ary, axis=2),)

    return pieces, dsplit_pullback


linear(np.dsplit)


# ---- copying entries: each entry sums the cotangents of its copies ------------------------------

@rrule(np.tile)
def tile_rrule(A, reps):
    def tile_pullback(g):
        return (adj.untile(g, A, reps),)

    return np.tile(A, reps), tile_pullback


linear(np.tile)


@rrule(np.repeat, np.ndarray.repeat)
def repeat_rrule(a, repeats, axis=None):
    def repeat_pullback(g):
        return (adj.unrepeat(g, a, repeats, axis=axis),)

    return np.repeat(a, repeats, axis=axis), repeat_pullback


linear(np.repeat, np.ndarray.repeat)


# `constant_values=` can only be passed by keyword, and keywords carry no gradient: the
# compiler refuses a differentiable value there.
@rrule(np.pad)
def pad_rrule(array, pad_width, mode="constant", *, constant_values=0):
    labels = adj.pad_labels(array, pad_width, mode)  # refuses the modes that compute new values
    # np.pad refuses `constant_values=` in the other modes, even the default.
    value = (
        np.pad(array, pad_width, constant_values=constant_values) if mode == "constant"
        else np.pad(array, pad_width, mode)
    )

    def pad_pullback(g):
        return (adj.copies_bar(g, array, labels),)

    return value, pad_pullback


# The padding copies entries of the array, except `constant_values`: constant, so the tangent is
# padded with zeros there (`np.pad` is only affine in `array` for nonzero constants).
@frule(np.pad)
def pad_frule(primals, tangents, **kwargs):
    def pad_jvp(array, pad_width, mode="constant", *, constant_values=0):
        array_dot = adj.pad_tangent(adj.tangent_or_zeros(tangents[0], array), pad_width, mode)  # refuses some modes
        value = (
            np.pad(array, pad_width, constant_values=constant_values) if mode == "constant"
            else np.pad(array, pad_width, mode)
        )
        return value, adj.tangent_like(array_dot, value)

    return pad_jvp(*primals, **kwargs)


@rrule(np.insert)
def insert_rrule(arr, obj, values, axis=None):
    def insert_pullback(g):
        # How many entries go in depends on the values' shape, so both labellings insert that shape.
        arr_at = np.insert(adj.entry_labels(arr), obj, np.full(np.shape(values), -1), axis=axis)
        values_at = np.insert(np.full(np.shape(arr), -1), obj, adj.entry_labels(values), axis=axis)
        return adj.copies_bar(g, arr, arr_at), None, adj.copies_bar(g, values, values_at)

    return np.insert(arr, obj, values, axis=axis), insert_pullback


linear(np.insert, operands=(0, 2))  # the array and the values inserted; `obj` is an index


@rrule(np.delete)
def delete_rrule(arr, obj, axis=None):
    def delete_pullback(g):
        return (adj.copies_bar(g, arr, np.delete(adj.entry_labels(arr), obj, axis=axis)),)

    return np.delete(arr, obj, axis=axis), delete_pullback


linear(np.delete)
