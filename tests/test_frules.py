"""adjoint.frules: the kinds of forward rules, and what their derived rules must get right."""

import math

import numpy as np
import pytest
import scipy.special

import adjoint
from adjoint import frules
from adjoint.testing import check_frule

X = np.array([0.3, 1.7, -2.2, 0.9])
V = np.array([1.0, 0.5, 2.5, -1.0])


def tangent(f, *args, tangents):
    return adjoint.jvp(f, args, tangents)[1]


def test_the_kinds_of_the_built_in_rules():
    assert frules.lookup(np.tanh).kind == frules.ELEMENTWISE
    assert frules.lookup(np.sum).kind == frules.LINEAR
    assert frules.lookup(np.matmul).kind == frules.MULTILINEAR
    assert frules.lookup(np.linalg.cholesky).kind == frules.RULE
    assert frules.lookup(X.sum) is frules.lookup(np.ndarray.sum)  # a bound method: its function's


@pytest.mark.parametrize("f, expected", [
    (lambda s: np.linspace(s, stop=10.0, num=3), [1.0, 0.5, 0.0]),
    (lambda s: np.insert(np.zeros(2) + s, 1, values=5.0), [1.0, 0.0, 1.0]),
    (lambda s: np.append(np.zeros(2) + s, values=5.0), [1.0, 1.0, 0.0]),
    (lambda s: np.select([np.array([1.0, -1.0]) > 0], [np.ones(2) * s], default=1.0), [1.0, 0.0]),
])
def test_an_operand_of_a_linear_function_passed_by_keyword_is_a_constant(f, expected):
    np.testing.assert_allclose(tangent(f, 1.0, tangents=(1.0,)), expected)


@pytest.mark.parametrize("f", [
    lambda x: x.astype(int).astype(float),
    lambda x: x.cumsum(dtype=int) * 1.0,
    lambda x: x.astype(bool) * 1.0,
    lambda x: np.sum(np.insert(np.arange(4), 1, x[0]) * 1.0),
])
def test_an_integer_result_does_not_move(f):
    result = tangent(f, X, tangents=(V,))
    np.testing.assert_array_equal(result, 0.0)
    assert np.asarray(result).dtype.kind == "f"


def test_arithmetic_on_a_list_is_refused_as_in_reverse_mode():
    for f, args in [(lambda p: np.mean(np.add(p, p)), ([0.3, 0.4],)), (np.subtract, ([0.3, 0.4], [0.1, 0.1]))]:
        with pytest.raises(adjoint.AdjointError, match="a list was used in arithmetic"):
            adjoint.jvp(f, args, tuple([1.0, 2.0] for _ in args))


def test_array_methods_and_attributes_on_numpy_scalars():
    check_frule(np.ndarray.sum, np.float64(2.0))
    check_frule(np.ndarray.T, np.float64(2.0))
    assert frules.caller(np.ndarray.sum)(np.float64(2.0)) == 2.0


@pytest.mark.parametrize("f", [
    lambda x: x.item(2) ** 3,
    lambda x: scipy.special.logsumexp(np.ones(4), b=x ** 2),
    lambda x: math.dist([x[0], x[1]], [x[2], 0.0]) ** 3,
])
def test_second_derivatives_through_rules_whose_pullbacks_are_read_again(f):
    gradient = adjoint.grad(f)
    expected = (gradient(X + 1e-6 * V) - gradient(X - 1e-6 * V)) / 2e-6
    np.testing.assert_allclose(adjoint.hvp(f, X, V), expected, rtol=1e-6, atol=1e-8)


def test_a_users_forward_rule_gets_zeros_for_a_none_tangent():
    def clipped(x):
        return np.minimum(x, 1.0)

    @adjoint.frule(clipped)
    def clipped_frule(primals, tangents):
        (x,), (dx,) = primals, tangents
        return clipped(x), None  # None: read as zeros

    value, result = adjoint.jvp(lambda x: clipped(x) * 2.0, (X,), (V,))
    np.testing.assert_array_equal(result, np.zeros(4))
