"""Rules of adjoint/rules/decompositions.py: inverses, solves, determinants, factorizations.

Matrices are drawn well conditioned (eigenvalues and singular values well separated and away
from zero), so finite differences are accurate; losses of eigenvectors and singular vectors
are invariant to their signs, which NumPy chooses.
"""

import itertools

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.testing import check_grad, check_rrule


# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [
    np.linalg.inv, np.linalg.solve, np.linalg.det, np.linalg.slogdet, np.linalg.matrix_power, np.linalg.pinv,
    np.linalg.lstsq, np.linalg.cholesky, np.linalg.eigh, np.linalg.eigvalsh, np.linalg.svd, np.linalg.qr,
]

MATRIX_SHAPES = [(3, 3), (2, 3, 3), (2, 1, 3, 3)]
REAL = [np.float32, np.float64]
WITH_COMPLEX = REAL + [np.complex128]
RECTANGULAR_SHAPES = [(3, 3), (4, 3), (3, 4), (2, 4, 3), (2, 3, 4)]


def product(*parts):
    """Every combination of one item from each list, for `pytest.mark.parametrize`."""
    return list(itertools.product(*parts))


def each_case_with(cases, *parts):
    """Every case (a tuple of parameters) with every combination of the other parameters."""
    return [(*case, *rest) for case in cases for rest in itertools.product(*parts)]


def _t(x):
    return np.swapaxes(x, -1, -2)


def invertible(rng, shape, dtype=np.float64):
    """A random matrix (stack) kept well away from singular by a multiple of the identity."""
    a = rng.normal(size=shape) + 3 * np.eye(shape[-1])
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.normal(size=shape)
    return a.astype(dtype)


def orthogonal(rng, shape):
    return np.linalg.qr(rng.normal(size=shape))[0]


def separated_symmetric(rng, shape, dtype=np.float64):
    """A symmetric matrix (stack) with eigenvalues 1, 2, ..., n apart from each other."""
    q = orthogonal(rng, shape)
    return ((q * np.arange(1.0, shape[-1] + 1)[..., None, :]) @ _t(q)).astype(dtype)


def separated_rectangular(rng, shape, dtype=np.float64):
    """A matrix (stack) with singular values 1, 2, ..., min(m, n)."""
    *batch, m, n = shape
    k = min(m, n)
    u, v = orthogonal(rng, (*batch, m, k)), orthogonal(rng, (*batch, n, k))
    return ((u * np.arange(1.0, k + 1)) @ _t(v)).astype(dtype)


# ---- inverses, solves, determinants, powers --------------------------------------------------

@pytest.mark.parametrize("primitive, shape, dtype", product([np.linalg.inv, np.linalg.det, np.linalg.slogdet],
                                                         MATRIX_SHAPES, WITH_COMPLEX))
def test_inverse_and_determinant_rules(rng, primitive, shape, dtype):
    check_rrule(primitive, invertible(rng, shape, dtype))


SOLVE_SHAPES = [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 2)), ((3, 3), (2, 3, 2)),
    ((2, 3, 3), (3, 2)), ((1, 3, 3), (2, 3, 1)),
]


@pytest.mark.parametrize("shape_a, shape_b, dtype", each_case_with(SOLVE_SHAPES, WITH_COMPLEX))
def test_solve_rule_with_vector_matrix_and_broadcast_right_hand_sides(rng, shape_a, shape_b, dtype):
    b = rng.normal(size=shape_b) + (1j * rng.normal(size=shape_b) if dtype == np.complex128 else 0)
    check_rrule(np.linalg.solve, invertible(rng, shape_a, dtype), b.astype(dtype))


def test_integer_operands_get_no_cotangent(rng):
    integers = np.array([[3, 1], [1, 2]])
    check_rrule(np.linalg.inv, integers)
    check_rrule(np.linalg.solve, integers, rng.normal(size=2))
    check_rrule(np.linalg.solve, invertible(rng, (2, 2)), np.array([1, 2]))


@pytest.mark.parametrize("rank", [1, 2])
def test_determinant_gradient_at_singular_matrices_is_the_cofactor_matrix(rng, rank):
    a = rng.normal(size=(3, rank)) @ rng.normal(size=(rank, 3))
    check_rrule(np.linalg.det, a)
    cofactors = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) for j in range(3)]
                          for i in range(3)])
    _, back = registry.lookup(np.linalg.det).rrule(a)
    np.testing.assert_allclose(back(2.0)[0], 2.0 * cofactors, atol=1e-12)


@pytest.mark.parametrize("n, shape, dtype", product([-3, -1, 0, 1, 2, 5], [(3, 3), (2, 3, 3)], WITH_COMPLEX))
def test_matrix_power_rule_for_negative_zero_and_positive_powers(rng, n, shape, dtype):
    check_rrule(np.linalg.matrix_power, invertible(rng, shape, dtype) / 3, n)


@pytest.mark.parametrize("shape, dtype", product(RECTANGULAR_SHAPES, REAL))
def test_pinv_rule_for_full_rank_matrices(rng, shape, dtype):
    check_rrule(np.linalg.pinv, separated_rectangular(rng, shape, dtype))


def test_pinv_rule_with_rcond(rng):
    check_rrule(np.linalg.pinv, separated_rectangular(rng, (4, 3)), rcond=1e-10)


LSTSQ_SHAPES = [((4, 3), (4,)), ((4, 3), (4, 2)), ((3, 3), (3,)), ((3, 4), (3,)), ((3, 4), (3, 2))]


@pytest.mark.parametrize("shape_a, shape_b, dtype, rcond", each_case_with(LSTSQ_SHAPES, REAL, [None, 1e-10]))
def test_lstsq_rule_for_solution_residuals_and_singular_values(rng, shape_a, shape_b, dtype, rcond):
    a, b = separated_rectangular(rng, shape_a, dtype), rng.normal(size=shape_b).astype(dtype)
    check_rrule(np.linalg.lstsq, a, b, rcond=rcond)


def test_lstsq_of_a_rank_deficient_matrix_is_refused(rng):
    a = rng.normal(size=(4, 1)) @ rng.normal(size=(1, 3))
    _, back = registry.lookup(np.linalg.lstsq).rrule(a, np.ones(4))
    with pytest.raises(adjoint.AdjointError, match="full rank"):
        back((np.ones(3), None, None, None))


# ---- symmetric factorizations ----------------------------------------------------------------

@pytest.mark.parametrize("shape, upper, dtype", product(MATRIX_SHAPES, [False, True], REAL))
def test_cholesky_gives_the_cotangent_of_the_triangle_numpy_reads(rng, shape, upper, dtype):
    check_rrule(np.linalg.cholesky, separated_symmetric(rng, shape, dtype), upper=upper)


def test_cholesky_of_a_non_symmetric_matrix_agrees_with_numpys_function(rng):
    # NumPy reads the lower triangle only: the entries above the diagonal get no gradient
    a = separated_symmetric(rng, (3, 3))
    a[0, 2] += 0.3
    check_rrule(np.linalg.cholesky, a)
    _, back = registry.lookup(np.linalg.cholesky).rrule(a)
    (a_bar,) = back(np.ones((3, 3)))
    assert np.all(np.triu(a_bar, 1) == 0)


@pytest.mark.parametrize("primitive, shape, uplo, dtype", product([np.linalg.eigh, np.linalg.eigvalsh],
                                                               MATRIX_SHAPES, ["L", "U"], REAL))
def test_eigh_rules_give_the_cotangent_of_the_triangle_numpy_reads(rng, primitive, shape, uplo, dtype):
    check_rrule(primitive, separated_symmetric(rng, shape, dtype), UPLO=uplo)


def test_eigh_with_uplo_passed_positionally(rng):
    check_rrule(np.linalg.eigh, separated_symmetric(rng, (3, 3)), "U")


# ---- singular values and QR ------------------------------------------------------------------

SVD_CASES = [(shape, False, True) for shape in RECTANGULAR_SHAPES] + [
    ((3, 3), True, True), ((2, 3, 3), True, True), ((4, 3), True, False), ((2, 3, 4), False, False),
]


@pytest.mark.parametrize("shape, full_matrices, compute_uv, dtype", each_case_with(SVD_CASES, REAL))
def test_svd_rule(rng, shape, full_matrices, compute_uv, dtype):
    a = separated_rectangular(rng, shape, dtype)
    check_rrule(np.linalg.svd, a, full_matrices=full_matrices, compute_uv=compute_uv)


QR_CASES = [(shape, "reduced") for shape in RECTANGULAR_SHAPES] + [
    ((3, 3), "complete"), ((3, 4), "complete"), ((4, 3), "r"), ((3, 4), "r"), ((2, 4, 3), "r"),
]


@pytest.mark.parametrize("shape, mode, dtype", each_case_with(QR_CASES, REAL))
def test_qr_rule(rng, shape, mode, dtype):
    check_rrule(np.linalg.qr, separated_rectangular(rng, shape, dtype), mode=mode)


def test_qr_raw_mode_is_refused(rng):
    _, back = registry.lookup(np.linalg.qr).rrule(rng.normal(size=(3, 3)), mode="raw")
    with pytest.raises(adjoint.AdjointError, match="mode"):
        back((np.ones((3, 3)), np.ones(3)))


@pytest.mark.parametrize("primitive, keywords", [
    (np.linalg.cholesky, {}), (np.linalg.eigh, {}), (np.linalg.eigvalsh, {}), (np.linalg.svd, {}),
    (np.linalg.svd, {"compute_uv": False}), (np.linalg.qr, {}), (np.linalg.pinv, {}),
])
def test_complex_factorizations_are_refused(rng, primitive, keywords):
    a = separated_symmetric(rng, (3, 3)) + 0j
    value, back = registry.lookup(primitive).rrule(a, **keywords)
    cotangent = tuple(np.ones_like(v) for v in value) if isinstance(value, tuple) else np.ones_like(value)
    with pytest.raises(adjoint.AdjointError, match="real matrices only"):
        back(cotangent)


# ---- through the compiler --------------------------------------------------------------------

def inverse_energy(a):
    return np.sum(np.linalg.inv(a) ** 2)


def solve_vector(a, b):
    return np.sum(np.sin(np.linalg.solve(a, b)))


def solve_matrix(a, b):
    return np.sum(np.linalg.solve(a, b) ** 2)


def log_determinant(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet * 2.0


def determinant_squared(a):
    return np.linalg.det(a) ** 2


def cubed_inverse(a):
    return np.sum(np.linalg.matrix_power(a, 3) + np.linalg.matrix_power(a, -2))


def spd_cholesky(b):
    a = b @ b.T + 3 * np.eye(3)
    return np.sum(np.linalg.cholesky(a) ** 2)


def spd_cholesky_upper_log_det(b):
    a = b.T @ b + np.eye(3)
    return 2 * np.sum(np.log(np.diag(np.linalg.cholesky(a, upper=True))))


def eigenvalue_energy(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 2)


def eigenvector_squares(b):
    w, v = np.linalg.eigh(b + b.T)
    return np.sum(v ** 2 * np.arange(3.0)) + np.sum(w * np.arange(3.0))


def eigenvalues_by_attribute(a):
    result = np.linalg.eigh(a)
    return np.sum(result.eigenvalues ** 3)


def eigvalsh_upper(a):
    return np.sum(np.linalg.eigvalsh(a, UPLO="U") ** 3)


def nuclear_norm(a):
    return np.sum(np.linalg.svd(a, compute_uv=False))


def singular_vector_squares(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u ** 2 * s) + np.sum(vh ** 2 * np.arange(3.0)[:, None])


def full_svd_values_only(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s ** 2)


def full_svd_vectors(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(u ** 2 * np.arange(4.0))


def qr_squares(a):
    q, r = np.linalg.qr(a)
    return np.sum(r ** 2 * np.arange(3.0)) + np.sum(q ** 2 * np.arange(3.0))


def complete_qr_r_only(a):
    q, r = np.linalg.qr(a, mode="complete")
    return np.sum(np.abs(r) ** 3)


def pinv_energy(a):
    return np.sum(np.linalg.pinv(a) ** 2)


def least_squares_fit(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(x ** 2) + np.sum(residuals)


def hermitian_svd(a):
    return np.sum(np.linalg.svd(a, hermitian=True)[1])


def pinv_with_rtol(a):
    return np.sum(np.linalg.pinv(a, rtol=1e-8))


THROUGH_COMPILER = [
    (inverse_energy, [(3, 3)]), (log_determinant, [(3, 3)]), (determinant_squared, [(2, 3, 3)]),
    (cubed_inverse, [(3, 3)]), (spd_cholesky, [(3, 3)]), (spd_cholesky_upper_log_det, [(3, 3)]),
    (eigenvector_squares, [(3, 3)]), (pinv_energy, [(4, 3)]), (nuclear_norm, [(4, 3)]),
    (singular_vector_squares, [(4, 3)]), (full_svd_values_only, [(4, 3)]), (qr_squares, [(4, 3)]),
    (complete_qr_r_only, [(4, 3)]),
]


@pytest.mark.parametrize("fn, shapes", THROUGH_COMPILER, ids=[fn.__name__ for fn, _ in THROUGH_COMPILER])
def test_user_functions_through_compiler(rng, fn, shapes):
    check_grad(fn, *(separated_rectangular(rng, s) + np.eye(*s[-2:]) for s in shapes))


@pytest.mark.parametrize("fn", [eigenvalue_energy, eigenvalues_by_attribute, eigvalsh_upper])
def test_eigenvalues_through_compiler_by_unpacking_and_attribute(rng, fn):
    check_grad(fn, separated_symmetric(rng, (3, 3)))


@pytest.mark.parametrize("fn, b_shape", [(solve_vector, (3,)), (solve_matrix, (2, 3, 2))])
def test_solve_through_compiler(rng, fn, b_shape):
    check_grad(fn, invertible(rng, (3, 3)), rng.normal(size=b_shape))


@pytest.mark.parametrize("b_shape", [(4,), (4, 2)])
def test_lstsq_through_compiler(rng, b_shape):
    check_grad(least_squares_fit, separated_rectangular(rng, (4, 3)), rng.normal(size=b_shape))


@pytest.mark.parametrize("rotated", [False, True])
def test_repeated_eigenvalues_have_a_finite_eigenvalue_gradient(rng, rotated):
    q = orthogonal(rng, (3, 3)) if rotated else np.eye(3)
    a = (q * np.array([1.0, 1.0, 2.0])) @ q.T
    check_grad(eigenvalue_energy, a)
    # sum(w ** 2) = trace(a @ a), of the matrix NumPy reads from the lower triangle.
    expected = np.where(np.tri(3, k=-1, dtype=bool), 4 * a, np.where(np.eye(3, dtype=bool), 2 * a, 0))
    np.testing.assert_allclose(adjoint.grad(eigenvalue_energy)(a), expected, atol=1e-12)


def test_repeated_singular_values_have_a_finite_singular_value_gradient():
    a = np.vstack([np.eye(3), np.zeros((1, 3))])
    np.testing.assert_allclose(adjoint.grad(full_svd_values_only)(a), 2 * a, atol=1e-12)


def test_complete_factor_vectors_beyond_the_rank_are_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="full_matrices=False"):
        adjoint.grad(full_svd_vectors)(separated_rectangular(rng, (4, 3)))


@pytest.mark.parametrize("fn, keyword", [(hermitian_svd, "hermitian="), (pinv_with_rtol, "rtol=")])
def test_keywords_out_of_scope_are_refused(rng, fn, keyword):
    with pytest.raises(adjoint.AdjointError, match=keyword):
        adjoint.grad(fn)(separated_symmetric(rng, (3, 3)))


@pytest.mark.parametrize("fn", [inverse_energy, log_determinant, spd_cholesky, eigenvector_squares, qr_squares])
def test_float32_gradients_stay_float32(rng, fn):
    a = (separated_rectangular(rng, (3, 3)) + np.eye(3)).astype(np.float32)
    assert adjoint.grad(fn)(a).dtype == np.float32
