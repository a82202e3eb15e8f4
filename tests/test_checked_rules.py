"""Users' rules where they meet the rest of adjoint (`adjoint/checked_rules.py` checks them as they
run): forward rules derived from pullbacks that branch on the cotangent, derivatives of `jvp`
through functions with rules, tuple values, implicit parameters, misshapen cotangents, bound
methods, and what a refused random draw says."""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

import adjoint
from adjoint.testing import check_grad

BIG = np.array([1000.0, 1001.0, 998.5])
SMALL = np.array([0.3, -1.2, 0.8])


def lse(x):
    return np.log(np.sum(np.exp(x)))


@adjoint.rrule(lse)
def lse_rrule(x):
    m = np.max(x)
    y = m + np.log(np.sum(np.exp(x - m)))

    def lse_pullback(g):
        return (g * np.exp(x - y),)

    return y, lse_pullback


# ---- pullbacks whose code branches on the cotangent; second derivatives; refusals ----------------

A = np.array([[3.0, 1.0], [0.5, 2.0]])


def solve(b):
    return np.linalg.solve(A, b)


@adjoint.rrule(solve)
def solve_rrule(b):
    x = np.linalg.solve(A, b)

    def solve_pullback(g):
        if not np.any(g):  # a shortcut at a zero cotangent
            return (np.zeros_like(b),)
        u = np.zeros_like(g)  # A^T u = g by Jacobi iteration, until the residual is small
        while np.max(np.abs(A.T @ u - g)) > 1e-14:
            u = u + (g - A.T @ u) / np.diag(A)
        return (u,)

    return x, solve_pullback


def test_a_forward_rule_derived_from_a_pullback_that_branches_on_its_cotangent():
    v = np.array([1.0, -2.0])
    _, tangent = adjoint.jvp(solve, (np.ones(2),), (v,))
    np.testing.assert_allclose(tangent, np.linalg.solve(A, v), rtol=1e-12)
    loss = lambda b: np.sum(solve(b) ** 2)  # noqa: E731
    inverse = np.linalg.inv(A)
    np.testing.assert_allclose(adjoint.hvp(loss, np.ones(2), v), 2 * inverse.T @ inverse @ v, rtol=1e-10)


def test_a_derivative_of_jvp_through_a_function_with_a_rule_is_refused_not_taken_from_its_code():
    with pytest.raises(adjoint.AdjointError, match="would differentiate its forward rule"):
        adjoint.grad(lambda x: adjoint.jvp(lse, (x,), (np.ones(3),))[1])(BIG)
    with pytest.raises(adjoint.AdjointError, match="would differentiate its forward rule"):
        adjoint.grad(lambda x: adjoint.jvp(lambda y: lse(y) * 2.0, (x,), (np.ones(3),))[1])(BIG)


def cubed(x):
    return x ** 3


@adjoint.frule(cubed)
def cubed_frule(primals, tangents):
    return primals[0] ** 3, 3 * primals[0] ** 2 * tangents[0]


def test_forward_over_forward_through_a_forward_rule_of_yours():
    x, w = np.array([0.3, -0.7]), np.array([1.0, 2.0])
    inner = lambda x: np.sum(adjoint.jvp(lambda y: np.sum(cubed(y) * 2.0), (x,), (w,))[1])  # noqa: E731
    assert adjoint.jvp(inner, (x,), (w,))[1] == pytest.approx(np.sum(12 * x * w * w))


def sin_cos(x):
    return np.sin(x), np.cos(x)


@adjoint.rrule(sin_cos)
def sin_cos_rrule(x):
    def sin_cos_pullback(g):
        return (g[0] * np.cos(x) - g[1] * np.sin(x),)

    return sin_cos(x), sin_cos_pullback


def test_an_inlinable_rule_with_a_tuple_value_of_which_one_item_is_used():
    check_grad(lambda x: np.sum(sin_cos(x)[0] ** 2), SMALL)


W_HIDDEN = np.array([1.0, 2.0, 3.0])


def hidden_layer(x):
    return np.tanh(W_HIDDEN * x)


@adjoint.rrule(hidden_layer)
def hidden_layer_rrule(x):
    y = np.tanh(W_HIDDEN * x)

    def hidden_layer_pullback(g):
        return (g * (1 - y ** 2) * W_HIDDEN,)

    return y, hidden_layer_pullback


def test_a_function_with_a_rule_reading_implicit_parameters_is_refused():
    def loss():
        return np.sum(hidden_layer(np.array([0.5, -0.2, 0.1])) ** 2)

    with pytest.raises(adjoint.AdjointError, match="reads the parameters `W_HIDDEN`"):
        adjoint.gradient(loss, adjoint.params(W_HIDDEN))


def test_a_rule_returning_a_misshapen_cotangent_and_a_rule_declared_non_differentiable_are_refused():
    def misshapen(x):
        return np.sum(x)

    @adjoint.rrule(misshapen)
    def misshapen_rrule(x):
        return np.sum(x), lambda g: (g,)  # a scalar for a vector argument

    with pytest.raises(adjoint.AdjointError, match=r"shape \(\) for argument 0, of shape \(3,\)"):
        adjoint.grad(lambda x: misshapen(x) * 2.0)(np.ones(3))
    with pytest.raises(adjoint.AdjointError, match="cannot also be non-differentiable"):
        adjoint.non_differentiable(misshapen)


class Scorer:
    def score(self, x):
        return lse(x)


@adjoint.rrule(Scorer.score)
def score_rrule(self, x):
    return lse_rrule(x)


@adjoint.frule(Scorer.score)
def score_frule(primals, tangents):
    (_, x), (_, dx) = primals, tangents
    return logsumexp(x), softmax(x) @ dx


def test_jvp_of_a_bound_method_with_rules():
    scorer, v = Scorer(), np.array([1.0, 0.0, -1.0])
    value, tangent = adjoint.jvp(scorer.score, (BIG,), (v,))
    assert value == pytest.approx(logsumexp(BIG)) and tangent == pytest.approx(softmax(BIG) @ v)


def test_a_random_draw_with_a_differentiable_parameter_says_how_to_write_it():
    rng = np.random.default_rng(0)
    with pytest.raises(adjoint.AdjointError, match=r"mu \+ sigma \* rng.standard_normal"):
        adjoint.grad(lambda mu: np.sum(rng.normal(mu)))(np.zeros(2))
    with pytest.raises(adjoint.TransformError, match=r"mu \+ sigma \* rng.standard_normal"):
        adjoint.grad(lambda mu: np.sum(GLOBAL_RNG.normal(mu)))(np.zeros(2))  # found before it runs


GLOBAL_RNG = np.random.default_rng(0)
