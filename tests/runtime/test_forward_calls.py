"""runtime.forward_calls, runtime.tangents, runtime.nested: what generated JVP code calls at run time."""

import collections
import dataclasses
import functools

import numpy as np
import pytest

import adjoint
from adjoint import runtime as adj
from adjoint.runtime.building import Untracked


def scaled(x, w):
    return x * w


class Layer:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.tanh(x @ self.W)

    @property
    def double(self):
        return 2.0 * self.W


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


Pair = collections.namedtuple("Pair", "w n")


def test_jvp_dispatches_rules_non_differentiable_functions_and_python_functions():
    assert adj.jvp(np.cos, (0.0,), (2.0,)) == (1.0, -0.0)
    value, tangent = adj.jvp(np.argmax, (np.array([1.0, 3.0]),), (np.ones(2),))
    assert value == 1 and tangent == 0
    value, tangent = adj.jvp(scaled, (2.0, 3.0), (1.0, None))
    assert (value, tangent) == (6.0, 3.0)


def test_jvp_of_bound_methods_partials_and_callable_objects_holds_what_they_bind_constant():
    W = np.array([[1.0, 2.0], [0.5, -1.0]])
    x, dx = np.array([0.3, 0.2]), np.array([1.0, 0.0])
    layer = Layer(W)
    expected = (1 - np.tanh(x @ W) ** 2) * (dx @ W)
    np.testing.assert_allclose(adj.jvp(layer, (x,), (dx,))[1], expected)
    np.testing.assert_allclose(adj.jvp(layer.__call__, (x,), (dx,))[1], expected)
    assert adj.jvp(functools.partial(scaled, w=3.0), (2.0,), (1.0,)) == (6.0, 3.0)


def test_a_layers_tangent_reaches_its_fields_through_closure_jvp():
    W, dW = np.eye(2), np.array([[0.0, 1.0], [0.0, 0.0]])
    x = np.array([0.5, 0.25])
    value, tangent = adj.closure_jvp(Layer(W), adjoint.Tangent(Layer, W=dW), (x,), (None,))
    np.testing.assert_allclose(tangent, (1 - np.tanh(x) ** 2) * (x @ dW))


def test_objects_built_inside_get_a_tangent_of_the_same_shape():
    W, b = np.ones((2, 2)), np.zeros(2)
    obj, tangent = adj.jvp(Dense, (W, b), (np.eye(2), None))
    assert isinstance(obj, Dense) and isinstance(tangent, adjoint.Tangent)
    np.testing.assert_array_equal(tangent.W, np.eye(2))
    np.testing.assert_array_equal(tangent.b, np.zeros(2))
    pair, tangent = adj.keywords_jvp(Pair, (), (), {"w": 2.0, "n": 3}, {"w": 1.0})
    assert pair == Pair(2.0, 3) and tangent == Pair(1.0, 0)


class Scaling:
    def __init__(self, w):
        self.w = w
        self.double = w * 2.0  # computed, not stored: its tangent cannot be followed


def test_a_field_computed_by_a_constructor_refuses_to_be_used_not_miscomputed():
    _, tangent = adj.jvp(Scaling, (1.5,), (1.0,))
    assert tangent.w == 1.0 and isinstance(tangent.double, Untracked)
    with pytest.raises(adjoint.AdjointError, match="computed by its constructor"):
        tangent.double * 2.0


def test_field_tangent_differentiates_properties():
    W = np.array([1.0, 2.0])
    layer = Layer(W)
    assert adj.field_tangent(layer, adjoint.Tangent(Layer, W=np.ones(2)), "W", W).tolist() == [1.0, 1.0]
    assert adj.field_tangent(layer, adjoint.Tangent(Layer, W=np.ones(2)), "double", layer.double).tolist() == [2.0, 2.0]
    assert adj.field_tangent(layer, None, "W", W).tolist() == [0.0, 0.0]


def test_method_jvp_of_arrays_dicts_lists_and_objects():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    value, tangent = adj.method_jvp(x, np.ones((2, 2)), "sum", (), (), axis=0)
    np.testing.assert_array_equal(tangent, [2.0, 2.0])
    d = {"a": 1.0, "b": 2.0}
    assert adj.method_jvp(d, {"a": 10.0, "b": 20.0}, "get", ("b",), (None,)) == (2.0, 20.0)
    assert adj.method_jvp(d, {"a": 10.0, "b": 20.0}, "values", (), ())[1] == [10.0, 20.0]
    assert adj.method_jvp([1.0, 1.0, 2.0], [1.0, 1.0, 1.0], "count", (1.0,), (None,)) == (2, 0)
    value, tangent = adj.method_jvp(Layer(np.eye(2)), None, "__call__", (np.ones(2),), (np.ones(2),))
    np.testing.assert_allclose(tangent, 1 - np.tanh(1.0) ** 2)


def test_keywords_jvp_moves_keywords_to_positions_or_into_kwargs():
    def f(a, b=1.0):
        return a * b

    def g(a, **options):
        return a * options["b"]

    assert adj.keywords_jvp(f, (2.0,), (None,), {"b": 3.0}, {"b": 1.0}) == (6.0, 2.0)
    assert adj.keywords_jvp(g, (2.0,), (None,), {"b": 3.0}, {"b": 1.0}) == (6.0, 2.0)
    with pytest.raises(adjoint.AdjointError, match="pass it by position"):
        adj.keywords_jvp(np.multiply, (2.0,), (None,), {"x2": 3.0}, {"x2": 1.0})


def test_a_recursive_closure_carries_its_tangent_into_its_own_calls():
    def make(w):
        def power(x, n):
            return 1.0 if n == 0 else w * x * power(x, n - 1)

        return power

    power = make(2.0)
    value, tangent = adj.closure_jvp(power, {"w": 1.0}, (1.5, 3), (None, None))
    assert value == pytest.approx(8 * 1.5 ** 3)
    assert tangent == pytest.approx(3 * 4 * 1.5 ** 3)  # d/dw (w x)^3 = 3 w^2 x^3


def test_tangent_helpers():
    assert adj.zero_tangent({"w": np.ones(2), "n": 3, "s": "a"})["n"] == 0
    assert adj.tangent_like(np.array(1.0 + 2.0j), np.zeros(2, dtype=np.float32)).tolist() == [1.0, 1.0]
    assert adj.tangent_like(np.ones(2), np.arange(2)).tolist() == [0, 0]  # an int result does not move
    assert adj.complete_tangent([None, 1.0], [np.ones(1), 2.0])[0].tolist() == [0.0]
    assert adj.holds_floats([1]) and not adj.holds_floats(np.arange(2))


def test_vjp_program_lays_out_cotangents():
    def forward(x, y):
        return x * y, lambda g: (g * y, g * x)

    value, pullback = adj.vjp_program(forward, (2.0, 3.0), {}, adj.closure_cotangents, (1, ("y",)))
    assert value == 6.0 and pullback(1.0) == ({"y": 2.0}, 3.0)
    assert adj.filled_cotangents((None,), ((np.ones(2), 1), (0,)))[0].tolist() == [0.0, 0.0]
    assert adj.dropped_cotangents((1.0, 2.0), 1) == (2.0,)
