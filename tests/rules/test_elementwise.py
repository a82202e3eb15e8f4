"""Rules of adjoint/rules/elementwise.py for arithmetic, powers and roots, exponentials and
logarithms, checked directly (check_rrule) and through the compiler (check_grad), over the grid of
sampling.py: a Python float, 0-d and small arrays, broadcasting pairs, float32 and float64, and
complex inputs for the holomorphic functions. Magnitude, extrema, selection and the functions with
no gradient are test_extrema.py's."""

import operator
import warnings

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import (
    BINARY_GRAD_GRID, BINARY_GRID, COMPLEX_GRID, UNARY_GRAD_GRID, UNARY_GRID, binary_args, case_ids, sample,
)

# ---- the functions the compiler differentiates, one per primitive --------------------------------

def call_neg(x):
    return -x


def call_pos(x):
    return +x


def call_np_negative(x):
    return np.negative(x)


def call_np_positive(x):
    return np.positive(x)


def call_np_reciprocal(x):
    return np.reciprocal(x)


def call_np_sqrt(x):
    return np.sqrt(x)


def call_np_cbrt(x):
    return np.cbrt(x)


def call_np_square(x):
    return np.square(x)


def call_np_exp(x):
    return np.exp(x)


def call_np_exp2(x):
    return np.exp2(x)


def call_np_expm1(x):
    return np.expm1(x)


def call_np_log(x):
    return np.log(x)


def call_np_log2(x):
    return np.log2(x)


def call_np_log10(x):
    return np.log10(x)


def call_np_log1p(x):
    return np.log1p(x)


def call_add(a, b):
    return a + b


def call_sub(a, b):
    return a - b


def call_mul(a, b):
    return a * b


def call_truediv(a, b):
    return a / b


def call_mod(a, b):
    return a % b


def call_pow_operator(a, b):
    return a ** b


def call_np_add(a, b):
    return np.add(a, b)


def call_np_subtract(a, b):
    return np.subtract(a, b)


def call_np_multiply(a, b):
    return np.multiply(a, b)


def call_np_divide(a, b):
    return np.divide(a, b)


def call_np_mod(a, b):
    return np.mod(a, b)


def call_np_fmod(a, b):
    return np.fmod(a, b)


def call_np_power(a, b):
    return np.power(a, b)


def call_pow_builtin(a, b):
    return pow(a, b)


def call_np_float_power(a, b):
    return np.float_power(a, b)


def call_np_logaddexp(a, b):
    return np.logaddexp(a, b)


def call_np_logaddexp2(a, b):
    return np.logaddexp2(a, b)


# ---- cases: (id, primitive, function calling it, domain of each input) ---------------------------
# NumPy's aliases (np.true_divide, np.remainder) are the same ufuncs: checked once.

UNARY = [
    ("operator.neg", operator.neg, call_neg, "real"),
    ("operator.pos", operator.pos, call_pos, "real"),
    ("np.negative", np.negative, call_np_negative, "real"),
    ("np.positive", np.positive, call_np_positive, "real"),
    ("np.reciprocal", np.reciprocal, call_np_reciprocal, "nonzero"),
    ("np.sqrt", np.sqrt, call_np_sqrt, "positive"),
    ("np.cbrt", np.cbrt, call_np_cbrt, "nonzero"),
    ("np.square", np.square, call_np_square, "real"),
    ("np.exp", np.exp, call_np_exp, "real"),
    ("np.exp2", np.exp2, call_np_exp2, "real"),
    ("np.expm1", np.expm1, call_np_expm1, "real"),
    ("np.log", np.log, call_np_log, "positive"),
    ("np.log2", np.log2, call_np_log2, "positive"),
    ("np.log10", np.log10, call_np_log10, "positive"),
    ("np.log1p", np.log1p, call_np_log1p, "positive"),
]

BINARY = [
    ("operator.add", operator.add, call_add, "real", "real"),
    ("operator.sub", operator.sub, call_sub, "real", "real"),
    ("operator.mul", operator.mul, call_mul, "real", "real"),
    ("operator.truediv", operator.truediv, call_truediv, "real", "nonzero"),
    ("operator.mod", operator.mod, call_mod, "nonzero", "nonzero"),
    ("operator.pow", operator.pow, call_pow_operator, "positive", "real"),
    ("np.add", np.add, call_np_add, "real", "real"),
    ("np.subtract", np.subtract, call_np_subtract, "real", "real"),
    ("np.multiply", np.multiply, call_np_multiply, "real", "real"),
    ("np.divide", np.divide, call_np_divide, "real", "nonzero"),
    ("np.mod", np.mod, call_np_mod, "nonzero", "nonzero"),
    ("np.fmod", np.fmod, call_np_fmod, "nonzero", "nonzero"),
    ("np.power", np.power, call_np_power, "positive", "real"),
    ("pow", pow, call_pow_builtin, "positive", "real"),
    ("np.float_power", np.float_power, call_np_float_power, "positive", "real"),
    ("np.logaddexp", np.logaddexp, call_np_logaddexp, "real", "real"),
    ("np.logaddexp2", np.logaddexp2, call_np_logaddexp2, "real", "real"),
]

# Holomorphic: the partial is the complex derivative, checked on complex inputs.
COMPLEX_UNARY = [
    (np.negative, call_np_negative), (np.positive, call_np_positive), (np.reciprocal, call_np_reciprocal),
    (np.sqrt, call_np_sqrt), (np.square, call_np_square), (np.exp, call_np_exp), (np.exp2, call_np_exp2),
    (np.expm1, call_np_expm1), (np.log, call_np_log), (np.log2, call_np_log2), (np.log10, call_np_log10),
    (np.log1p, call_np_log1p),
]
COMPLEX_BINARY = [
    (operator.add, call_add), (operator.sub, call_sub), (operator.mul, call_mul), (operator.truediv, call_truediv),
    (operator.pow, call_pow_operator), (np.power, call_np_power), (np.float_power, call_np_float_power),
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case[1] for case in UNARY + BINARY]


# ---- unary ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", UNARY_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain", UNARY, ids=case_ids(UNARY))
def test_unary_rule_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_rrule(primitive, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", UNARY_GRAD_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain", UNARY, ids=case_ids(UNARY))
def test_unary_call_through_compiler_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_grad(fn, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", COMPLEX_GRID)
@pytest.mark.parametrize("primitive, fn", COMPLEX_UNARY, ids=[p.__name__ for p, _ in COMPLEX_UNARY])
def test_holomorphic_unary_rule_on_complex_inputs(rng, primitive, fn, shape, dtype):
    z = sample(rng, "complex", shape, dtype)
    check_rrule(primitive, z)
    check_grad(fn, z)


@pytest.mark.parametrize("primitive", [np.sqrt, np.log, np.reciprocal, np.exp2, np.log10, np.abs, np.cbrt])
def test_unary_rule_keeps_float32(primitive):
    x = np.array([0.5, 1.5, 2.0], dtype=np.float32)
    _, back = lookup(primitive).rrule(x)
    (x_bar,) = back(np.ones(3, dtype=np.float32))
    assert x_bar.dtype == np.float32


# ---- binary, with broadcasting ------------------------------------------------------------------

@pytest.mark.parametrize("shapes, dtype", BINARY_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", BINARY, ids=case_ids(BINARY))
def test_binary_rule_matches_finite_differences(rng, name, primitive, fn, domain_a, domain_b, shapes, dtype):
    check_rrule(primitive, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


@pytest.mark.parametrize("shapes, dtype", BINARY_GRAD_GRID)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", BINARY, ids=case_ids(BINARY))
def test_binary_call_through_compiler_matches_finite_differences(
    rng, name, primitive, fn, domain_a, domain_b, shapes, dtype
):
    check_grad(fn, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


@pytest.mark.parametrize("shape, dtype", COMPLEX_GRID)
@pytest.mark.parametrize("primitive, fn", COMPLEX_BINARY, ids=[p.__name__ for p, _ in COMPLEX_BINARY])
def test_holomorphic_binary_rule_on_complex_inputs(rng, primitive, fn, shape, dtype):
    a, b = sample(rng, "complex", shape, dtype), sample(rng, "complex", shape, dtype)
    check_rrule(primitive, a, b)
    check_grad(fn, a, b)


def test_complex_base_with_real_exponent(rng):
    z, p = sample(rng, "complex", (2, 3)), sample(rng, "positive", (3,))
    check_rrule(np.power, z, p)
    check_grad(call_pow_operator, z, p)


def test_integer_operand_gets_no_cotangent(rng):
    x = sample(rng, "real", (2, 3))
    check_rrule(np.add, x, np.arange(3))
    _, back = lookup(np.multiply).rrule(np.arange(3), x)
    n_bar, x_bar = back(np.ones((2, 3)))
    assert n_bar is None
    np.testing.assert_allclose(x_bar, np.broadcast_to(np.arange(3.0), (2, 3)))


# ---- powers at their edges ----------------------------------------------------------------------

@pytest.mark.filterwarnings("error")
def test_power_rule_with_integer_exponent_accepts_negative_base():
    # x ** 2 is defined for negative x; the int exponent carries no cotangent, so its
    # pullback must not evaluate log(x) (which warns and yields nan for x < 0).
    base = np.array([-1.5, 2.0, -0.5])
    check_rrule(operator.pow, base, 2)
    _, back = lookup(operator.pow).rrule(base, 2)
    base_bar, exponent_bar = back(np.ones(3))
    np.testing.assert_allclose(base_bar, 2 * base)
    assert exponent_bar is None or np.all(np.isfinite(exponent_bar))


def test_power_with_integer_exponent_accepts_negative_base_through_compiler():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_grad(call_pow_operator, np.array([-1.5, 2.0, -0.5]), 2)


def test_power_exponent_cotangent_is_zero_where_base_is_zero():
    # For a positive exponent b, 0 ** b is 0 for every b, so d(a ** b)/db is exactly 0 at a = 0;
    # the exponent's cotangent must not become nan from 0 * log(0).
    a = np.array([0.0, 1.5, 2.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        _, back = adjoint.pullback(call_pow_operator, a, 2.0)
        a_bar, b_bar = back(np.ones(3))
    np.testing.assert_allclose(a_bar, 2.0 * a)
    assert b_bar == pytest.approx(1.5 ** 2 * np.log(1.5) + 2.0 ** 2 * np.log(2.0))


def _power_zero(x):
    return np.sum(x ** 0)


def test_power_zero_at_zero():
    # x ** 0 at x = 0: the partial `0 * x ** -1` would be 0 * inf = nan; the gradient is 0.
    with np.errstate(all="ignore"):
        check_grad(_power_zero, np.array([0.0, 1.0]))


def test_float_power_keeps_float32_cotangents(rng):
    a, b = sample(rng, "positive", (3,), np.float32), sample(rng, "real", (3,), np.float32)
    _, back = lookup(np.float_power).rrule(a, b)
    a_bar, b_bar = back(np.ones(3))
    assert a_bar.dtype == b_bar.dtype == np.float32


# ---- logaddexp: finite where exp would overflow --------------------------------------------------

@pytest.mark.parametrize("primitive, base", [(np.logaddexp, np.e), (np.logaddexp2, 2.0)])
def test_logaddexp_weights_are_finite_for_large_operands(primitive, base):
    a, b = np.array([1000.0, -1000.0, 800.0]), np.array([1000.0, -1000.0, 801.0])
    _, back = lookup(primitive).rrule(a, b)
    a_bar, b_bar = back(np.ones(3))
    weight_of_a = 1 / (1 + base ** (b - a))  # softmax weight, from the differences only
    np.testing.assert_allclose(a_bar, weight_of_a)
    np.testing.assert_allclose(b_bar, 1 - weight_of_a)


# ---- keywords out of scope are refused ---------------------------------------------------------

def exp_where(x):
    return np.sum(np.exp(x, where=x > 0))


def add_with_dtype(x, y):
    return np.sum(np.add(x, y, dtype=np.float32))


@pytest.mark.parametrize("fn, args, keyword", [
    (exp_where, (np.ones(3),), "where="),
    (add_with_dtype, (np.ones(3), np.ones(3)), "dtype="),
])
def test_ufunc_keywords_are_refused_by_name(fn, args, keyword):
    with pytest.raises(adjoint.AdjointError, match=keyword):
        adjoint.grad(fn)(*args)
