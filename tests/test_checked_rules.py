"""Users' rules where they meet the rest of adjoint (`adjoint/checked_rules.py` checks them as they
run): forward rules derived from pullbacks that branch on the cotangent, derivatives of `jvp`
through functions with rules, tuple values, implicit parameters, misshapen cotangents, bound
methods, and what a refused random draw says."""

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

import adjoint
from adjoint.testing import check_grad

from test_custom_rules import BIG, lse, lse_rrule

SMALL = np.array([0.3, -1.2, 0.8])


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

    with pytest.raises(adjoint.AdjointError, match="reaches parameters through `W_HIDDEN`"):
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


# ---- second review ---------------------------------------------------------------------------------

def square(x):
    return np.sin(x)  # its rules say it is x ** 2: the rules must be the ones used


@adjoint.rrule(square)
def square_rrule(x):
    return x ** 2, lambda g: (2.0 * x * g,)


@adjoint.frule(square)
def square_frule(primals, tangents):
    return primals[0] ** 2, 2.0 * primals[0] * tangents[0]


class Squarer:
    def of(self, x):
        return np.sin(x)


@adjoint.rrule(Squarer.of)
def squarer_of_rrule(self, x):
    return x ** 2, lambda g: (None, 2.0 * x * g)


@adjoint.frule(Squarer.of)
def squarer_of_frule(primals, tangents):
    return primals[1] ** 2, 2.0 * primals[1] * tangents[1]


SQUARER = Squarer()


def test_second_derivatives_through_a_partial_or_a_method_use_the_rule():
    import functools

    through_partial = functools.partial(square)  # (a partial with keywords is refused under second derivatives)
    held = SQUARER.of
    for f in (
        lambda x: through_partial(x) * x, lambda x: Squarer().of(x) * x, lambda x: held(x) * x,
        lambda x: SQUARER.of(x) * x, lambda x: square(x) * x,
    ):
        assert adjoint.grad(f)(0.5) == pytest.approx(3 * 0.5 ** 2)  # x * x^2 by the rules
        assert adjoint.hessian(f)(0.5) == pytest.approx(6 * 0.5)


def test_rules_whose_value_is_a_namedtuple():
    from support import Point

    def pair(x):
        return Point(np.sin(x), np.cos(x))

    @adjoint.rrule(pair)
    def pair_rrule(x):
        def pair_pullback(g):
            return (g.x * np.cos(x) - g.y * np.sin(x),)

        return pair(x), pair_pullback

    check_grad(lambda x: np.sum(pair(x).x ** 2), SMALL)  # `y` unused: zeros for it


W_PARAM = np.array([1.0, 2.0])


def reads_through_a_helper(x):
    return x * helper_reading_w()


def helper_reading_w():
    return W_PARAM


@adjoint.rrule(reads_through_a_helper)
def reads_through_a_helper_rrule(x):
    return reads_through_a_helper(x), lambda g: (g * W_PARAM,)


def defaulted(x, w=W_PARAM):
    return x * w


@adjoint.rrule(defaulted)
def defaulted_rrule(x, w=W_PARAM):
    return defaulted(x, w), lambda g: (g * w, g * x)


class Holder:
    W_PARAM = np.array([5.0, 5.0])  # an attribute named like the parameter: not the parameter


def reads_an_attribute(x):
    return x * Holder.W_PARAM


@adjoint.rrule(reads_an_attribute)
def reads_an_attribute_rrule(x):
    return reads_an_attribute(x), lambda g: (g * Holder.W_PARAM,)


def test_implicit_parameters_reached_through_helpers_or_defaults_are_refused_not_attributes():
    x, ps = np.ones(2), adjoint.params(W_PARAM)
    for f in (reads_through_a_helper, defaulted):
        with pytest.raises(adjoint.AdjointError, match="reaches parameters through"):
            adjoint.gradient(lambda: np.sum(f(x) * W_PARAM), ps)
    gs = adjoint.gradient(lambda: np.sum(reads_an_attribute(x) * W_PARAM), ps)
    np.testing.assert_allclose(gs[W_PARAM], [5.0, 5.0])


def test_what_a_rule_cannot_be_registered_for():
    def f(x):
        return np.sin(x)

    @adjoint.frule(f)
    def f_frule(primals, tangents):
        return np.sin(primals[0]), np.cos(primals[0]) * tangents[0]

    with pytest.raises(adjoint.AdjointError, match="cannot also be non-differentiable"):
        adjoint.non_differentiable(f)
    with pytest.raises(adjoint.AdjointError, match="bound method"):
        adjoint.rrule(SQUARER.of)(squarer_of_rrule)
    with pytest.raises(adjoint.AdjointError, match="is checkpointed"):
        adjoint.rrule(adjoint.checkpoint(f))(lambda x: (f(x), lambda g: (g,)))


def test_hvp_of_a_checkpointed_function_and_second_derivatives_through_star_calls():
    block = adjoint.checkpoint(lambda x: np.sum(np.sin(x)))
    v = np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(adjoint.hvp(block, SMALL, v), -np.sin(SMALL) * v, rtol=1e-12)

    def spreads(x):
        return np.sum(np.sin(*[x]))

    with pytest.raises(adjoint.AdjointError, match="spreads `\\*args`"):
        adjoint.hessian(spreads)(SMALL)


# ---- third review ----------------------------------------------------------------------------------

def test_non_differentiable_of_a_function_with_a_rule_and_of_a_bound_method():
    with pytest.raises(adjoint.AdjointError, match="has a rule"):
        adjoint.non_differentiable(np.tanh)

    class Scale:
        def times(self, x):
            return 3.0 * x

    adjoint.non_differentiable(Scale().times)  # declares the class's function
    assert adjoint.grad(lambda x: x * Scale().times(x))(2.0) == pytest.approx(6.0)


def stats(x):
    return {"mean": np.mean(x), "n": float(x.size)}


@adjoint.rrule(stats)
def stats_rrule(x):
    def stats_pullback(g):
        return (np.full_like(x, g["mean"] / x.size + 0.0 * g["n"]),)  # `n` unused: it comes as zero

    return stats(x), stats_pullback


def test_a_rule_whose_value_is_a_dict_gets_every_entry():
    check_grad(lambda x: stats(x)["mean"] * 2.0, SMALL, forward=False)

    def called(x, f):
        return f(x)["mean"] * 2.0

    assert np.allclose(adjoint.grad(called)(SMALL, stats), 2.0 / 3)


def test_a_forward_rule_of_yours_gets_zeros_for_a_constant_float_argument():
    def mul(a, b):
        return a * b

    @adjoint.frule(mul)
    def mul_frule(primals, tangents):
        (a, b), (da, db) = primals, tangents
        return a * b, da * b + a * db  # no None checks needed

    assert adjoint.jvp(lambda a, b: mul(a, b), (2.0, 3.0), (1.0, None)) == (6.0, 3.0)


def test_random_gauss_with_a_differentiable_mean_says_how_to_write_it():
    import random

    with pytest.raises(adjoint.TransformError, match=r"mu \+ sigma"):
        adjoint.grad(lambda mu: random.gauss(mu, 1.0))(0.0)
    assert adjoint.grad(lambda mu: mu * random.random() * 0.0 + mu)(0.0) == 1.0


def dense_with_default(x, W, act=np.tanh):
    return act(x @ W)


def test_hvp_through_a_helper_with_a_default_left_to_itself():
    loss = lambda W, x: np.sum(dense_with_default(x, W) ** 2)  # noqa: E731
    direct = lambda W, x: np.sum(np.tanh(x @ W) ** 2)  # noqa: E731
    W, x, V = np.eye(3) * 0.5, SMALL, np.ones((3, 3))
    np.testing.assert_allclose(adjoint.hvp(loss, W, V, x), adjoint.hvp(direct, W, V, x), rtol=1e-12)


def test_a_pullback_returning_no_tuple_or_too_few_cotangents_is_refused_in_both_modes():
    def squared(x):
        return x ** 2

    @adjoint.rrule(squared)
    def squared_rrule(x):
        return squared(x), lambda g: 2 * x * g  # no tuple

    def times(x, y):
        return x * y

    @adjoint.rrule(times)
    def times_rrule(x, y):
        return x * y, lambda g: (g * y,)  # forgets `y`

    with pytest.raises(adjoint.AdjointError, match="returned a float: return a tuple"):
        adjoint.grad(lambda x: squared(x))(3.0)
    with pytest.raises(adjoint.AdjointError, match="returned a float: return a tuple"):
        adjoint.jvp(lambda x: squared(x), (3.0,), (1.0,))
    with pytest.raises(adjoint.AdjointError, match="returned 1 cotangents for 2 positional arguments"):
        adjoint.grad(lambda x, y: np.sum(times(x, y)), 1)(SMALL, 2.0)
    assert np.allclose(adjoint.grad(lambda x: np.sum(times(x, 2)))(SMALL), 2.0)  # an int needs none
    with pytest.raises(adjoint.AdjointError, match="returned 1 cotangents for 2"):
        adjoint.jvp(lambda y: times(3.0, y), (2.0,), (1.0,))
    assert adjoint.jvp(lambda x: times(x, 2.0), (3.0,), (1.0,)) == (6.0, 2.0)


def test_a_gradient_or_checkpoint_under_functools_lru_cache():
    import functools

    g = lambda x: x ** 3  # noqa: E731
    cached_gradient = functools.lru_cache(adjoint.grad(g))
    assert adjoint.grad(lambda x: cached_gradient(x) * 1.0)(2.0) == pytest.approx(12.0)


def test_a_class_wrapping_a_gradient_with_update_wrapper_is_not_taken_for_it():
    import functools

    class Twice:
        def __init__(self, f):
            functools.update_wrapper(self, f)  # copies adjoint's marks onto the instance
            self.f = f

        def __call__(self, *args):
            return 2.0 * self.f(*args)

    twice = Twice(adjoint.grad(lambda x: np.sum(np.sin(x) ** 2)))
    x = np.array([0.4, 1.1])
    try:
        g = adjoint.grad(lambda x: np.sum(twice(x)))(x)
    except adjoint.AdjointError:
        return  # refused is fine; a wrong value is not
    np.testing.assert_allclose(g, 2.0 * 2.0 * np.cos(2 * x))


def test_a_derived_forward_rule_accepts_a_zero_tangent_for_an_argument_without_a_cotangent():
    def scale(x, a):
        return x * a

    @adjoint.rrule(scale)
    def scale_rrule(x, a):
        return x * a, lambda g: (g * a,)  # `a` is never differentiated here

    _, tangent = adjoint.jvp(scale, (np.ones(2), np.array(2.0)), (np.ones(2), np.array(0.0)))
    np.testing.assert_allclose(tangent, [2.0, 2.0])
