"""Rules of adjoint.steering: a hook's rule is the identity with the hook applied to the
cotangent; a stopped value and `within_gradient()` carry no derivative."""

import numpy as np
import pytest

import adjoint
from adjoint import frules, registry
from adjoint.testing import check_frule, check_rrule

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [adjoint.hook]

rng = np.random.default_rng(0)


def double(g):
    return 2 * g


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_hook_rule_is_the_identity_with_the_hook_applied_to_the_cotangent(shape):
    x = rng.normal(size=shape)
    check_rrule(adjoint.hook, x, lambda g: g)  # a hook that keeps the cotangent: the identity
    check_frule(adjoint.hook, x, double)  # forward mode never calls the hook
    value, back = registry.lookup(adjoint.hook).rrule(x, double)
    g = rng.normal(size=shape)
    assert value is x and np.array_equal(back(g)[0], 2 * g) and back(g)[1] is None


def test_stop_gradient_and_within_gradient_carry_no_derivative():
    assert registry.is_non_differentiable(adjoint.stop_gradient)
    assert registry.is_non_differentiable(adjoint.within_gradient)
    assert frules.lookup(adjoint.hook) is not None
