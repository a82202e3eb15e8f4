"""Rules of adjoint/rules/math.py (Python's math module and float()), on Python floats."""

import math

import numpy as np
import pytest

import adjoint
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


def call_math_atan2(y, x):
    return math.atan2(y, x)


def call_math_hypot(x, y):
    return math.hypot(x, y)


def call_math_pow(x, y):
    return math.pow(x, y)


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
]

# Two arguments: (id, primitive, function calling it, points in the domain)
BINARY_CASES = [
    ("math.atan2", math.atan2, call_math_atan2, [(0.7, -2.1), (-0.3, 0.4)]),
    ("math.hypot", math.hypot, call_math_hypot, [(0.7, -2.1), (-0.3, 0.4)]),
    ("math.pow", math.pow, call_math_pow, [(0.7, -2.1), (1.5, 2.0)]),
]

POINTS = [pytest.param(name, primitive, fn, x, id=f"{name}({x})") for name, primitive, fn, xs in CASES for x in xs]

BINARY_POINTS = [
    pytest.param(name, primitive, fn, xy, id=f"{name}{xy}") for name, primitive, fn, xys in BINARY_CASES for xy in xys
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [primitive for _, primitive, _, _ in CASES + BINARY_CASES]


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


def test_hypot_at_the_origin_has_the_zero_subgradient():
    _, back = adjoint.registry.lookup(math.hypot).rrule(0.0, 0.0)
    assert back(1.0) == (0.0, 0.0)
