"""compiler.inplace: updates and effect-only calls adjoint cannot reproduce are refused."""

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

RNG = np.random.default_rng(0)


# 3. `a = b = expr; a += ...`: a and b are one array, the in-place update is not refused.
def _chained_then_augmented(x):
    a = b = x * 2.0
    a += 1.0
    return np.sum(a * b)


def test_chained_assignment_then_augmented_assignment_is_refused():
    # plain Python updates the one array both names hold; adjoint does not mutate, so it refuses
    with pytest.raises(adjoint.TransformError, match=r"write `a = a \+ \.\.\.`"):
        adjoint.grad(_chained_then_augmented)(RNG.normal(size=3))


# 4. `y = x[0:2]; y += ...`: y is a view of x, the in-place update is not refused.
def _view_then_augmented(x):
    y = x[0:2]
    y += 1.0
    return np.sum(x * x)


def test_augmented_assignment_on_a_view_is_refused():
    # plain Python updates x through the view y; adjoint does not mutate, so it refuses
    with pytest.raises(adjoint.TransformError, match="another name or view"):
        adjoint.grad(_view_then_augmented)(RNG.normal(size=3))


# 5. Expression statements that mutate a differentiated array run unchecked.
def _in_place_relu(x):
    h = x * 2.0
    np.maximum(h, 0.0, out=h)
    return np.sum(h)


def test_in_place_update_by_an_expression_statement_is_refused():
    # the call updates h through out=; differentiating around it would give 2 everywhere
    with pytest.raises(adjoint.TransformError, match="made for its effect"):
        adjoint.grad(_in_place_relu)(np.array([-1.0, 2.0]))


def aliased_update(x):
    y = x
    x += 1.0
    return np.sum(y * x)


def test_in_place_update_of_a_shared_array_is_refused_with_the_fix():
    with pytest.raises(adjoint.TransformError, match=r"write `x = x \+ \.\.\.`"):
        adjoint.grad(aliased_update)(np.ones(2))


def test_in_place_update_of_an_unshared_name_is_a_rebinding():
    def f(x, d):
        x += d
        x *= 2.0
        return np.sum(x ** 2)

    check_grad(f, np.ones(2), np.array([0.5, -1.0]))
