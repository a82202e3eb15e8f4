"""The running sums and products of adjoint/rules/reductions.py (cumsum, cumprod, their NaN-
ignoring kin, NumPy 2.1's cumulative_sum and cumulative_prod), checked directly (check_rrule)
over the grid of sampling.py and through the compiler (check_grad)."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, check_each, sample
from test_reductions import grid_of, name, with_nan

SCANS = [np.cumsum, np.ndarray.cumsum, np.cumprod, np.ndarray.cumprod, np.nancumsum, np.nancumprod]
ARRAY_API_SCANS = [np.cumulative_sum, np.cumulative_prod] if hasattr(np, "cumulative_sum") else []

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = SCANS + ARRAY_API_SCANS


def scan_axes(ndim):
    """`axis=None` (the flattened array), each axis, and -1."""
    return [None, *range(ndim), *[-1] * (ndim > 0)]


@pytest.mark.parametrize("primitive, shape, dtype", grid_of(SCANS))
def test_scan_rule_matches_finite_differences(rng, primitive, shape, dtype):
    check_each(primitive, sample(rng, "real", shape, dtype), [dict(axis=axis) for axis in scan_axes(len(shape))])


@pytest.mark.parametrize("primitive", [np.cumsum, np.cumprod, np.nancumsum, np.nancumprod], ids=name)
def test_scan_of_a_python_float(rng, primitive):
    check_rrule(primitive, sample(rng, "real", None))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("shape, axis", [((3,), None), ((3,), 0), ((2, 3), 1), ((2, 3), -2), ((1, 3), 0)])
@pytest.mark.parametrize("primitive", ARRAY_API_SCANS, ids=name)
def test_array_api_scan_rule(rng, primitive, shape, axis, include_initial, dtype):
    check_rrule(primitive, sample(rng, "real", shape, dtype), axis=axis, include_initial=include_initial)


@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("primitive", SCANS, ids=name)
def test_dtype_keyword_changes_the_value_not_the_cotangent_dtype(rng, primitive, axis):
    # float32 in, float64 out: the cotangent is float32 (check_rrule checks the dtype).
    check_rrule(primitive, sample(rng, "real", (2, 3), np.float32), axis=axis, dtype=np.float64)


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("primitive", [np.cumsum, np.cumprod], ids=name)
def test_scan_rule_on_complex_inputs(rng, primitive, dtype, axis):
    check_rrule(primitive, sample(rng, "complex", (2, 3), dtype), axis=axis)


@pytest.mark.parametrize("primitive", [np.cumsum, np.cumprod], ids=name)
def test_positional_axis_and_list_operands(rng, primitive):
    check_rrule(primitive, rng.normal(size=(2, 3)), 1)
    check_rrule(primitive, [rng.normal(size=3), rng.normal(size=3)], axis=0)


def test_cumsum_keeps_float32_and_integers_get_none():
    _, back = lookup(np.cumsum).rrule(np.ones((2, 3), dtype=np.float32), axis=0)
    assert back(np.ones((2, 3)))[0].dtype == np.float32
    _, back = lookup(np.cumsum).rrule(np.arange(6).reshape(2, 3), axis=0)
    assert back(np.ones((2, 3)))[0] is None


# ---- cumprod where entries are zero: exact, no division ------------------------------------------------

def brute_force_cumprod_bar(g, x):
    """`J^T g` for `y = cumprod(x)` of a vector, from `dy_k/dx_i = prod of x_j, j <= k, j != i`."""
    n = len(x)
    return np.array([
        sum(g[k] * np.prod([x[j] for j in range(k + 1) if j != i]) for k in range(i, n)) for i in range(n)
    ])


@pytest.mark.parametrize("x", [
    [2.0, 0.0, 3.0, -1.5, 0.5], [0.0, 0.0, 2.0, 3.0], [1.5, -2.0, 0.5, 0.0], [0.0], [3.0, 2.0, 1.0, 0.0, 0.0, 4.0, 0.5],
])
def test_cumprod_is_exact_where_entries_are_zero(rng, x):
    x = np.array(x)
    g = rng.normal(size=x.shape)
    _, back = lookup(np.cumprod).rrule(x)
    (x_bar,) = back(g)
    np.testing.assert_allclose(x_bar, brute_force_cumprod_bar(g, x), rtol=1e-12, atol=1e-12)
    check_rrule(np.cumprod, x)


def test_cumprod_of_a_long_axis(rng):
    # 37 entries: the doubling scan's steps do not divide the length evenly.
    x = rng.uniform(0.8, 1.2, size=(2, 37))
    x[1, 20] = 0.0
    check_rrule(np.cumprod, x, axis=1)
    _, back = lookup(np.cumprod).rrule(x[1])
    g = rng.normal(size=37)
    np.testing.assert_allclose(back(g)[0], brute_force_cumprod_bar(g, x[1]), rtol=1e-10)


# ---- NaN entries: 0 in the running sum, 1 in the running product, and no gradient ------------------------

@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("primitive", [np.nancumsum, np.nancumprod], ids=name)
def test_nan_scan_with_nan_entries(rng, primitive, axis):
    check_rrule(primitive, with_nan(rng, (2, 3)), axis=axis)
    _, back = lookup(primitive).rrule(with_nan(rng, (2, 3)), axis=axis)
    (x_bar,) = back(np.ones(6 if axis is None else (2, 3)))
    assert x_bar[0, 1] == 0 and np.isfinite(x_bar).all()


# ---- through the compiler -------------------------------------------------------------------------------

def running_sums(x):
    return np.sum(np.cumsum(x, axis=1) ** 2) + np.sum(np.cumsum(x) * np.arange(6.0))


def running_sums_by_method(x):
    return np.sum(x.cumsum(axis=0) * x) + np.sum(x.cumsum(1) ** 2) + np.sum(x.cumsum(dtype=np.float64))


def running_products(x):
    return np.sum(np.cumprod(x, axis=0) * x) + np.sum(np.cumprod(x) ** 2)


def running_products_by_method(x):
    return np.sum(x.cumprod(axis=1) ** 2) + np.sum(x.cumprod())


def nan_ignoring_scans(x):
    return np.sum(np.nancumsum(x, axis=1) ** 2) + np.sum(np.nancumprod(x))


def array_api_scans(x):
    return np.sum(np.cumulative_sum(x, axis=1, include_initial=True) ** 2) + np.sum(np.cumulative_prod(x, axis=0))


COMPILED = [running_sums, running_sums_by_method, running_products, running_products_by_method, nan_ignoring_scans]
COMPILED += [array_api_scans] if ARRAY_API_SCANS else []


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", COMPILED, ids=lambda fn: fn.__name__)
def test_scans_through_the_compiler(rng, fn, dtype):
    check_grad(fn, sample(rng, "real", (2, 3), dtype))


def test_nan_ignoring_scans_through_the_compiler(rng):
    x = with_nan(rng, (2, 3))
    assert adjoint.grad(nan_ignoring_scans)(x)[0, 1] == 0
    check_grad(nan_ignoring_scans, x)
