"""adjoint.registry: rules called the way they are registered, and no other way."""

import math

import numpy as np
import pytest

import adjoint

def dynamic_two_args(x, act):
    return act(x, 2.0)


def test_dynamic_rule_call_with_extra_argument_is_refused():
    # expected: AdjointError (as for a static `math.log(x, 2.0)`) or 1/(x ln 2); actual: TypeError d_log() takes 2 positional arguments
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(dynamic_two_args)(3.0, math.log)


def doubled_join(xs):
    return np.concatenate([2.0 * x for x in xs])


@adjoint.rrule(doubled_join, sequences=True)
def doubled_join_rrule(xs):
    def doubled_join_pullback(g):
        return (adjoint.runtime.unconcatenate(2.0 * g, xs),)

    return doubled_join(xs), doubled_join_pullback


def loss_of_doubled_join(a, b):
    return np.sum(doubled_join([a, b]) ** 2)


def test_a_users_rule_may_take_a_list_of_arrays():
    from adjoint.testing import check_grad

    check_grad(loss_of_doubled_join, np.ones(2), np.arange(3.0))


def halves(xs):
    return [x / 2.0 for x in xs]


@adjoint.rrule(halves, sequences=True)
def halves_rrule(xs):
    def halves_pullback(g):
        return (type(xs)(part / 2.0 for part in g),)  # a generator consumed by `type(xs)`: unreadable

    return halves(xs), halves_pullback


def test_forward_mode_through_a_reverse_rule_whose_pullback_it_cannot_read_asks_for_an_frule():
    with pytest.raises(adjoint.AdjointError, match=r"only a reverse rule for `halves`.*@adjoint.frule"):
        adjoint.jvp(lambda a, b: np.sum(halves([a, b])[0]), (np.ones(2), np.arange(3.0)), (np.ones(2), None))


def softsign(x):
    return x / (1 + np.abs(x))


@adjoint.rrule(softsign)
def softsign_rrule(x):
    def softsign_pullback(g):
        return (g / (1 + np.abs(x)) ** 2,)

    return softsign(x), softsign_pullback


def test_a_primitive_with_only_a_reverse_rule_gets_a_forward_rule_from_its_pullback():
    from adjoint.testing import check_frule

    assert adjoint.frules.lookup(softsign).kind == adjoint.frules.TRANSPOSED
    check_frule(softsign, np.array([0.5, -2.0, 3.0]))
    value, tangent = adjoint.jvp(lambda x: np.sum(softsign(x) ** 2), (np.array([0.5, -2.0]),), (np.ones(2),))
    expected = np.sum(2 * softsign(np.array([0.5, -2.0])) / (1 + np.abs([0.5, -2.0])) ** 2)
    assert float(tangent) == pytest.approx(expected)


def test_without_sequences_a_list_operand_is_refused_at_transform_time():
    with pytest.raises(adjoint.TransformError, match="tuple or list operand"):
        adjoint.grad(lambda a: np.sum(np.square([a, a])))(1.0)


def overcounted(x, y):
    return x * y


@adjoint.rrule(overcounted)
def overcounted_rrule(x, y):
    def overcounted_pullback(g):
        return g * y, g * x, g  # one cotangent too many

    return x * y, overcounted_pullback


def test_a_users_pullback_returning_too_many_cotangents_is_refused():
    _, back = adjoint.registry.lookup(overcounted).rrule(3.0, 2.0)
    with pytest.raises(adjoint.AdjointError, match="returned 3 cotangents for 2 positional arguments"):
        back(1.0)


def test_a_rules_refusal_is_remembered_per_call_shape():
    rule = adjoint.registry.lookup(np.sum)
    first = rule.refusal(1, ("axis", "out"))
    assert first == "does not support the keyword argument `out=`"
    assert rule.refusal(1, ("axis", "out")) is first
    assert rule.refusal(1, ("axis",)) is None


def sum_into_a_buffer_by_position(x):
    buf = np.empty(3)
    return np.sum(x.sum(0, None, buf))


def test_an_array_method_called_with_more_positions_than_its_rule_takes_is_refused_by_name():
    with pytest.raises(adjoint.AdjointError, match="rule for `ndarray.sum` cannot be called this way"):
        adjoint.grad(sum_into_a_buffer_by_position)(np.ones((2, 3)))


def test_a_random_generators_bound_method_is_its_classes_function():
    registry = adjoint.registry
    rng = np.random.default_rng(0)
    assert registry.unbound(rng.normal) is np.random.Generator.normal
    assert registry.unbound(np.random.normal) is np.random.RandomState.normal  # of NumPy's global RandomState
    assert registry.unbound(rng.bit_generator.jumped) is type(rng.bit_generator).jumped
    assert registry.is_non_differentiable(rng.integers) and registry.is_non_differentiable(np.random.rand)
    assert not registry.is_non_differentiable(rng.normal) and registry.lookup(rng.normal) is None
