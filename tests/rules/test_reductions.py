"""Rules of adjoint/rules/reductions.py (sums, means, extremes, products, moments, averages, and
their NaN-ignoring kin), checked directly (check_rrule) over the grid of sampling.py and through
the compiler (check_grad). The scans (cumsum, cumprod) are checked in test_scans.py."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import ARRAY_SHAPES, DTYPES, axis_variants, check_each, sample

# (primitive, domain): reductions called as `primitive(a, axis=..., keepdims=...)`. Extremes draw
# well-separated values, so no ties blur the finite differences.
REDUCTIONS = [
    (np.sum, "real"), (np.ndarray.sum, "real"), (np.mean, "real"), (np.ndarray.mean, "real"),
    (np.nansum, "real"), (np.nanmean, "real"),
    (np.max, "distinct"), (np.amax, "distinct"), (np.ndarray.max, "distinct"),
    (np.min, "distinct"), (np.amin, "distinct"), (np.ndarray.min, "distinct"),
    (np.nanmax, "distinct"), (np.nanmin, "distinct"), (np.ptp, "distinct"),
    (np.prod, "real"), (np.ndarray.prod, "real"), (np.nanprod, "real"),
    (np.var, "real"), (np.ndarray.var, "real"), (np.std, "real"), (np.ndarray.std, "real"),
    (np.nanvar, "real"), (np.nanstd, "real"),
]
MOMENTS = [np.var, np.ndarray.var, np.std, np.ndarray.std, np.nanvar, np.nanstd]
WITH_DTYPE = [
    np.sum, np.ndarray.sum, np.mean, np.ndarray.mean, np.nansum, np.nanmean, np.prod, np.ndarray.prod,
    np.nanprod, np.var, np.std, np.nanvar, np.nanstd,
]
NAN_REDUCTIONS = [np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [p for p, _ in REDUCTIONS] + [np.average]


def is_method(primitive):
    return primitive.__qualname__.startswith("ndarray.")


def name(primitive):
    return f"{'x' if is_method(primitive) else 'np'}.{primitive.__name__}"


def is_alias(primitive):
    return is_method(primitive) or primitive in (np.amax, np.amin)


# Array methods, and np.amax and np.amin, share their function's rule: they run the (2, 3) cases.
def grid_of(primitives):
    return [
        pytest.param(primitive, shape, dtype, id=f"{name(primitive)}-{shape}-{dtype.__name__}")
        for primitive in primitives for shape in ARRAY_SHAPES for dtype in DTYPES
        if not (is_alias(primitive) and shape != (2, 3))
    ]


def with_nan(rng, shape, domain="real"):
    """An array with a NaN at flat index 1, where no slice of `axis_variants` is all NaN."""
    x = sample(rng, domain, shape)
    x.flat[1] = np.nan
    return x


# ---- every reduction over the grid ----------------------------------------------------------------

@pytest.mark.parametrize("primitive, shape, dtype", grid_of([p for p, _ in REDUCTIONS]))
def test_reduction_rule_matches_finite_differences(rng, primitive, shape, dtype):
    x = sample(rng, dict(REDUCTIONS)[primitive], shape, dtype)
    check_each(primitive, x, [dict(axis=axis, keepdims=keepdims) for axis, keepdims in axis_variants(len(shape))])


@pytest.mark.parametrize("primitive, domain", [r for r in REDUCTIONS if not is_method(r[0])],
                         ids=[name(p) for p, _ in REDUCTIONS if not is_method(p)])
def test_reduction_of_a_python_float(rng, primitive, domain):
    check_rrule(primitive, sample(rng, domain, None))


@pytest.mark.parametrize("axis, keepdims", axis_variants(2))
@pytest.mark.parametrize("ddof", [1, 2])
@pytest.mark.parametrize("primitive", MOMENTS, ids=name)
def test_moment_rule_with_ddof(rng, primitive, ddof, axis, keepdims):
    check_rrule(primitive, rng.normal(size=(3, 4)), axis=axis, ddof=ddof, keepdims=keepdims)


@pytest.mark.parametrize("axis", [None, 0, (0, 1)])
@pytest.mark.parametrize("primitive", WITH_DTYPE, ids=name)
def test_dtype_keyword_changes_the_value_not_the_cotangent_dtype(rng, primitive, axis):
    # float32 in, float64 out: the cotangent is float32 (check_rrule checks the dtype).
    check_rrule(primitive, sample(rng, "positive", (2, 3), np.float32), axis=axis, dtype=np.float64)


@pytest.mark.parametrize("primitive", [np.sum, np.mean, np.max, np.min, np.prod, np.nansum, np.ptp], ids=name)
def test_positional_axis_gets_no_cotangent(rng, primitive):
    check_rrule(primitive, sample(rng, "distinct", (2, 3)), 1)


@pytest.mark.parametrize("primitive", [np.sum, np.mean, np.prod, np.var, np.std], ids=name)
@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_holomorphic_and_moment_rules_on_complex_inputs(rng, primitive, axis, dtype):
    check_rrule(primitive, sample(rng, "complex", (2, 3), dtype), axis=axis)


@pytest.mark.parametrize("primitive", [np.var, np.std, np.nanmean, np.nanvar, np.nanstd, np.prod, np.ptp], ids=name)
def test_integer_input_gets_no_cotangent(primitive):
    check_rrule(primitive, np.arange(6).reshape(2, 3), axis=0)


# ---- the NaN-ignoring functions -----------------------------------------------------------------------

@pytest.mark.parametrize("axis, keepdims", axis_variants(2))
@pytest.mark.parametrize("shape", [(2, 3), (3, 2)])
@pytest.mark.parametrize("primitive", NAN_REDUCTIONS, ids=name)
def test_nan_reduction_with_nan_entries(rng, primitive, shape, axis, keepdims):
    check_rrule(primitive, with_nan(rng, shape, "distinct"), axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("primitive", NAN_REDUCTIONS, ids=name)
def test_nan_entries_get_zero_and_the_rest_finite_cotangents(rng, primitive):
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, -1.5]])
    value, back = lookup(primitive).rrule(x, axis=1)
    (x_bar,) = back(np.ones_like(value))
    assert x_bar[0, 1] == 0 and x_bar[1, 0] == 0
    assert np.all(np.isfinite(x_bar))


def test_nanmean_spreads_over_the_entries_that_are_not_nan():
    _, back = lookup(np.nanmean).rrule(np.array([[1.0, np.nan, 3.0], [2.0, 4.0, 6.0]]), axis=1)
    np.testing.assert_allclose(back(np.array([2.0, 3.0]))[0], [[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])


# ---- ties and edges --------------------------------------------------------------------------------------

def total_max(x):
    return np.max(x)


def row_max(x):
    return np.max(x, axis=1)


def column_min_keepdims(x):
    return np.min(x, axis=0, keepdims=True)


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


def test_ptp_shares_between_ties_and_gives_a_constant_slice_zero():
    _, back = lookup(np.ptp).rrule(np.array([[3.0, -1.0, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0]]), axis=1)
    np.testing.assert_allclose(back(np.array([1.0, 1.0]))[0], [[0.5, -0.5, 0.5, -0.5], [0.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_rule_is_exact_where_entries_are_zero(axis):
    # One zero in a row: only that entry has a nonzero derivative; two zeros: none has.
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 0.5]])
    check_rrule(np.prod, x, axis=axis)
    _, back = lookup(np.prod).rrule(x, axis=1)
    (x_bar,) = back(np.ones(3))
    np.testing.assert_array_equal(x_bar, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [-1.0, 0.75, -3.0]])


@pytest.mark.parametrize("primitive", [np.std, np.nanstd], ids=name)
def test_std_of_a_constant_slice_has_zero_gradient_not_nan(primitive):
    _, back = lookup(primitive).rrule(np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]]), axis=1)
    (x_bar,) = back(np.ones(2))
    np.testing.assert_array_equal(x_bar[0], [0.0, 0.0, 0.0])
    assert np.all(np.isfinite(x_bar))


def test_var_positional_ddof_is_refused_rather_than_misread(rng):
    # NumPy's fourth positional parameter is `out`: the rule takes `ddof` only by keyword.
    with pytest.raises(TypeError):
        lookup(np.var).rrule(rng.normal(size=3), 0, None, None)


# ---- average --------------------------------------------------------------------------------------------

def average_cases():
    """(shape, axis, weights' shape or None): weights of `a`'s shape, of the one reduced axis, or
    of the reduced axes in the order `axis` lists them."""
    cases = [((3,), None, None), ((3,), None, (3,)), ((3,), 0, (3,)), ((2, 3), None, None), ((2, 3), None, (2, 3))]
    cases += [((2, 3), axis, w) for axis in (0, 1, -1, (0, 1)) for w in (None, (2, 3))]
    cases += [((2, 3), 0, (2,)), ((2, 3), 1, (3,)), ((1, 3), 0, (1,)), ((1, 3), (0, 1), (1, 3))]
    cases += [((2, 3, 4), (2, 0), (4, 2)), ((2, 3, 4), (0, 2), (2, 4)), ((2, 3, 4), (1, 2), (3, 4))]
    return cases


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("returned", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, axis, weights", average_cases())
def test_average_rule_with_weights_by_position(rng, shape, axis, weights, dtype, returned, keepdims):
    a = sample(rng, "real", shape, dtype)
    w = None if weights is None else sample(rng, "positive", weights, dtype)
    check_rrule(np.average, a, axis, w, returned, keepdims=keepdims)


def test_average_of_a_python_float_and_a_complex_array(rng):
    check_rrule(np.average, 1.5)
    check_rrule(np.average, sample(rng, "complex", (2, 3)), 1, sample(rng, "complex", (3,)))


def test_average_with_integer_data_differentiates_the_weights_only(rng):
    check_rrule(np.average, np.arange(6).reshape(2, 3), 1, rng.uniform(0.5, 2.0, size=3), True)


# ---- lists: reduced as the array they make, one cotangent per item ---------------------------------------

@pytest.mark.parametrize("primitive", [
    np.nansum, np.nanmean, np.nanmax, np.ptp, np.nanprod, np.var, np.nanvar, np.average,
], ids=name)
def test_reduction_of_a_list_gives_each_item_its_cotangent(rng, primitive):
    check_rrule(primitive, [sample(rng, "distinct", (3,)), 2.0 + sample(rng, "distinct", (3,))], axis=0)


# ---- through the compiler -------------------------------------------------------------------------------

def sum_of_squared_row_sums(x):
    return np.sum(np.sum(x, axis=1, keepdims=True) ** 2)


def mean_of_column_means_cubed(x):
    return np.sum(np.mean(x, axis=0) ** 3)


def sum_and_mean_in_float64(x):
    return np.sum(np.sum(x, axis=0, dtype=np.float64) ** 2) + x.mean(dtype=np.float64)


def weighted_row_max(x):
    return np.sum(np.max(x, axis=-1) * np.array([1.0, -2.0]))


def centered_by_column_min(x):
    return np.sum((x - np.amin(x, axis=0, keepdims=True)) ** 2)


def log_sum_exp(x):
    m = np.amax(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)


def mean_over_both_axes(x):
    return np.mean(np.sin(x), axis=(0, 1))


def extremes_by_method(x):
    return np.sum(x.max(axis=0) * x.min(1, keepdims=True)) + x.prod()


def row_ranges(x):
    return np.sum(np.ptp(x, axis=1) ** 2) + np.ptp(x)


def row_products_with_positional_axis(x):
    return np.sum(np.prod(x, 1) ** 2)


def moments_with_ddof_and_keepdims(x):
    return np.sum(np.var(x, axis=0, ddof=1, keepdims=True) * x) + np.std(x, axis=1, ddof=1).sum()


def moments_by_method(x):
    return x.var(axis=1).sum() + x.std(ddof=1) + np.sum(x.std(0, keepdims=True) * x)

















def nan_ignoring_reductions(x):
    return (
        np.sum(np.nansum(x, axis=0) ** 2) + np.nanmean(x, axis=1, keepdims=True).sum() + np.nanmax(x) - np.nanmin(x, axis=0).sum()
        + np.nanprod(x, axis=1).sum() + np.nanvar(x, axis=0).sum() + np.nanstd(x, ddof=1)
    )


def weighted_average_and_its_total(x, w):
    average, total = np.average(x, 1, w, True)
    return np.sum(average ** 2 * total)


def weighted_average_by_position(x, w):
    return np.sum(np.average(x, 0, w) ** 2) + np.average(x, None, x ** 2)


def average_with_constant_weights(x):
    return np.sum(np.average(x, axis=1, weights=np.array([1.0, 2.0, 3.0]), keepdims=True) * x) + np.average(x)


def reductions_of_a_list(x):
    parts = [np.sum(x ** 2, axis=0), np.sin(x[0]), x[1]]
    return np.sum(np.var(parts, axis=0)) + np.ptp(parts) + np.nanmax(parts)


COMPILED = [
    sum_of_squared_row_sums, mean_of_column_means_cubed, sum_and_mean_in_float64, weighted_row_max,
    centered_by_column_min, log_sum_exp, mean_over_both_axes, extremes_by_method, row_ranges,
    row_products_with_positional_axis, moments_with_ddof_and_keepdims, moments_by_method,
    nan_ignoring_reductions, average_with_constant_weights, reductions_of_a_list,
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", COMPILED, ids=lambda fn: fn.__name__)
def test_reductions_through_the_compiler(rng, fn, dtype):
    check_grad(fn, sample(rng, "distinct", (2, 3), dtype))


@pytest.mark.parametrize("fn", [weighted_average_and_its_total, weighted_average_by_position], ids=lambda fn: fn.__name__)
def test_average_weights_get_gradients_through_the_compiler(rng, fn):
    w = rng.uniform(0.5, 2.0, size=3 if fn is weighted_average_and_its_total else 2)
    check_grad(fn, rng.normal(size=(2, 3)), w)


def test_nan_ignoring_reductions_through_the_compiler(rng):
    x = with_nan(rng, (2, 3), "distinct")
    x_bar = adjoint.grad(nan_ignoring_reductions)(x)
    assert x_bar[0, 1] == 0 and np.isfinite(x_bar).all()
    check_grad(nan_ignoring_reductions, x)


def sum_where(x):
    return np.sum(x, where=x > 0)


def max_from_initial(x):
    return np.max(x, initial=0.0)


def nanmean_where(x):
    return np.nanmean(x, where=x > 0)


@pytest.mark.parametrize("fn, keyword", [(sum_where, "where="), (max_from_initial, "initial="), (nanmean_where, "where=")])
def test_keywords_out_of_scope_are_refused(rng, fn, keyword):
    with pytest.raises(adjoint.AdjointError, match=keyword):
        adjoint.grad(fn)(rng.normal(size=(2, 3)))
