"""compiler.array_methods: sums and means of values NumPy made are called as their methods;
those of parameters (maybe lists or Python numbers) stay `np.sum`/`np.mean`."""

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(0)


def softmax_entropy(z, w):
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.mean(p * np.log(p)) + np.sum(w)


def test_sums_of_what_numpy_made_are_methods_and_of_parameters_stay_as_written():
    text = adjoint.source(softmax_entropy, wrt=(0, 1))
    assert "e.sum(axis=1, keepdims=True)" in text and ".mean()" in text
    assert "np.sum(w)" in text  # `w` may be a list
    check_grad(softmax_entropy, rng.normal(size=(3, 4)), rng.normal(size=2))


def of_a_list(w):
    total = w + [1.0]  # a list: `+` concatenates
    return np.sum(np.sin(np.array(total))) + np.sum(total)


def loop_carried(x, n):
    s = x
    for _ in range(n):
        s = s * 0.5
    return np.sum(s)


def extra_arguments(x):
    y = np.sin(x)
    return np.sum(np.sum(y, 0, None)) + np.mean(y, dtype=np.float64)


@pytest.mark.parametrize("f, args, kept", [
    (of_a_list, ([0.3, 0.4],), ["of_a_list_sin.sum()", "np.sum(total)"]),
    (loop_carried, (rng.normal(size=3), 3), ["loop_carried = np.sum(s_"]),  # bound once per iteration
    (extra_arguments, (rng.normal(size=(2, 3)),), ["np.sum(y, 0, None)", "np.mean(y, dtype=np.float64)"]),
])
def test_what_may_not_be_an_array_or_passes_other_arguments_is_left_alone(f, args, kept):
    text = adjoint.source(f)
    assert all(statement in text for statement in kept)
    assert np.allclose(adjoint.value_and_grad(f)(*args)[0], f(*args))
    if f is not of_a_list:
        check_grad(f, *args)


def test_forward_mode_and_hvp_agree_with_finite_differences():
    z, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    w = rng.normal(size=2)
    assert "e.sum(axis=1, keepdims=True)" in adjoint.source(softmax_entropy, mode="jvp")
    h = 1e-5
    gradient = adjoint.grad(softmax_entropy)
    expected = (gradient(z + h * v, w) - gradient(z - h * v, w)) / (2 * h)
    np.testing.assert_allclose(adjoint.hvp(softmax_entropy, z, v, w), expected, rtol=1e-6, atol=1e-8)


def repeated_list(x):
    n = np.sum(x > 0)
    weights = [0.5] * n  # a list repeated: `list * NumPy int`
    return np.sum(weights) * np.sum(np.sin(x))


def where_positions(x):
    positions = np.where(x > 0)  # a tuple of index arrays
    return np.sum(np.sin(x)) * np.sum(positions)


def two_results(x):
    parts = np.modf(3 * x)  # a tuple of two arrays
    return np.sum(np.sin(x)) + np.sum(parts)


@pytest.mark.parametrize("f", [repeated_list, where_positions, two_results])
def test_values_that_are_not_arrays_keep_np_sum(f):
    x = np.array([0.3, -0.7, 1.1])
    assert np.isclose(adjoint.value_and_grad(f)(x)[0], f(x))
    check_grad(f, x)


def weighted(z, y):
    e = np.exp(z)
    return np.sum(y * e)  # `y`'s own `*` runs first: it may make anything


class Weights:
    """Numbers NumPy reads (`__array__`) with a product of their own, and no `.sum`."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __mul__(self, other):
        return Weights(self.values * other)

    def __array__(self, dtype=None, copy=None):
        return self.values


def test_a_parameter_times_an_array_is_summed_as_written():
    assert "np.sum(weighted_mul)" in adjoint.source(weighted)
    z = rng.normal(size=3)
    for y in ([1.0, 2.0, 3.0], 2, rng.normal(size=3)):
        assert np.isclose(adjoint.value_and_grad(weighted)(z, y)[0], weighted(z, y))
        np.testing.assert_allclose(adjoint.grad(weighted)(z, y), np.asarray(y) * np.exp(z))
    value, _ = adjoint.pullback(weighted, z, Weights([1.0, 2.0, 3.0]))  # (the forward pass runs as written)
    assert np.isclose(value, weighted(z, Weights([1.0, 2.0, 3.0])))
