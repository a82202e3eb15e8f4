"""Language corpus: methods and attributes.

NumPy array methods and attributes (`x.sum(axis=0)`, `x.mean()`, `x.reshape(...)`, `x.T`,
`x.dot(y)`, `x.astype(np.float64)`, `x.max()`), methods of user classes (attributes read
through `self`, bound methods differentiated directly, `__call__`, objects holding objects),
and method calls whose receiver's type is only known at run time.
"""

import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(3)


# ---- array methods ----

def method_sum_axis(X):
    return np.sum(np.sin(X.sum(axis=0)) * X.sum(axis=1)[0])


def method_sum_keepdims(X):
    return np.sum(X / X.sum(axis=1, keepdims=True) * X)


def method_mean(x):
    return x.mean() * np.sum(x ** 2)


def method_mean_axis(X):
    return np.sum(X.mean(axis=0) ** 2)


def method_reshape(x):
    M = x.reshape(2, 3)
    return np.sum(M.reshape((3, 2)) * np.arange(6.0).reshape(3, 2)) + np.sum(M[0] * M[1])


def method_reshape_minus_one(X):
    v = X.reshape(-1)
    return np.sum(v * np.sin(v))


def attribute_T(X, y):
    return np.sum(X.T @ y)


def attribute_T_twice(X):
    return np.sum((X @ X.T) * X.T.T[0, 0])


def method_dot(x, y):
    return x.dot(y) * x.dot(x)


def method_dot_matrix(W, x):
    return np.sum(np.tanh(W.dot(x)))


def method_astype(x):
    return np.sum(x.astype(np.float64) ** 3)


def method_max(x):
    return x.max() * np.sum(x)


def method_max_axis(X):
    return np.sum(X.max(axis=1) ** 2)


def method_min(x):
    return x.min() ** 2 + x.sum()


def chained_methods(X, W):
    return (X @ W).sum(axis=1).mean()


def method_on_result_of_method(X):
    return X.T.reshape(-1).dot(X.reshape(-1))


def method_on_array_in_loop(X):
    s = 0.0
    for row in X:
        s = s + row.max() * row.sum()
    return s


def shape_and_size_attributes(X):
    n, m = X.shape
    return X.sum() / (n * m) + X.size * X.mean() + X.ndim


# ---- user classes ----

class Linear:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def __call__(self, x):
        return self.W @ x + self.b

    def forward(self, x):
        return np.tanh(self.W @ x)

    def loss(self, x):
        return np.sum(self.forward(x) ** 2)

    def scaled_loss(self, x, scale=2.0):
        return self.loss(x) * scale


class Model:
    def __init__(self, layer, out):
        self.layer = layer
        self.out = out

    def predict(self, x):
        h = np.tanh(self.layer(x))
        return np.sum(self.out * h)


class Sequential:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = np.tanh(layer(x))
        return np.sum(x ** 2)


class Square:
    def apply(self, x):
        return x * x


class Sine:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return np.sin(self.k * x)


class Affine(Square):
    def __init__(self, a):
        self.a = a

    def apply(self, x):
        return self.a * super().apply(x) + x


def apply_object(obj, x):
    return obj.apply(x)


def apply_two_objects(x):
    total = 0.0
    for obj in (Square(), Sine(2.0), Affine(0.5)):
        total = total + np.sum(obj.apply(x))
    return total


def sum_method_of_argument(a):
    return a.sum()


def object_built_inside(x, W):
    layer = Linear(W, 0.5)
    return np.sum(layer(x) ** 2)



X34 = rng.normal(size=(3, 4))
X6 = np.array([0.3, -0.5, 1.2, 0.8, -1.1, 0.4])
Y6 = np.array([0.7, 0.2, -0.9, 1.3, 0.5, -0.6])
W23 = rng.normal(size=(2, 3))
LINEAR = Linear(rng.normal(size=(2, 3)), np.array([0.1, -0.2]))
MODEL = Model(LINEAR, np.array([1.5, -0.5]))
SEQUENTIAL = Sequential([Linear(rng.normal(size=(3, 3)), np.zeros(3)), Linear(rng.normal(size=(2, 3)), 0.3)])
X3 = np.array([0.6, -0.4, 0.9])

CASES = [
    case(method_sum_axis, X34),
    case(method_sum_keepdims, np.abs(X34) + 0.5),
    case(method_mean, X6),
    case(method_mean_axis, X34),
    case(method_reshape, X6),
    case(method_reshape_minus_one, X34),
    case(attribute_T, X34, rng.normal(size=3)),
    case(attribute_T_twice, X34),
    case(method_dot, X6, Y6),
    case(method_dot_matrix, W23, X3),
    case(method_astype, X6),
    case(method_max, X6),
    case(method_max_axis, X34),
    case(method_min, X6),
    case(chained_methods, X34, rng.normal(size=(4, 2))),
    case(method_on_result_of_method, rng.normal(size=(3, 3))),
    case(method_on_array_in_loop, X34),
    case(shape_and_size_attributes, X34),
    case(LINEAR, X3, label="__call__"),
    case(LINEAR.forward, X3),
    case(LINEAR.loss, X3),
    case(LINEAR.scaled_loss, X3),
    case(MODEL.predict, X3),
    case(SEQUENTIAL, X3, label="__call__"),
    case(apply_object, Square(), X6, label="Square"),
    case(apply_object, Sine(1.5), X6, label="Sine"),
    case(apply_object, Affine(0.5), X6, label="subclass"),
    case(apply_two_objects, X6),
    case(sum_method_of_argument, X34),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_grad_of_bound_method_uses_the_attribute():
    x = X3.copy()
    g = adjoint.grad(LINEAR.loss)(x)
    t = np.tanh(LINEAR.W @ X3)
    np.testing.assert_allclose(g, LINEAR.W.T @ (2 * t * (1 - t ** 2)))


def test_method_calling_a_callable_attribute():
    g = adjoint.grad(MODEL.predict)(X3.copy())
    h = np.tanh(LINEAR.W @ X3 + LINEAR.b)
    np.testing.assert_allclose(g, LINEAR.W.T @ (MODEL.out * (1 - h ** 2)))


def test_same_function_with_receivers_of_different_types():
    x = X6.copy()
    square = adjoint.grad(lambda v: np.sum(apply_object(Square(), v)))(x)
    sine = adjoint.grad(lambda v: np.sum(apply_object(Sine(1.5), v)))(x)
    np.testing.assert_allclose(square, 2 * X6)
    np.testing.assert_allclose(sine, 1.5 * np.cos(1.5 * X6))


def test_sum_method_called_with_an_array():
    np.testing.assert_allclose(adjoint.grad(sum_method_of_argument)(X34.copy()), np.ones((3, 4)))


def test_object_built_from_differentiable_values_carries_their_gradients():
    # `Linear.__init__` stores W unchanged, so the layer's cotangent for W is W's.
    check_grad(object_built_inside, X3.copy(), W23.copy())


def test_object_built_from_constants_inside_works():
    # Only W's gradient would need the object: with respect to x it is an ordinary call.
    check_grad(lambda x: object_built_inside(x, W23), X3.copy())