"""Transposes of linear maps: products (`matmul`, `dot`), transposition, and reshape layouts."""

from __future__ import annotations

import numpy as np

from .contraction import scaled_bar, tensordot_lhs_bar, tensordot_rhs_bar
from .cotangents import RuleError, is_differentiable, sum_to_shape, unbroadcast

# ---- products --------------------------------------------------------------------------------

def _as_matrices(g, a, b):
    """Promote 1-D matmul operands (and the cotangent) to matrices, as `matmul` does."""
    a2 = a[np.newaxis, :] if np.ndim(a) == 1 else a
    b2 = b[:, np.newaxis] if np.ndim(b) == 1 else b
    g2 = np.asarray(g)
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        g2 = np.reshape(g2, (1, 1))
    elif np.ndim(a) == 1:
        g2 = np.expand_dims(g2, -2)
    elif np.ndim(b) == 1:
        g2 = np.expand_dims(g2, -1)
    return g2, a2, b2


def product_shape(a, b) -> tuple:
    """The shape of `a @ b`, without computing it.

    >>> product_shape(np.ones((5, 1, 2, 3)), np.ones((4, 3, 6))), product_shape(np.ones(3), np.ones((3, 2)))
    ((5, 4, 2, 6), (2,))
    """
    sa, sb = np.shape(a), np.shape(b)
    if len(sa) == 1:
        return sb[:-2] + sb[-1:] if len(sb) > 1 else ()
    if len(sb) == 1:
        return sa[:-1]
    return np.broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-2], sb[-1])


# Multiply-adds below which a product of a transposed matrix is `np.dot`, above which `@`:
# `np.dot` calls in less time (about 0.6 microseconds less, measured), `@` multiplies large
# transposed operands faster (4% for the (784, 64) @ (64, 256) of an MLP's first layer).
_SMALL_PRODUCT = 1 << 16


def _as_product(g, a, b):
    """`g` summed down to the shape of `a @ b`: the cotangent of a product that something
    broadcast further (`(a @ b) + c`) reaches the product's helpers as it is."""
    shape = product_shape(a, b)
    return g if np.shape(g) == shape else sum_to_shape(g, shape)


def matmul_lhs_bar(g, a, b):
    """Cotangent of `a` in `a @ b`: `g @ b.T`, for vectors and stacks of matrices too, and for
    a `g` broadcast beyond the product's shape (it is summed down first).

    >>> b = np.arange(12.0).reshape(3, 4)
    >>> matmul_lhs_bar(np.ones((2, 4)), np.ones((2, 3)), b)
    array([[ 6., 22., 38.],
           [ 6., 22., 38.]])
    >>> matmul_lhs_bar(np.ones(4), np.ones(3), b)  # a vector `a` gets a vector
    array([ 6., 22., 38.])
    >>> matmul_lhs_bar(np.ones((5, 2, 4)), np.ones((2, 3)), b)[0]  # `(a @ b) + c`, `c` of shape (5, 2, 4)
    array([ 30., 110., 190.])
    """
    if type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2 and a.dtype.kind in "fc":
        # matrices, and a matrix times a vector, with `g` of the product's shape: the common cases, kept cheap
        if b.ndim == 2 and g.shape == (a.shape[0], b.shape[1]):
            a_bar = np.dot(g, b.T) if g.size * b.shape[0] < _SMALL_PRODUCT else g @ b.T
        elif b.ndim == 1 and g.shape == a.shape[:1]:
            a_bar = np.multiply.outer(g, b)
        else:
            a_bar = None
        if a_bar is not None:
            return a_bar if a_bar.dtype == a.dtype else unbroadcast(a_bar, a)
    if not is_differentiable(a):
        return None
    g2, a2, b2 = _as_matrices(_as_product(g, a, b), a, b)
    a_bar = g2 @ np.swapaxes(b2, -1, -2)
    return np.reshape(unbroadcast(a_bar, a2), np.shape(a))


def matmul_rhs_bar(g, a, b):
    """Cotangent of `b` in `a @ b`: `a.T @ g`, for vectors and stacks of matrices too, and for
    a `g` broadcast beyond the product's shape (it is summed down first).

    >>> matmul_rhs_bar(np.ones((2, 4)), np.arange(6.0).reshape(2, 3), np.ones((3, 4)))
    array([[3., 3., 3., 3.],
           [5., 5., 5., 5.],
           [7., 7., 7., 7.]])
    """
    if (
        type(a) is np.ndarray and type(b) is np.ndarray and type(g) is np.ndarray and a.ndim == 2
        and b.dtype.kind in "fc" and g.shape == (a.shape[0],) + b.shape[1:]
        # matrices, and a matrix times a vector, with `g` of the product's shape: the common cases, kept cheap
        and b.ndim <= 2
    ):
        b_bar = np.dot(a.T, g) if g.size * a.shape[1] < _SMALL_PRODUCT else a.T @ g
        return b_bar if b_bar.dtype == b.dtype else unbroadcast(b_bar, b)
    if not is_differentiable(b):
        return None
    g2, a2, b2 = _as_matrices(_as_product(g, a, b), a, b)
    b_bar = np.swapaxes(a2, -1, -2) @ g2
    return np.reshape(unbroadcast(b_bar, b2), np.shape(b))


# `np.dot` of arrays is `np.tensordot` of the last axis of `a` with the second-to-last of `b`
# (its only axis if 1-D); a 0-d operand scales the other.

def dot_lhs_bar(g, a, b):
    """Cotangent of `a` in `np.dot(a, b)`, for every combination of dimensions.

    >>> dot_lhs_bar(np.ones(2), np.ones((2, 3)), np.array([1.0, 2.0, 3.0]))
    array([[1., 2., 3.],
           [1., 2., 3.]])
    >>> dot_lhs_bar(np.ones(2), 3.0, np.array([1.0, 2.0]))  # a scalar `a` scales `b`
    3.0
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return scaled_bar(g, a, b)
    return tensordot_lhs_bar(g, a, b, ([-1], [max(np.ndim(b) - 2, 0)]))


def dot_rhs_bar(g, a, b):
    """Cotangent of `b` in `np.dot(a, b)`, for every combination of dimensions.

    >>> dot_rhs_bar(np.ones(2), np.arange(6.0).reshape(2, 3), np.ones(3))
    array([3., 5., 7.])
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return scaled_bar(g, b, a)
    return tensordot_rhs_bar(g, a, b, ([-1], [max(np.ndim(b) - 2, 0)]))


# ---- shapes ----------------------------------------------------------------------------------

def layout_order(a) -> str:
    """The index order `np.reshape(a, ..., order="A")` reads `a` in.

    >>> layout_order(np.ones((2, 3))), layout_order(np.ones((2, 3)).T)
    ('C', 'F')
    """
    return "F" if np.isfortran(a) else "C"


def unravel(g, a, order="C"):
    """Undo `np.ravel(a, order)` on a cotangent: `g` back in `a`'s shape.

    Orders "A" and "K" (memory order) read `a` in its layout's order; adjoint can undo "K"
    only for a contiguous `a`.

    >>> unravel(np.arange(4.0), np.ones((2, 2)).T, order="A")
    array([[0., 2.],
           [1., 3.]])
    """
    if order in ("A", "K"):
        if order == "K" and not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise RuleError("adjoint cannot differentiate order='K' on a non-contiguous array: use 'C' or 'F'")
        order = layout_order(a)
    return np.reshape(g, np.shape(a), order=order)


def untranspose(g, axes=None):
    """Undo `np.transpose(x, axes)` on a cotangent.

    >>> untranspose(np.ones((4, 2, 3)), axes=(2, 0, 1)).shape  # of an `x` of shape (2, 3, 4)
    (2, 3, 4)
    """
    return np.transpose(g) if axes is None else np.transpose(g, np.argsort(np.mod(axes, np.ndim(g))))
