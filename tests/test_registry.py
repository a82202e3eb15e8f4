"""adjoint.registry: rules called the way they are registered, and no other way."""

import math

import pytest

import adjoint

def dynamic_two_args(x, act):
    return act(x, 2.0)


def test_dynamic_rule_call_with_extra_argument_is_refused():
    # expected: AdjointError (as for a static `math.log(x, 2.0)`) or 1/(x ln 2); actual: TypeError d_log() takes 2 positional arguments
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(dynamic_two_args)(3.0, math.log)
