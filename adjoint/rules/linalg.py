"""Products and contractions: `matmul` (and `@`), `dot`, `matvec`, `vecmat`, `vdot`, `vecdot`,
`inner`, `outer`, `cross`, `tensordot`, `kron`, `einsum`, `np.linalg.multi_dot`, and the array
API's spellings in `np.linalg`.

Each product is linear in each operand, so an operand's cotangent is the transposed map
applied to `g`: a product of `g` with the other operands (`runtime.linear`,
`runtime.contraction`). Complex operands follow JAX's and autograd's convention: the
transpose has no conjugate (`a_bar = g @ b.T`), except where the product itself conjugates an
operand (`vdot`, `vecdot`, `vecmat`); a real operand takes the real part of a complex
cotangent, and an integer operand gets None. Operands that broadcast (`matmul`'s batch axes,
`cross`, `einsum`'s `...`) get their cotangent summed over the broadcast axes.

Forward, a product's tangent is the sum of the products with one operand replaced by its
tangent (`multilinear`): `a_dot @ b + a @ b_dot`. A product that conjugates an operand (`vdot`,
`vecdot`, `vecmat`) is still real-linear in it, which is all a tangent needs, so the same sum
is its directional derivative.
"""

import operator

import numpy as np

from .. import runtime as adj
from ..frules import frule, multilinear
from ..registry import rrule

# ---- matrix products ---------------------------------------------------------------------------


@rrule(operator.matmul, np.matmul, np.linalg.matmul)
def matmul_rrule(a, b):
    def matmul_pullback(g):
        return adj.matmul_lhs_bar(g, a, b), adj.matmul_rhs_bar(g, a, b)

    return a @ b, matmul_pullback


multilinear(operator.matmul, np.matmul, np.linalg.matmul)


@rrule(np.dot, np.ndarray.dot)
def dot_rrule(a, b):
    def dot_pullback(g):
        return adj.dot_lhs_bar(g, a, b), adj.dot_rhs_bar(g, a, b)

    return np.dot(a, b), dot_pullback


multilinear(np.dot, np.ndarray.dot)


# `np.matvec` and `np.vecmat` (NumPy 2.2): matrices times vectors, and conjugated vectors times
# matrices (`vecmat(v, A) = conj(v) @ A`, so v's cotangent is conjugated, as for `vdot`).
if hasattr(np, "matvec"):
    @rrule(np.matvec)
    def matvec_rrule(x1, x2):
        def matvec_pullback(g):
            return adj.matvec_lhs_bar(g, x1, x2), adj.matvec_rhs_bar(g, x1, x2)

        return np.matvec(x1, x2), matvec_pullback

    @rrule(np.vecmat)
    def vecmat_rrule(x1, x2):
        def vecmat_pullback(g):
            return adj.vecmat_lhs_bar(g, x1, x2), adj.vecmat_rhs_bar(g, x1, x2)

        return np.vecmat(x1, x2), vecmat_pullback

    multilinear(np.matvec, np.vecmat)


# `np.linalg.multi_dot(arrays)`: each matrix gets g between the transposed products on either side.
@rrule(np.linalg.multi_dot, sequences=True)
def multi_dot_rrule(arrays):
    def multi_dot_pullback(g):
        return (adj.multi_dot_bars(g, arrays),)

    return np.linalg.multi_dot(arrays), multi_dot_pullback


# One list operand, linear in each matrix: the sum of the chains with one matrix's tangent each.
@frule(np.linalg.multi_dot)
def multi_dot_frule(primals, tangents):
    (arrays,), (arrays_dot,) = primals, tangents
    value = np.linalg.multi_dot(arrays)
    items = [None] * len(arrays) if arrays_dot is None else list(arrays_dot)
    return value, adj.product_tangent(lambda *matrices: np.linalg.multi_dot(matrices), arrays, items, value)


# ---- vector products ---------------------------------------------------------------------------


# vdot(a, b) = sum(conj(a) * b), both flattened: holomorphic in b, antiholomorphic in a, so
# dL = Re(g * sum(conj(da) * b)) = Re(sum(da * conj(g * b))): a's cotangent is conjugated.
@rrule(np.vdot)
def vdot_rrule(a, b):
    def vdot_pullback(g):
        return adj.cotangent_like(np.conj(g * b), a), adj.cotangent_like(g * np.conj(a), b)

    return np.vdot(a, b), vdot_pullback


multilinear(np.vdot)


# `np.outer` flattens its operands: g is (a.size, b.size).
@rrule(np.outer)
def outer_rrule(a, b):
    def outer_pullback(g):
        return adj.cotangent_like(g @ np.ravel(b), a), adj.cotangent_like(np.ravel(a) @ g, b)

    return np.outer(a, b), outer_pullback


multilinear(np.outer)


@rrule(np.inner)
def inner_rrule(a, b):
    def inner_pullback(g):
        return adj.inner_lhs_bar(g, a, b), adj.inner_rhs_bar(g, a, b)

    return np.inner(a, b), inner_pullback


multilinear(np.inner)


# vecdot(a, b, axis) = sum(conj(a) * b, axis), over broadcast batch axes: as for `vdot`.
@rrule(np.vecdot, np.linalg.vecdot)
def vecdot_rrule(a, b, axis=-1):
    def vecdot_pullback(g):
        return adj.vecdot_lhs_bar(g, a, b, axis=axis), adj.vecdot_rhs_bar(g, a, b, axis=axis)

    return np.vecdot(a, b, axis=axis), vecdot_pullback


multilinear(np.vecdot, np.linalg.vecdot)


# g · (da × b) = da · (b × g): each operand's cotangent is a cross product again.
@rrule(np.cross)
def cross_rrule(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    def cross_pullback(g):
        return (
            adj.cross_lhs_bar(g, a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis),
            adj.cross_rhs_bar(g, a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis),
        )

    return np.cross(a, b, axisa=axisa, axisb=axisb, axisc=axisc, axis=axis), cross_pullback


multilinear(np.cross)


# ---- tensor contractions -----------------------------------------------------------------------


@rrule(np.tensordot)
def tensordot_rrule(a, b, axes=2):
    def tensordot_pullback(g):
        return adj.tensordot_lhs_bar(g, a, b, axes=axes), adj.tensordot_rhs_bar(g, a, b, axes=axes)

    return np.tensordot(a, b, axes=axes), tensordot_pullback


multilinear(np.tensordot)  # `axes` (argument 2 or keyword) is passed through


@rrule(np.kron)
def kron_rrule(a, b):
    def kron_pullback(g):
        return adj.kron_lhs_bar(g, a, b), adj.kron_rhs_bar(g, a, b)

    return np.kron(a, b), kron_pullback


multilinear(np.kron)


# `np.einsum(subscripts, *operands)`, or operands interleaved with sublists of labels
# (`np.einsum(a, [0, 1], b, [1, 2])`, where `subscripts` is the first operand): the subscripts
# and sublists get None, each operand the einsum of g with the others (see `adj.einsum_bars`).
@rrule(np.einsum)
def einsum_rrule(subscripts, *operands, optimize=False, dtype=None):
    def einsum_pullback(g):
        return adj.einsum_bars(g, (subscripts, *operands), optimize=optimize)

    return np.einsum(subscripts, *operands, optimize=optimize, dtype=dtype), einsum_pullback


# Linear in each operand, but where the operands are depends on the form (`adj.einsum_operands`).
@frule(np.einsum)
def einsum_frule(primals, tangents, optimize=False, dtype=None):
    def product(*args):
        return np.einsum(*args, optimize=optimize, dtype=dtype)

    value = product(*primals)
    operands = adj.einsum_operands(primals)
    items = [t if i in operands else None for i, t in enumerate(tangents)]
    return value, adj.product_tangent(product, primals, items, value)


# ---- the array API's spellings, in np.linalg -----------------------------------------------------
# Stricter than NumPy's own functions (`outer` of vectors only, `cross` of 3-vectors only), so
# each value comes from the function called; the cotangents are the same.


@rrule(np.linalg.outer)
def linalg_outer_rrule(x1, x2):
    def linalg_outer_pullback(g):
        return adj.cotangent_like(g @ x2, x1), adj.cotangent_like(x1 @ g, x2)

    return np.linalg.outer(x1, x2), linalg_outer_pullback


multilinear(np.linalg.outer)


@rrule(np.linalg.cross)
def linalg_cross_rrule(x1, x2, *, axis=-1):
    def linalg_cross_pullback(g):
        return adj.cross_lhs_bar(g, x1, x2, axis=axis), adj.cross_rhs_bar(g, x1, x2, axis=axis)

    return np.linalg.cross(x1, x2, axis=axis), linalg_cross_pullback


multilinear(np.linalg.cross)


@rrule(np.linalg.tensordot)
def linalg_tensordot_rrule(x1, x2, *, axes=2):
    def linalg_tensordot_pullback(g):
        return adj.tensordot_lhs_bar(g, x1, x2, axes=axes), adj.tensordot_rhs_bar(g, x1, x2, axes=axes)

    return np.linalg.tensordot(x1, x2, axes=axes), linalg_tensordot_pullback


multilinear(np.linalg.tensordot)
