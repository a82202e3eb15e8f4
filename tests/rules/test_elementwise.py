"""Rules of adjoint/rules/elementwise.py, checked directly (check_rrule) and through the compiler (check_grad)."""

import operator
import warnings

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule


def sample(rng, domain, shape, dtype=np.float64):
    """A Python float (`shape` None) or an array of `dtype`, drawn from `domain`."""
    size = 1 if shape is None else shape
    if domain == "real":
        values = rng.normal(size=size)
    elif domain == "positive":  # log, sqrt, bases of powers, operands of mod
        values = rng.uniform(0.5, 2.0, size=size)
    elif domain == "nonzero":  # divisors, and abs away from its kink
        values = rng.choice([-1.0, 1.0], size=size) * rng.uniform(0.5, 2.0, size=size)
    elif domain == "unit":  # tan, well inside (-pi/2, pi/2)
        values = rng.uniform(-1.0, 1.0, size=size)
    else:
        raise ValueError(domain)
    if shape is None:
        return float(values[0])
    return np.asarray(values, dtype=dtype)


# ---- the functions the compiler differentiates, one per primitive --------------------------------

def call_neg(x):
    return -x


def call_pos(x):
    return +x


def call_np_negative(x):
    return np.negative(x)


def call_np_positive(x):
    return np.positive(x)


def call_np_sqrt(x):
    return np.sqrt(x)


def call_np_square(x):
    return np.square(x)


def call_np_exp(x):
    return np.exp(x)


def call_np_expm1(x):
    return np.expm1(x)


def call_np_log(x):
    return np.log(x)


def call_np_log1p(x):
    return np.log1p(x)


def call_np_sin(x):
    return np.sin(x)


def call_np_cos(x):
    return np.cos(x)


def call_np_tan(x):
    return np.tan(x)


def call_np_tanh(x):
    return np.tanh(x)


def call_np_abs(x):
    return np.abs(x)


def call_abs(x):
    return abs(x)


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


def call_np_power(a, b):
    return np.power(a, b)


def call_pow_builtin(a, b):
    return pow(a, b)


def call_np_maximum(a, b):
    return np.maximum(a, b)


def call_np_minimum(a, b):
    return np.minimum(a, b)


def call_np_where(condition, x, y):
    return np.where(condition, x, y)


# ---- cases: (id, primitive, function calling it, domain of each input) ---------------------------

UNARY = [
    ("operator.neg", operator.neg, call_neg, "real"),
    ("operator.pos", operator.pos, call_pos, "real"),
    ("np.negative", np.negative, call_np_negative, "real"),
    ("np.positive", np.positive, call_np_positive, "real"),
    ("np.sqrt", np.sqrt, call_np_sqrt, "positive"),
    ("np.square", np.square, call_np_square, "real"),
    ("np.exp", np.exp, call_np_exp, "real"),
    ("np.expm1", np.expm1, call_np_expm1, "real"),
    ("np.log", np.log, call_np_log, "positive"),
    ("np.log1p", np.log1p, call_np_log1p, "positive"),
    ("np.sin", np.sin, call_np_sin, "real"),
    ("np.cos", np.cos, call_np_cos, "real"),
    ("np.tan", np.tan, call_np_tan, "unit"),
    ("np.tanh", np.tanh, call_np_tanh, "real"),
    ("np.abs", np.abs, call_np_abs, "nonzero"),
    ("abs", abs, call_abs, "nonzero"),
]

BINARY = [
    ("operator.add", operator.add, call_add, "real", "real"),
    ("operator.sub", operator.sub, call_sub, "real", "real"),
    ("operator.mul", operator.mul, call_mul, "real", "real"),
    ("operator.truediv", operator.truediv, call_truediv, "real", "nonzero"),
    ("operator.mod", operator.mod, call_mod, "positive", "positive"),
    ("operator.pow", operator.pow, call_pow_operator, "positive", "real"),
    ("np.add", np.add, call_np_add, "real", "real"),
    ("np.subtract", np.subtract, call_np_subtract, "real", "real"),
    ("np.multiply", np.multiply, call_np_multiply, "real", "real"),
    ("np.divide", np.divide, call_np_divide, "real", "nonzero"),
    ("np.mod", np.mod, call_np_mod, "positive", "positive"),
    ("np.power", np.power, call_np_power, "positive", "real"),
    ("pow", pow, call_pow_builtin, "positive", "real"),
    ("np.maximum", np.maximum, call_np_maximum, "real", "real"),
    ("np.minimum", np.minimum, call_np_minimum, "real", "real"),
]

UNARY_SHAPES = [
    pytest.param(None, np.float64, id="float"),
    pytest.param((3,), np.float64, id="(3,)"),
    pytest.param((2, 3), np.float64, id="(2,3)"),
    pytest.param((1, 3), np.float64, id="(1,3)"),
    pytest.param((2, 3), np.float32, id="(2,3)-float32"),
]

BINARY_SHAPES = [
    pytest.param((None, None), np.float64, id="float-float"),
    pytest.param(((3,), (3,)), np.float64, id="(3,)-(3,)"),
    pytest.param(((2, 3), (2, 3)), np.float64, id="(2,3)-(2,3)"),
    pytest.param(((1, 3), (1, 3)), np.float64, id="(1,3)-(1,3)"),
    pytest.param(((2, 3), (3,)), np.float64, id="(2,3)-(3,)"),
    pytest.param(((2, 3), (1, 3)), np.float64, id="(2,3)-(1,3)"),
    pytest.param(((2, 1), (1, 3)), np.float64, id="(2,1)-(1,3)"),
    pytest.param(((2, 3), None), np.float64, id="(2,3)-float"),
    pytest.param((None, (2, 3)), np.float64, id="float-(2,3)"),
    pytest.param(((2, 3), (3,)), np.float32, id="(2,3)-(3,)-float32"),
    pytest.param(((2, 3), None), np.float32, id="(2,3)-float-float32"),
]

# (condition shape, x shape, y shape); None is a Python float.
WHERE_SHAPES = [
    pytest.param(((2, 3), (2, 3), (2, 3)), np.float64, id="all-(2,3)"),
    pytest.param(((2, 3), (3,), None), np.float64, id="(2,3)-(3,)-float"),
    pytest.param(((3,), (2, 3), (1, 3)), np.float64, id="(3,)-(2,3)-(1,3)"),
    pytest.param(((2, 1), (1, 3), (2, 3)), np.float64, id="(2,1)-(1,3)-(2,3)"),
    pytest.param(((2, 3), (2, 3), (3,)), np.float32, id="(2,3)-(2,3)-(3,)-float32"),
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case[1] for case in UNARY + BINARY] + [np.where, np.clip]


def _ids(cases):
    return [case[0] for case in cases]


def unary_args(rng, domain, shape, dtype):
    return (sample(rng, domain, shape, dtype),)


def binary_args(rng, domains, shapes, dtype):
    return tuple(sample(rng, domain, shape, dtype) for domain, shape in zip(domains, shapes))


def where_args(rng, shapes, dtype):
    condition_shape, *value_shapes = shapes
    condition = np.arange(np.prod(condition_shape)).reshape(condition_shape) % 3 != 1
    return (condition,) + tuple(sample(rng, "real", shape, dtype) for shape in value_shapes)


# ---- unary ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, dtype", UNARY_SHAPES)
@pytest.mark.parametrize("name, primitive, fn, domain", UNARY, ids=_ids(UNARY))
def test_unary_rule_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_rrule(primitive, *unary_args(rng, domain, shape, dtype))


@pytest.mark.parametrize("shape, dtype", UNARY_SHAPES)
@pytest.mark.parametrize("name, primitive, fn, domain", UNARY, ids=_ids(UNARY))
def test_unary_call_through_compiler_matches_finite_differences(rng, name, primitive, fn, domain, shape, dtype):
    check_grad(fn, *unary_args(rng, domain, shape, dtype))


# ---- binary, with broadcasting ------------------------------------------------------------------

@pytest.mark.parametrize("shapes, dtype", BINARY_SHAPES)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", BINARY, ids=_ids(BINARY))
def test_binary_rule_matches_finite_differences(rng, name, primitive, fn, domain_a, domain_b, shapes, dtype):
    check_rrule(primitive, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


@pytest.mark.parametrize("shapes, dtype", BINARY_SHAPES)
@pytest.mark.parametrize("name, primitive, fn, domain_a, domain_b", BINARY, ids=_ids(BINARY))
def test_binary_call_through_compiler_matches_finite_differences(
    rng, name, primitive, fn, domain_a, domain_b, shapes, dtype
):
    check_grad(fn, *binary_args(rng, (domain_a, domain_b), shapes, dtype))


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


# ---- ties of maximum and minimum ----------------------------------------------------------------

@pytest.mark.parametrize("fn", [call_np_maximum, call_np_minimum], ids=["np.maximum", "np.minimum"])
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


def test_maximum_rule_splits_cotangent_equally_at_ties():
    x = np.array([0.5, -1.0])
    _, back = lookup(np.maximum).rrule(x, x.copy())
    a_bar, b_bar = back(np.array([1.0, 3.0]))
    np.testing.assert_allclose(a_bar, [0.5, 1.5])
    np.testing.assert_allclose(b_bar, [0.5, 1.5])


def test_maximum_tie_with_broadcast_scalar_sums_halves():
    # relu-like: maximum(x, 0.0) with x containing zeros; the scalar gets half of each tie.
    x = np.array([0.0, 2.0, -1.0, 0.0])
    _, back = adjoint.pullback(call_np_maximum, x, 0.0)
    x_bar, zero_bar = back(np.ones(4))
    np.testing.assert_allclose(x_bar, [0.5, 1.0, 0.0, 0.5])
    assert zero_bar == pytest.approx(0.5 + 0.0 + 1.0 + 0.5)


# ---- where ------------------------------------------------------------------------------------

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



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 13. x ** 0 at x = 0: the partial is `0 * x ** -1` = 0 * inf = nan.
def _power_zero(x):
    return np.sum(x ** 0)


def test_power_zero_at_zero():
    # expected: gradient 0; actual: nan
    with np.errstate(all="ignore"):
        check_grad(_power_zero, np.array([0.0, 1.0]))


# ---- clip: the cotangent goes to whichever of x and its bounds the result is ------------------------

X_FOR_CLIP = np.array([[-2.0, -0.3, 0.1], [0.45, 0.9, 3.0]])

CLIP_CASES = [
    pytest.param((-0.5, 0.5), {}, id="float-bounds"),
    pytest.param((np.array([-1.0, 0.0, 0.2]), np.array([[0.4], [0.5]])), {}, id="broadcast-array-bounds"),
    pytest.param((None, 0.5), {}, id="no-lower-bound"),
    pytest.param((-0.5, None), {}, id="no-upper-bound"),
    pytest.param((), {"a_min": -0.5, "a_max": 0.5}, id="keyword-bounds"),
    pytest.param((0.2, -0.5), {}, id="crossed-bounds"),
]


@pytest.mark.parametrize("bounds, kwargs", CLIP_CASES)
def test_clip_rule_matches_finite_differences(bounds, kwargs):
    check_rrule(np.clip, X_FOR_CLIP, *bounds, **kwargs)
    check_rrule(np.clip, X_FOR_CLIP.astype(np.float32), *bounds, **kwargs)


def test_clip_gives_ties_to_x():
    _, back = lookup(np.clip).rrule(np.array([0.0, 1.0, 2.0]), 1.0, 1.5)
    x_bar, low_bar, high_bar = back(np.ones(3))
    np.testing.assert_array_equal(x_bar, [0.0, 1.0, 0.0])
    assert (low_bar, high_bar) == (1.0, 1.0)


def clip_then_square(x):
    return np.sum(np.clip(x, -0.5, 0.5) ** 2)


def test_clip_through_compiler_matches_finite_differences():
    check_grad(clip_then_square, X_FOR_CLIP)
