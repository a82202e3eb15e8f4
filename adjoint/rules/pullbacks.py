"""Forward rules of the runtime helpers that generated pullback code calls (`adj.unbroadcast`,
`adj.matmul_lhs_bar`...), so that forward mode runs over a gradient: Hessian-vector products.

A pullback is linear in its cotangent, and so are most helpers: `unbroadcast(g, x)` is linear in
`g`, while `x` only gives a shape and a dtype (`linear`). A product's helpers are linear in `g`
and in the other operand on its own (`multilinear`: `matmul_lhs_bar(g, a, b) = g @ b.T`). The
others also depend on a primal some other way (a variance's cotangent on the mean, a norm's on
the norm): their rules are the helper applied to `g`'s tangent plus the derivative of what
multiplies `g`; those of reductions, scans, averages and norms are in `pullback_reductions`,
with this module's shared pieces (`named_arguments`, `linear_terms`...). Helpers elementwise in
every argument (`divide_or_zero`) get partials, which give them a reverse rule too. Helpers that
compute shapes, labels or flags have no derivative.

Arguments that only choose entries (ties in `unreduce_chosen(g, x, ans)`, ranks, NaNs) are
constant where the choice is: the tangent keeps the choice the primal made.

Buffers are updated in place (`scatter_add`), so a buffer's tangent is a buffer of its own:
`buffer_like`'s rule makes a fresh one (a call without a derivative would give it none),
`scatter_add`'s adds each value's tangent into it in place and returns both buffers, as the
helper returns its own, and `from_buffer`, linear, reads it out.
"""

import functools
import inspect
import math
import types

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear, multilinear
from ..registry import elementwise, non_differentiable
from ..runtime.cotangents import as_sequence, reduced_axes
from ..runtime.pointwise import sinc_second_derivative, trigamma
from ..runtime.reducing_tangents import prefix_products

# ---- cotangents ------------------------------------------------------------------------------------

linear(adj.add, operands=(0, 1))
linear(adj.unbroadcast, adj.cotangent_like, adj.unreduce)
linear(adj.unreduce_chosen)  # `x` and `ans` say which entries were chosen: constant where that holds


@frule(adj.add_chosen)
def add_chosen_frule(primals, tangents, axis=None, keepdims=False):
    """`total` is updated in place (a pullback owns it); its tangent is not."""
    total, g, x, ans = primals
    dtotal, dg = (tuple(tangents) + (None, None))[:2]
    value = adj.add_chosen(total, g, x, ans, axis=axis, keepdims=keepdims)
    if dtotal is None and dg is None:
        return value, adj.zero_tangent(value)
    chosen = None if dg is None else adj.unreduce_chosen(dg, x, ans, axis=axis, keepdims=keepdims)
    return value, adj.tangent_like(adj.add(dtotal, chosen), value)
non_differentiable(adj.zeros_like, adj.is_differentiable, adj.tie_weight, adj.structs.is_struct)


# prod_bar: g times the product of the other entries, with running products from either end.
@frule(adj.prod_bar)
def prod_bar_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.prod_bar, primals, tangents, kwargs)
    value = adj.prod_bar(*primals, **kwargs)
    if value is None or dots.x is None:
        return value, as_tangent(linear_terms(adj.prod_bar, primals, tangents, kwargs), value)
    x, axis, keepdims = np.asarray(args.x), args.axis, args.keepdims
    x_dot = np.asarray(dots.x, dtype=x.dtype)
    axes = reduced_axes(axis, x.ndim)
    kept, moved = x.ndim - len(axes), tuple(range(x.ndim - len(axes), x.ndim))

    def rows(a):  # the reduced axes last, flattened into one
        a = np.moveaxis(a, axes, moved)
        return a.reshape(a.shape[:kept] + (math.prod(a.shape[kept:]),))

    before, before_dot = prefix_products(rows(x), rows(x_dot))
    after, after_dot = (np.flip(p, -1) for p in prefix_products(np.flip(rows(x), -1), np.flip(rows(x_dot), -1)))
    others_dot = before_dot * after + before * after_dot
    others_dot = np.moveaxis(others_dot.reshape(np.moveaxis(x, axes, moved).shape), moved, axes)
    term = as_sequence(adj.unreduce(args.g, x, axis=axis, keepdims=keepdims) * others_dot, args.x)
    return value, as_tangent(adj.add(linear_terms(adj.prod_bar, primals, tangents, kwargs), term), value)


# ---- linear maps: products, transposes, layouts ----------------------------------------------------

multilinear(adj.matmul_lhs_bar, adj.dot_lhs_bar, operands=(0, 2))
multilinear(adj.matmul_rhs_bar, adj.dot_rhs_bar, operands=(0, 1))
linear(adj.unravel, adj.untranspose)
non_differentiable(adj.layout_order)

# ---- indexing, containers, objects and calls -------------------------------------------------------

linear(adj.unindex, adj.unpack_bar, adj.from_buffer, adj.setitem_bar, adj.append_bar)
linear(adj.field_bar, adj.field_bars, adj.item_bar, adj.unconcat)


@frule(adj.buffer_like)
def buffer_like_frule(primals, tangents):
    (x,) = primals
    return adj.buffer_like(x), adj.buffer_like(x)  # zeros, in a buffer `scatter_add` may fill


# scatter_add(buffer, index, value) adds in place and returns the buffer: so does its rule, into
# the tangent buffer (from `buffer_like`'s rule), which it needs whenever the value has a tangent.
@frule(adj.scatter_add)
def scatter_add_frule(primals, tangents):
    (buffer, index, value), (buffer_dot, _, value_dot) = primals, padded_tangents(tangents, 3)
    adj.scatter_add(buffer, index, value)
    if value is not None and value_dot is not None:
        if buffer_dot is None:
            raise adj.RuleError("scatter_add's forward rule needs the buffer's tangent: a buffer from buffer_like's rule")
        adj.scatter_add(buffer_dot, index, value_dot)
    return buffer, buffer_dot


# ---- products ---------------------------------------------------------------------------------------

multilinear(
    adj.tensordot_lhs_bar, adj.inner_lhs_bar, adj.vecdot_lhs_bar, adj.matvec_lhs_bar, adj.vecmat_lhs_bar,
    adj.kron_lhs_bar, adj.cross_lhs_bar, adj.scaled_bar, operands=(0, 2),
)  # conjugating ones (vecdot, vecmat) are real-linear, all a tangent needs
multilinear(
    adj.tensordot_rhs_bar, adj.inner_rhs_bar, adj.vecdot_rhs_bar, adj.matvec_rhs_bar, adj.vecmat_rhs_bar,
    adj.kron_rhs_bar, adj.cross_rhs_bar, operands=(0, 1),
)
non_differentiable(adj.einsum_operands)


# Linear in `g` and in each matrix on its own, though the matrices come as one list: the sum of
# the cotangents with one matrix's tangent each, less the entry of that matrix (which does not read it).
@frule(adj.multi_dot_bars)
def multi_dot_bars_frule(primals, tangents):
    (g, arrays), (g_dot, arrays_dot) = primals, padded_tangents(tangents, 2)
    value = adj.multi_dot_bars(g, arrays)
    terms = adj.multi_dot_bars(g_dot, arrays) if g_dot is not None else None
    for i, a_dot in enumerate(arrays_dot or ()):
        if a_dot is not None:
            term = adj.multi_dot_bars(g, type(arrays)([*arrays[:i], a_dot, *arrays[i + 1:]]))
            terms = adj.add(terms, type(arrays)(None if j == i else t for j, t in enumerate(term)))
    return value, as_tangent(terms, value)


@frule(adj.einsum_bars)
def einsum_bars_frule(primals, tangents, **kwargs):
    (g, args), (g_dot, args_dot) = primals, padded_tangents(tangents, 2)
    value = adj.einsum_bars(g, args, **kwargs)
    terms = adj.einsum_bars(g_dot, args, **kwargs) if g_dot is not None else None
    for p in adj.einsum_operands(args) if args_dot is not None else ():
        if args_dot[p] is not None:
            term = adj.einsum_bars(g, (*args[:p], args_dot[p], *args[p + 1:]), **kwargs)
            terms = adj.add(terms, tuple(None if j == p else t for j, t in enumerate(term)))
    return value, as_tangent(terms, value)


# ---- pointwise ----------------------------------------------------------------------------------------

linear(adj.unbroadcast_float)


@elementwise(adj.divide_or_zero)  # n / d, 0 where d is: so are both partials
def d_divide_or_zero(ans, numerator, denominator):
    return adj.divide_or_zero(1.0, denominator), adj.divide_or_zero(-ans, denominator)


@elementwise(adj.sinc_derivative)
def d_sinc_derivative(ans, x):
    return sinc_second_derivative(x)


@elementwise(adj.digamma)
def d_digamma(ans, x):
    return trigamma(x)


# ---- shapes and spacings ----------------------------------------------------------------------------

linear(adj.atleast_bar, adj.diff_bar)
linear(adj.diff_with_ends, operands=(0, 3, 4))  # the ends are joined: linear in them with `a`
non_differentiable(adj.rollaxis_destination, adj.gradient_spacings, adj.linspace_fractions)


# gradient_bars: f gets D^T(g_k) / h_k and each spacing -sum(g_k ans_k) / h_k. Along h, both are g_k
# scaled by -h_dot_k / h_k; along `ans`, only the spacings move. The spacings' tangents are those
# of `spacings`, spread over the axes as `gradient_spacings` spreads them into `along`.
@frule(adj.gradient_bars)
def gradient_bars_frule(primals, tangents, **kwargs):
    args, dots = named_arguments(adj.gradient_bars, primals, tangents, kwargs)
    value = adj.gradient_bars(*primals, **kwargs)
    several, spacings = len(args.along) > 1, args.spacings
    g, ans, g_dot, ans_dot = (
        (v if several else (v,)) if v is not None else (None,) * len(args.along)
        for v in (args.g, args.ans, dots.g, dots.ans)
    )
    spacings_dot = dots.spacings or (None,) * len(spacings)
    h_dots = spacings_dot if len(spacings) > 1 else (spacings_dot[0] if spacings else None,) * len(args.along)
    scaled = tuple(
        adj.add(gd, None if gk is None or hd is None else -gk * (hd / h))
        for (_, h), gk, gd, hd in zip(args.along, g, g_dot, h_dots)
    )
    moved = adj.gradient_bars(scaled if several else scaled[0], args.f, spacings, args.along, args.ans, args.edge_order)
    by_ans = [
        0.0 if gk is None or ad is None else -np.sum(gk * ad) / h for (_, h), gk, ad in zip(args.along, g, ans_dot)
    ]
    by_ans = [sum(by_ans)] if len(spacings) == 1 else by_ans
    tangent = (moved[0], *(None if m is None else m + a for m, a in zip(moved[1:], by_ans)))
    return value, as_tangent(tangent, value)


# ---- assembly, selections, spectra -----------------------------------------------------------------

linear(adj.as_column, adj.unconcatenate, adj.unstack, adj.unblock, adj.unsplit, adj.untile, adj.unrepeat)
linear(adj.copies_bar)
non_differentiable(adj.entry_labels, adj.pad_labels)
linear(adj.undiagonal, adj.diag_bar, adj.untake, adj.untake_along_axis, adj.unselect, adj.unselect_default)
linear(adj.unpartition)  # `a` and `ans` give the ranks: constant where they are distinct
linear(adj.unresize, adj.hermitian_fold)
non_differentiable(adj.fft_axes, adj.fft_lengths)


# ---- shared (with pullback_reductions) --------------------------------------------------------------

def named_arguments(helper, primals, tangents, kwargs):
    """A call's arguments by name, with defaults, and their tangents by name (None for keywords)."""
    signature = _signature(helper)
    bound = signature.bind(*primals, **kwargs)
    bound.apply_defaults()
    dots = dict.fromkeys(signature.parameters)
    dots.update(zip(signature.parameters, tangents))
    return types.SimpleNamespace(**bound.arguments), types.SimpleNamespace(**dots)


_signature = functools.cache(inspect.signature)


def linear_terms(helper, primals, tangents, kwargs, operands=(0,)):
    """The sum over `operands` that have a tangent of `helper` with that operand replaced by its
    tangent (`adj.add`, so containers add item by item): the tangent of a helper linear in each
    of them, where the others are held fixed. None if none has a tangent."""
    total = None
    for i, t in enumerate(padded_tangents(tangents, len(primals))):
        if i in operands and t is not None:
            total = adj.add(total, helper(*primals[:i], t, *primals[i + 1:], **kwargs))
    return total


def as_tangent(tangent, value):
    """`tangent` laid out as `value`'s (`adj.tangent_like`), or None where the helper gave no value."""
    return adj.tangent_like(tangent, value) if value is not None else None


def padded_tangents(tangents, count) -> tuple:
    """`count` tangents, one per primal: the trailing Nones a caller left out put back."""
    tangents = tuple(tangents)[:count]
    return tangents + (None,) * (count - len(tangents))
