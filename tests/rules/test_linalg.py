"""Rules of adjoint/rules/linalg.py (products and contractions), checked directly (check_rrule)
and through the compiler (check_grad), over real, float32 and complex operands."""

import operator
import warnings

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad, check_rrule
from sampling import sample

# Each case's operands are drawn in float64, float32 and complex (complex128, or complex64 for float32).
KINDS = [
    pytest.param("real", np.float64, id="float64"),
    pytest.param("real", np.float32, id="float32"),
    pytest.param("complex", np.float64, id="complex128"),
    pytest.param("complex", np.float32, id="complex64"),
]


def operands(rng, domain, dtype, *shapes):
    """One operand per shape (None: a Python scalar)."""
    return [sample(rng, domain, shape, dtype) for shape in shapes]


def case_id(*parts):
    return "-".join(str(p).replace(" ", "") for p in parts)


# ---- matmul and dot -------------------------------------------------------------------------------

MATMUL_PRIMITIVES = [operator.matmul, np.matmul, np.linalg.matmul]

MATMUL_SHAPES = [
    ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((2, 3, 4), (4, 5)), ((5, 3, 4), (1, 4, 2)),
    ((2, 1, 3, 4), (5, 4, 2)),
]

# None is a Python float; () a 0-d array.
DOT_SHAPES = [
    (None, (3,)), ((), (2, 3)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((2, 3, 4), (4, 5)), ((2, 3, 4), (5, 4, 6)), ((3,), (5, 3, 4)), (None, None),
]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", MATMUL_SHAPES, ids=[case_id(*s) for s in MATMUL_SHAPES])
@pytest.mark.parametrize("primitive", MATMUL_PRIMITIVES, ids=["operator.matmul", "np.matmul", "np.linalg.matmul"])
def test_matmul_rule(rng, primitive, shape_a, shape_b, domain, dtype):
    check_rrule(primitive, *operands(rng, domain, dtype, shape_a, shape_b))


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", DOT_SHAPES, ids=[case_id(*s) for s in DOT_SHAPES])
def test_dot_rule(rng, shape_a, shape_b, domain, dtype):
    check_rrule(np.dot, *operands(rng, domain, dtype, shape_a, shape_b))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_a, shape_b", [((2, 3), (3, 4)), ((3,), (3,)), ((2, 3, 4), (4,))])
def test_dot_method_rule(rng, shape_a, shape_b, dtype):
    check_rrule(np.ndarray.dot, *operands(rng, "real", dtype, shape_a, shape_b))


# ---- vector products ------------------------------------------------------------------------------

VDOT_SHAPES = [(None, None), ((), ()), ((3,), (3,)), ((2, 3), (6,)), ((2, 3), (3, 2)), ((1, 3), (3,))]
INNER_SHAPES = [
    (None, (3,)), ((), (2, 3)), ((2, 3), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (4, 3)), ((2, 3), (4, 3)),
    ((2, 2, 3), (4, 3)), (None, None),
]
OUTER_SHAPES = [(None, (3,)), ((), ()), ((3,), (4,)), ((2, 3), (2,)), ((3,), (2, 2)), ((1, 3), (1,))]
VECDOT_CASES = [
    ((3,), (3,), -1), ((2, 3), (3,), -1), ((2, 3), (2, 3), -1), ((3, 2), (3, 2), 0), ((4, 1, 3), (2, 3), -1),
    ((3,), (2, 3), -1), ((3, 2), (3, 1), 0),
]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", VDOT_SHAPES, ids=[case_id(*s) for s in VDOT_SHAPES])
def test_vdot_rule(rng, shape_a, shape_b, domain, dtype):
    check_rrule(np.vdot, *operands(rng, domain, dtype, shape_a, shape_b))


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", INNER_SHAPES, ids=[case_id(*s) for s in INNER_SHAPES])
def test_inner_rule(rng, shape_a, shape_b, domain, dtype):
    check_rrule(np.inner, *operands(rng, domain, dtype, shape_a, shape_b))


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", OUTER_SHAPES, ids=[case_id(*s) for s in OUTER_SHAPES])
def test_outer_rule(rng, shape_a, shape_b, domain, dtype):
    check_rrule(np.outer, *operands(rng, domain, dtype, shape_a, shape_b))


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b, axis", VECDOT_CASES, ids=[case_id(*c) for c in VECDOT_CASES])
@pytest.mark.parametrize("primitive", [np.vecdot, np.linalg.vecdot], ids=["np.vecdot", "np.linalg.vecdot"])
def test_vecdot_rule(rng, primitive, shape_a, shape_b, axis, domain, dtype):
    check_rrule(primitive, *operands(rng, domain, dtype, shape_a, shape_b), axis=axis)


MATVEC_SHAPES = [((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (4, 3)), ((4, 1, 2, 3), (5, 3))]


@pytest.mark.skipif(not hasattr(np, "matvec"), reason="np.matvec and np.vecmat are NumPy 2.2's")
@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", MATVEC_SHAPES, ids=[case_id(*s) for s in MATVEC_SHAPES])
def test_matvec_and_vecmat_rules(rng, shape_a, shape_b, domain, dtype):
    matrices, vectors = operands(rng, domain, dtype, shape_a, shape_b)
    check_rrule(np.matvec, matrices, vectors)
    check_rrule(np.vecmat, vectors, np.swapaxes(matrices, -1, -2))


def test_vdot_conjugates_its_first_operand(rng):
    # vdot(a, b) = sum(conj(a) * b): for a real loss Re(vdot(a, b)), d/d(Re a) = Re b and
    # d/d(Im a) = Im b, so a's cotangent Re b - i Im b is conj(b) (and b's is conj(a)).
    a, b = operands(rng, "complex", np.float64, (3,), (3,))
    _, back = adjoint.registry.lookup(np.vdot).rrule(a, b)
    a_bar, b_bar = back(1.0)
    np.testing.assert_allclose(a_bar, np.conj(b))
    np.testing.assert_allclose(b_bar, np.conj(a))


def test_real_operand_of_a_complex_product_gets_a_real_cotangent(rng):
    a = sample(rng, "real", (2, 3), np.float32)
    b = sample(rng, "complex", (3,), np.float32)
    for primitive in (np.dot, np.inner, np.outer, np.kron, np.matmul):
        check_rrule(primitive, a, b)
    check_rrule(np.vdot, a, np.tile(b, 2))
    check_rrule(np.inner, 1.5, b)  # a Python float gets a float


# ---- cross ----------------------------------------------------------------------------------------

CROSS_CASES = [
    ((3,), (3,), {}), ((4, 3), (3,), {}), ((4, 3), (1, 3), {}), ((2, 1, 3), (4, 3), {}),
    ((3, 4), (3, 4), {"axis": 0}), ((3, 4), (4, 3), {"axisa": 0}), ((4, 3), (3, 4), {"axisb": 0, "axisc": 0}),
    ((3, 2, 4), (4, 3), {"axisa": 0, "axisb": -1, "axisc": 1}),
]
# 2-vectors (deprecated by NumPy 2.0, still computed): the missing component is zero.
CROSS_2D_CASES = [((2,), (2,), {}), ((4, 2), (4, 3), {}), ((3,), (2,), {}), ((2, 4), (4, 2), {"axisa": 0}),
                  ((4, 3), (2,), {"axisc": 0})]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b, keywords", CROSS_CASES, ids=[case_id(*c) for c in CROSS_CASES])
def test_cross_rule(rng, shape_a, shape_b, keywords, domain, dtype):
    check_rrule(np.cross, *operands(rng, domain, dtype, shape_a, shape_b), **keywords)


def _crosses_2_vectors() -> bool:
    """NumPy 2.0 deprecated the cross product of 2-vectors, and a later release removed it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            np.cross(np.ones(2), np.ones(2))
        except ValueError:
            return False
    return True


@pytest.mark.skipif(not _crosses_2_vectors(), reason="this NumPy no longer crosses 2-vectors")
@pytest.mark.parametrize("shape_a, shape_b, keywords", CROSS_2D_CASES, ids=[case_id(*c) for c in CROSS_2D_CASES])
def test_cross_rule_on_2_vectors(rng, shape_a, shape_b, keywords):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        check_rrule(np.cross, *operands(rng, "real", np.float64, shape_a, shape_b), **keywords)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_a, shape_b, axis", [((3,), (3,), -1), ((4, 3), (3,), -1), ((3, 2), (3, 2), 0)])
def test_linalg_cross_rule(rng, shape_a, shape_b, axis, dtype):
    check_rrule(np.linalg.cross, *operands(rng, "real", dtype, shape_a, shape_b), axis=axis)


def test_linalg_outer_rule(rng):
    for domain, dtype in (("real", np.float32), ("complex", np.float64)):
        check_rrule(np.linalg.outer, *operands(rng, domain, dtype, (3,), (4,)))


# ---- tensordot and kron ---------------------------------------------------------------------------

TENSORDOT_CASES = [
    ((2, 3), (3, 4), 1), ((2, 3, 4), (3, 4, 5), 2), ((2, 3), (2, 3), 2), ((2, 3), (4,), 0), ((), (2,), 0),
    ((3, 4), (3, 4), 2), ((2, 3, 4), (4, 2, 5), ([0, 2], [1, 0])), ((3, 2), (3,), (0, 0)),
    ((2, 3), (3, 2), ([1, 0], [0, 1])), ((2, 3, 4), (4, 3), ([-1, -2], [0, 1])), ((2, 3), (4, 3), ((1,), (-1,))),
]
KRON_SHAPES = [
    ((2, 3), (4,)), ((3,), (2,)), ((2, 2), (3, 2)), ((), (3,)), (None, (2,)), ((2, 1, 3), (2, 2)), ((3,), (2, 2)),
    ((), ()),
]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b, axes", TENSORDOT_CASES, ids=[case_id(*c) for c in TENSORDOT_CASES])
def test_tensordot_rule(rng, shape_a, shape_b, axes, domain, dtype):
    check_rrule(np.tensordot, *operands(rng, domain, dtype, shape_a, shape_b), axes=axes)


@pytest.mark.parametrize("shape_a, shape_b, axes", TENSORDOT_CASES[:4], ids=[case_id(*c) for c in TENSORDOT_CASES[:4]])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linalg_tensordot_rule(rng, shape_a, shape_b, axes, dtype):
    check_rrule(np.linalg.tensordot, *operands(rng, "real", dtype, shape_a, shape_b), axes=axes)


def test_tensordot_axes_given_positionally(rng):
    check_rrule(np.tensordot, *operands(rng, "real", np.float64, (2, 3), (3, 4)), 1)


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shape_a, shape_b", KRON_SHAPES, ids=[case_id(*s) for s in KRON_SHAPES])
def test_kron_rule(rng, shape_a, shape_b, domain, dtype):
    check_rrule(np.kron, *operands(rng, domain, dtype, shape_a, shape_b))


# ---- multi_dot ------------------------------------------------------------------------------------

MULTI_DOT_SHAPES = [
    [(2, 3), (3, 4)], [(3,), (3, 4), (4, 2)], [(2, 3), (3, 4), (4,)], [(3,), (3, 3), (3,)],
    [(2, 3), (3, 4), (4, 2), (2, 5)],
]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("shapes", MULTI_DOT_SHAPES, ids=[case_id(*s) for s in MULTI_DOT_SHAPES])
def test_multi_dot_rule(rng, shapes, domain, dtype):
    check_rrule(np.linalg.multi_dot, operands(rng, domain, dtype, *shapes))


def test_multi_dot_of_a_tuple_gives_a_tuple(rng):
    arrays = tuple(operands(rng, "real", np.float64, (2, 3), (3, 4), (4,)))
    check_rrule(np.linalg.multi_dot, arrays)
    _, back = adjoint.registry.lookup(np.linalg.multi_dot).rrule(arrays)
    assert type(back(np.ones(2))[0]) is tuple


# ---- einsum ---------------------------------------------------------------------------------------

# (subscripts, operand shapes); `None` is a Python float.
EINSUM_CASES = [
    ("ij,jk->ik", (2, 3), (3, 4)),
    ("ij,jk", (2, 3), (3, 4)),  # implicit output: the labels used once, sorted
    ("i,i->", (3,), (3,)),
    ("i,i", (3,), (3,)),
    ("i,j->ij", (3,), (2,)),
    ("ij->ji", (2, 3)),
    ("ij->", (2, 3)),
    ("ij->j", (2, 3)),
    ("ii->i", (3, 3)),  # a diagonal
    ("ii", (3, 3)),  # a trace
    ("ii->", (3, 3)),
    ("iji->j", (3, 2, 3)),  # a label repeated apart
    ("ii,i->i", (3, 3), (3,)),
    ("bij,bjk->bik", (2, 2, 3), (2, 3, 4)),
    ("...ij,...jk->...ik", (2, 2, 3), (3, 4)),  # `...` broadcast: the second operand's is empty
    ("...i,...i->...", (2, 3), (1, 3)),
    ("i...->...", (3, 2, 2)),
    ("i...,i...", (3, 2), (3, 2)),  # implicit output with `...`
    ("ij,jk,kl->il", (2, 3), (3, 4), (4, 2)),
    ("i,i,i->", (3,), (3,), (3,)),
    ("ij,ij->ij", (1, 3), (2, 3)),  # size-1 axes broadcast
    ("ijk,jl->", (2, 3, 4), (3, 5)),  # k summed in the first operand only, l in the second only
    ("ij,kl->ijkl", (2, 3), (1, 2)),
    ("Ab,bC", (2, 3), (3, 4)),  # capitals sort before small letters
    (",i->i", (), (3,)),
    ("...,...", (2, 3), None),
    ("ij , jk -> ik", (2, 3), (3, 4)),  # spaces
    ("i,i->i", (3,), (1,)),
]


@pytest.mark.parametrize("domain, dtype", KINDS)
@pytest.mark.parametrize("subscripts, shapes", [(c[0], c[1:]) for c in EINSUM_CASES], ids=[c[0] for c in EINSUM_CASES])
def test_einsum_rule(rng, subscripts, shapes, domain, dtype):
    check_rrule(np.einsum, subscripts, *operands(rng, domain, dtype, *shapes))


@pytest.mark.parametrize("optimize", [True, "greedy", "optimal"])
def test_einsum_rule_with_optimize(rng, optimize):
    check_rrule(np.einsum, "ij,jk,kl->il", *operands(rng, "real", np.float64, (2, 3), (3, 4), (4, 2)), optimize=optimize)
    check_rrule(np.einsum, "ii,i->", *operands(rng, "real", np.float64, (3, 3), (3,)), optimize=optimize)


def test_einsum_rule_with_dtype(rng):
    check_rrule(np.einsum, "ij,j->i", *operands(rng, "real", np.float32, (2, 3), (3,)), dtype=np.float64)


SUBLIST_CASES = [
    ([(2, 3), [0, 1], (3, 4), [1, 2], [0, 2]]),
    ([(2, 3), [0, 1], (3,), [1]]),  # implicit output
    ([(3, 3), [0, 0]]),
    ([(2, 3), [Ellipsis, 1], (3,), [1], [Ellipsis]]),
    ([(2, 3), [27, 0], (3, 4), [0, 1]]),  # labels past 26: the implicit output sorts them as numbers
]


@pytest.mark.parametrize("case", SUBLIST_CASES, ids=[str(c[1::2]) for c in SUBLIST_CASES])
def test_einsum_rule_with_sublists(rng, case):
    args = [sample(rng, "real", item) if isinstance(item, tuple) else item for item in case]
    check_rrule(np.einsum, *args)


def test_einsum_diagonal_cotangent_is_zero_off_the_diagonal(rng):
    x, g = sample(rng, "real", (3, 3)), sample(rng, "real", (3,))
    _, back = adjoint.registry.lookup(np.einsum).rrule("ii->i", x)
    np.testing.assert_array_equal(back(g)[1], np.diag(g))


# ---- integer operands carry no cotangent ----------------------------------------------------------

INTEGER_CASES = [
    (np.matmul, (2, 3), (3, 4)), (np.dot, (2, 3), (3,)), (np.vdot, (3,), (3,)), (np.inner, (2, 3), (3,)),
    (np.outer, (2,), (3,)), (np.kron, (2,), (3,)), (np.tensordot, (2, 3), (3, 4)), (np.cross, (3,), (3,)),
    (np.vecdot, (2, 3), (3,)),
    *([(np.matvec, (2, 3), (3,)), (np.vecmat, (2,), (2, 3))] if hasattr(np, "matvec") else []),
]


@pytest.mark.parametrize("primitive, shape_a, shape_b", INTEGER_CASES, ids=[c[0].__name__ for c in INTEGER_CASES])
@pytest.mark.parametrize("integer_first", [True, False], ids=["int-float", "float-int"])
def test_integer_operand_gets_none(rng, primitive, shape_a, shape_b, integer_first):
    # check_rrule fails if an int operand gets anything but None.
    a, b = rng.integers(-3, 4, size=shape_a), sample(rng, "real", shape_b, np.float32)
    if not integer_first:
        a, b = a.astype(np.float32), b.astype(np.int64)
    axes = {"axes": 1} if primitive is np.tensordot else {}
    check_rrule(primitive, a, b, **axes)


def test_integer_operand_of_einsum_and_multi_dot_gets_none(rng):
    check_rrule(np.einsum, "ij,jk->ik", rng.integers(-3, 4, size=(2, 3)), sample(rng, "real", (3, 4)))
    check_rrule(np.linalg.multi_dot, [sample(rng, "real", (2, 3)), rng.integers(-3, 4, size=(3, 4))])


# The primitives the check_rrule tests above exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [
    *MATMUL_PRIMITIVES, np.dot, np.ndarray.dot, np.vdot, np.inner, np.outer, np.vecdot, np.linalg.vecdot, np.cross,
    np.linalg.cross, np.linalg.outer, np.tensordot, np.linalg.tensordot, np.kron, np.linalg.multi_dot, np.einsum,
    *([np.matvec, np.vecmat] if hasattr(np, "matvec") else []),
]


# ---- through the compiler -------------------------------------------------------------------------

def matmul_operator(a, b):
    return a @ b


def call_np_matmul(a, b):
    return np.matmul(a, b)


def call_np_dot(a, b):
    return np.dot(a, b)


def dot_method(a, b):
    return np.sum(a.dot(b) ** 2)


def tanh_layer_loss(x, w):
    return np.sum(np.tanh(x @ w) ** 2)


def einsum_matrix_product(a, b):
    return np.sum(np.einsum("ij,jk->ik", a, b) ** 2)


def einsum_trace_and_diagonal(a, b):
    return np.einsum("ii", a) * np.sum(np.einsum("ii->i", a) * np.einsum("ij,j->i", a, b, optimize=True))


def einsum_with_sublists(a, b):
    return np.sum(np.sin(np.einsum(a, [0, 1], b, [1, 2], [0, 2])))


def tensordot_pair(a, b):
    return np.sum(np.tensordot(a, b, axes=([0, 2], [1, 0])) ** 2)


def tensordot_count(a, b):
    return np.sum(np.cos(np.tensordot(a, b, 1)))


def vector_products(a, b):
    return np.vdot(a, b) ** 2 + np.sum(np.outer(a, b) ** 2) + np.inner(a, np.sin(b)) + np.sum(np.kron(a, b) ** 3)


def cross_along_rows(a, b):
    return np.sum(np.cross(a, b, axis=0) ** 2)


def chained_products(a, b):
    return np.sum(np.linalg.multi_dot([a, b, a.T]) ** 2) + np.sum(np.vecdot(a, a, axis=0))


def complex_products(a, b):
    return np.abs(np.vdot(a, b)) ** 2 + np.real(np.sum(np.einsum("ij,kj->ik", a, b) * np.tensordot(a, b, ([1], [1]))))


def einsum_into_buffer(a):
    out = np.empty(a.shape[0])
    return np.sum(np.einsum("ij->i", a, out=out))


THROUGH_COMPILER = [
    (matmul_operator, (2, 3), (3, 4)), (call_np_matmul, (5, 3, 4), (1, 4, 2)), (call_np_matmul, (3,), (2, 3, 4)),
    (call_np_dot, (2, 3, 4), (5, 4, 6)), (call_np_dot, None, (3,)), (dot_method, (2, 3), (3,)),
    (tanh_layer_loss, (5, 3), (3, 2)), (einsum_matrix_product, (2, 3), (3, 4)),
    (einsum_trace_and_diagonal, (3, 3), (3,)), (einsum_with_sublists, (2, 3), (3, 4)),
    (tensordot_pair, (2, 3, 4), (4, 2, 5)), (tensordot_count, (2, 3), (3, 4)), (vector_products, (3,), (3,)),
    (cross_along_rows, (3, 4), (3, 4)), (chained_products, (3, 3), (3, 3)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn, shape_a, shape_b", THROUGH_COMPILER,
                         ids=[case_id(c[0].__name__, *c[1:]) for c in THROUGH_COMPILER])
def test_through_compiler(rng, fn, shape_a, shape_b, dtype):
    check_grad(fn, *operands(rng, "real", dtype, shape_a, shape_b))


def test_complex_operands_through_compiler(rng):
    check_grad(complex_products, *operands(rng, "complex", np.float64, (2, 3), (2, 3)))


def test_float32_gradient_stays_float32(rng):
    a, b = operands(rng, "real", np.float32, (2, 3), (3, 4))
    gradients = adjoint.grad(einsum_matrix_product, wrt=(0, 1))(a, b)
    assert [g.dtype for g in gradients] == [np.float32, np.float32]


def test_keyword_out_of_scope_is_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="out="):
        adjoint.grad(einsum_into_buffer)(sample(rng, "real", (2, 3)))
