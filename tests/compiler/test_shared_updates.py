"""compiler.shared_updates: an in-place update another name would see is refused; one no other
name sees is a rebinding."""

import numpy as np
import pytest

import adjoint
from adjoint import TransformError
from adjoint.testing import check_grad

RNG = np.random.default_rng(0)
X = np.array([0.3, 0.7, -0.4])


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


def aliased_update(x):
    y = x
    x += 1.0
    return np.sum(y * x)


def test_in_place_update_of_a_shared_array_is_refused_with_the_fix():
    with pytest.raises(adjoint.TransformError, match=r"write `x = x \+ \.\.\.`"):
        adjoint.grad(aliased_update)(np.ones(2))


def test_in_place_update_of_an_unshared_name_is_a_rebinding():
    def f(x, d):
        h = x * 1.0
        h += d
        h *= 2.0
        return np.sum(h ** 2)

    check_grad(f, np.ones(2), np.array([0.5, -1.0]))


def test_in_place_update_of_a_parameter_computes_a_new_array():
    # `x += y` on a parameter is `x = x + y`: the caller's array is never updated
    def f(x, y):
        x += y
        return np.sum(x * y)

    x, y = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    check_grad(f, x, y)
    value, back = adjoint.pullback(f, x, y)
    x_bar, y_bar = back(1.0)
    np.testing.assert_allclose(value, np.sum((x + y) * y))
    np.testing.assert_allclose(x_bar, y)
    np.testing.assert_allclose(y_bar, x + 2 * y)
    np.testing.assert_array_equal(x, [1.0, -2.0])  # unchanged by the forward pass and the pullback


def test_in_place_update_of_a_parameter_aliased_inside_the_function_is_refused():
    # `y` would see the update in plain Python; adjoint's new array would not reach it
    def f(x):
        y = x
        x += 1.0
        return np.sum(y)

    with pytest.raises(adjoint.TransformError, match="another name or view") as info:
        adjoint.grad(f)(np.ones(2))
    assert info.value.problems[0].line == f.__code__.co_firstlineno + 2  # at `x += 1.0`


# 1. `x += y` on a parameter is assumed unaliased, but the caller may pass one array twice.
def _update_param(x, y):
    x += y
    return np.sum(x * y)


def test_augmented_assignment_on_parameter_aliased_by_caller_is_refused():
    # A plain call with `a` twice would update `a` and return 20; adjoint's copy would give 10.
    a = np.array([1.0, 2.0])
    with pytest.raises(adjoint.AdjointError, match="shares its memory"):
        adjoint.pullback(_update_param, a, a)
    np.testing.assert_array_equal(a, [1.0, 2.0])
    check_grad(_update_param, a, a.copy())  # separate arrays: differentiated, `a` left unchanged


# 3. Reading `h.shape` counts as aliasing `h`, so an ordinary `h *= 2.0` is refused.
def _shape_then_update(x):
    h = x * 1.0
    n = h.shape[0]
    h *= 2.0
    return np.sum(h) / n


def test_shape_read_does_not_alias():
    # expected: gradient 2/n everywhere; actual: TransformError "may also be reached through another name"
    check_grad(_shape_then_update, X)

# 5. A non-differentiable function's result is assumed fresh, but it may return its argument.
@adjoint.non_differentiable
def _stop_gradient(v):
    return v


def _stop_gradient_then_update(x):
    h = x * 2.0
    c = _stop_gradient(h)
    c += 1.0
    return np.sum(h * c)


def test_non_differentiable_identity_then_augmented_assignment():
    # refused: the plain call's answer needs mutation (silently before: sum(2x * (2x+1)), h not updated)
    with pytest.raises(adjoint.TransformError, match="comes from a call that may return"):
        adjoint.grad(_stop_gradient_then_update)(X)

# 6. Aliasing through a keyword argument of a user function is not seen by the in-place pass.
def _identity(v):
    return v


def _keyword_alias(x, c):
    h = c * 2.0
    v = _identity(v=h)
    h += 1.0
    return np.sum(v * x)


def test_keyword_argument_alias_then_augmented_assignment():
    # refused: the plain call's answer needs mutation (silently before: sum(2c * x), v not updated)
    with pytest.raises(adjoint.TransformError, match="another name or view"):
        adjoint.grad(_keyword_alias)(X, c=np.ones(3))


def dense(x, W, b):
    return np.tanh(x @ W + b)


# ---- 6. residual update after a helper call: misleading reason -------------------------------

def residual_block(x, W, b):
    h = dense(x, W, b)
    h += x
    return np.sum(h)


def test_residual_augmented_assignment_message():
    # Expected: the gradient (h is a local, never a parameter), or a reason that is true: `h`
    # comes from `dense(...)`, which adjoint cannot tell returns a new array. Actual:
    # "`h` may also be reached through another name or view here" -- no other name reaches `h`
    # (inplace.py `_update_problem`, `_is_fresh`).
    rng = np.random.default_rng(0)
    x, W, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)
    try:
        adjoint.testing.check_grad(residual_block, x, W, b)
    except TransformError as error:
        assert "another name or view" not in str(error), str(error)


def update_through_rollaxis(x):
    y = np.rollaxis(x, 1)
    y[0] = 0.0  # writes into `x` too: a view
    return np.sum(x * y)


def update_through_real_if_close(x):
    y = np.real_if_close(x)  # `x` itself for a real array
    y[0] = 0.0
    return np.sum(x * y)


@pytest.mark.parametrize("f", [update_through_rollaxis, update_through_real_if_close])
def test_an_update_through_a_view_made_by_a_new_rule_is_refused(f):
    with pytest.raises(TransformError, match="view|another name|held elsewhere"):
        adjoint.grad(f)(np.ones((2, 2)))
