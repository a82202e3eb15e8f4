"""adjoint/optim.py: SGD (momentum, Nesterov, weight decay) and Adam, updating models in place.

Expected values are single steps worked out by hand from the update rules:
  SGD:       g' = g + wd * p;  v = mu * v + g';  p -= lr * (g' + mu * v if nesterov else v)
  Adam:      m = b1 m + (1 - b1) g;  s = b2 s + (1 - b2) g^2;  p -= lr * (m / (1 - b1^t)) / (sqrt(s / (1 - b2^t)) + eps)
"""

import collections
import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, Tangent
from adjoint.optim import SGD, Adam, Optimizer

Pair = collections.namedtuple("Pair", "w c")


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


@dataclasses.dataclass(frozen=True)
class Affine:
    w: np.ndarray
    c: float
    name: str = "affine"


class Slotted:
    __slots__ = ("w", "c")

    def __init__(self, w, c):
        self.w, self.c = w, c


class Seq:
    def __init__(self, layers):
        self.layers = layers


def one(value):
    return {"p": np.array([value])}


def steps(opt, value, gradients):
    model = one(value)
    for g in gradients:
        opt.step(model, {"p": np.array([g])})
    return float(model["p"][0])


# ---- SGD ------------------------------------------------------------------------------------------


def test_sgd_single_step():
    model = {"w": np.array([1.0, 2.0])}
    array = model["w"]
    out = SGD(lr=0.1).step(model, {"w": np.array([0.5, -1.0])})
    assert out is model and model["w"] is array  # in place
    np.testing.assert_allclose(array, [0.95, 2.1])


def test_sgd_default_learning_rate_is_a_hundredth():
    assert steps(SGD(), 1.0, [1.0]) == pytest.approx(0.99)


def test_sgd_momentum_two_steps():
    # v1 = 1, p = 1 - 0.1 = 0.9;  v2 = 0.9 * 1 + 2 = 2.9, p = 0.9 - 0.29 = 0.61
    assert steps(SGD(lr=0.1, momentum=0.9), 1.0, [1.0, 2.0]) == pytest.approx(0.61)


def test_sgd_nesterov_two_steps():
    # v1 = 1, change = 0.1 (1 + 0.9 * 1) = 0.19, p = 0.81
    # v2 = 0.9 + 2 = 2.9, change = 0.1 (2 + 0.9 * 2.9) = 0.461, p = 0.349
    assert steps(SGD(lr=0.1, momentum=0.9, nesterov=True), 1.0, [1.0]) == pytest.approx(0.81)
    assert steps(SGD(lr=0.1, momentum=0.9, nesterov=True), 1.0, [1.0, 2.0]) == pytest.approx(0.349)


def test_sgd_nesterov_without_momentum_is_plain_sgd():
    assert steps(SGD(lr=0.1, nesterov=True), 1.0, [1.0, 2.0]) == pytest.approx(0.7)


def test_sgd_weight_decay_adds_to_the_gradient():
    # g' = 1 + 0.5 * 2 = 2, p = 2 - 0.1 * 2 = 1.8
    assert steps(SGD(lr=0.1, weight_decay=0.5), 2.0, [1.0]) == pytest.approx(1.8)
    # with a zero gradient the weight still decays
    assert steps(SGD(lr=0.1, weight_decay=0.5), 2.0, [0.0]) == pytest.approx(1.9)


def test_sgd_weight_decay_with_momentum():
    # step 1: g' = 1 + 0.5 * 2 = 2, v = 2, p = 1.8
    # step 2: g' = 1 + 0.5 * 1.8 = 1.9, v = 0.9 * 2 + 1.9 = 3.7, p = 1.8 - 0.37 = 1.43
    assert steps(SGD(lr=0.1, momentum=0.9, weight_decay=0.5), 2.0, [1.0, 1.0]) == pytest.approx(1.43)


def test_sgd_momentum_state_is_kept_per_parameter():
    model = {"a": np.array([1.0]), "b": np.array([1.0])}
    opt = SGD(lr=0.1, momentum=0.9)
    opt.step(model, {"a": np.array([1.0]), "b": np.array([-1.0])})
    opt.step(model, {"a": np.array([2.0]), "b": None})  # `b` has no gradient: it and its velocity stay
    np.testing.assert_allclose(model["a"], [0.61])
    np.testing.assert_allclose(model["b"], [1.1])
    opt.step(model, {"b": np.array([0.0])})  # `b`'s velocity is still 1 * -1: 0.9 * -1 + 0
    np.testing.assert_allclose(model["b"], [1.19])


# ---- Adam ------------------------------------------------------------------------------------------


def test_adam_first_step_is_lr_times_the_sign_by_bias_correction():
    model = {"p": np.array([1.0, 1.0, 1.0])}
    Adam(lr=0.1).step(model, {"p": np.array([2.0, -0.5, 1e-3])})
    np.testing.assert_allclose(model["p"], [0.9, 1.1, 0.9], atol=2e-6)  # eps: 1e-5 of the step at 1e-3


def test_adam_two_steps_by_hand():
    model = {"p": np.array([1.0, 1.0])}
    opt = Adam(lr=0.1, b1=0.9, b2=0.999, eps=1e-8)
    opt.step(model, {"p": np.array([2.0, -0.5])})
    opt.step(model, {"p": np.array([1.0, 1.0])})
    # component 0: m = 0.9 * 0.2 + 0.1 = 0.28, s = 0.999 * 0.004 + 0.001 = 0.004996
    #   change = 0.1 * (0.28 / 0.19) / sqrt(0.004996 / 0.001999) = 0.0932180
    np.testing.assert_allclose(model["p"], [0.8067820372, 1.0633896458], rtol=1e-9)


def test_adam_with_a_constant_gradient_moves_lr_per_step():
    # bias correction makes m_hat = g and s_hat = g^2 exactly for a constant g
    assert steps(Adam(lr=0.01), 1.0, [3.0] * 5) == pytest.approx(0.95, rel=1e-6)


def test_adam_weight_decay_is_decoupled():
    # change = 0.1 * (1 + 0.1 * 1) = 0.11: not added to the gradient (that would give 0.1)
    assert steps(Adam(lr=0.1, weight_decay=0.1), 1.0, [2.0]) == pytest.approx(0.89, rel=1e-6)


def test_adam_eps_bounds_the_step_of_a_zero_gradient():
    assert steps(Adam(lr=0.1), 1.0, [0.0]) == 1.0


def test_base_optimizer_has_no_update_rule():
    with pytest.raises(NotImplementedError):
        Optimizer().step(one(1.0), {"p": np.array([1.0])})


# ---- pairing parameters with gradients -------------------------------------------------------------------


def test_a_tied_array_is_updated_once_with_the_summed_gradient():
    W = np.array([1.0, 1.0])
    model = {"enc": W, "dec": W, "again": [W]}
    SGD(lr=0.1).step(model, {"enc": np.array([1.0, 2.0]), "dec": np.array([3.0, 4.0]), "again": [np.ones(2)]})
    np.testing.assert_allclose(W, [1.0 - 0.5, 1.0 - 0.7])


def test_adam_on_a_tied_array_steps_once():
    W = np.array([1.0])
    model = {"a": W, "b": W}
    Adam(lr=0.1).step(model, {"a": np.array([1.0]), "b": np.array([2.0])})
    np.testing.assert_allclose(W, [0.9], rtol=1e-6)  # one step of lr, not two


def test_a_tied_layer_in_a_model_is_updated_with_both_places_gradients():
    layer = Dense(np.array([1.0]), np.array([0.0]))
    model = Seq([layer, layer])
    grads = Tangent(Seq, layers=[Tangent(Dense, W=np.array([1.0])), Tangent(Dense, W=np.array([2.0]), b=None)])
    SGD(lr=0.1).step(model, grads)
    np.testing.assert_allclose(layer.W, [0.7])
    np.testing.assert_allclose(layer.b, [0.0])


def test_training_a_tied_layer_with_grad_matches_the_untied_gradient():
    W = np.array([[1.0, 2.0], [0.5, -1.0]])
    x = np.array([1.0, 3.0])

    class Layer:
        def __init__(self, W):
            self.W = W

        def __call__(self, h):
            return h @ self.W

    class Net:
        def __init__(self, layers):
            self.layers = layers

        def __call__(self, h):
            for layer in self.layers:
                h = layer(h)
            return h

    layer = Layer(W.copy())
    net = Net([layer, layer])
    grads = adjoint.grad(lambda n: np.sum(n(x)))(net)
    SGD(lr=1.0).step(net, grads)
    expected = adjoint.grad(lambda w: np.sum(x @ w @ w))(W)  # x (W W): d/dW = x^T 1 W^T + (x W)^T 1
    np.testing.assert_allclose(layer.W, W - expected)


def test_float32_arrays_stay_float32_and_are_updated_in_place():
    W = np.ones(3, dtype=np.float32)
    model = {"W": W}
    for opt in (SGD(lr=0.1, momentum=0.9), Adam(lr=0.1)):
        opt.step(model, {"W": np.full(3, 0.5)})  # a float64 gradient
        assert model["W"] is W and W.dtype == np.float32


def test_gradients_of_none_and_absent_entries_change_nothing():
    model = {"a": np.array([1.0]), "b": np.array([2.0]), "n": 3, "s": "x", "inner": {"c": np.array([3.0])}}
    SGD(lr=0.1).step(model, {"a": None, "inner": None})
    SGD(lr=0.1).step(model, None)
    assert (model["a"][0], model["b"][0], model["inner"]["c"][0], model["n"], model["s"]) == (1.0, 2.0, 3.0, 3, "x")


def test_step_with_grads_from_implicit_parameters():
    W = np.array([1.0, 2.0])
    holder = {"W": W}
    ps = adjoint.params(holder)
    gs = adjoint.gradient(lambda: np.sum(holder["W"] ** 2), ps)
    out = SGD(lr=0.25).step(holder, gs)
    assert out is holder and holder["W"] is W
    np.testing.assert_allclose(W, [0.5, 1.0])


def test_step_refuses_an_array_alone():
    with pytest.raises(AdjointError, match="hold it in a dict or list"):
        SGD().step(np.ones(2), np.ones(2))


def test_step_on_an_object_with_a_cycle_terminates():
    class Node:
        def __init__(self, w):
            self.w = w
            self.me = self

    node = Node(np.array([1.0]))
    SGD(lr=0.1).step(node, Tangent(Node, w=np.array([1.0])))
    np.testing.assert_allclose(node.w, [0.9])


# ---- Python floats and NumPy scalars: configuration, as for `adjoint.params` ------------------------


def test_python_floats_and_numpy_scalars_are_left_alone():
    # an `eps` or a dropout rate in a model is not trained, whatever gradient it was given
    model = {"s": 2.0, "xs": [1.0, 5.0], "eps": np.float64(1e-5), "w": np.array([1.0])}
    grads = {"s": 1.0, "xs": [None, 10.0], "eps": np.float64(3.0), "w": np.array([1.0])}
    SGD(lr=0.1, weight_decay=0.5).step(model, grads)
    assert model["s"] == 2.0 and model["xs"] == [1.0, 5.0] and model["eps"] == 1e-5
    np.testing.assert_allclose(model["w"], [1.0 - 0.1 * 1.5])


def test_float_fields_of_frozen_or_slotted_objects_are_left_alone():
    frozen = Affine(np.array([1.0]), 2.0)
    slotted = Slotted(np.array([1.0]), 2.0)
    for model, cls in ((frozen, Affine), (slotted, Slotted)):
        SGD(lr=0.5).step(model, Tangent(cls, w=np.array([1.0]), c=1.0))
        assert model.c == 2.0
        np.testing.assert_allclose(model.w, [0.5])


def test_a_trainable_scalar_is_a_0d_array():
    model = {"s": np.array(1.0)}
    Adam(lr=0.1).step(model, {"s": np.array(-3.0)})
    assert model["s"] == pytest.approx(1.1) and model["s"].shape == ()


def test_training_a_frozen_dataclass_with_a_0d_array_field():
    model = Affine(np.array([0.0, 0.0]), np.array(0.0))
    x, y = np.array([1.0, 2.0]), 3.0
    opt = SGD(lr=0.05)
    for _ in range(200):
        grads = adjoint.grad(lambda m: (np.sum(m.w * x) + m.c - y) ** 2)(model)
        model = opt.step(model, grads)
    assert float(np.sum(model.w * x) + model.c) == pytest.approx(y, abs=1e-6)
    assert model.c != 0.0
