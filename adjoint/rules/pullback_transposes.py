"""Reverse rules of the runtime helpers that generated pullback code calls (`adj.unbroadcast`,
`adj.matmul_lhs_bar`...), so that reverse mode runs over a pullback: the reverse transform
accepts its own output (reverse-over-reverse).

A pullback is linear in its cotangent, and so is each of these helpers in its cotangent operand
`g`; the pullback of a linear map is its transpose (`adjoint.runtime.transposes` and `item_transposes`, one per helper):
`unbroadcast(g, x)` sums `g` down to `x`'s shape, so its pullback copies the cotangent `c` back
up to `g`'s shape; `unreduce` spreads, its pullback sums; `unindex` scatters, its pullback
gathers; `unstack` cuts, its pullback stacks. The other operands give only shapes, kinds and
positions: a zero cotangent (`zero_cotangent`). A product's helpers are linear in `g` and in the
other operand on its own (`matmul_lhs_bar(g, a, b) = g @ b.T`), and `<c, g @ b.T> = <c @ b, g>
= <b, c.T @ g>`: `g` gets the product with `c` in place of `a`, and `b` what the product's other
helper gives for it.

Buffers are updated in place (`scatter_add`), so a loop's cotangent flows through one object:
`buffer_like` makes it, zeros whatever `x` holds (`x` gets none of it); `scatter_add` hands the
buffer's cotangent back as it is and each value the entries it was added into; `from_buffer`,
which reads the buffer out, hands its cotangent back as the buffer holds it. `buffer_like` has a
rule, not `non_differentiable`: forward mode over the same code needs its tangent buffer.

A call of your function from generated code, `adj.vjp(wrt, fn, *args)`, returns `fn`'s value and
pullback; its rule is reverse mode over `fn`'s generated forward function, which returns both.
Calls of closures over varied values, methods, partials, callable objects and rules
(`closure_vjp`, `method_vjp`, `star_vjp`, or `vjp` of those) are not differentiated again yet.

`zeros_like` is declared without a derivative (in `pullbacks`). The other helpers (`prod_bar`,
`var_bar`, `cholesky_bar`...) have no reverse rule: reverse mode reads their source.
"""

import numpy as np

from .. import runtime as adj
from ..registry import rrule
from ..runtime import item_transposes, transposes

# ---- cotangents ------------------------------------------------------------------------------------


@rrule(adj.unbroadcast, sequences=True)
def unbroadcast_rrule(g, x):
    def unbroadcast_pullback(c):  # a sum's transpose copies back; `x` gives a shape
        return transposes.unbroadcast_transpose(c, g), transposes.zero_cotangent(x)

    return adj.unbroadcast(g, x), unbroadcast_pullback


@rrule(adj.unbroadcast_float, sequences=True)
def unbroadcast_float_rrule(g, x):
    def unbroadcast_float_pullback(c):
        return transposes.unbroadcast_float_transpose(c, g, x), transposes.zero_cotangent(x)

    return adj.unbroadcast_float(g, x), unbroadcast_float_pullback


@rrule(adj.cotangent_like, sequences=True)
def cotangent_like_rrule(g, x):
    def cotangent_like_pullback(c):  # a reshape (and cast): reshaped back
        return transposes.cotangent_like_transpose(c, g, x), transposes.zero_cotangent(x)

    return adj.cotangent_like(g, x), cotangent_like_pullback


@rrule(adj.unreduce, sequences=True)
def unreduce_rrule(g, x, axis=None, keepdims=False):
    def unreduce_pullback(c):  # spreading's transpose sums over the spread axes
        return transposes.unreduce_transpose(c, g, x, axis=axis, keepdims=keepdims), transposes.zero_cotangent(x)

    return adj.unreduce(g, x, axis=axis, keepdims=keepdims), unreduce_pullback


# `x` and `ans` only choose the entries (and share ties): constant where the choice is.
@rrule(adj.unreduce_chosen, sequences=True)
def unreduce_chosen_rrule(g, x, ans, axis=None, keepdims=False):
    def unreduce_chosen_pullback(c):
        g_bar = transposes.unreduce_chosen_transpose(c, g, x, ans, axis=axis, keepdims=keepdims)
        return g_bar, transposes.zero_cotangent(x), transposes.zero_cotangent(ans)

    return adj.unreduce_chosen(g, x, ans, axis=axis, keepdims=keepdims), unreduce_chosen_pullback


# Linear in `total` and `g` jointly: `total` gets all of `c`, `g` the chosen entries of it.
@rrule(adj.add_chosen)
def add_chosen_rrule(total, g, x, ans, axis=None, keepdims=False):
    def add_chosen_pullback(c):
        g_bar = transposes.unreduce_chosen_transpose(c, g, x, ans, axis=axis, keepdims=keepdims)
        return c, g_bar, transposes.zero_cotangent(x), transposes.zero_cotangent(ans)

    return adj.add_chosen(total, g, x, ans, axis=axis, keepdims=keepdims), add_chosen_pullback


# Linear in both operands jointly: each gets all of `c` (item by item for containers).
@rrule(adj.add, sequences=True)
def add_rrule(a, b):
    def add_pullback(c):
        bars = transposes.add_transpose(c, a, b)
        return bars[0], bars[1]

    return adj.add(a, b), add_pullback


# ---- products ---------------------------------------------------------------------------------------


# matmul_lhs_bar(g, a, b) = g @ b.T: g gets c @ b, b gets c.T @ g (the rhs helper of c @ b).
@rrule(adj.matmul_lhs_bar, sequences=True)
def matmul_lhs_bar_rrule(g, a, b):
    def matmul_lhs_bar_pullback(c):
        g_bar = adj.cotangent_like(np.broadcast_to(np.matmul(c, b), np.shape(g)), g)  # `g` may be broadcast
        return g_bar, transposes.zero_cotangent(a), adj.matmul_rhs_bar(g, c, b)

    return adj.matmul_lhs_bar(g, a, b), matmul_lhs_bar_pullback


# matmul_rhs_bar(g, a, b) = a.T @ g: g gets a @ c, a gets g @ c.T (the lhs helper of a @ c).
@rrule(adj.matmul_rhs_bar, sequences=True)
def matmul_rhs_bar_rrule(g, a, b):
    def matmul_rhs_bar_pullback(c):
        g_bar = adj.cotangent_like(np.broadcast_to(np.matmul(a, c), np.shape(g)), g)  # `g` may be broadcast
        return g_bar, adj.matmul_lhs_bar(g, a, c), transposes.zero_cotangent(b)

    return adj.matmul_rhs_bar(g, a, b), matmul_rhs_bar_pullback


@rrule(adj.dot_lhs_bar, sequences=True)
def dot_lhs_bar_rrule(g, a, b):
    def dot_lhs_bar_pullback(c):  # as for matmul, with np.dot's axes
        return adj.cotangent_like(np.dot(c, b), g), transposes.zero_cotangent(a), adj.dot_rhs_bar(g, c, b)

    return adj.dot_lhs_bar(g, a, b), dot_lhs_bar_pullback


@rrule(adj.dot_rhs_bar, sequences=True)
def dot_rhs_bar_rrule(g, a, b):
    def dot_rhs_bar_pullback(c):
        return adj.cotangent_like(np.dot(a, c), g), adj.dot_lhs_bar(g, a, c), transposes.zero_cotangent(b)

    return adj.dot_rhs_bar(g, a, b), dot_rhs_bar_pullback


# Undoing a permutation of axes is a permutation: its transpose is the permutation itself.
@rrule(adj.untranspose, sequences=True)
def untranspose_rrule(g, axes=None):
    def untranspose_pullback(c):
        return (np.transpose(c, axes),)

    return adj.untranspose(g, axes), untranspose_pullback


# ---- items, buffers and containers ------------------------------------------------------------------


@rrule(adj.unindex, sequences=True)
def unindex_rrule(g, x, index):
    def unindex_pullback(c):  # a scatter's transpose gathers
        return item_transposes.unindex_transpose(c, g, x, index), transposes.zero_cotangent(x), None

    return adj.unindex(g, x, index), unindex_pullback


# A fresh buffer of zeros, whatever `x` holds: `x` gets none of its cotangent.
@rrule(adj.buffer_like, sequences=True)
def buffer_like_rrule(x):
    def buffer_like_pullback(c):
        return (transposes.zero_cotangent(x),)

    return adj.buffer_like(x), buffer_like_pullback


# Adds into the buffer in place and returns it, as the helper does; linear in (buffer, value)
# jointly: the buffer's cotangent passes through, the value gets the entries it was added into.
@rrule(adj.scatter_add, sequences=True)
def scatter_add_rrule(buffer, index, value):
    def scatter_add_pullback(c):
        return c, None, item_transposes.scatter_add_transpose(c, buffer, index, value)

    return adj.scatter_add(buffer, index, value), scatter_add_pullback


@rrule(adj.from_buffer, sequences=True)
def from_buffer_rrule(buffer, x):
    def from_buffer_pullback(c):
        return item_transposes.from_buffer_transpose(c, buffer, x), transposes.zero_cotangent(x)

    return adj.from_buffer(buffer, x), from_buffer_pullback


# `value` gives only the shape of the zeros returned for an absent item.
@rrule(adj.item_bar, sequences=True)
def item_bar_rrule(g, key, value):
    def item_bar_pullback(c):
        return item_transposes.item_bar_transpose(c, g, key), None, transposes.zero_cotangent(value)

    return adj.item_bar(g, key, value), item_bar_pullback


@rrule(adj.field_bar, sequences=True)
def field_bar_rrule(g, obj, name):
    value = adj.field_bar(g, obj, name)

    def field_bar_pullback(c):
        return item_transposes.field_bar_transpose(c, g, obj, name, value), transposes.zero_cotangent(obj), None

    return value, field_bar_pullback


@rrule(adj.field_bars, sequences=True)
def field_bars_rrule(gs, obj):
    def field_bars_pullback(c):
        return item_transposes.field_bars_transpose(c, gs, obj), transposes.zero_cotangent(obj)

    return adj.field_bars(gs, obj), field_bars_pullback


@rrule(adj.unpack_bar, sequences=True)
def unpack_bar_rrule(parts, x):
    def unpack_bar_pullback(c):  # joining the parts: each gets its item of c
        return item_transposes.unpack_bar_transpose(c, parts, x), transposes.zero_cotangent(x)

    return adj.unpack_bar(parts, x), unpack_bar_pullback


@rrule(adj.append_bar, sequences=True)
def append_bar_rrule(g, v):
    def append_bar_pullback(c):  # cutting off the last item: joined back
        return item_transposes.append_bar_transpose(c, g), transposes.zero_cotangent(v)

    return adj.append_bar(g, v), append_bar_pullback


# The pair (x_bar, value_bar) cuts g at the written slot: c's two parts are put back together.
@rrule(adj.setitem_bar, sequences=True)
def setitem_bar_rrule(g, x, index, value):
    def setitem_bar_pullback(c):
        g_bar = item_transposes.setitem_bar_transpose(c, g, x, index, value)
        return g_bar, transposes.zero_cotangent(x), None, transposes.zero_cotangent(value)

    return adj.setitem_bar(g, x, index, value), setitem_bar_pullback


@rrule(adj.unconcat, sequences=True)
def unconcat_rrule(g, a, b):
    def unconcat_pullback(c):
        return item_transposes.unconcat_transpose(c, g, a, b), transposes.zero_cotangent(a), transposes.zero_cotangent(b)

    return adj.unconcat(g, a, b), unconcat_pullback


# ---- joins, cuts and diagonals ----------------------------------------------------------------------


@rrule(adj.unstack, sequences=True)
def unstack_rrule(g, arrays, axis=0):
    def unstack_pullback(c):  # cutting into items: stacked back
        return item_transposes.unstack_transpose(c, g, arrays, axis=axis), transposes.zero_cotangent(arrays)

    return adj.unstack(g, arrays, axis=axis), unstack_pullback


@rrule(adj.unconcatenate, sequences=True)
def unconcatenate_rrule(g, arrays, axis=0, promote=np.asanyarray):
    def unconcatenate_pullback(c):
        g_bar = item_transposes.unconcatenate_transpose(c, g, arrays, axis=axis, promote=promote)
        return g_bar, transposes.zero_cotangent(arrays), None

    return adj.unconcatenate(g, arrays, axis=axis, promote=promote), unconcatenate_pullback


@rrule(adj.unsplit, sequences=True)
def unsplit_rrule(g, pieces, ary, axis=0):
    def unsplit_pullback(c):  # joining the pieces: cut again
        g_bar = item_transposes.unsplit_transpose(c, g, pieces, axis=axis)
        return g_bar, transposes.zero_cotangent(pieces), transposes.zero_cotangent(ary)

    return adj.unsplit(g, pieces, ary, axis=axis), unsplit_pullback


@rrule(adj.undiagonal, sequences=True)
def undiagonal_rrule(g, a, offset=0, axis1=0, axis2=1):
    def undiagonal_pullback(c):  # writing a diagonal: read back
        g_bar = item_transposes.undiagonal_transpose(c, g, a, offset=offset, axis1=axis1, axis2=axis2)
        return g_bar, transposes.zero_cotangent(a)

    return adj.undiagonal(g, a, offset=offset, axis1=axis1, axis2=axis2), undiagonal_pullback


# ---- calls into other functions ---------------------------------------------------------------------

# `adj.vjp(wrt, fn, *args)` runs fn's generated forward function, which returns fn's value and its
# pullback, a closure: reverse mode over the call is reverse mode over that forward function, whose
# own pullback takes the cotangents of both (the closure's: those of the values it closes over).
@rrule(adj.vjp, sequences=True)
def vjp_rrule(wrt, fn, /, *args, **kwargs):
    forward = transposes.vjp_forward(wrt, fn, args)
    value, forward_pullback = adj.vjp(transposes.float_positions(args), forward, *args, **kwargs)

    def vjp_pullback(c):
        return (None, None, *forward_pullback(c))

    return value, vjp_pullback
