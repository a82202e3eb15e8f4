"""adjoint.testing: the checker passes correct gradients and catches wrong ones."""

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad, check_rrule


def wrong_primitive(x):
    return np.sin(x)


@adjoint.rrule(wrong_primitive)
def wrong_primitive_rrule(x):
    def wrong_primitive_pullback(g):
        return (g * np.sin(x),)  # should be cos

    return np.sin(x), wrong_primitive_pullback


def wrong_shape(x):
    return 2.0 * x


@adjoint.rrule(wrong_shape)
def wrong_shape_rrule(x):
    def wrong_shape_pullback(g):
        return (np.sum(g),)

    return 2.0 * x, wrong_shape_pullback


def mutating(x):
    return x * 1.0


@adjoint.rrule(mutating)
def mutating_rrule(x):
    def mutating_pullback(g):
        x[...] = 0.0
        return (g,)

    return x * 1.0, mutating_pullback


def test_correct_gradient_passes():
    check_grad(lambda x, y: np.sum(np.sin(x) * y), np.array([0.1, 0.2]), np.array([3.0, 4.0]))


def test_wrong_rule_is_caught_and_argument_named():
    with pytest.raises(AssertionError, match="argument 0"):
        check_rrule(wrong_primitive, np.array([0.3, 1.1]))


def test_wrong_rule_is_caught_through_the_compiler():
    def uses_it(x):
        return np.sum(wrong_primitive(x))

    with pytest.raises(AssertionError, match="finite differences"):
        check_grad(uses_it, np.array([0.3, 1.1]))


def test_wrong_cotangent_shape_is_caught():
    # registered through adjoint.rrule, the rule's own check refuses it first
    with pytest.raises((AssertionError, adjoint.AdjointError), match="shape"):
        check_rrule(wrong_shape, np.array([0.3, 1.1]))


def test_mutation_is_caught():
    with pytest.raises(AssertionError, match="mutated"):
        check_rrule(mutating, np.array([0.3, 1.1]))


def test_missing_rule_is_reported():
    with pytest.raises(AssertionError, match="no rule"):
        check_rrule(lambda x: x, 1.0)


def conjugated(z):
    return 3.0 * z


@adjoint.rrule(conjugated)
def conjugated_rrule(z):
    def conjugated_pullback(g):
        return (np.conj(g) * 3.0,)  # the other convention: JAX's takes no conjugate

    return 3.0 * z, conjugated_pullback


def scaled_by(x, n):
    return x * n


@adjoint.rrule(scaled_by)
def scaled_by_rrule(x, n):
    def scaled_by_pullback(g):
        return g * n, g * x  # `n` is an int: it must get None

    return x * n, scaled_by_pullback


def wrong_dtype(x):
    return x * 2.0


@adjoint.rrule(wrong_dtype)
def wrong_dtype_rrule(x):
    def wrong_dtype_pullback(g):
        return (np.asarray(g * 2.0, dtype=np.float64),)

    return x * 2.0, wrong_dtype_pullback


def wrong_value(x):
    return np.exp(x)


@adjoint.rrule(wrong_value)
def wrong_value_rrule(x):
    def wrong_value_pullback(g):
        return (g * np.exp(x),)

    return np.exp(x) + 1.0, wrong_value_pullback


def test_a_conjugated_complex_pullback_is_caught():
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    with pytest.raises(AssertionError, match="argument 0"):
        check_rrule(conjugated, z)


def test_a_complex_rule_in_jax_convention_passes():
    check_rrule(np.multiply, np.array([1.0 + 2.0j, 0.5 - 1j]), np.array([0.3 - 0.2j, 2.0 + 0.1j]))


def test_a_cotangent_for_an_integer_argument_is_caught():
    with pytest.raises(AssertionError, match="argument 1: int 3 carries no gradient"):
        check_rrule(scaled_by, np.array([0.3, 1.1]), 3)


def test_a_float32_argument_given_a_float64_cotangent_is_caught():
    with pytest.raises(AssertionError, match="dtype float64 differs"):
        check_rrule(wrong_dtype, np.array([0.3, 1.1], dtype=np.float32))


def test_a_rule_whose_value_differs_from_the_primitive_is_caught():
    with pytest.raises(AssertionError, match="value differs"):
        check_rrule(wrong_value, np.array([0.3, 1.1]))
