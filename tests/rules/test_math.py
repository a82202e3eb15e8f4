"""Rules of adjoint/rules/math.py (Python's math module and float()), on Python floats, NumPy
scalars and 0-d arrays, and on lists and tuples of floats (math.prod, math.fsum, math.dist)."""

import math

import numpy as np
import pytest

import adjoint
from adjoint.registry import is_non_differentiable, lookup
from adjoint.runtime import digamma
from adjoint.testing import check_grad, check_rrule


def call_math_sin(x):
    return math.sin(x)


def call_math_cos(x):
    return math.cos(x)


def call_math_tan(x):
    return math.tan(x)


def call_math_exp(x):
    return math.exp(x)


def call_math_log(x):
    return math.log(x)


def call_math_sqrt(x):
    return math.sqrt(x)


def call_math_tanh(x):
    return math.tanh(x)


def call_float(x):
    return float(x)


def call_math_atan(x):
    return math.atan(x)


def call_math_asin(x):
    return math.asin(x)


def call_math_acos(x):
    return math.acos(x)


def call_math_sinh(x):
    return math.sinh(x)


def call_math_cosh(x):
    return math.cosh(x)


def call_math_asinh(x):
    return math.asinh(x)


def call_math_acosh(x):
    return math.acosh(x)


def call_math_atanh(x):
    return math.atanh(x)


def call_math_degrees(x):
    return math.degrees(x)


def call_math_radians(x):
    return math.radians(x)


def call_math_expm1(x):
    return math.expm1(x)


def call_math_exp2(x):
    return math.exp2(x)


def call_math_log2(x):
    return math.log2(x)


def call_math_log10(x):
    return math.log10(x)


def call_math_log1p(x):
    return math.log1p(x)


def call_math_cbrt(x):
    return math.cbrt(x)


def call_math_fabs(x):
    return math.fabs(x)


def call_math_erf(x):
    return math.erf(x)


def call_math_erfc(x):
    return math.erfc(x)


def call_math_lgamma(x):
    return math.lgamma(x)


def call_math_gamma(x):
    return math.gamma(x)


def call_math_atan2(y, x):
    return math.atan2(y, x)


def call_math_hypot(x, y):
    return math.hypot(x, y)


def call_math_pow(x, y):
    return math.pow(x, y)


def call_math_copysign(x, y):
    return math.copysign(x, y)


def call_math_fmod(x, y):
    return math.fmod(x, y)


def call_math_remainder(x, y):
    return math.remainder(x, y)


def call_math_ldexp(x, i):
    return math.ldexp(x, i)


def call_math_nextafter(x, y):
    return math.nextafter(x, y)


def float_of_sum_of_squares(x):
    return float(np.sum(x ** 2)) * 3.0


def chained_math(x):
    return math.exp(math.sin(x)) * math.sqrt(x) + math.log(x) * math.tanh(x)


# (id, primitive, function calling it, points in the domain)
CASES = [
    ("math.sin", math.sin, call_math_sin, [0.7, -2.1]),
    ("math.cos", math.cos, call_math_cos, [0.7, -2.1]),
    ("math.tan", math.tan, call_math_tan, [0.7, -0.4]),
    ("math.exp", math.exp, call_math_exp, [0.7, -2.1]),
    ("math.log", math.log, call_math_log, [0.7, 3.5]),
    ("math.sqrt", math.sqrt, call_math_sqrt, [0.7, 3.5]),
    ("math.tanh", math.tanh, call_math_tanh, [0.7, -2.1]),
    ("float", float, call_float, [0.7, -2.1]),
    ("math.atan", math.atan, call_math_atan, [0.7, -2.1]),
    ("math.asin", math.asin, call_math_asin, [0.7, -0.4]),
    ("math.acos", math.acos, call_math_acos, [0.7, -0.4]),
    ("math.sinh", math.sinh, call_math_sinh, [0.7, -2.1]),
    ("math.cosh", math.cosh, call_math_cosh, [0.7, -2.1]),
    ("math.asinh", math.asinh, call_math_asinh, [0.7, -2.1]),
    ("math.acosh", math.acosh, call_math_acosh, [1.3, 3.5]),
    ("math.atanh", math.atanh, call_math_atanh, [0.7, -0.4]),
    ("math.degrees", math.degrees, call_math_degrees, [0.7, -2.1]),
    ("math.radians", math.radians, call_math_radians, [40.0, -2.1]),
    ("math.expm1", math.expm1, call_math_expm1, [0.7, -2.1, 1e-9]),
    ("math.exp2", math.exp2, call_math_exp2, [0.7, -2.1]),
    ("math.log2", math.log2, call_math_log2, [0.7, 3.5]),
    ("math.log10", math.log10, call_math_log10, [0.7, 3.5]),
    ("math.log1p", math.log1p, call_math_log1p, [0.7, -0.4, 1e-9]),
    ("math.cbrt", math.cbrt, call_math_cbrt, [0.7, -3.5]),
    ("math.fabs", math.fabs, call_math_fabs, [0.7, -2.1]),
    ("math.erf", math.erf, call_math_erf, [0.7, -2.1]),
    ("math.erfc", math.erfc, call_math_erfc, [0.7, -2.1]),
    ("math.lgamma", math.lgamma, call_math_lgamma, [0.7, 3.5, 12.5, -2.3]),
    ("math.gamma", math.gamma, call_math_gamma, [0.7, 3.5, -2.3]),
]

# Two arguments: (id, primitive, function calling it, points in the domain)
BINARY_CASES = [
    ("math.atan2", math.atan2, call_math_atan2, [(0.7, -2.1), (-0.3, 0.4)]),
    ("math.hypot", math.hypot, call_math_hypot, [(0.7, -2.1), (-0.3, 0.4)]),
    ("math.pow", math.pow, call_math_pow, [(0.7, -2.1), (1.5, 2.0)]),
    ("math.copysign", math.copysign, call_math_copysign, [(0.7, -2.1), (-1.3, 0.4), (-1.3, -0.4)]),
    ("math.fmod", math.fmod, call_math_fmod, [(5.3, 1.5), (-5.3, 1.5), (0.7, -2.1)]),
    ("math.remainder", math.remainder, call_math_remainder, [(5.3, 1.5), (-5.6, 1.5), (0.7, -2.1)]),
    ("math.ldexp", math.ldexp, call_math_ldexp, [(0.7, 3), (-2.1, -2)]),
    ("math.nextafter", math.nextafter, call_math_nextafter, [(0.7, 3.0), (-2.1, -5.0)]),
]

POINTS = [pytest.param(name, primitive, fn, x, id=f"{name}({x})") for name, primitive, fn, xs in CASES for x in xs]

BINARY_POINTS = [
    pytest.param(name, primitive, fn, xy, id=f"{name}{xy}") for name, primitive, fn, xys in BINARY_CASES for xy in xys
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [primitive for _, primitive, _, _ in CASES + BINARY_CASES] + [math.prod, math.fsum, math.dist]


@pytest.mark.parametrize("name, primitive, fn, x", POINTS)
def test_math_rule_matches_finite_differences(name, primitive, fn, x):
    check_rrule(primitive, x)


@pytest.mark.parametrize("name, primitive, fn, x", POINTS)
def test_math_call_through_compiler_matches_finite_differences(name, primitive, fn, x):
    check_grad(fn, x)


@pytest.mark.parametrize("name, primitive, fn, x", POINTS)
def test_gradient_of_a_float_is_a_float(name, primitive, fn, x):
    g = adjoint.grad(fn)(x)
    assert type(g) in (float, np.float64)


# math functions read NumPy scalars and 0-d arrays as floats; the cotangent keeps their dtype.
NUMPY_SCALARS = [
    pytest.param(primitive, xs[0], kind, dtype, id=f"{name}-{kind}-{np.dtype(dtype).name}")
    for name, primitive, _, xs in CASES if primitive is not float
    for kind in ("0-d", "scalar") for dtype in (np.float32, np.float64)
]


@pytest.mark.parametrize("primitive, x, kind, dtype", NUMPY_SCALARS)
def test_math_rule_on_numpy_scalars_keeps_their_dtype(primitive, x, kind, dtype):
    x = np.asarray(x, dtype=dtype) if kind == "0-d" else dtype(x)
    check_rrule(primitive, x)
    _, back = lookup(primitive).rrule(x)
    assert np.asarray(back(1.0)[0]).dtype == dtype


def test_chained_math_calls_match_finite_differences():
    check_grad(chained_math, 1.3)


def test_float_of_numpy_scalar_through_compiler(rng):
    check_grad(float_of_sum_of_squares, rng.normal(size=(2, 3)))


def test_float_rule_on_numpy_float64_scalar():
    check_rrule(float, np.float64(1.25))


def test_float_rule_cotangent_keeps_dtype_of_0d_float32_array():
    # A cotangent has its argument's dtype: float(x) for a float32 0-d array must give float32.
    check_rrule(float, np.array(1.25, dtype=np.float32))


@pytest.mark.parametrize("name, primitive, fn, xy", BINARY_POINTS)
def test_binary_math_rule_matches_finite_differences(name, primitive, fn, xy):
    check_rrule(primitive, *xy)


@pytest.mark.parametrize("name, primitive, fn, xy", BINARY_POINTS)
def test_binary_math_call_through_compiler_matches_finite_differences(name, primitive, fn, xy):
    check_grad(fn, *xy)


def test_math_pow_with_integer_exponent_and_negative_base():
    check_rrule(math.pow, -1.5, 3)


def test_integer_operands_get_no_cotangent():
    check_rrule(math.copysign, 2.5, -1)
    check_rrule(math.fmod, 7, 2.5)
    check_rrule(math.remainder, 7.5, 2)


def test_hypot_at_the_origin_has_the_zero_subgradient():
    _, back = lookup(math.hypot).rrule(0.0, 0.0)
    assert back(1.0) == (0.0, 0.0)


def test_fabs_and_copysign_at_zero_have_the_zero_subgradient():
    assert lookup(math.fabs).rrule(0.0)[1](1.0) == (0.0,)
    assert lookup(math.copysign).rrule(0.0, -1.0)[1](1.0) == (0.0, 0.0)


# ---- digamma, the slope of lgamma -------------------------------------------------------------------

# Points where lgamma's finite differences are precise to 1e-10: not close to a pole, where
# `math.lgamma` loses digits, nor so large that lgamma's value swamps its differences.
DIGAMMA_POINTS = [1e-3, 0.3, 1.0, 1.4616321449683623, 2.5, 9.9, 10.0, 57.3, 1e3, -0.5, -1.3, -3.9, -7.02]


@pytest.mark.parametrize("x", DIGAMMA_POINTS)
def test_digamma_is_the_slope_of_lgamma(x):
    # Fourth-order central differences: truncation error ~ h^4 lgamma^(5) / 30.
    h = 1e-3 * min(1.0, abs(x - round(x)) if x < 0 else x)
    step, double_step = math.lgamma(x + h) - math.lgamma(x - h), math.lgamma(x + 2 * h) - math.lgamma(x - 2 * h)
    slope = (8 * step - double_step) / (12 * h)
    assert digamma(x) == pytest.approx(slope, rel=1e-10, abs=1e-10)


def test_digamma_matches_known_values():
    euler_gamma = 0.57721566490153286061
    assert digamma(1.0) == pytest.approx(-euler_gamma, rel=1e-15)
    assert digamma(0.5) == pytest.approx(-euler_gamma - 2 * math.log(2), rel=1e-15)
    assert digamma(11.0) == pytest.approx(-euler_gamma + sum(1 / k for k in range(1, 11)), rel=1e-15)
    assert digamma(-0.5) == pytest.approx(2 - euler_gamma - 2 * math.log(2), rel=1e-15)  # psi(1/2) + 2


def test_digamma_matches_scipy():
    special = pytest.importorskip("scipy.special")
    xs = np.concatenate([np.linspace(0.01, 30.0, 301), -np.linspace(0.013, 20.3, 201), [1e6, -3.9993955]])
    for x in xs:
        assert digamma(x) == pytest.approx(special.digamma(x), rel=1e-12, abs=1e-13)


# ---- sequences: math.prod, math.fsum, math.dist ------------------------------------------------------

def product_of_three(x, y):
    return math.prod([x, y, x * y]) + math.prod((x, 2.0), start=3)


def sum_of_squares(x, y):
    return math.fsum([x * x, y * y, x * y, 1.0])


def distance_between(x, y):
    return math.dist([x, y, 1.0], (y, -x, 0.5)) * x


SEQUENCE_CASES = [
    pytest.param(math.prod, ([1.5, -0.7, 2.0],), {}, id="prod-list"),
    pytest.param(math.prod, ((1.5, 0.0, 2.0),), {}, id="prod-tuple-with-a-zero"),
    pytest.param(math.prod, ([0.0, 0.0, 2.0],), {}, id="prod-two-zeros"),
    pytest.param(math.prod, ([1.5, 3, -0.7],), {"start": 2.5}, id="prod-start-with-an-int"),
    pytest.param(math.prod, ([np.array([1.5, 2.0]), np.array([0.5, -1.0])],), {}, id="prod-of-arrays"),
    pytest.param(math.fsum, ([1.5, -0.7, 2.0],), {}, id="fsum-list"),
    pytest.param(math.fsum, ((1.5, 3, -0.7),), {}, id="fsum-tuple-with-an-int"),
    pytest.param(math.dist, ([1.5, -0.7, 2.0], [0.3, 0.1, -1.0]), {}, id="dist-lists"),
    pytest.param(math.dist, ((1.5,), (0.3,)), {}, id="dist-1d-tuples"),
    pytest.param(math.dist, ([1.5, 2], (0.3, 1)), {}, id="dist-with-ints"),
    pytest.param(math.dist, (np.array([1.5, -0.7], dtype=np.float32), np.array([0.3, 0.1])), {}, id="dist-arrays"),
]


@pytest.mark.parametrize("primitive, args, kwargs", SEQUENCE_CASES)
def test_sequence_rule_matches_finite_differences(primitive, args, kwargs):
    check_rrule(primitive, *args, **kwargs)


def test_prod_with_zeros_is_exact():
    _, back = lookup(math.prod).rrule([2.0, 0.0, 3.0, 0.0])
    assert list(back(1.0)[0]) == [0.0, 0.0, 0.0, 0.0]
    _, back = lookup(math.prod).rrule([2.0, 0.0, 3.0], start=2.0)
    assert list(back(1.0)[0]) == [0.0, 12.0, 0.0]


def test_dist_between_coincident_points_has_the_zero_subgradient():
    _, back = lookup(math.dist).rrule([1.0, 2.0], (1.0, 2.0))
    p_bar, q_bar = back(1.0)
    assert p_bar == [0.0, 0.0] and q_bar == (0.0, 0.0)


@pytest.mark.parametrize("fn", [product_of_three, sum_of_squares, distance_between])
def test_sequence_functions_through_compiler(fn):
    check_grad(fn, 0.7, -1.3)


def product_starting_at(x, y):
    return math.prod([x, 2.0], start=y)


def test_a_differentiable_keyword_is_refused():
    with pytest.raises(adjoint.AdjointError, match="start="):
        adjoint.grad(product_starting_at, wrt=(0, 1))(0.7, 1.5)


def integer_valued_math(x):
    n = math.factorial(3) + math.comb(5, 2) + math.perm(4, 2) + math.gcd(6, 4) + math.lcm(2, 3) + math.isqrt(10)
    close = math.isclose(x, 0.5) + (math.ulp(x) > 0)
    return x * (n + close)


def test_integer_valued_math_carries_no_gradient():
    for primitive in (math.isclose, math.ulp, math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt):
        assert is_non_differentiable(primitive)
    check_grad(integer_valued_math, 0.7)


@pytest.mark.parametrize("primitive, x", [(math.modf, 2.3), (math.modf, -0.75), (math.frexp, 2.3), (math.frexp, -0.1)])
def test_math_modf_and_frexp_rules(primitive, x):
    check_rrule(primitive, x)


RRULE_PRIMITIVES += [math.modf, math.frexp]
