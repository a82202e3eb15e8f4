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
    with pytest.raises(AssertionError, match="shape"):
        check_rrule(wrong_shape, np.array([0.3, 1.1]))


def test_mutation_is_caught():
    with pytest.raises(AssertionError, match="mutated"):
        check_rrule(mutating, np.array([0.3, 1.1]))


def test_missing_rule_is_reported():
    with pytest.raises(AssertionError, match="no rule"):
        check_rrule(lambda x: x, 1.0)
