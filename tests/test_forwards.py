"""adjoint/forwards.py: `transform_for_runtime`, the way generated code reaches your functions
(a layer's `__call__`), and what it keeps between calls: every test differentiates once, so the
forward function is kept, then changes what it was made for and checks the next gradient."""

import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import forwards

X = np.array([[1.0, -2.0]])
W = np.array([[0.5, 1.5], [-1.0, 2.0]])
B = np.array([0.25, -0.75])

OFFSET = 0.0


def make_layer_class():
    class Layer:
        def __init__(self, W, b):
            self.W, self.b = W, b

        def __call__(self, x):
            return np.tanh(x @ self.W + self.b + OFFSET)

    return Layer


def loss(layer, x):
    return np.sum(layer(x) ** 2)


def expected(W, b, x, offset=0.0):
    """The gradients of `loss` by hand: (dW, db)."""
    h = np.tanh(x @ W + b + offset)
    d = 2 * h * (1 - h ** 2)
    return x.T @ d, d.sum(axis=0)


def test_a_class_whose_trainable_fields_change_gets_other_code():
    Layer = make_layer_class()
    layer = Layer(W, B)
    Layer.__trainable__ = ("W",)
    assert adjoint.grad(loss)(layer, X).b is None
    del Layer.__trainable__  # (the code made for a frozen `b` computes no cotangent for it)
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).b, expected(W, B, X)[1])
    Layer.__trainable__ = ("W",)
    assert adjoint.grad(loss)(layer, X).b is None


def test_a_freeze_after_a_plain_call_is_seen_inside_the_layer():
    layer = make_layer_class()(W, B)
    adjoint.grad(loss)(layer, X)
    frozen = adjoint.grad(loss, freeze=["b"])(layer, X)
    assert frozen.b is None
    np.testing.assert_allclose(frozen.W, expected(W, B, X)[0])


def test_a_function_the_method_calls_rebound_since_is_differentiated_instead(monkeypatch):
    layer = make_layer_class()(W, B)
    adjoint.grad(loss)(layer, X)
    monkeypatch.setattr(np, "tanh", np.sin)  # the code inlined tanh's rule: it is made again
    h = X @ W + B
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).b, (2 * np.sin(h) * np.cos(h)).sum(axis=0))


def test_a_global_the_method_reads_rebound_since_is_read_again(monkeypatch):
    layer = make_layer_class()(W, B)
    adjoint.grad(loss)(layer, X)
    monkeypatch.setitem(globals(), "OFFSET", 0.5)
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).W, expected(W, B, X, offset=0.5)[0])


def test_a_method_replaced_since_is_differentiated_instead():
    Layer = make_layer_class()
    layer = Layer(W, B)
    adjoint.grad(loss)(layer, X)

    def doubled(self, x):
        return 2.0 * (x @ self.W + self.b)

    Layer.__call__ = doubled
    h = 2.0 * (X @ W + B)
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).b, (2 * h * 2.0).sum(axis=0))


def test_a_method_whose_code_is_replaced_since_is_differentiated_again():
    Layer = make_layer_class()
    layer = Layer(W, B)
    adjoint.grad(loss)(layer, X)

    def doubled(self, x):
        return 2.0 * (x @ self.W + self.b)

    Layer.__call__.__code__ = doubled.__code__  # the same function object, new code
    h = 2.0 * (X @ W + B)
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).b, (2 * h * 2.0).sum(axis=0))


def scaled(x, k=2.0):
    return k * x


def calls_scaled(x):
    return np.sum(scaled(x) ** 2)


def test_new_defaults_of_a_function_called_from_generated_code_are_used(monkeypatch):
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(adjoint.grad(calls_scaled)(x), 8 * x)
    monkeypatch.setattr(scaled, "__defaults__", (3.0,))
    np.testing.assert_allclose(adjoint.grad(calls_scaled)(x), 18 * x)


def test_an_implicit_gradient_after_plain_calls_reaches_the_layers_parameters():
    layer = make_layer_class()(W, B)
    adjoint.grad(loss)(layer, X)
    gs = adjoint.gradient(lambda: loss(layer, X), adjoint.params(layer))
    np.testing.assert_allclose(gs[layer.W], expected(W, B, X)[0])
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).W, expected(W, B, X)[0])


SHIFT = np.array([0.1, -0.2])  # a parameter held in a global, read inside a method


class Shifted:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.tanh(x @ self.W + SHIFT)


def test_an_implicit_gradient_after_plain_calls_reaches_a_global_the_method_reads():
    layer = Shifted(W)
    adjoint.grad(loss)(layer, X)  # the plain call's code holds `SHIFT` constant
    gs = adjoint.gradient(lambda: loss(layer, X), adjoint.params(layer, SHIFT))
    np.testing.assert_allclose(gs[SHIFT], expected(W, SHIFT, X)[1])
    np.testing.assert_allclose(adjoint.grad(loss)(layer, X).W, expected(W, SHIFT, X)[0])


@dataclasses.dataclass
class Norm:
    scale: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": False})

    def __call__(self, x):
        return x * self.scale + self.eps


def test_a_field_frozen_by_its_metadata_gets_no_gradient_on_every_call():
    norm = Norm(np.array([2.0]), np.array([0.1]))
    for _ in range(2):
        gradient = adjoint.grad(lambda n, x: np.sum(n(x)))(norm, np.array([1.0, 3.0]))
        assert gradient.eps is None
        np.testing.assert_allclose(gradient.scale, [4.0])


def test_a_python_float_then_an_array_at_the_same_position_get_their_own_code():
    layer_call = make_layer_class().__call__
    layer = make_layer_class()(W, B)
    first = forwards.transform_for_runtime(layer_call, (0, 1), (layer, X))
    again = forwards.transform_for_runtime(layer_call, (0, 1), (layer, X))
    assert again is first
    on_float = forwards.transform_for_runtime(scaled, (0,), (1.5,))
    on_array = forwards.transform_for_runtime(scaled, (0,), (np.ones(2),))
    assert on_float is not on_array


def test_an_update_in_place_is_refused_every_time():
    def updates(x):
        x += 1.0
        return x

    for _ in range(2):
        with pytest.raises(adjoint.AdjointError, match="updates its argument `x` in place"):
            forwards.transform_for_runtime(updates, (0,), (np.ones(2),))
