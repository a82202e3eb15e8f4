"""Language corpus: array updates.

Item and slice assignment (`y[i] = v`, `y[:, 0] += v`), filling an output array in a loop,
augmented assignment on arrays (`x += y`, also on a parameter, whose caller's array must not be
mutated: `check_grad` checks that), and `y = x.copy(); y[0] = 0.0`. Updated arrays that were
read before the update must give the gradient of the values read then.
"""

import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(6)


def set_item_on_zeros(x):
    y = np.zeros_like(x)
    y[1] = x[0] * 2.0
    y[3] = np.sin(x[2])
    return np.sum(y * x)


def set_item_from_int_argument(x, i, v):
    y = np.ones(len(x))
    y[i] = v
    return np.sum(y * x ** 2)


def add_to_column(X, v):
    Y = X * 1.0
    Y[:, 0] += v
    return np.sum(Y ** 2)


def add_to_column_of_zeros(v, w):
    Y = np.zeros((3, 2))
    Y[:, 0] += v
    Y[:, 1] += v * w
    return np.sum(np.tanh(Y))


def fill_output_in_loop(x):
    n = len(x)
    out = np.zeros(n)
    for i in range(n):
        out[i] = np.sin(x[i]) * x[i - 1]
    return np.sum(out ** 2)


def fill_rows_in_loop(X, W):
    out = np.zeros((X.shape[0], W.shape[1]))
    for i in range(X.shape[0]):
        out[i, :] = np.tanh(X[i] @ W)
    return np.sum(out * out[::-1])


def accumulate_in_nested_loop(A, x):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] += A[i, j] * x[j]
    return np.sum(out ** 2)


def cumulative_sum_in_loop(x):
    out = x.copy()
    for i in range(1, len(x)):
        out[i] = out[i - 1] + out[i] * 0.5
    return np.sum(out ** 2)


def augmented_on_local(x, y):
    z = x * 2.0
    z += y
    z *= x
    z -= 0.5 * y
    z /= 1.0 + y * y
    return np.sum(z)


def augmented_on_parameter(x, y):
    x += y
    return np.sum(x ** 2)


def augmented_on_parameter_in_loop(x, y):
    for _ in range(3):
        x *= 0.9
        x += y
    return np.sum(np.sin(x))


def augmented_item_on_parameter(x, v):
    x[0] += v
    x[2] *= v
    return np.sum(x ** 3)


def augmented_slice_on_parameter(X, y):
    X[:, 1] *= y
    return np.sum(np.tanh(X))


def copy_then_zero(x):
    y = x.copy()
    y[0] = 0.0
    return np.sum(y ** 2 * x)


def copy_then_scale_slice(x):
    y = x.copy()
    y[1:3] = y[1:3] * 2.0
    return np.sum(np.sin(y))


def read_then_update(x):
    y = x.copy()
    a = y[0] * y[1]
    y[0] = y[2] ** 2
    b = np.sum(y)
    y[0] = a * b
    return y[0] + np.sum(y * x)


def old_value_kept_by_name(x):
    y = x * 1.0
    before = y[1:3]
    snapshot = np.sum(before ** 2)
    y[1] = 5.0 * y[1]
    return snapshot * np.sum(y)


def boolean_mask_assignment(x):
    y = x.copy()
    y[y < 0] = 0.0
    return np.sum(y ** 2 + y * x)


def boolean_mask_assignment_of_values(x, v):
    y = np.zeros_like(x)
    y[x > 0] = v * x[x > 0]
    return np.sum(np.exp(y))


def fancy_index_assignment(x, v):
    y = x * 1.0
    y[np.array([0, 3])] = v
    return np.sum(y ** 2)


def update_row_with_ellipsis(X, v):
    Y = X.copy()
    Y[1, ...] = v
    return np.sum(Y * X)


def negative_index_assignment(x):
    y = x * 2.0
    y[-1] = y[0] * y[-2]
    return np.sum(y ** 2)



X = np.array([0.5, -0.3, 1.2, 0.8, -1.4])
Y = np.array([1.1, 0.4, -0.6, 0.2, -0.9])
X34 = rng.normal(size=(3, 4))

CASES = [
    case(set_item_on_zeros, X),
    case(set_item_from_int_argument, X, 2, 0.7),
    case(add_to_column, X34, np.array([0.5, -1.0, 2.0])),
    case(add_to_column_of_zeros, np.array([0.5, -1.0, 2.0]), 0.3),
    case(fill_output_in_loop, X),
    case(fill_rows_in_loop, X34, rng.normal(size=(4, 2))),
    case(accumulate_in_nested_loop, X34, rng.normal(size=4)),
    case(cumulative_sum_in_loop, X),
    case(augmented_on_local, X, Y),
    case(augmented_on_parameter, X, Y),
    case(augmented_on_parameter_in_loop, X, Y),
    case(augmented_item_on_parameter, X, 1.7),
    case(augmented_slice_on_parameter, X34, np.array([0.5, -1.0, 2.0])),
    case(copy_then_zero, X),
    case(copy_then_scale_slice, X),
    case(read_then_update, X),
    case(old_value_kept_by_name, X),
    case(boolean_mask_assignment, X),
    case(boolean_mask_assignment_of_values, X, 1.3),
    case(fancy_index_assignment, X, np.array([0.4, -0.6])),
    case(update_row_with_ellipsis, X34, np.array([0.1, 0.2, 0.3, 0.4])),
    case(negative_index_assignment, X),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


@pytest.mark.parametrize("f, args", [
    case(augmented_on_parameter, X, Y),
    case(augmented_item_on_parameter, X, 1.7),
    case(augmented_slice_on_parameter, X34, np.array([0.5, -1.0, 2.0])),
])
def test_caller_arrays_are_unchanged_by_grad_and_value_and_grad(f, args):
    args = copy.deepcopy(args)
    originals = copy.deepcopy(args)
    adjoint.gradient(f, *args)
    adjoint.value_and_grad(f)(*args)
    for arg, original in zip(args, originals):
        np.testing.assert_array_equal(arg, original)


def test_copy_then_zero_gradient():
    g = adjoint.grad(copy_then_zero)(X.copy())
    expected = 3 * X ** 2
    expected[0] = 0.0
    np.testing.assert_allclose(g, expected)


def test_augmented_on_parameter_value_and_gradient():
    x, y = X.copy(), Y.copy()
    value, (gx, gy) = adjoint.value_and_grad(augmented_on_parameter, wrt=(0, 1))(x, y)
    assert value == pytest.approx(np.sum((X + Y) ** 2))
    np.testing.assert_allclose(gx, 2 * (X + Y))
    np.testing.assert_allclose(gy, 2 * (X + Y))
    np.testing.assert_array_equal(x, X)


@pytest.mark.parametrize("f, args", [
    case(fill_output_in_loop, X),
    case(cumulative_sum_in_loop, X),
    case(read_then_update, X),
])
def test_pullback_with_updates_can_be_called_twice(f, args):
    _, back = adjoint.pullback(f, *copy.deepcopy(args))
    (first,) = back(1.0)
    (second,) = back(1.0)
    np.testing.assert_array_equal(first, second)


def scalar_items_then_update(s):
    state = s * 1.0
    a, b = state[0], state[1]
    state[0] = a + b
    return np.sum(state) * b


def row_view_then_update(X):
    Y = X * 1.0
    row = Y[0]
    Y[0, 1] = 5.0
    return np.sum(row * Y)


def test_items_read_before_an_update_are_checked_at_run_time():
    # a scalar item shares no memory with the array: differentiated
    check_grad(scalar_items_then_update, np.array([1.0, 2.0]))
    assert "adj.check_unshared(state, (b,)" in adjoint.source(scalar_items_then_update)
    # a row is a view: plain Python would show the update through it, adjoint's copy would not
    with pytest.raises(adjoint.AdjointError, match=r"would show through `row`") as info:
        adjoint.grad(row_view_then_update)(np.ones((2, 2)))
    assert f"{__file__}:{row_view_then_update.__code__.co_firstlineno + 3}" in str(info.value)
    # forward mode checks the same
    assert "adj.check_unshared(state, (b,)" in adjoint.source(scalar_items_then_update, mode="jvp")
    with pytest.raises(adjoint.AdjointError, match=r"would show through `row`"):
        adjoint.jvp(row_view_then_update, (np.ones((2, 2)),), (np.ones((2, 2)),))


# ---- np.add.at: a scatter whose repeated indices add up ------------------------------------------

def add_at_into_parameter(x, v):
    np.add.at(x, [0, 2, 0], v)  # updates the caller's `x` in plain Python; adjoint works on a copy
    return np.sum(x ** 2)


def add_at_rows_of_a_matrix(W, rows):
    out = np.zeros((3, 2))
    np.add.at(out, ([0, 1, 0], [1, 1, 1]), rows[:, 0] * rows[:, 1])
    np.add.at(out, 2, rows[0])
    return np.sum(np.tanh(out) * W)


def add_at_through_an_alias(x, v):
    y = x
    np.add.at(y, [0, 0], v)
    return np.sum(x * 1.0)


@pytest.mark.parametrize("f, args", [
    (add_at_into_parameter, (rng.normal(size=3), rng.normal(size=3))),
    (add_at_into_parameter, (rng.normal(size=3), 0.5)),
    (add_at_rows_of_a_matrix, (rng.normal(size=(3, 2)), rng.normal(size=(3, 2)))),
])
def test_np_add_at_gradients_match_finite_differences(f, args):
    originals = copy.deepcopy(args)
    value = f(*copy.deepcopy(args))
    assert adjoint.value_and_grad(f)(*args)[0] == pytest.approx(value)
    check_grad(f, *args)
    for arg, original in zip(args, originals):
        np.testing.assert_array_equal(arg, original)


def test_np_add_at_through_an_alias_is_refused_like_an_item_update():
    with pytest.raises(adjoint.TransformError, match="update"):
        adjoint.grad(add_at_through_an_alias)(np.ones(2), 1.0)
