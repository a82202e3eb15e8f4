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


def test_without_sequences_a_list_operand_is_refused_at_transform_time():
    with pytest.raises(adjoint.TransformError, match="tuple or list operand"):
        adjoint.grad(lambda a: np.sum(np.square([a, a])))(1.0)
