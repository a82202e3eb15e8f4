"""Rules of adjoint/rules/trigonometric.py, checked directly (check_rrule) and through the compiler
(check_grad), over the grid of sampling.py, with complex inputs for the holomorphic functions."""

import math

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import BINARY_GRID, COMPLEX_GRID, UNARY_GRAD_GRID, UNARY_GRID, sample

# ---- the functions the compiler differentiates, one per primitive --------------------------------

def call_sin(x):
    return np.sin(x)


def call_cos(x):
    return np.cos(x)


def call_tan(x):
    return np.tan(x)


def call_sinc(x):
    return np.sinc(x)


def call_arcsin(x):
    return np.arcsin(x)


def call_arccos(x):
    return np.arccos(x)


def call_arctan(x):
    return np.arctan(x)


def call_sinh(x):
    return np.sinh(x)


def call_cosh(x):
    return np.cosh(x)


def call_tanh(x):
    return np.tanh(x)


def call_arcsinh(x):
    return np.arcsinh(x)


def call_arccosh(x):
    return np.arccosh(x)


def call_arctanh(x):
    return np.arctanh(x)


def call_deg2rad(x):
    return np.deg2rad(x)


def call_radians(x):
    return np.radians(x)


def call_rad2deg(x):
    return np.rad2deg(x)


def call_degrees(x):
    return np.degrees(x)


def call_arctan2(y, x):
    return np.arctan2(y, x)


def call_hypot(a, b):
    return np.hypot(a, b)


# ---- cases: (primitive, function calling it, domain of each input) ---------------------------------

UNARY = [
    (np.sin, call_sin, "real"),
    (np.cos, call_cos, "real"),
    (np.tan, call_tan, "unit"),
    (np.sinc, call_sinc, "real"),
    (np.arcsin, call_arcsin, "unit"),
    (np.arccos, call_arccos, "unit"),
    (np.arctan, call_arctan, "real"),
    (np.sinh, call_sinh, "real"),
    (np.cosh, call_cosh, "real"),
    (np.tanh, call_tanh, "real"),
    (np.arcsinh, call_arcsinh, "real"),
    (np.arccosh, call_arccosh, "above_one"),
    (np.arctanh, call_arctanh, "unit"),
    (np.deg2rad, call_deg2rad, "real"),
    (np.radians, call_radians, "real"),
    (np.rad2deg, call_rad2deg, "real"),
    (np.degrees, call_degrees, "real"),
]

BINARY = [
    (np.arctan2, call_arctan2, "real", "nonzero"),
    (np.hypot, call_hypot, "real", "nonzero"),
]

# Holomorphic: the partial is the complex derivative, on the branches NumPy uses.
COMPLEX = [
    case for case in UNARY if case[0] not in (np.deg2rad, np.radians, np.rad2deg, np.degrees)  # real only
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case[0] for case in UNARY + BINARY]


def _name(case):
    return case[0].__name__


# ---- unary ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", UNARY_GRID)
@pytest.mark.parametrize("primitive, fn, domain", UNARY, ids=[_name(c) for c in UNARY])
def test_unary_rule_matches_finite_differences(rng, primitive, fn, domain, shape, dtype):
    check_rrule(primitive, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", UNARY_GRAD_GRID)
@pytest.mark.parametrize("primitive, fn, domain", UNARY, ids=[_name(c) for c in UNARY])
def test_unary_call_through_compiler_matches_finite_differences(rng, primitive, fn, domain, shape, dtype):
    check_grad(fn, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", COMPLEX_GRID)
@pytest.mark.parametrize("primitive, fn, domain", COMPLEX, ids=[_name(c) for c in COMPLEX])
def test_holomorphic_rule_on_complex_inputs(rng, primitive, fn, domain, shape, dtype):
    z = sample(rng, "complex", shape, dtype)
    check_rrule(primitive, z)
    check_grad(fn, z)


@pytest.mark.parametrize("primitive", [np.arccosh, np.arcsin, np.arccos, np.arcsinh, np.arctanh])
def test_inverse_functions_follow_numpys_branches_in_every_quadrant(primitive):
    # Left of the imaginary axis 1 / sqrt(z^2 - 1) has the wrong sign for arccosh.
    for z in (-2 + 0.5j, -0.5 - 2j, 0.3 + 1.5j, 2 - 0.4j):
        check_rrule(primitive, np.array([z]))


@pytest.mark.parametrize("primitive", [np.deg2rad, np.rad2deg, np.sinc, np.tan, np.arccosh])
def test_float32_cotangents_stay_float32(primitive):
    x = np.array([1.2, 1.5, 2.5], dtype=np.float32)
    _, back = lookup(primitive).rrule(x)
    assert back(np.ones(3, dtype=np.float32))[0].dtype == np.float32


# ---- sinc near and at zero -----------------------------------------------------------------------------

def sinc_slope_series(x, terms=30):
    """d/dx sin(pi x) / (pi x) = sum_k (-1)^k 2k pi^(2k) x^(2k-1) / (2k+1)!, summed directly."""
    return sum((-1) ** k * 2 * k * math.pi ** (2 * k) * x ** (2 * k - 1) / math.factorial(2 * k + 1)
               for k in range(1, terms))


@pytest.mark.parametrize("x", [0.0, 1e-7, -3e-5, 1e-3, -0.02, 0.099, -0.101, 0.4, 1.7])
def test_sinc_slope_is_accurate_near_zero(x):
    _, back = lookup(np.sinc).rrule(x)
    (x_bar,) = back(1.0)
    assert x_bar == pytest.approx(sinc_slope_series(x), rel=1e-12, abs=1e-300)


def test_sinc_slope_in_float32_near_zero():
    x = np.array([0.0, 2e-4, 1e-3, 0.01], dtype=np.float32)
    _, back = lookup(np.sinc).rrule(x)
    (x_bar,) = back(np.ones(4, dtype=np.float32))
    assert x_bar.dtype == np.float32
    expected = [sinc_slope_series(float(v)) for v in x]
    np.testing.assert_allclose(x_bar, expected, rtol=1e-6, atol=1e-12)


# ---- binary: arctan2 and hypot ----------------------------------------------------------------------

@pytest.mark.parametrize("shapes, dtype", BINARY_GRID)
@pytest.mark.parametrize("primitive, fn, domain_a, domain_b", BINARY, ids=[_name(c) for c in BINARY])
def test_binary_rule_matches_finite_differences(rng, primitive, fn, domain_a, domain_b, shapes, dtype):
    check_rrule(primitive, sample(rng, domain_a, shapes[0], dtype), sample(rng, domain_b, shapes[1], dtype))


@pytest.mark.parametrize("shapes, dtype", [
    pytest.param(((2, 3), (2, 3)), np.float64, id="(2,3)-(2,3)"),
    pytest.param(((1, 3), (2, 1)), np.float64, id="(1,3)-(2,1)"),
    pytest.param((None, (3,)), np.float64, id="float-(3,)"),
    pytest.param(((2, 3), (3,)), np.float32, id="(2,3)-(3,)-float32"),
])
@pytest.mark.parametrize("primitive, fn, domain_a, domain_b", BINARY, ids=[_name(c) for c in BINARY])
def test_binary_call_through_compiler_matches_finite_differences(rng, primitive, fn, domain_a, domain_b, shapes, dtype):
    check_grad(fn, sample(rng, domain_a, shapes[0], dtype), sample(rng, domain_b, shapes[1], dtype))


def test_arctan2_in_every_quadrant(rng):
    y = np.array([1.0, 1.0, -1.0, -1.0, 0.5])
    x = np.array([1.0, -1.0, -1.0, 1.0, -2.0])
    check_rrule(np.arctan2, y, x)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("fn", [call_arctan2, call_hypot])
def test_slope_is_zero_at_the_origin(fn):
    # Both are finite at (0, 0), where they have no derivative: the slope taken there is 0, not nan.
    zeros = np.zeros(3)
    _, back = adjoint.pullback(fn, zeros, np.array([0.0, 1.0, -2.0]))
    a_bar, b_bar = back(np.ones(3))
    assert np.all(np.isfinite(a_bar)) and np.all(np.isfinite(b_bar))
    assert a_bar[0] == b_bar[0] == 0.0


def polar_radius_and_angle(x, y):
    return np.sum(np.hypot(x, y) * np.cos(np.arctan2(y, x)) - x)


def test_polar_coordinates_through_compiler(rng):
    # r cos(theta) = x, so the loss is constant: its gradient is zero.
    x, y = sample(rng, "nonzero", (2, 3)), sample(rng, "real", (2, 3))
    check_grad(polar_radius_and_angle, x, y)
    gx, gy = adjoint.grad(polar_radius_and_angle, wrt=(0, 1))(x, y)
    np.testing.assert_allclose(gx, 0, atol=1e-12)
    np.testing.assert_allclose(gy, 0, atol=1e-12)
