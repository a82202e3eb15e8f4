"""Helpers of the product rules: the contraction that gives each operand of a product its cotangent.

Every product here is linear in each operand, so an operand's cotangent is the transpose of
that linear map applied to `g`: the same kind of contraction, of `g` with the other operands.
In the convention of JAX and autograd (see `adjoint.testing`) the transpose has no complex
conjugate, except where the product conjugates an operand itself (`vecdot`, and `vdot` and
`vecmat` in the rules): that operand's cotangent is the conjugate of the transpose's. A real
operand takes the real part of a complex cotangent (`cotangent_like`).
"""

from __future__ import annotations

import string

import numpy as np

from .cotangents import cotangent_like, is_differentiable, sum_to_shape, unbroadcast
from .pointwise import unbroadcast_float
from .tangents import tangent_like

__all__ = [
    "scaled_bar",
    "tensordot_lhs_bar", "tensordot_rhs_bar", "inner_lhs_bar", "inner_rhs_bar",
    "vecdot_lhs_bar", "vecdot_rhs_bar", "matvec_lhs_bar", "matvec_rhs_bar", "vecmat_lhs_bar", "vecmat_rhs_bar",
    "kron_lhs_bar", "kron_rhs_bar", "cross_lhs_bar", "cross_rhs_bar",
    "multi_dot_bars", "einsum_bars", "einsum_operands", "product_tangent",
]


# ---- casting ---------------------------------------------------------------------------------

def scaled_bar(g, x, scale):
    """Cotangent of `x` in the product `x * scale` (a 0-d operand of `dot`, `inner`, ...).

    >>> scaled_bar(np.ones(3), 2.0, np.arange(3.0))
    3.0
    """
    return cotangent_like(unbroadcast(g * scale, x), x)


# ---- tensordot and inner ---------------------------------------------------------------------

def _contracted_axes(a, b, axes):
    """`np.tensordot`'s `axes` as two lists of non-negative axes, of `a` and of `b`."""
    if isinstance(axes, (int, np.integer)):
        return list(range(np.ndim(a) - axes, np.ndim(a))), list(range(axes))
    axes_a, axes_b = (np.atleast_1d(axes_of) for axes_of in axes)
    return [int(i) % np.ndim(a) for i in axes_a], [int(i) % np.ndim(b) for i in axes_b]


def tensordot_lhs_bar(g, a, b, axes=2):
    """Cotangent of `a` in `np.tensordot(a, b, axes)`: `g` contracted with `b` over `b`'s
    free axes, its axes put back in `a`'s order.

    >>> a, b = np.ones((2, 3)), np.arange(3.0)
    >>> tensordot_lhs_bar(np.ones(2), a, b, axes=([1], [0]))
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    axes_a, axes_b = _contracted_axes(a, b, axes)
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    a_bar = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    # a_bar's axes: a's free axes, then those paired with b's contracted axes in b's order.
    paired = [axes_a[j] for j in np.argsort(axes_b)]
    return cotangent_like(np.transpose(a_bar, np.argsort(free_a + paired)), a)


def tensordot_rhs_bar(g, a, b, axes=2):
    """Cotangent of `b` in `np.tensordot(a, b, axes)`: `a` contracted with `g` over `a`'s free
    axes, its axes put back in `b`'s order.

    >>> a, b = np.arange(2.0), np.ones((2, 3))
    >>> tensordot_rhs_bar(np.ones(3), a, b, axes=1)
    array([[0., 0., 0.],
           [1., 1., 1.]])
    """
    axes_a, axes_b = _contracted_axes(a, b, axes)
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    b_bar = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    # b_bar's axes: those paired with a's contracted axes in a's order, then b's free axes.
    paired = [axes_b[j] for j in np.argsort(axes_a)]
    return cotangent_like(np.transpose(b_bar, np.argsort(paired + free_b)), b)


def inner_lhs_bar(g, a, b):
    """Cotangent of `a` in `np.inner(a, b)`: a tensordot over the last axes, or a product
    when either is 0-d.

    >>> inner_lhs_bar(np.ones(2), np.ones((2, 3)), np.arange(3.0))
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return scaled_bar(g, a, b)
    return tensordot_lhs_bar(g, a, b, axes=([-1], [-1]))


def inner_rhs_bar(g, a, b):
    """Cotangent of `b` in `np.inner(a, b)` (see `inner_lhs_bar`).

    >>> inner_rhs_bar(np.ones(2), np.ones((2, 3)), np.arange(3.0))
    array([2., 2., 2.])
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return scaled_bar(g, b, a)
    return tensordot_rhs_bar(g, a, b, axes=([-1], [-1]))


# ---- vecdot ----------------------------------------------------------------------------------

def vecdot_lhs_bar(g, a, b, axis=-1):
    """Cotangent of `a` in `np.vecdot(a, b, axis=axis)`, `sum(conj(a) * b, axis)`: `conj(g * b)`,
    as for `vdot`, summed over the batch axes `a` was broadcast along.

    >>> vecdot_lhs_bar(np.ones(2), np.zeros(2, complex), np.array([[1j, 2], [1, 0]]))
    array([1.-1.j, 2.+0.j])
    """
    return _vector_bar(np.conj(np.expand_dims(g, -1) * np.moveaxis(b, axis, -1)), a, axis)


def vecdot_rhs_bar(g, a, b, axis=-1):
    """Cotangent of `b` in `np.vecdot(a, b, axis=axis)`: `g * conj(a)`, summed over broadcast axes.

    >>> vecdot_rhs_bar(np.array([1.0, 2.0]), np.array([1j, 1]), np.zeros((2, 2), complex))
    array([[0.-1.j, 1.+0.j],
           [0.-2.j, 2.+0.j]])
    """
    return _vector_bar(np.expand_dims(g, -1) * np.conj(np.moveaxis(a, axis, -1)), b, axis)


def _vector_bar(bar, x, axis):
    """`bar`, with `x`'s vector axis last, as `x`'s cotangent."""
    x_moved = np.moveaxis(x, axis, -1)
    return cotangent_like(np.moveaxis(unbroadcast(bar, x_moved), -1, axis), x)


# ---- matvec and vecmat ------------------------------------------------------------------------
# `np.matvec(x1, x2)` multiplies matrices by vectors, `np.vecmat(x1, x2)` conjugated vectors by
# matrices, over broadcast batch axes (NumPy 2.2); the batch axes are summed back (`unbroadcast`).

def matvec_lhs_bar(g, x1, x2):
    """Cotangent of the matrices `x1` in `np.matvec(x1, x2)`: the outer products of `g` and `x2`.

    >>> matvec_lhs_bar(np.array([1.0, 2.0]), np.zeros((2, 3)), np.arange(3.0))
    array([[0., 1., 2.],
           [0., 2., 4.]])
    """
    return unbroadcast_float(np.expand_dims(g, -1) * np.expand_dims(x2, -2), x1)


def matvec_rhs_bar(g, x1, x2):
    """Cotangent of the vectors `x2` in `np.matvec(x1, x2)`: `g @ x1`.

    >>> matvec_rhs_bar(np.array([1.0, 2.0]), np.arange(6.0).reshape(2, 3), np.zeros(3))
    array([ 6.,  9., 12.])
    """
    return unbroadcast_float(np.squeeze(np.expand_dims(g, -2) @ x1, -2), x2)


def vecmat_lhs_bar(g, x1, x2):
    """Cotangent of the vectors `x1` in `np.vecmat(x1, x2)`, `conj(x1) @ x2`: `conj(x2 @ g)`, as
    for `vdot`.

    >>> vecmat_lhs_bar(np.array([1.0, 1j]), np.zeros(2, complex), np.array([[1.0, 0.0], [0.0, 2.0]]))
    array([1.-0.j, 0.-2.j])
    """
    return unbroadcast_float(np.conj(np.squeeze(x2 @ np.expand_dims(g, -1), -1)), x1)


def vecmat_rhs_bar(g, x1, x2):
    """Cotangent of the matrices `x2` in `np.vecmat(x1, x2)`: the outer products of `conj(x1)`
    and `g`.

    >>> vecmat_rhs_bar(np.array([1.0, 2.0]), np.array([1j, 1.0]), np.zeros((2, 2), complex))
    array([[0.-1.j, 0.-2.j],
           [1.+0.j, 2.+0.j]])
    """
    return unbroadcast_float(np.expand_dims(np.conj(x1), -1) * np.expand_dims(g, -2), x2)


# ---- kron ------------------------------------------------------------------------------------

def _kron_blocks(g, a, b):
    """`g` seen as blocks, axes `(a0, b0, a1, b1, ...)`, with `a` and `b` given as many axes
    (leading 1s) as `np.kron` gives the smaller one."""
    ndim = max(np.ndim(a), np.ndim(b))
    a_full = np.reshape(a, (1,) * (ndim - np.ndim(a)) + np.shape(a))
    b_full = np.reshape(b, (1,) * (ndim - np.ndim(b)) + np.shape(b))
    interleaved = [n for pair in zip(a_full.shape, b_full.shape) for n in pair]
    return np.reshape(g, interleaved), a_full, b_full


def kron_lhs_bar(g, a, b):
    """Cotangent of `a` in `np.kron(a, b)`: each block of `g` contracted with `b`.

    >>> kron_lhs_bar(np.arange(4.0), np.ones(2), np.ones(2))
    array([1., 5.])
    """
    blocks, a_full, b_full = _kron_blocks(g, a, b)
    ndim = b_full.ndim
    return cotangent_like(np.tensordot(blocks, b_full, axes=(list(range(1, 2 * ndim, 2)), list(range(ndim)))), a)


def kron_rhs_bar(g, a, b):
    """Cotangent of `b` in `np.kron(a, b)`: the blocks of `g` weighted by `a`'s entries.

    >>> kron_rhs_bar(np.arange(4.0), np.ones(2), np.ones(2))
    array([2., 4.])
    """
    blocks, a_full, b_full = _kron_blocks(g, a, b)
    ndim = a_full.ndim
    return cotangent_like(np.tensordot(a_full, blocks, axes=(list(range(ndim)), list(range(0, 2 * ndim, 2)))), b)


# ---- cross -----------------------------------------------------------------------------------

def _as_3_vectors(v, axis):
    """`v` with its vector axis last, a 2-vector given a zero third component."""
    v = np.moveaxis(np.asarray(v), axis, -1)
    return np.concatenate([v, np.zeros_like(v[..., :1])], axis=-1) if v.shape[-1] == 2 else v


def _cross_bar(g, x, other, x_first, axisx, axisother, axisc):
    """Cotangent of `x` in the cross product of `x` and `other` (`x_first`: `x × other`).

    `g · (dx × o) = dx · (o × g)` and `g · (o × dx) = dx · (g × o)`: a cross product again,
    with 3-vectors throughout; both 2-vectors make a scalar product, the third component.
    """
    other3 = _as_3_vectors(other, axisother)
    if np.shape(x)[axisx] == 2 and np.shape(other)[axisother] == 2:
        g3 = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    x_bar = np.cross(other3, g3) if x_first else np.cross(g3, other3)
    x_bar = np.moveaxis(x_bar[..., :np.shape(x)[axisx]], -1, axisx % np.ndim(x) - np.ndim(x))
    return cotangent_like(unbroadcast(x_bar, x), x)


def cross_lhs_bar(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of `a` in `np.cross(a, b, ...)`: `b × g`, summed over broadcast axes.

    >>> cross_lhs_bar(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    array([1., 0., 0.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    return _cross_bar(g, a, b, True, axisa, axisb, axisc)


def cross_rhs_bar(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cotangent of `b` in `np.cross(a, b, ...)`: `g × a`, summed over broadcast axes.

    >>> cross_rhs_bar(np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    array([0., 1., 0.])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    return _cross_bar(g, b, a, False, axisb, axisa, axisc)


# ---- multi_dot -------------------------------------------------------------------------------

def multi_dot_bars(g, arrays):
    """Cotangents of the matrices of `np.linalg.multi_dot(arrays)`, as the same kind of
    sequence: matrix i gets `(A_0 ... A_i-1).T @ g @ (A_i+1 ... A_n-1).T`. A 1-D first (last)
    array is a row (column), as for multi_dot.

    >>> multi_dot_bars(1.0, [np.ones(2), np.eye(2), np.arange(2.0)])
    [array([0., 1.]), array([[0., 1.],
           [0., 1.]]), array([1., 1.])]
    """
    matrices = [np.asarray(a) for a in arrays]
    if matrices[0].ndim == 1:
        matrices[0] = matrices[0][np.newaxis, :]
    if matrices[-1].ndim == 1:
        matrices[-1] = matrices[-1][:, np.newaxis]
    g = np.reshape(g, (matrices[0].shape[0], matrices[-1].shape[1]))
    lefts = [np.eye(matrices[0].shape[0])]  # lefts[i] = A_0 ... A_i-1
    for matrix in matrices[:-1]:
        lefts.append(lefts[-1] @ matrix)
    rights = [np.eye(matrices[-1].shape[1])]  # rights[-1 - i] = A_i+1 ... A_n-1, built backwards
    for matrix in matrices[:0:-1]:
        rights.append(matrix @ rights[-1])
    rights.reverse()
    return type(arrays)(
        cotangent_like(left.T @ g @ right.T, a) for left, right, a in zip(lefts, rights, arrays)
    )


# ---- einsum ----------------------------------------------------------------------------------

def einsum_bars(g, args, optimize=False):
    """The cotangents of `np.einsum(*args)`: one per positional argument, None for the
    subscripts (or the sublists, in the form `np.einsum(a, [0, 1], b, [1, 2])`).

    Operand k's cotangent is the einsum of `g` with the other operands, onto k's distinct
    labels. Labels only k has (summed away in the forward) were constant in `g`: the result
    is broadcast along them; size-1 axes that einsum broadcast are summed back; a label
    repeated in k (`'ii->i'`) takes the result on that diagonal, zeros elsewhere.

    >>> einsum_bars(np.ones(2), ("ij,j->i", np.ones((2, 3)), np.arange(3.0)))
    (None, array([[0., 1., 2.],
           [0., 1., 2.]]), array([2., 2., 2.]))
    >>> einsum_bars(1.0, ("ii", np.ones((2, 2))))
    (None, array([[1., 0.],
           [0., 1.]]))
    """
    terms, output, positions = _einsum_terms(args)
    operands = [args[p] for p in positions]
    cotangents = [None] * len(args)
    for k, (term, operand) in enumerate(zip(terms, operands)):
        if not is_differentiable(operand):
            continue
        other_terms = terms[:k] + terms[k + 1:]
        labels = "".join(dict.fromkeys(term))  # k's distinct labels, in order
        reached = set(output).union(*other_terms)
        kept = "".join(c for c in labels if c in reached)
        spec = ",".join([output, *other_terms]) + "->" + kept
        bar = np.einsum(spec, g, *operands[:k], *operands[k + 1:], optimize=optimize)
        sizes = [np.shape(operand)[term.index(c)] for c in labels]
        bar = np.expand_dims(bar, [i for i, c in enumerate(labels) if c not in reached])
        bar = np.broadcast_to(sum_to_shape(bar, sizes), sizes)
        if len(labels) < len(term):
            diagonal_free = np.zeros(np.shape(operand), dtype=bar.dtype)
            np.einsum(f"{term}->{labels}", diagonal_free)[...] = bar  # a writeable view of the diagonal
            bar = diagonal_free
        cotangents[positions[k]] = cotangent_like(bar, operand)
    return tuple(cotangents)


def _einsum_terms(args):
    """`(terms, output, positions)` of the call `np.einsum(*args)`: each operand's labels
    (one letter per axis, `...` spelled out), the output's labels, and where in `args` each
    operand is."""
    positions = einsum_operands(args)
    if isinstance(args[0], str):
        subscripts = args[0].replace(" ", "")
    else:
        sublists = [args[p + 1] for p in positions]
        subscripts = ",".join(_spelled(sublist) for sublist in sublists)
        if len(args) % 2:
            subscripts += "->" + _spelled(args[-1])
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if not arrow:  # implicit: the broadcast axes, then the labels used once, in alphabetical order
        letters = "".join(terms).replace(".", "")
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    # `...` stands for as many axes as its operand has beyond its letters, aligned on the right
    ranks = [np.ndim(args[p]) - len(t.replace("...", "")) if "..." in t else 0 for t, p in zip(terms, positions)]
    unused = [c for c in string.ascii_letters if c not in subscripts]
    broadcast = "".join(unused[:max(ranks, default=0)])
    terms = [t.replace("...", broadcast[len(broadcast) - rank:]) for t, rank in zip(terms, ranks)]
    return terms, output.replace("...", broadcast), positions


def einsum_operands(args):
    """Where the operands are among the positional arguments `args` of `np.einsum`: after the
    subscripts, or interleaved with sublists of labels (and maybe followed by the output's).

    >>> einsum_operands(("ij,j->i", np.ones((2, 3)), np.ones(3)))
    [1, 2]
    >>> einsum_operands((np.ones((2, 3)), [0, 1], np.ones(3), [1], [0]))
    [0, 2]
    """
    if isinstance(args[0], str):
        return list(range(1, len(args)))
    return list(range(0, len(args) - 1, 2))


def _spelled(sublist):
    """An einsum sublist (`[0, Ellipsis, 1]`) as subscripts (`'A...B'`), letters in the order of
    the labels, as NumPy spells them (the implicit output sorts them)."""
    return "".join("..." if label is Ellipsis else _SUBLIST_LETTERS[label] for label in sublist)


_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase


# ---- forward mode ----------------------------------------------------------------------------

def product_tangent(product, args, tangents, value):
    """The tangent of `value = product(*args)`, a product linear in each argument on its own:
    the sum, over the arguments with a tangent (not None), of `product` with that argument
    replaced by its tangent; zeros if none has one.

    >>> a, b = np.ones((2, 2)), np.eye(2)
    >>> product_tangent(np.matmul, (a, b), (None, 2 * b), a @ b)
    array([[2., 2.],
           [2., 2.]])
    """
    tangent = None
    for i, t in enumerate(tangents):
        if t is None:
            continue
        term = product(*args[:i], t, *args[i + 1:])
        tangent = term if tangent is None else tangent + term
    return tangent_like(tangent, value)
