"""Rules of adjoint/rules/reductions.py (sum, mean, max, min), checked directly and through the compiler."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

REDUCTIONS = [
    pytest.param(np.sum, id="np.sum"),
    pytest.param(np.mean, id="np.mean"),
    pytest.param(np.max, id="np.max"),
    pytest.param(np.amax, id="np.amax"),
    pytest.param(np.min, id="np.min"),
    pytest.param(np.amin, id="np.amin"),
]

# (shape, axis, keepdims, dtype)
AXES = [
    pytest.param((2, 3), axis, keepdims, np.float64, id=f"(2,3)-axis={axis}-keepdims={keepdims}")
    for axis in (None, 0, 1, -1, (0, 1))
    for keepdims in (False, True)
] + [
    pytest.param((4,), axis, keepdims, np.float64, id=f"(4,)-axis={axis}-keepdims={keepdims}")
    for axis in (None, 0, -1)
    for keepdims in (False, True)
] + [
    pytest.param((2, 3), None, False, np.float32, id="(2,3)-axis=None-float32"),
    pytest.param((2, 3), 1, True, np.float32, id="(2,3)-axis=1-keepdims=True-float32"),
]

# Products and moments: prod (exact where entries are zero), var and std (with ddof).
MOMENTS = [pytest.param(np.prod, id="np.prod"), pytest.param(np.var, id="np.var"), pytest.param(np.std, id="np.std")]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case.values[0] for case in REDUCTIONS + MOMENTS]


def call_sum(x, axis=None, keepdims=False):
    return np.sum(x, axis=axis, keepdims=keepdims)


def call_mean(x, axis=None, keepdims=False):
    return np.mean(x, axis=axis, keepdims=keepdims)


def call_max(x, axis=None, keepdims=False):
    return np.max(x, axis=axis, keepdims=keepdims)


def call_amax(x, axis=None, keepdims=False):
    return np.amax(x, axis=axis, keepdims=keepdims)


def call_min(x, axis=None, keepdims=False):
    return np.min(x, axis=axis, keepdims=keepdims)


def call_amin(x, axis=None, keepdims=False):
    return np.amin(x, axis=axis, keepdims=keepdims)


CALLERS = {np.sum: call_sum, np.mean: call_mean, np.max: call_max, np.amax: call_amax, np.min: call_min, np.amin: call_amin}


# ---- functions with literal keyword arguments ----------------------------------------------------

def sum_of_squared_row_sums(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) ** 2)


def mean_of_column_means_cubed(x):
    return np.sum(np.mean(x, axis=0) ** 3)


def weighted_row_max(x):
    return np.sum(np.max(x, axis=-1) * np.array([1.0, -2.0]))


def centered_by_column_min(x):
    return np.sum((x - np.amin(x, axis=0, keepdims=True)) ** 2)


def log_sum_exp(x):
    m = np.amax(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)


def mean_over_both_axes(x):
    return np.mean(np.sin(x), axis=(0, 1))


LITERAL_KEYWORD_FUNCTIONS = [
    sum_of_squared_row_sums, mean_of_column_means_cubed, weighted_row_max,
    centered_by_column_min, log_sum_exp, mean_over_both_axes,
]


def row_max(x):
    return np.max(x, axis=1)


def total_max(x):
    return np.max(x)


def column_min_keepdims(x):
    return np.min(x, axis=0, keepdims=True)


# ---- tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis, keepdims, dtype", AXES)
@pytest.mark.parametrize("primitive", REDUCTIONS)
def test_reduction_rule_matches_finite_differences(rng, primitive, shape, axis, keepdims, dtype):
    x = rng.normal(size=shape).astype(dtype)
    check_rrule(primitive, x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("shape, axis, keepdims, dtype", AXES)
@pytest.mark.parametrize("primitive", REDUCTIONS)
def test_reduction_through_compiler_matches_finite_differences(rng, primitive, shape, axis, keepdims, dtype):
    x = rng.normal(size=shape).astype(dtype)
    check_grad(CALLERS[primitive], x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("fn", LITERAL_KEYWORD_FUNCTIONS, ids=lambda fn: fn.__name__)
def test_reduction_with_literal_keywords_matches_finite_differences(rng, fn):
    check_grad(fn, rng.normal(size=(2, 3)))


def test_sum_with_dtype_keyword_returns_cotangent_in_input_dtype(rng):
    check_rrule(np.sum, rng.normal(size=(2, 3)).astype(np.float32), axis=0, dtype=np.float64)


@pytest.mark.parametrize("primitive", [np.sum, np.mean, np.max, np.min], ids=lambda p: f"np.{p.__name__}")
def test_reduction_rule_with_positional_axis_matches_finite_differences(rng, primitive):
    # The axis is a positional argument here: it gets no cotangent (None, or left out).
    check_rrule(primitive, rng.normal(size=(2, 3)), 1)


def test_reduction_with_positional_axis_through_compiler(rng):
    def sum_rows_squared(x):
        return np.sum(np.sum(x, 1) ** 2)

    check_grad(sum_rows_squared, rng.normal(size=(2, 3)))


# ---- ties: the cotangent is shared equally between the chosen entries ----------------------------

def test_max_shares_cotangent_between_ties():
    _, back = adjoint.pullback(total_max, np.array([1.0, 3.0, 3.0, 2.0]))
    (x_bar,) = back(np.float64(4.0))
    np.testing.assert_allclose(x_bar, [0.0, 2.0, 2.0, 0.0])


def test_max_over_axis_shares_cotangent_between_ties_per_row():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    _, back = adjoint.pullback(row_max, x)
    (x_bar,) = back(np.array([6.0, 9.0]))
    np.testing.assert_allclose(x_bar, [[0.0, 3.0, 3.0], [3.0, 3.0, 3.0]])


def test_min_with_keepdims_shares_cotangent_between_ties_per_column():
    x = np.array([[0.0, 5.0, -1.0], [0.0, 4.0, 2.0]])
    _, back = adjoint.pullback(column_min_keepdims, x)
    (x_bar,) = back(np.array([[2.0, 3.0, 5.0]]))
    np.testing.assert_allclose(x_bar, [[1.0, 0.0, 5.0], [1.0, 3.0, 0.0]])


def test_max_rule_shares_cotangent_between_ties():
    _, back = lookup(np.amax).rrule(np.array([[2.0, 2.0], [1.0, 0.0]]), axis=None)
    (x_bar,) = back(1.0)
    np.testing.assert_allclose(x_bar, [[0.5, 0.5], [0.0, 0.0]])


# ---- prod, var and std --------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis, keepdims, dtype", AXES)
@pytest.mark.parametrize("primitive", MOMENTS)
def test_moment_rule_matches_finite_differences(rng, primitive, shape, axis, keepdims, dtype):
    check_rrule(primitive, rng.normal(size=shape).astype(dtype), axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("primitive", [np.var, np.std], ids=["np.var", "np.std"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_and_std_with_ddof_match_finite_differences(rng, primitive, axis):
    check_rrule(primitive, rng.normal(size=(3, 4)), axis=axis, ddof=1)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_rule_is_exact_where_entries_are_zero(axis):
    # One zero in a row: only that entry has a nonzero derivative; two zeros: none has.
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 0.5]])
    check_rrule(np.prod, x, axis=axis)
    _, back = lookup(np.prod).rrule(x, axis=1)
    (x_bar,) = back(np.ones(3))
    np.testing.assert_array_equal(x_bar, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.75, -3.0]])


def test_var_positional_ddof_is_refused_rather_than_misread(rng):
    # NumPy's fourth positional parameter is `out`: the rule takes `ddof` only by keyword.
    with pytest.raises(TypeError):
        lookup(np.var).rrule(rng.normal(size=3), 0, None, None)
