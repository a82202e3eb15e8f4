"""Shape functions, and the queries and constructors that carry no gradient.

A shape function moves entries without changing them, so its pullback moves the cotangent
back: the inverse permutation of axes, flip or roll, or a reshape to the input's shape. Where
an entry is read several times (`broadcast_to`), its cotangent is the sum. The array methods
with the function's parameters (`x.swapaxes(0, 1)`) share its rule; those whose parameters
differ are in `methods`.

Forward, each of these is `linear`: the tangent is moved as its array is (`np.full` is linear in
its fill value). `np.atleast_1d(a, b)` takes any number of arrays, so its rule is written out.
`np.arange` moves with its start and step, not with its stop (which only decides how many values
there are), and has rules of its own both ways.
"""

import logging
import warnings

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import non_differentiable, rrule
from . import methods


# ---- permuting axes -------------------------------------------------------------------------------

@rrule(np.transpose)
def transpose_rrule(a, axes=None):
    def transpose_pullback(g):
        return (adj.untranspose(g, axes),)

    return np.transpose(a, axes), transpose_pullback


linear(np.transpose)


@rrule(np.ndarray.T)  # the attribute `x.T`
def T_rrule(a):
    def T_pullback(g):
        return (np.transpose(g),)

    return a.T, T_pullback


linear(np.ndarray.T)


@rrule(np.ndarray.mT)  # the attribute `x.mT`: each matrix of a stack transposed
def mT_rrule(a):
    def mT_pullback(g):
        return (np.swapaxes(g, -1, -2),)

    return a.mT, mT_pullback


linear(np.ndarray.mT)


@rrule(np.moveaxis)
def moveaxis_rrule(a, source, destination):
    def moveaxis_pullback(g):
        return (np.moveaxis(g, destination, source),)

    return np.moveaxis(a, source, destination), moveaxis_pullback


linear(np.moveaxis)


# `np.rollaxis(a, axis, start)` moves the axis to just before `start`: a `moveaxis`.
@rrule(np.rollaxis)
def rollaxis_rrule(a, axis, start=0):
    def rollaxis_pullback(g):
        return (np.moveaxis(g, adj.rollaxis_destination(np.ndim(a), axis, start), axis),)

    return np.rollaxis(a, axis, start), rollaxis_pullback


linear(np.rollaxis)


@rrule(np.swapaxes, np.ndarray.swapaxes)
def swapaxes_rrule(a, axis1, axis2):
    def swapaxes_pullback(g):
        return (np.swapaxes(g, axis1, axis2),)

    return np.swapaxes(a, axis1, axis2), swapaxes_pullback


linear(np.swapaxes, np.ndarray.swapaxes)


# ---- reshaping: the cotangent is reshaped back --------------------------------------------------

@rrule(np.reshape)
def reshape_rrule(a, shape, order="C"):
    def reshape_pullback(g):
        return (np.reshape(g, np.shape(a), order=order if order != "A" else adj.layout_order(a)), None)

    return np.reshape(a, shape, order=order), reshape_pullback


linear(np.reshape)


@rrule(np.squeeze, np.ndarray.squeeze)
def squeeze_rrule(a, axis=None):
    def squeeze_pullback(g):
        return (np.reshape(g, np.shape(a)),)

    return np.squeeze(a, axis=axis), squeeze_pullback


linear(np.squeeze, np.ndarray.squeeze)


@rrule(np.expand_dims)
def expand_dims_rrule(a, axis):
    def expand_dims_pullback(g):
        return (np.reshape(g, np.shape(a)),)

    return np.expand_dims(a, axis), expand_dims_pullback


linear(np.expand_dims)


@rrule(np.ravel, np.ndarray.ravel)
def ravel_rrule(a, order="C"):
    def ravel_pullback(g):
        return (adj.unravel(g, a, order=order),)

    return np.ravel(a, order=order), ravel_pullback


linear(np.ravel, np.ndarray.ravel)


# `np.atleast_1d(a, b)` returns a tuple, whose cotangent is a tuple with one item per array.
@rrule(np.atleast_1d)
def atleast_1d_rrule(*arys):
    def atleast_1d_pullback(g):
        return adj.atleast_bar(g, arys)

    return np.atleast_1d(*arys), atleast_1d_pullback


@rrule(np.atleast_2d)
def atleast_2d_rrule(*arys):
    def atleast_2d_pullback(g):
        return adj.atleast_bar(g, arys)

    return np.atleast_2d(*arys), atleast_2d_pullback


@rrule(np.atleast_3d)
def atleast_3d_rrule(*arys):
    def atleast_3d_pullback(g):
        return adj.atleast_bar(g, arys)

    return np.atleast_3d(*arys), atleast_3d_pullback


# Each array is promoted on its own, linearly, however many are given: the tangents are
# promoted as their arrays are (zeros for a constant one).
def _atleast_frule(promote):
    def atleast_frule(primals, tangents):
        value = promote(*primals)
        return value, adj.tangent_like(promote(*adj.tangent_or_zeros(tuple(tangents), tuple(primals))), value)

    atleast_frule.__name__ = atleast_frule.__qualname__ = f"{promote.__name__}_frule"
    return frule(promote)(atleast_frule)


atleast_1d_frule = _atleast_frule(np.atleast_1d)
atleast_2d_frule = _atleast_frule(np.atleast_2d)
atleast_3d_frule = _atleast_frule(np.atleast_3d)


# ---- casting ------------------------------------------------------------------------------------

# `np.astype(x, dtype)` is `x.astype(dtype)`, whose rule casts the cotangent back.
@rrule(np.astype)
def astype_rrule(x, dtype, /, *, copy=True):
    return methods.astype_rrule(x, dtype, copy=copy)


linear(np.astype)


# ---- broadcasting: an entry read several times gets the sum of their cotangents -------------

@rrule(np.broadcast_to)
def broadcast_to_rrule(array, shape, subok=False):
    def broadcast_to_pullback(g):
        return adj.unbroadcast(g, array), None

    return np.broadcast_to(array, shape, subok=subok), broadcast_to_pullback


linear(np.broadcast_to)


@rrule(np.full)
def full_rrule(shape, fill_value, dtype=None):
    def full_pullback(g):
        return (None, adj.unbroadcast(g, fill_value))

    return np.full(shape, fill_value, dtype=dtype), full_pullback


linear(np.full, operands=(1,))  # the fill value; the shape is an int


# `np.arange(start, stop, step)` is start, start + step, start + 2 step, ...: `start` moves every
# value and `step` each as far as its position. How many values there are is all that `stop`
# decides (a step function of it), so its cotangent is zero; alone (`np.arange(n)`), the first
# bound is `stop`.
@rrule(np.arange)
def arange_rrule(start_or_stop, /, stop=None, step=1, *, dtype=None, **kwargs):
    def arange_pullback(g):
        step_bar = adj.unbroadcast_float(np.sum(g * np.arange(np.size(g))), step)
        if stop is None:
            return adj.zeros_like(start_or_stop), None, step_bar  # the one bound is `stop`
        return adj.unbroadcast_float(np.sum(g), start_or_stop), adj.zeros_like(stop), step_bar

    return np.arange(start_or_stop, stop, step, dtype=dtype, **kwargs), arange_pullback


@frule(np.arange)
def arange_frule(primals, tangents, **kwargs):
    ans = np.arange(*primals, **kwargs)
    start_dot, _, step_dot = (tuple(tangents) + (None,) * 3)[:3]
    if len(primals) < 2 or primals[1] is None:
        start_dot = None  # the one bound is `stop`
    moved = adj.add(start_dot, None if step_dot is None else step_dot * np.arange(np.size(ans)))
    return ans, adj.tangent_like(moved, ans)


# ---- flips, rolls and rotations: undone by the opposite one -----------------------------------

@rrule(np.flip)
def flip_rrule(m, axis=None):
    def flip_pullback(g):
        return (np.flip(g, axis),)

    return np.flip(m, axis), flip_pullback


linear(np.flip)


@rrule(np.fliplr)
def fliplr_rrule(m):
    def fliplr_pullback(g):
        return (np.fliplr(g),)

    return np.fliplr(m), fliplr_pullback


linear(np.fliplr)


@rrule(np.flipud)
def flipud_rrule(m):
    def flipud_pullback(g):
        return (np.flipud(g),)

    return np.flipud(m), flipud_pullback


linear(np.flipud)


@rrule(np.roll)
def roll_rrule(a, shift, axis=None):
    def roll_pullback(g):
        return np.roll(g, np.negative(shift), axis), None

    return np.roll(a, shift, axis), roll_pullback


linear(np.roll)


@rrule(np.rot90)
def rot90_rrule(m, k=1, axes=(0, 1)):
    def rot90_pullback(g):
        return (np.rot90(g, -k, axes),)

    return np.rot90(m, k, axes), rot90_pullback


linear(np.rot90)


# ---- queries, constructors and logging: no gradient -----------------------------------------------
# Only functions whose outputs are constant in every float input belong here (`np.arange` does
# not: its values move with `start` and `step`). Python's built-ins are in `builtins`; the
# functions that find indices (`np.argsort`) are in `selection`; random draws in `random`.

non_differentiable(
    logging.Logger.debug, logging.Logger.info, logging.Logger.warning, logging.Logger.error,
    logging.Logger.critical, logging.Logger.exception, logging.Logger.log, logging.debug,
    logging.info, logging.warning, logging.error, warnings.warn,
)

non_differentiable(
    np.shape, np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones,
    np.empty, np.eye, np.identity, np.isclose, np.allclose, np.array_equal, np.array_equiv,
    np.ndarray.shape, np.ndarray.ndim, np.ndarray.size, np.ndarray.dtype, np.ndarray.itemsize,
    np.ndarray.nbytes, np.ndarray.strides, np.ndarray.flags, np.tri, np.broadcast_shapes, np.einsum_path,
    np.isfortran, np.may_share_memory, np.shares_memory, np.iterable,
)

# dtypes, their limits and promotions; casts to integers, booleans, strings and dates truncate
non_differentiable(
    np.dtype, np.finfo, np.iinfo, np.result_type, np.promote_types, np.can_cast, np.min_scalar_type,
    np.common_type, np.mintypecode, np.issubdtype, np.isdtype, np.typename, np.packbits, np.unpackbits,
    *sorted(
        {t for t in np.sctypeDict.values() if issubclass(t, (np.integer, np.bool_, np.character, np.datetime64))},
        key=lambda t: t.__name__,
    ),
)

# printing, errors, dates and files
non_differentiable(
    np.array2string, np.array_repr, np.array_str, np.base_repr, np.binary_repr, np.format_float_positional,
    np.format_float_scientific, np.set_printoptions, np.get_printoptions, np.printoptions, np.seterr, np.geterr,
    np.errstate, np.seterrcall, np.geterrcall, np.setbufsize, np.getbufsize, np.busday_count, np.busday_offset,
    np.is_busday, np.busdaycalendar, np.datetime_as_string, np.datetime_data, np.save, np.savez,
    np.savez_compressed, np.savetxt, np.load, np.loadtxt, np.genfromtxt, np.fromfile,
)
