"""Language corpus: array indexing reads.

Integers, slices (with steps, reversed), negative indices, `...`, `None`, boolean masks and
integer arrays (fancy indexing, where repeated indices accumulate their cotangents like
`np.add.at`), alone and mixed.
"""

import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(5)


def integer_index(x):
    return x[2] * x[0] + x[1] ** 2


def integer_index_2d(X):
    return X[1, 2] * X[0, 0] + X[2][1] ** 2


def row_of_matrix(X):
    return np.sum(np.sin(X[1]) * X[0])


def integer_index_from_argument(x, i):
    return x[i] ** 3 + np.sum(x)


def numpy_integer_index(x):
    i = np.argmax(x)
    return x[i] * np.sum(x ** 2)


def slice_basic(x):
    return np.sum(x[1:4] * x[:3])


def slice_with_step(x):
    return np.sum(x[::2] ** 2) + np.sum(np.sin(x[1::2]))


def slice_reversed(x):
    return np.sum(x[::-1] * np.arange(len(x)))


def slice_2d(X):
    return np.sum(X[:, 1:] * X[:, :-1]) + np.sum(X[1:, ::2] ** 2)


def negative_indices(x):
    return x[-1] * x[-2] + np.sum(x[-3:] ** 2)


def negative_indices_2d(X):
    return np.sum(X[-2:, :-1] ** 2) + X[-1, -1]


def ellipsis_index(X):
    return np.sum(X[..., 0] * X[..., -1]) + np.sum(X[0, ...])


def ellipsis_3d(T):
    return np.sum(T[..., 1] ** 2) + np.sum(T[1, ...] * T[0, ...])


def none_index_outer(x, y):
    return np.sum(np.tanh(x[:, None] * y[None, :]))


def none_index_trailing(X, w):
    return np.sum((X[:, :, None] * w[None, None, :]) ** 2)


def boolean_mask_from_data(x):
    return np.sum(x[x > 0] ** 2) - np.sum(x[x < 0])


def boolean_mask_argument(x, mask):
    return np.sum(np.exp(x[mask]))


def boolean_mask_from_other_array(x, y):
    return np.sum(x[y > 0.0] * 2.0) + np.sum(y[x > 0.6] ** 2)


def boolean_mask_rows(X):
    keep = np.sum(X, axis=1) > 0
    return np.sum(X[keep] ** 2)


def integer_array_index(x):
    idx = np.array([3, 0, 2])
    return np.sum(x[idx] * np.array([1.0, 2.0, 3.0]))


def integer_array_repeated(x):
    idx = np.array([0, 2, 2, 1, 0, 2])
    return np.sum(x[idx] * np.array([1.0, -2.0, 3.0, 0.5, 1.5, 2.0]))


def integer_list_index(x):
    return np.sum(x[[1, 1, 3]] ** 2)


def fancy_rows(X):
    return np.sum(X[[0, 2, 0]] ** 2)


def fancy_pairs(X):
    rows = np.array([0, 1, 2, 1])
    cols = np.array([1, 0, 3, 0])
    return np.sum(X[rows, cols] * np.array([1.0, 2.0, 3.0, 4.0]))


def slice_and_fancy(X):
    return np.sum(X[1:, [0, 2, 2]] ** 2)


def index_argument_array(x, idx):
    return np.sum(np.sin(x[idx]))


def index_of_expression(x):
    return np.sum((x * 2.0)[1:] * np.exp(x)[:-1])


def chained_indexing(X):
    return X[1:][0][2] * X[:, 1][::-1][0]



X = np.array([0.5, -0.3, 1.2, 0.8, -1.4, 0.25])
Y = np.array([1.1, 0.4, -0.6, 0.2, -0.9, 0.7])
X34 = rng.normal(size=(3, 4))

CASES = [
    case(integer_index, X),
    case(integer_index_2d, X34),
    case(row_of_matrix, X34),
    case(integer_index_from_argument, X, 3),
    case(integer_index_from_argument, X, -2, label="negative"),
    case(numpy_integer_index, X),
    case(slice_basic, X),
    case(slice_with_step, X),
    case(slice_reversed, X),
    case(slice_2d, X34),
    case(negative_indices, X),
    case(negative_indices_2d, X34),
    case(ellipsis_index, X34),
    case(ellipsis_3d, rng.normal(size=(2, 3, 4))),
    case(none_index_outer, X, Y[:4]),
    case(none_index_trailing, X34, np.array([0.5, -1.0])),
    case(boolean_mask_from_data, X),
    case(boolean_mask_argument, X, np.array([True, False, True, True, False, False])),
    case(boolean_mask_from_other_array, X, Y),
    case(boolean_mask_rows, np.array([[0.5, 0.2], [-1.0, 0.3], [0.4, 0.1]])),
    case(integer_array_index, X),
    case(integer_array_repeated, X),
    case(integer_list_index, X),
    case(fancy_rows, X34),
    case(fancy_pairs, X34),
    case(slice_and_fancy, X34),
    case(index_argument_array, X, np.array([5, 1, 1, 0])),
    case(index_of_expression, X),
    case(chained_indexing, X34),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_repeated_indices_accumulate_like_add_at():
    g = adjoint.grad(integer_array_repeated)(X.copy())
    expected = np.zeros_like(X)
    np.add.at(expected, [0, 2, 2, 1, 0, 2], [1.0, -2.0, 3.0, 0.5, 1.5, 2.0])
    np.testing.assert_allclose(g, expected)


def test_fancy_row_gradient_counts_repeats():
    np.testing.assert_allclose(adjoint.grad(fancy_rows)(X34.copy()), 2 * X34 * np.array([[2.0], [0.0], [1.0]]))


def test_boolean_mask_gradient_is_zero_outside_the_mask():
    mask = np.array([True, False, True, True, False, False])
    g = adjoint.grad(boolean_mask_argument)(X.copy(), mask)
    np.testing.assert_allclose(g, np.where(mask, np.exp(X), 0.0))
