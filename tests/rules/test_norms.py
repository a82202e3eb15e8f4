"""The rule of `np.linalg.norm` (adjoint/rules/norms.py): vector and matrix norms of every `ord`,
over `axis` and `keepdims`, real and complex, checked directly (check_rrule) and through the
compiler (check_grad)."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, check_each, sample

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [np.linalg.norm]

VECTOR_ORDS = [None, 2, 1, np.inf, -np.inf, 0, 3, 1.5, 0.5, -1, -2.5]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]

# (shape, axis, keepdims) taking vector norms: a vector, or one axis of an array.
VECTOR_AXES = [((3,), None, False), ((3,), 0, True), ((2, 3), 1, False), ((2, 3), 0, True), ((2, 3, 2), -1, False)]
# (shape, axis, keepdims) taking matrix norms: a matrix, or a pair of axes, in either order.
MATRIX_AXES = [
    ((2, 3), None, False), ((3, 2), None, False), ((2, 3), (1, 0), True), ((2, 3, 4), (0, 1), False),
    ((2, 3, 4), (2, 0), True), ((2, 3, 4), (-1, -2), False),
]


def ids(values):
    return [str(v) for v in values]


# Away from 0 and from ties: `nonzero` entries are in +-(0.5, 2), and random.
@pytest.mark.parametrize("domain", ["nonzero", "complex"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis, keepdims", VECTOR_AXES)
def test_vector_norms(rng, shape, axis, keepdims, dtype, domain):
    x = sample(rng, domain, shape, dtype)
    check_each(np.linalg.norm, x, [dict(ord=o, axis=axis, keepdims=keepdims) for o in VECTOR_ORDS])


@pytest.mark.parametrize("domain", ["real", "complex"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis, keepdims", MATRIX_AXES)
def test_matrix_norms(rng, shape, axis, keepdims, dtype, domain):
    x = sample(rng, domain, shape, dtype)
    check_each(np.linalg.norm, x, [dict(ord=o, axis=axis, keepdims=keepdims) for o in MATRIX_ORDS])


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 3), (2, 3, 2)])
def test_default_norm_of_any_array_is_the_flattened_2_norm(rng, shape, keepdims):
    check_rrule(np.linalg.norm, rng.normal(size=shape), keepdims=keepdims)


def test_norm_of_a_python_float_and_of_a_list(rng):
    check_rrule(np.linalg.norm, -1.5)
    check_rrule(np.linalg.norm, [rng.normal(size=3), rng.normal(size=3)], ord=1, axis=1)


def test_ord_and_axis_by_position_get_no_cotangent(rng):
    check_rrule(np.linalg.norm, rng.normal(size=(2, 3)), 1, 1)
    check_rrule(np.linalg.norm, rng.normal(size=(2, 3)), "nuc")


# ---- edges -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ord, axis", [(None, None), (2, None), ("fro", None), (None, 1), (3, 1), (1, 1), (np.inf, 1)])
def test_norm_at_zero_has_zero_gradient_not_nan(ord, axis):
    x = np.zeros((2, 3)) if axis is not None or ord in (None, "fro") else np.zeros(3)
    value, back = lookup(np.linalg.norm).rrule(x, ord=ord, axis=axis)
    (x_bar,) = back(np.ones_like(value))
    np.testing.assert_array_equal(x_bar, np.zeros_like(x))


def test_2_norm_of_a_zero_row_has_zero_gradient_there():
    _, back = lookup(np.linalg.norm).rrule(np.array([[0.0, 0.0], [3.0, 4.0]]), axis=1)
    np.testing.assert_allclose(back(np.ones(2))[0], [[0.0, 0.0], [0.6, 0.8]])


def test_ord_0_counts_entries_and_has_zero_gradient(rng):
    x = rng.normal(size=4)
    check_rrule(np.linalg.norm, x, ord=0)
    np.testing.assert_array_equal(lookup(np.linalg.norm).rrule(x, ord=0)[1](1.0)[0], np.zeros(4))


def test_inf_norm_shares_the_cotangent_between_ties():
    _, back = lookup(np.linalg.norm).rrule(np.array([3.0, -3.0, 1.0]), ord=np.inf)
    np.testing.assert_allclose(back(1.0)[0], [0.5, -0.5, 0.0])


def test_matrix_1_norm_shares_the_cotangent_between_tied_columns():
    # Column sums of |x|: 3, 3, 1: the two first columns share.
    _, back = lookup(np.linalg.norm).rrule(np.array([[1.0, -2.0, 0.5], [-2.0, 1.0, 0.5]]), ord=1)
    np.testing.assert_allclose(back(2.0)[0], [[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0]])


def test_nuclear_norm_cotangent_is_u_vh():
    x = np.diag([3.0, -2.0])
    _, back = lookup(np.linalg.norm).rrule(x, ord="nuc")
    np.testing.assert_allclose(back(1.0)[0], [[1.0, 0.0], [0.0, -1.0]], atol=1e-12)


def test_norm_keeps_float32_and_integers_get_none():
    _, back = lookup(np.linalg.norm).rrule(np.ones((2, 3), dtype=np.float32), ord="nuc")
    assert back(np.float64(1.0))[0].dtype == np.float32
    check_rrule(np.linalg.norm, np.arange(6).reshape(2, 3), axis=1)


# ---- through the compiler ---------------------------------------------------------------------------

def norms_of_rows_and_columns(x):
    return np.linalg.norm(x) + np.linalg.norm(x, ord=1, axis=1).sum() + np.linalg.norm(x, axis=0).sum()


def matrix_norms(x):
    return np.linalg.norm(x, "nuc") + np.linalg.norm(x, ord=2) + np.linalg.norm(x, ord=np.inf) + np.linalg.norm(x, "fro")


def keepdims_normalised_rows(x):
    return np.sum((x / np.linalg.norm(x, axis=1, keepdims=True)) * np.arange(6.0).reshape(2, 3))


def p_norms(x):
    return np.linalg.norm(x[0], 3) + np.linalg.norm(x[1], ord=-np.inf) + np.linalg.norm(x, ord=0.5, axis=0).sum()


def norm_of_a_stack(x):
    return np.sum(np.linalg.norm(np.stack([x, 2 * x]), ord=-2, axis=(1, 2)) ** 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [norms_of_rows_and_columns, matrix_norms, keepdims_normalised_rows, p_norms, norm_of_a_stack],
                         ids=lambda fn: fn.__name__)
def test_norms_through_the_compiler(rng, fn, dtype):
    check_grad(fn, sample(rng, "nonzero", (2, 3), dtype))


def euclidean_distance(x):
    return np.linalg.norm(x)


def test_gradient_of_the_2_norm_at_zero_through_the_compiler():
    np.testing.assert_array_equal(adjoint.grad(euclidean_distance)(np.zeros(3)), np.zeros(3))
