"""Shape functions, and the queries and constructors that carry no gradient."""

import logging
import warnings

import numpy as np

from .. import runtime as adj
from ..registry import non_differentiable, rrule


@rrule(np.transpose)
def transpose_rrule(a, axes=None):
    def transpose_pullback(g):
        return (adj.untranspose(g, axes),)

    return np.transpose(a, axes), transpose_pullback


@rrule(np.ndarray.T)  # the attribute `x.T`
def T_rrule(a):
    def T_pullback(g):
        return (np.transpose(g),)

    return a.T, T_pullback


@rrule(np.reshape)
def reshape_rrule(a, shape, order="C"):
    def reshape_pullback(g):
        return (np.reshape(g, np.shape(a), order=order if order != "A" else adj.layout_order(a)), None)

    return np.reshape(a, shape, order=order), reshape_pullback


@rrule(np.squeeze, np.ndarray.squeeze)
def squeeze_rrule(a, axis=None):
    def squeeze_pullback(g):
        return (np.reshape(g, np.shape(a)),)

    return np.squeeze(a, axis=axis), squeeze_pullback


@rrule(np.ravel, np.ndarray.ravel)
def ravel_rrule(a, order="C"):
    def ravel_pullback(g):
        return (adj.unravel(g, a, order=order),)

    return np.ravel(a, order=order), ravel_pullback


@rrule(np.full)
def full_rrule(shape, fill_value, dtype=None):
    def full_pullback(g):
        return (None, adj.unbroadcast(g, fill_value))

    return np.full(shape, fill_value, dtype=dtype), full_pullback


# ---- queries, constructors and logging: no gradient -----------------------------------------------
# Only functions whose outputs are constant in every float input belong here (`np.arange(x)`
# does not: its values move with `x`). Python's built-ins are in `builtins`.

non_differentiable(
    logging.Logger.debug, logging.Logger.info, logging.Logger.warning, logging.Logger.error,
    logging.Logger.critical, logging.Logger.exception, logging.Logger.log, logging.debug,
    logging.info, logging.warning, logging.error, warnings.warn,
)

non_differentiable(
    np.shape, np.ndim, np.size, np.zeros_like, np.ones_like, np.empty_like, np.zeros, np.ones,
    np.empty, np.eye, np.identity, np.argmax, np.argmin, np.argsort,
    np.ndarray.shape, np.ndarray.ndim, np.ndarray.size, np.ndarray.dtype,
)
