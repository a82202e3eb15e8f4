"""Rules of adjoint/rules/elementwise.py for magnitude, sign and extrema (abs, fabs, maximum,
minimum, fmax, fmin, copysign, heaviside, nextafter, ldexp), the functions with two results (modf,
frexp, divmod), selection (where, clip, nan_to_num), and the piecewise constant ufuncs that carry no
gradient, checked directly (check_rrule) and through the compiler (check_grad) over the grid of
sampling.py. Arithmetic, powers, exponentials and logarithms are test_elementwise.py's."""

import operator

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import BINARY_GRAD_GRID, BINARY_GRID, DTYPES, UNARY_GRAD_GRID, UNARY_GRID, binary_args, case_ids, sample

# ---- the functions the compiler differentiates, one per primitive --------------------------------

def call_np_abs(x):
    return np.abs(x)


def call_abs(x):
    return abs(x)


def call_operator_abs(x):
    return operator.abs(x)


def call_np_fabs(x):
    return np.fabs(x)


def call_np_maximum(a, b):
    return np.maximum(a, b)


def call_np_minimum(a, b):
    return np.minimum(a, b)


def call_np_fmax(a, b):
    return np.fmax(a, b)


def call_np_fmin(a, b):
    return np.fmin(a, b)


def call_np_copysign(a, b):
    return np.copysign(a, b)


def call_np_heaviside(a, b):
    return np.heaviside(a, b)


def call_np_nextafter(a, b):
    return np.nextafter(a, b)


def call_np_where(condition, x, y):
    return np.where(condition, x, y)


# ---- cases: (id, primitive, function calling it, domain of each input) ---------------------------
# NumPy's alias np.absolute is the same ufunc as np.abs: checked once.

MAGNITUDE = [
    ("np.abs", np.abs, call_np_abs, "nonzero"),
    ("abs", abs, call_abs, "nonzero"),
    ("operator.abs", operator.abs, call_operator_abs, "nonzero"),
    ("np.fabs", np.fabs, call_np_fabs, "nonzero"),
]

EXTREMA = [
    ("np.maximum", np.maximum, call_np_maximum, "real", "real"),
    ("np.minimum", np.minimum, call_np_minimum, "real", "real"),
    ("np.fmax", np.fmax, call_np_fmax, "real", "real"),
    ("np.fmin", np.fmin, call_np_fmin, "real", "real"),
    ("np.copysign", np.copysign, call_np_copysign, "nonzero", "nonzero"),
    ("np.heaviside", np.heaviside, call_np_heaviside, "nonzero", "real"),
    ("np.nextafter", np.nextafter, call_np_nextafter, "real", "real"),
]

# Functions with two results.
TWO_RESULTS = [np.modf, np.frexp, np.divmod, divmod]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = (
    [case[1] for case in MAGNITUDE + EXTREMA] + TWO_RESULTS
    + [np.ldexp, np.where, np.clip, np.ndarray.clip, np.nan_to_num]
)


# ---- magnitude ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", UNARY_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain", MAGNITUDE, ids=case_ids(MAGNITUDE))
def test_magnitude_rule_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_rrule(primitive, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", UNARY_GRAD_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain", MAGNITUDE, ids=case_ids(MAGNITUDE))
def test_magnitude_call_through_compiler_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_grad(fn, sample(rng, domain, shape, dtype))


# ---- extrema, sign and spacing, with broadcasting ----------------------------------------------------

@pytest.mark.parametrize("shapes, dtype", BINARY_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", EXTREMA, ids=case_ids(EXTREMA))
def test_extremum_rule_matches_finite_differences(rng, name, primitive, fn, domain_a, domain_b, shapes, dtype):
    check_rrule(primitive, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


@pytest.mark.parametrize("shapes, dtype", BINARY_GRAD_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", EXTREMA, ids=case_ids(EXTREMA))
def test_extremum_call_through_compiler_matches_finite_differences(
    rng, name, primitive, fn, domain_a, domain_b, shapes, dtype
):
    check_grad(fn, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


def test_ldexp_differentiates_the_mantissa_only(rng):
    x = sample(rng, "real", (2, 3))
    check_rrule(np.ldexp, x, np.array([[-2, 0, 3]]))
    check_rrule(np.ldexp, x.astype(np.float32), 2)
    _, back = lookup(np.ldexp).rrule(x, np.array([-1, 2, 3]))
    x_bar, exponent_bar = back(np.ones((2, 3)))
    np.testing.assert_allclose(x_bar, np.broadcast_to([0.5, 4.0, 8.0], (2, 3)))
    assert exponent_bar is None


# ---- abs, copysign, heaviside at their kinks ---------------------------------------------------------

@pytest.mark.parametrize("primitive", [np.abs, abs, np.fabs])
def test_abs_has_zero_slope_at_zero(primitive):
    _, back = lookup(primitive).rrule(np.array([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(back(np.ones(3))[0], [-1.0, 0.0, 1.0])


def test_abs_of_complex_is_conj_over_modulus(rng):
    # |z| is not holomorphic: with z_bar = dL/dx - i dL/dy, the cotangent is conj(z) / |z|.
    z = np.array([3 + 4j, -1j, 0j])
    _, back = lookup(np.abs).rrule(z)
    np.testing.assert_allclose(back(np.ones(3))[0], [(3 - 4j) / 5, 1j, 0])
    for shape, dtype in [(None, np.float64), ((2, 3), np.float64), ((3,), np.float32)]:
        check_rrule(np.abs, sample(rng, "complex", shape, dtype))
    check_grad(call_abs, sample(rng, "complex", (2, 3)))


def test_copysign_slope_follows_the_result_sign():
    a = np.array([2.0, -2.0, 2.0, -2.0, 0.0])
    b = np.array([1.0, 1.0, -0.0, 0.0, -1.0])  # a zero's sign counts
    _, back = lookup(np.copysign).rrule(a, b)
    a_bar, b_bar = back(np.ones(5))
    np.testing.assert_array_equal(a_bar, [1.0, -1.0, -1.0, -1.0, 0.0])
    np.testing.assert_array_equal(b_bar, np.zeros(5))


def test_heaviside_value_at_zero_gets_the_cotangent_where_x_is_zero():
    x = np.array([-1.0, 0.0, 2.0, 0.0])
    _, back = adjoint.pullback(call_np_heaviside, x, 0.5)
    x_bar, h0_bar = back(np.array([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(x_bar, np.zeros(4))
    assert h0_bar == 6.0


# ---- ties and NaNs of maximum, minimum, fmax and fmin ---------------------------------------------

@pytest.mark.parametrize("fn", [call_np_maximum, call_np_minimum, call_np_fmax, call_np_fmin])
def test_extremum_splits_cotangent_equally_at_ties(fn):
    a = np.array([1.0, -2.0, 3.0])
    g = np.array([2.0, 4.0, -6.0])
    _, back = adjoint.pullback(fn, a, a.copy())
    a_bar, b_bar = back(g)
    np.testing.assert_allclose(a_bar, g / 2)
    np.testing.assert_allclose(b_bar, g / 2)


def test_maximum_gives_whole_cotangent_to_larger_input_and_half_at_ties():
    a = np.array([1.0, 5.0, 0.0])
    b = np.array([1.0, 2.0, 3.0])
    g = np.array([2.0, 4.0, 8.0])
    _, back = adjoint.pullback(call_np_maximum, a, b)
    a_bar, b_bar = back(g)
    np.testing.assert_allclose(a_bar, [1.0, 4.0, 0.0])
    np.testing.assert_allclose(b_bar, [1.0, 0.0, 8.0])


def test_maximum_tie_with_broadcast_scalar_sums_halves():
    # relu-like: maximum(x, 0.0) with x containing zeros; the scalar gets half of each tie.
    x = np.array([0.0, 2.0, -1.0, 0.0])
    _, back = adjoint.pullback(call_np_maximum, x, 0.0)
    x_bar, zero_bar = back(np.ones(4))
    np.testing.assert_allclose(x_bar, [0.5, 1.0, 0.0, 0.5])
    assert zero_bar == pytest.approx(0.5 + 0.0 + 1.0 + 0.5)


@pytest.mark.parametrize("primitive", [np.fmax, np.fmin])
def test_fmax_and_fmin_give_the_cotangent_to_the_operand_that_is_not_nan(primitive):
    a = np.array([np.nan, 1.0, np.nan])
    b = np.array([2.0, np.nan, np.nan])
    _, back = lookup(primitive).rrule(a, b)
    a_bar, b_bar = back(np.ones(3))
    np.testing.assert_array_equal(a_bar, [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(b_bar, [1.0, 0.0, 0.0])


# ---- functions with two results -------------------------------------------------------------------

def fractional_parts_squared(x):
    fractional, integral = np.modf(x)
    return np.sum(fractional ** 2 + integral)


def mantissas_times_x(x):
    mantissa, exponent = np.frexp(x)
    return np.sum(mantissa * x)


def remainder_by_builtin_divmod(x, y):
    quotient, remainder = divmod(x, y)
    return np.sum(remainder ** 2 * quotient)


def remainder_by_np_divmod(x, y):
    quotient, remainder = np.divmod(x, y)
    return np.sum(remainder ** 3)


@pytest.mark.parametrize("shape, dtype", UNARY_GRID)
@pytest.mark.parametrize("primitive", [np.modf, np.frexp])
def test_two_result_unary_rule_matches_finite_differences(rng, primitive, shape, dtype):
    check_rrule(primitive, sample(rng, "nonzero", shape, dtype))


@pytest.mark.parametrize("shapes, dtype", BINARY_GRID[::3])
@pytest.mark.parametrize("primitive", [np.divmod, divmod])
def test_divmod_rule_matches_finite_differences(rng, primitive, shapes, dtype):
    check_rrule(primitive, *binary_args(rng, ("nonzero", "nonzero"), shapes, dtype))


@pytest.mark.parametrize("fn", [fractional_parts_squared, mantissas_times_x])
def test_two_result_unary_through_compiler(rng, fn):
    check_grad(fn, sample(rng, "nonzero", (2, 3)))
    check_grad(fn, sample(rng, "nonzero", (3,), np.float32))


@pytest.mark.parametrize("fn", [remainder_by_builtin_divmod, remainder_by_np_divmod])
def test_divmod_through_compiler(rng, fn):
    check_grad(fn, sample(rng, "nonzero", (2, 3)), sample(rng, "nonzero", (3,)))
    check_grad(fn, sample(rng, "nonzero", None), 0.7)


def test_modf_with_only_the_integral_part_used_has_zero_gradient():
    _, back = lookup(np.modf).rrule(np.array([1.5, -2.25]))
    np.testing.assert_array_equal(back((None, np.ones(2)))[0], [0.0, 0.0])


# ---- where --------------------------------------------------------------------------------------

# (condition shape, x shape, y shape); None is a Python float.
WHERE_SHAPES = [
    pytest.param(((2, 3), (2, 3), (2, 3)), np.float64, id="all-(2,3)"),
    pytest.param(((2, 3), (3,), None), np.float64, id="(2,3)-(3,)-float"),
    pytest.param(((3,), (2, 3), (1, 3)), np.float64, id="(3,)-(2,3)-(1,3)"),
    pytest.param(((2, 1), (1, 3), (2, 3)), np.float64, id="(2,1)-(1,3)-(2,3)"),
    pytest.param(((2, 3), (2, 3), (3,)), np.float32, id="(2,3)-(2,3)-(3,)-float32"),
]


def where_args(rng, shapes, dtype):
    condition_shape, *value_shapes = shapes
    condition = np.arange(np.prod(condition_shape)).reshape(condition_shape) % 3 != 1
    return (condition,) + tuple(sample(rng, "real", shape, dtype) for shape in value_shapes)


@pytest.mark.parametrize("shapes, dtype", WHERE_SHAPES)
def test_where_rule_matches_finite_differences(rng, shapes, dtype):
    check_rrule(np.where, *where_args(rng, shapes, dtype))


@pytest.mark.parametrize("shapes, dtype", WHERE_SHAPES)
def test_where_call_through_compiler_matches_finite_differences(rng, shapes, dtype):
    check_grad(call_np_where, *where_args(rng, shapes, dtype))


def test_where_condition_gets_no_cotangent(rng):
    condition = np.array([True, False, True])
    x, y = rng.normal(size=3), rng.normal(size=3)
    _, back = lookup(np.where).rrule(condition, x, y)
    condition_bar, x_bar, y_bar = back(np.array([1.0, 2.0, 3.0]))
    assert condition_bar is None
    np.testing.assert_allclose(x_bar, [1.0, 0.0, 3.0])
    np.testing.assert_allclose(y_bar, [0.0, 2.0, 0.0])


def test_where_condition_gets_none_through_pullback(rng):
    condition = np.array([True, False, True])
    _, back = adjoint.pullback(call_np_where, condition, rng.normal(size=3), rng.normal(size=3))
    condition_bar, x_bar, y_bar = back(np.ones(3))
    assert condition_bar is None
    np.testing.assert_allclose(x_bar + y_bar, np.ones(3))


def test_where_integer_branch_gets_no_cotangent(rng):
    check_rrule(np.where, np.array([True, False, True]), np.arange(3), rng.normal(size=3))


# ---- clip: the cotangent goes to whichever of x and its bounds the result is ------------------------

X_FOR_CLIP = np.array([[-2.0, -0.3, 0.1], [0.45, 0.9, 3.0]])

CLIP_CASES = [
    pytest.param(np.clip, (-0.5, 0.5), {}, id="float-bounds"),
    pytest.param(np.clip, (np.array([-1.0, 0.0, 0.2]), np.array([[0.4], [0.5]])), {}, id="broadcast-array-bounds"),
    pytest.param(np.clip, (None, 0.5), {}, id="no-lower-bound"),
    pytest.param(np.clip, (-0.5, None), {}, id="no-upper-bound"),
    pytest.param(np.clip, (0, 1), {}, id="integer-bounds"),
    pytest.param(np.clip, (), {"a_min": -0.5, "a_max": 0.5}, id="keyword-bounds"),
    pytest.param(np.clip, (-0.5,), {"a_max": 0.5}, id="positional-and-keyword-bounds"),
    pytest.param(np.clip, (), {"min": -0.5}, id="numpy2-min-keyword"),
    pytest.param(np.clip, (0.2, -0.5), {}, id="crossed-bounds"),
    pytest.param(np.ndarray.clip, (-0.5, 0.5), {}, id="method"),
    pytest.param(np.ndarray.clip, (-0.5,), {}, id="method-lower-bound-only"),
    pytest.param(np.ndarray.clip, (), {"max": 0.5}, id="method-max-keyword"),
]


@pytest.mark.parametrize("primitive, bounds, kwargs", CLIP_CASES)
def test_clip_rule_matches_finite_differences(primitive, bounds, kwargs):
    check_rrule(primitive, X_FOR_CLIP, *bounds, **kwargs)
    check_rrule(primitive, X_FOR_CLIP.astype(np.float32), *bounds, **kwargs)


def test_clip_gives_ties_to_x():
    _, back = lookup(np.clip).rrule(np.array([0.0, 1.0, 2.0]), 1.0, 1.5)
    x_bar, low_bar, high_bar = back(np.ones(3))
    np.testing.assert_array_equal(x_bar, [0.0, 1.0, 0.0])
    assert (low_bar, high_bar) == (1.0, 1.0)


def clip_low_then_keyword_high(x, low):
    return np.sum(np.clip(x, low, a_max=0.5) ** 2)


def test_clip_bounds_given_by_keyword_get_no_cotangent():
    # The pullback gives `a_max` a cotangent too; the call passed it by keyword, so it is dropped
    # and the positional `low` keeps its own: one entry (-2.0) is clipped to it.
    _, back = adjoint.runtime.vjp((0, 1), np.clip, X_FOR_CLIP, -0.5, a_max=0.5)
    _, low_bar = back(np.ones((2, 3)))
    assert low_bar == 1.0
    check_grad(clip_low_then_keyword_high, X_FOR_CLIP, -0.5)


def clip_then_square(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2)


def clip_with_keywords(x, high):
    return np.sum(np.clip(x, a_min=-0.5, a_max=high) ** 2)


def clip_with_keyword_only_bound(x, high):
    return np.sum(np.clip(x, max=high) ** 2)


def clip_method(x, low):
    return np.sum(x.clip(low, 0.5) * x)


def clip_method_with_keyword(x):
    return np.sum(x.clip(min=-0.5) ** 2)


@pytest.mark.parametrize("fn", [clip_then_square, clip_method_with_keyword])
def test_clip_through_compiler_matches_finite_differences(fn):
    check_grad(fn, X_FOR_CLIP)
    check_grad(fn, X_FOR_CLIP.astype(np.float32))


def test_clip_method_bound_through_compiler():
    check_grad(clip_method, X_FOR_CLIP, -0.5)


def test_clip_bound_passed_by_keyword_gets_its_gradient():
    # `a_max=` is also NumPy's third position: the compiler moves it there and differentiates it.
    check_grad(clip_with_keywords, X_FOR_CLIP, 0.5)


def test_clip_keyword_only_bound_is_refused():
    # `max=` has no position: keywords are never differentiated, and the compiler says so
    # rather than drop the gradient.
    with pytest.raises(adjoint.AdjointError, match="max="):
        adjoint.grad(clip_with_keyword_only_bound, wrt=(0, 1))(X_FOR_CLIP, 0.5)


# ---- nan_to_num: the cotangent passes where x is finite -----------------------------------------------

X_WITH_NONFINITE = np.array([[1.5, np.nan, -0.5], [np.inf, 2.0, -np.inf]])


def nan_to_num_squared(x):
    return np.sum(np.nan_to_num(x, nan=1.0, posinf=3.0, neginf=-3.0) ** 2)


@pytest.mark.parametrize("kwargs", [{}, {"nan": 1.0}, {"posinf": 5.0, "neginf": -5.0}])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_to_num_rule_matches_finite_differences(rng, kwargs, dtype):
    check_rrule(np.nan_to_num, X_WITH_NONFINITE.astype(dtype), **kwargs)
    check_rrule(np.nan_to_num, sample(rng, "real", (2, 3), dtype), **kwargs)
    check_rrule(np.nan_to_num, sample(rng, "real", None), **kwargs)


def test_nan_to_num_replaced_entries_get_no_cotangent():
    _, back = adjoint.pullback(nan_to_num_squared, X_WITH_NONFINITE)
    (x_bar,) = back(1.0)
    np.testing.assert_array_equal(x_bar, [[3.0, 0.0, -1.0], [0.0, 4.0, 0.0]])


def nan_to_num_in_place(x):
    return np.sum(np.nan_to_num(x, copy=False))


def test_nan_to_num_in_place_is_refused():
    with pytest.raises(adjoint.AdjointError, match="copy="):
        adjoint.grad(nan_to_num_in_place)(X_WITH_NONFINITE.copy())


# ---- piecewise constant functions carry no gradient ---------------------------------------------------

NON_DIFFERENTIABLE = [
    operator.floordiv, np.floor_divide, np.floor, np.ceil, np.rint, np.trunc, np.fix, np.round, np.around,
    np.ndarray.round, np.sign, np.signbit, np.spacing, np.greater, np.greater_equal, np.less, np.less_equal,
    np.equal, np.not_equal, np.isnan, np.isinf, np.isfinite, np.isnat, np.isposinf, np.isneginf,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.bitwise_and, np.bitwise_or,
    np.bitwise_xor, np.bitwise_count, np.invert, np.left_shift, np.right_shift, np.gcd, np.lcm,
]


# Products, which are not elementwise, are linalg's.
PRODUCTS = {"matmul", "vecdot", "matvec", "vecmat"}


def test_every_elementwise_ufunc_has_a_rule_or_no_gradient():
    ufuncs = [name for name in dir(np) if isinstance(getattr(np, name), np.ufunc) and name not in PRODUCTS]
    unclassified = [
        name for name in ufuncs
        if lookup(getattr(np, name)) is None and not registry.is_non_differentiable(getattr(np, name))
    ]
    assert not unclassified


@pytest.mark.parametrize("primitive", NON_DIFFERENTIABLE, ids=lambda p: getattr(p, "__name__", repr(p)))
def test_piecewise_constant_primitives_are_declared(primitive):
    assert registry.is_non_differentiable(primitive)


def steps_times_x(x):
    steps = np.floor(x) + np.ceil(x) + np.rint(x) + np.trunc(x) + np.round(x, 1) + np.around(x)  # np.fix: deprecated
    signs = np.sign(x) + np.signbit(x) + np.spacing(x) + x // 0.7 + np.floor_divide(x, 0.3) + x.round()
    return np.sum((steps + signs) * x + np.where(np.isfinite(x) & np.greater(x, 0.1), x, 0.0))


def test_piecewise_constant_functions_through_compiler(rng):
    # Away from the steps, finite differences see their zero slope.
    x = np.array([[0.33, -1.26, 2.71], [-0.48, 1.62, 0.91]])
    check_grad(steps_times_x, x)
    check_grad(steps_times_x, x.astype(np.float32))
