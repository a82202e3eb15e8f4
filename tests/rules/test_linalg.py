"""Rules of adjoint/rules/linalg.py (matmul, `@`, dot) for every combination of dimensions."""

import operator

import numpy as np
import pytest

from adjoint.testing import check_grad, check_rrule

MATMUL_PRIMITIVES = [pytest.param(operator.matmul, id="operator.matmul"), pytest.param(np.matmul, id="np.matmul")]

MATMUL_SHAPES = [
    pytest.param((2, 3), (3, 4), np.float64, id="(2,3)@(3,4)"),
    pytest.param((3,), (3, 4), np.float64, id="(3,)@(3,4)"),
    pytest.param((2, 3), (3,), np.float64, id="(2,3)@(3,)"),
    pytest.param((3,), (3,), np.float64, id="(3,)@(3,)"),
    pytest.param((5, 2, 3), (3, 4), np.float64, id="(5,2,3)@(3,4)"),
    pytest.param((5, 2, 3), (5, 3, 4), np.float64, id="(5,2,3)@(5,3,4)"),
    pytest.param((2, 3), (5, 3, 4), np.float64, id="(2,3)@(5,3,4)"),
    pytest.param((5, 2, 3), (3,), np.float64, id="(5,2,3)@(3,)"),
    pytest.param((2, 3), (3, 4), np.float32, id="(2,3)@(3,4)-float32"),
    pytest.param((5, 2, 3), (3, 4), np.float32, id="(5,2,3)@(3,4)-float32"),
]

# None is a Python float; () a 0-d array.
DOT_SHAPES = [
    pytest.param(None, (3,), np.float64, id="float.(3,)"),
    pytest.param((), (2, 3), np.float64, id="0d.(2,3)"),
    pytest.param((2, 3), (), np.float64, id="(2,3).0d"),
    pytest.param((3,), (3,), np.float64, id="(3,).(3,)"),
    pytest.param((2, 3), (3,), np.float64, id="(2,3).(3,)"),
    pytest.param((3,), (3, 4), np.float64, id="(3,).(3,4)"),
    pytest.param((2, 3), (3, 4), np.float64, id="(2,3).(3,4)"),
    pytest.param((2, 3, 4), (4, 5), np.float64, id="(2,3,4).(4,5)"),
    pytest.param((2, 3, 4), (5, 4, 6), np.float64, id="(2,3,4).(5,4,6)"),
    pytest.param((3,), (5, 3, 4), np.float64, id="(3,).(5,3,4)"),
    pytest.param((2, 3), (3, 4), np.float32, id="(2,3).(3,4)-float32"),
    pytest.param((2, 3, 4), (5, 4, 6), np.float32, id="(2,3,4).(5,4,6)-float32"),
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case.values[0] for case in MATMUL_PRIMITIVES] + [np.dot]


def matmul_operator(a, b):
    return a @ b


def call_np_matmul(a, b):
    return np.matmul(a, b)


def call_np_dot(a, b):
    return np.dot(a, b)


def tanh_layer_loss(x, w):
    return np.sum(np.tanh(x @ w) ** 2)


def operand(rng, shape, dtype):
    if shape is None:
        return float(rng.normal())
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("shape_a, shape_b, dtype", MATMUL_SHAPES)
@pytest.mark.parametrize("primitive", MATMUL_PRIMITIVES)
def test_matmul_rule_matches_finite_differences(rng, primitive, shape_a, shape_b, dtype):
    check_rrule(primitive, operand(rng, shape_a, dtype), operand(rng, shape_b, dtype))


@pytest.mark.parametrize("shape_a, shape_b, dtype", MATMUL_SHAPES)
@pytest.mark.parametrize("fn", [matmul_operator, call_np_matmul], ids=["a@b", "np.matmul(a,b)"])
def test_matmul_through_compiler_matches_finite_differences(rng, fn, shape_a, shape_b, dtype):
    check_grad(fn, operand(rng, shape_a, dtype), operand(rng, shape_b, dtype))


@pytest.mark.parametrize("shape_a, shape_b, dtype", DOT_SHAPES)
def test_dot_rule_matches_finite_differences(rng, shape_a, shape_b, dtype):
    check_rrule(np.dot, operand(rng, shape_a, dtype), operand(rng, shape_b, dtype))


@pytest.mark.parametrize("shape_a, shape_b, dtype", DOT_SHAPES)
def test_dot_through_compiler_matches_finite_differences(rng, shape_a, shape_b, dtype):
    check_grad(call_np_dot, operand(rng, shape_a, dtype), operand(rng, shape_b, dtype))


def test_matmul_inside_a_composite_loss_matches_finite_differences(rng):
    check_grad(tanh_layer_loss, rng.normal(size=(5, 3)), rng.normal(size=(3, 2)))
