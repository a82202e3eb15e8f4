"""compiler.inline: rules stitched into generated code, and the fallback to calling them."""

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.compiler import inline
from adjoint.testing import check_grad


@pytest.mark.parametrize("primitive", [np.sin, np.tanh, np.maximum, np.sum, np.mean, np.max, np.where, np.dot])
def test_builtin_rules_are_inlinable(primitive):
    assert inline.plan_for(registry.lookup(primitive)) is not None


def test_elementwise_rule_becomes_an_expression():
    def f(x):
        return np.tanh(x)

    assert "x_bar = f_bar * (1 - f ** 2)" in adjoint.source(f)


def test_binary_rule_unbroadcasts_only_against_arrays():
    def f(x, b):
        return x * b + x * 2.0

    text = adjoint.source(f)
    assert "adj.unbroadcast(f_mul_bar * b, x)" in text
    assert "f_mul_1_bar * 2.0" in text and "unbroadcast(f_mul_1_bar" not in text


def test_keyword_arguments_equal_to_defaults_are_dropped():
    def f(x):
        return np.sum(x, axis=1)

    text = adjoint.source(f)
    assert "x_bar = adj.unreduce(f_bar, x, axis=1)" in text


def test_unsupported_keyword_is_reported_at_the_call():
    def f(x):
        return np.sum(x, out=None)

    with pytest.raises(adjoint.TransformError, match="`out=`"):
        adjoint.grad(f)(np.ones(2))


def softsign(x):
    return x / (1 + np.abs(x))


def _softsign_derivative(x):
    return 1 / (1 + np.abs(x)) ** 2


@adjoint.rrule(softsign)
def softsign_rrule(x):
    def softsign_pullback(g):
        if np.ndim(g) > 5:  # a branch makes this rule not inlinable: it is called instead
            raise ValueError
        return (g * _softsign_derivative(x),)

    return softsign(x), softsign_pullback


def test_rule_of_other_shape_is_called_with_its_pullback():
    def f(x):
        return np.sum(softsign(x))

    text = adjoint.source(f)
    assert "softsign_rrule(x)" in text and "softsign_pullback(" in text
    check_grad(f, np.array([0.3, -1.2]))


def cube(x):
    return x ** 3


@adjoint.rrule(cube)
def cube_rrule(x):
    square = x * x

    def cube_pullback(g):
        return (3 * g * square,)

    return cube(x), cube_pullback


def test_user_rule_in_inlinable_shape_is_stitched_with_derived_names():
    def f(x):
        return cube(x)

    text = adjoint.source(f)
    assert "f_square = x * x" in text
    assert "x_bar = 3 * f_bar * f_square" in text
    assert adjoint.grad(f)(2.0) == pytest.approx(12.0)



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 1. A user variable named `g` collides with the cotangent parameter of the inlined rules.
def _uses_g(x, g):
    return np.sum(x * g)


def test_variable_named_g_gets_the_right_gradient():
    # expected: check passes (d/dx = g); actual: silently wrong, the pullback computes `bar * bar`
    check_grad(_uses_g, RNG.normal(size=3), RNG.normal(size=3))


# 9. np.full(3, x): the unbroadcast back to the fill value is dropped as "needless".
def _full_with_int_shape(x):
    return np.sum(np.full(3, x))


def test_full_with_an_int_shape():
    # expected: 3.0; actual: TypeError (a shape-(3,) cotangent for the float x)
    check_grad(_full_with_int_shape, 1.5)
