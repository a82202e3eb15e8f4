"""Rules of np.linalg.eig and np.linalg.eigvals: general (non-symmetric) eigendecompositions.

Matrices are drawn as `p @ diag(w) @ inv(p)` with well-separated eigenvalues `w` and a
well-conditioned `p`, so finite differences are accurate. NumPy returns each eigenvector with
unit norm and its entry of largest modulus real, and the rule differentiates that choice, so
`check_rrule` can use random cotangents for the vectors; losses invariant to each vector's
phase are also compared with autograd, which agrees with adjoint on those only.
"""

import types

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.testing import check_grad, check_rrule

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [np.linalg.eig, np.linalg.eigvals]

SHAPES = [(3, 3), (2, 3, 3), (2, 1, 3, 3)]
EIGENVALUES = {  # per kind of matrix, for n = 3
    "real": np.array([1.0, -2.0, 3.5]),
    "real with a complex pair": np.array([1.0 + 2.0j, 1.0 - 2.0j, -2.5]),
    "complex": np.array([1.0 + 1.0j, -1.5 + 0.0j, 2.0 - 2.0j]),
}
DTYPES = {"real": [np.float32, np.float64], "real with a complex pair": [np.float32, np.float64],
          "complex": [np.complex64, np.complex128]}
CASES = [(kind, shape, dtype) for kind in EIGENVALUES for shape in SHAPES for dtype in DTYPES[kind]]


def _t(x):
    return np.swapaxes(x, -1, -2)


def with_eigenvalues(rng, kind, shape, dtype=np.float64):
    """A matrix (stack) `p @ diag(w) @ inv(p)` with the eigenvalues of `kind`; real for the real
    kinds (a complex pair enters as the real block [[re, im], [-im, re]])."""
    w = EIGENVALUES[kind]
    if kind == "real with a complex pair":
        core = np.array([[w[0].real, w[0].imag, 0.0], [-w[0].imag, w[0].real, 0.0], [0.0, 0.0, w[2].real]])
    else:
        core = np.diag(w)
    p = np.eye(3) + 0.3 * rng.normal(size=shape)
    if kind == "complex":
        p = p + 0.3j * rng.normal(size=shape)
    return (p @ core @ np.linalg.inv(p)).astype(dtype)


@pytest.mark.parametrize("primitive", RRULE_PRIMITIVES)
@pytest.mark.parametrize("kind, shape, dtype", CASES)
def test_eig_rules_for_real_and_complex_stacks(rng, primitive, kind, shape, dtype):
    check_rrule(primitive, with_eigenvalues(rng, kind, shape, dtype))


# At a random matrix, which sign or phase LAPACK gives an eigenvector may flip between `a + eps u`
# and `a - eps u` (it differs between NumPy's builds), so only what does not depend on it is checked.
@pytest.mark.parametrize("seed", range(5))
def test_eig_rule_at_random_matrices(seed):
    rng = np.random.default_rng(seed)
    for a in (rng.normal(size=(4, 4)), rng.normal(size=(4, 4)) + 1j * rng.normal(size=(4, 4))):
        check_rrule(np.linalg.eigvals, a)
        check_grad(weighted_vector_moduli, a[:3, :3])
        check_grad(vector_ratio, a[:3, :3])


def test_integer_matrices_get_no_cotangent():
    check_rrule(np.linalg.eig, np.array([[2, 1], [0, 1]]))
    check_rrule(np.linalg.eigvals, np.array([[2, 1], [0, 1]]))


def test_eigenvalue_gradient_is_the_outer_product_of_left_and_right_eigenvectors():
    # For a triangular matrix the eigenvalue a[0, 0] moves with the left eigenvector y = (1, 1)
    # (y a = 2 y) and the right one x = (1, 0), normalized so that y x = 1: a_bar = y x.T.
    a = np.array([[2.0, 1.0], [0.0, 1.0]])
    w, back = registry.lookup(np.linalg.eigvals).rrule(a)
    (a_bar,) = back(np.where(w == 2.0, 1.0, 0.0))
    np.testing.assert_allclose(a_bar, [[1.0, 0.0], [1.0, 0.0]], atol=1e-12)


# ---- through the compiler, and against autograd ----------------------------------------------

def eigenvalue_real_parts(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.real(w) ** 2)


def eigenvalue_moduli(a):
    return np.sum(np.abs(np.linalg.eigvals(a)) ** 3)


def weighted_vector_moduli(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(v) ** 2 * np.arange(1.0, 4.0)[:, None] * np.arange(3.0))


def vector_ratio(a):
    w, v = np.linalg.eig(a)
    return np.abs(v[0, 0] / v[1, 0])


def vectors_by_attribute(a):
    result = np.linalg.eig(a)
    return np.sum(np.abs(result.eigenvectors[0]) + np.imag(result.eigenvalues) ** 2)


def vector_real_parts(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.real(v) * np.arange(3.0))  # depends on NumPy's choice of phase


PHASE_INVARIANT = [eigenvalue_real_parts, eigenvalue_moduli, weighted_vector_moduli, vector_ratio]


def under_autograd(fn):
    """`fn` with `np` bound to autograd.numpy (skipped where autograd is not installed)."""
    anp = pytest.importorskip("autograd.numpy")
    return types.FunctionType(fn.__code__, {**fn.__globals__, "np": anp}, fn.__name__)


@pytest.mark.parametrize("fn", PHASE_INVARIANT, ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("kind", list(EIGENVALUES))
def test_phase_invariant_losses_through_compiler(rng, fn, kind):
    check_grad(fn, with_eigenvalues(rng, kind, (3, 3), np.complex128 if kind == "complex" else np.float64))


@pytest.mark.parametrize("fn", [f for f in PHASE_INVARIANT if f is not eigenvalue_moduli],  # autograd: no eigvals
                         ids=lambda fn: fn.__name__)
@pytest.mark.parametrize("kind", list(EIGENVALUES))
def test_phase_invariant_losses_agree_with_autograd(rng, fn, kind):
    autograd_fn = under_autograd(fn)
    import autograd

    a = with_eigenvalues(rng, kind, (3, 3), np.complex128 if kind == "complex" else np.float64)
    np.testing.assert_allclose(adjoint.grad(fn)(a), autograd.grad(autograd_fn)(a), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", [vectors_by_attribute, vector_real_parts])
@pytest.mark.parametrize("kind", list(EIGENVALUES))
def test_result_attributes_and_numpys_phase_through_compiler(rng, fn, kind):
    check_grad(fn, with_eigenvalues(rng, kind, (3, 3), np.complex128 if kind == "complex" else np.float64))


@pytest.mark.parametrize("fn", [eigenvalue_moduli, weighted_vector_moduli])
def test_float32_gradients_stay_float32(rng, fn):
    a = with_eigenvalues(rng, "real with a complex pair", (3, 3), np.float32)
    assert adjoint.grad(fn)(a).dtype == np.float32
