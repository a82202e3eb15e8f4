"""Custom rules for users' functions: `adjoint.rrule` and `adjoint.frule` override how adjoint
differentiates a Python function, in reverse mode, forward mode and second derivatives."""

import pathlib
import re
import runpy

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

import adjoint
from adjoint import frules
from adjoint.testing import check_grad

BIG = np.array([1000.0, 1001.0, 998.5])  # np.exp overflows: only a stable rule gets these right
SMALL = np.array([0.3, -0.7, 1.2])
V = np.array([1.0, -0.5, 2.0])


# ---- a numerically stable override: the rule's value is not the function's --------------------

@adjoint.differentiable
def lse(x):
    return np.log(np.sum(np.exp(x)))  # overflows for large x


@adjoint.rrule(lse)
def lse_rrule(x):
    m = np.max(x)
    y = m + np.log(np.sum(np.exp(x - m)))

    def lse_pullback(g):
        return (g * np.exp(x - y),)

    return y, lse_pullback


def squared_lse(x):
    return lse(x * 2) ** 2


def squared_lse_gradient(x):  # d/dx lse(2x)^2, by hand
    return 4 * logsumexp(2 * x) * softmax(2 * x)


def squared_lse_hessian(x):
    s, p = logsumexp(2 * x), softmax(2 * x)
    return 8 * np.outer(p, p) + 8 * s * (np.diag(p) - np.outer(p, p))


def test_the_rules_value_and_gradient_are_used_where_the_function_overflows():
    value, gradient = adjoint.value_and_grad(squared_lse)(BIG)
    assert value == pytest.approx(logsumexp(2 * BIG) ** 2)
    np.testing.assert_allclose(gradient, squared_lse_gradient(BIG), rtol=1e-12)


def test_a_rule_computing_its_own_value_is_called_and_reads_as_such():
    text = adjoint.source(squared_lse)
    assert re.search(r"(\w+), lse_pullback = lse_rrule\(squared_lse_mul\)", text)
    assert "squared_lse_mul_bar = lse_pullback(" in text
    assert "lse(squared_lse_mul)" not in text and "np.max" not in text  # nor a dead copy of its math


def test_the_gradient_through_a_stable_rule_matches_finite_differences():
    check_grad(squared_lse, SMALL)


def test_forward_mode_derives_its_rule_from_the_pullback_with_the_rules_value():
    assert frules.lookup(lse).kind == frules.TRANSPOSED
    value, tangent = adjoint.jvp(squared_lse, (BIG,), (V,))
    assert value == pytest.approx(logsumexp(2 * BIG) ** 2)
    assert tangent == pytest.approx(squared_lse_gradient(BIG) @ V, rel=1e-12)
    value, tangent = adjoint.jvp(lse, (BIG,), (V,))
    assert value == pytest.approx(logsumexp(BIG)) and tangent == pytest.approx(softmax(BIG) @ V)


@pytest.mark.parametrize("x", [SMALL, BIG])
def test_hvp_through_a_function_with_a_stable_rule(x):
    np.testing.assert_allclose(adjoint.hvp(squared_lse, x, V), squared_lse_hessian(x) @ V, rtol=1e-9)


def test_hessian_through_a_function_with_a_stable_rule():
    np.testing.assert_allclose(adjoint.hessian(squared_lse)(BIG), squared_lse_hessian(BIG), rtol=1e-9)


def test_hessian_of_a_function_with_a_rule_uses_the_rule():
    p = softmax(BIG)
    np.testing.assert_allclose(adjoint.hessian(lse)(BIG), np.diag(p) - np.outer(p, p), atol=1e-12)


# ---- forward rules: each mode uses its own rule ------------------------------------------------

ran = []


@adjoint.differentiable
def stable_lse(x):
    return np.log(np.sum(np.exp(x)))


@adjoint.rrule(stable_lse)
def stable_lse_rrule(x):
    ran.append("rrule")
    y = logsumexp(x)

    def stable_lse_pullback(g):
        return (g * np.exp(x - y),)

    return y, stable_lse_pullback


@adjoint.frule(stable_lse)
def stable_lse_frule(primals, tangents):
    ran.append("frule")
    (x,), (dx,) = primals, tangents
    y = logsumexp(x)
    return y, np.sum(np.exp(x - y) * dx)


def uses_stable_lse(x):
    return 3.0 * stable_lse(x - 1.0)


def test_a_function_with_both_rules_uses_each_in_its_mode():
    ran.clear()
    value, tangent = adjoint.jvp(uses_stable_lse, (BIG,), (V,))
    assert ran == ["frule"]
    assert value == pytest.approx(3 * logsumexp(BIG - 1)) and tangent == pytest.approx(3 * softmax(BIG) @ V)
    ran.clear()
    np.testing.assert_allclose(adjoint.grad(uses_stable_lse)(BIG), 3 * softmax(BIG), rtol=1e-12)
    assert ran == ["rrule"]
    ran.clear()
    assert adjoint.jvp(stable_lse, (BIG,), (V,))[1] == pytest.approx(softmax(BIG) @ V)
    assert ran == ["frule"]


def scaled_lse_closure(scale):
    def scaled_lse(x):
        return np.log(np.sum(np.exp(scale * x)))

    return scaled_lse


scaled_lse = scaled_lse_closure(2.0)


@adjoint.frule(scaled_lse)
def scaled_lse_frule(primals, tangents):
    (x,), (dx,) = primals, tangents
    return logsumexp(2.0 * x), 2.0 * softmax(2.0 * x) @ dx


class Model:
    def __init__(self, scale):
        self.scale = scale

    def lse(self, x):
        return np.log(np.sum(np.exp(self.scale * x)))


@adjoint.frule(Model.lse)
def model_lse_frule(primals, tangents):
    (model, x), (_, dx) = primals, tangents
    return logsumexp(model.scale * x), model.scale * softmax(model.scale * x) @ dx


def uses_closure(x):
    return scaled_lse(x) * 3.0


def uses_method(x, model):
    return model.lse(x) * 3.0


@pytest.mark.parametrize("f, args, scale", [
    (uses_closure, (BIG,), 2.0),
    (uses_method, (BIG, Model(2.0)), 2.0),
])
def test_a_forward_rule_overrides_a_closure_or_a_method(f, args, scale):
    tangents = (V,) + (None,) * (len(args) - 1)
    value, tangent = adjoint.jvp(f, args, tangents)
    assert value == pytest.approx(3 * logsumexp(scale * BIG))
    assert tangent == pytest.approx(3 * scale * softmax(scale * BIG) @ V)


# ---- rules in loops, rebound functions, None cotangents, keyword arguments ---------------------

def lse_in_loops(x):
    total = 0.0
    for i in range(3):
        total = total + lse(x * i)
    k = 0
    while k < 2:
        x = x - 0.5 * lse(x)
        k += 1
    return total + np.sum(x)


def test_a_rule_called_in_loops():
    check_grad(lse_in_loops, SMALL)
    assert np.all(np.isfinite(adjoint.grad(lse_in_loops)(BIG)))


def softplus(x):
    return np.log1p(np.exp(x))


@adjoint.rrule(softplus)
def softplus_rrule(x):
    def softplus_pullback(g):
        return (g * 100.0,)  # deliberately not softplus's derivative: shows when the rule is used

    return softplus(x), softplus_pullback


def uses_softplus(x):
    return np.sum(softplus(x))


def test_a_function_rebound_after_its_rule_was_registered_is_differentiated_as_the_new_one():
    global softplus
    np.testing.assert_allclose(adjoint.grad(uses_softplus)(SMALL), 100.0)
    ruled = softplus

    def softplus(x):  # the rule belongs to the old function: the new one is read as code
        return x ** 3

    try:
        np.testing.assert_allclose(adjoint.grad(uses_softplus)(SMALL), 3 * SMALL ** 2)
    finally:
        softplus = ruled
    np.testing.assert_allclose(adjoint.grad(uses_softplus)(SMALL), 100.0)


def scale_by(x, s):
    return x * s


@adjoint.rrule(scale_by)
def scale_by_rrule(x, s):
    y = x * s

    def scale_by_pullback(g):
        return g * s, None  # None: no gradient for s through here, read as zeros

    return y, scale_by_pullback


def scaled_sum(x, s):
    return np.sum(scale_by(x, s)) + s


def test_a_pullback_returning_none_gives_zeros():
    x_bar, s_bar = adjoint.grad(scaled_sum, wrt=(0, 1))(SMALL, 2.0)
    np.testing.assert_allclose(x_bar, 2.0)
    assert s_bar == 1.0
    assert adjoint.jvp(scaled_sum, (SMALL, 2.0), (V, 1.0))[1] == pytest.approx(2.0 * np.sum(V) + 1.0)


def shifted_lse(x, shift=0.0, *, temperature=1.0):
    return temperature * np.log(np.sum(np.exp((x - shift) / temperature)))


@adjoint.rrule(shifted_lse)
def shifted_lse_rrule(x, shift=0.0, *, temperature=1.0):
    y = temperature * logsumexp((x - shift) / temperature)

    def shifted_lse_pullback(g):
        p = softmax((x - shift) / temperature)
        return g * p, -g

    return y, shifted_lse_pullback


def uses_shifted_lse(x, s):
    return shifted_lse(x, s, temperature=0.5) + shifted_lse(x, shift=s) * shifted_lse(x)


def test_a_rule_with_keyword_arguments():
    check_grad(uses_shifted_lse, SMALL, 0.2)
    x_bar, s_bar = adjoint.grad(uses_shifted_lse, wrt=(0, 1))(BIG, 0.2)
    a, b = logsumexp(BIG - 0.2), logsumexp(BIG)
    np.testing.assert_allclose(x_bar, softmax((BIG - 0.2) / 0.5) + softmax(BIG - 0.2) * b + a * softmax(BIG))
    assert s_bar == pytest.approx(-1 - b)


def test_a_keyword_argument_of_a_rule_is_not_differentiated():
    with pytest.raises(adjoint.TransformError, match="keyword argument `temperature=`"):
        adjoint.grad(lambda x, t: shifted_lse(x, temperature=t), wrt=1)(SMALL, 0.5)


# ---- a rule that calls differentiable functions: the implicit function theorem ----------------

@pytest.fixture(scope="module")
def solver():
    return runpy.run_path(str(pathlib.Path(__file__).parent.parent / "examples" / "implicit_solver.py"))


def test_the_implicit_gradient_of_a_fixed_point_matches_finite_differences(solver, rng):
    check_grad(solver["loss"], rng.normal(size=5), rtol=1e-6, atol=1e-8)


def test_the_implicit_gradient_matches_differentiating_the_unrolled_loop(solver, rng):
    theta = rng.normal(size=5)
    implicit = adjoint.grad(solver["loss"])(theta)
    np.testing.assert_allclose(implicit, adjoint.grad(solver["unrolled_loss"])(theta), rtol=1e-9, atol=1e-10)
    assert "fixed_point_rrule(" in adjoint.source(solver["loss"])  # the rule, not the loop
