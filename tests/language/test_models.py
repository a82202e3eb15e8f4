"""Language corpus: models (structural gradients).

Models written the way ML code is written in plain Python + NumPy: layers as objects with
`__call__`, chains looping over `self.layers`, RNN cells carrying a state, fields that are not
parameters (activations, sizes, names, config dicts), frozen fields (`__trainable__`, dataclass
metadata, `freeze=` paths), tied weights, script models whose weights are module globals or
closure variables (`adjoint.params` / `adjoint.gradient(lambda: ..., ps)`), nested parameter
containers, objects built inside the differentiated function, and short training loops with
`adjoint.optim`.

Every gradient is checked against central finite differences (`check_grad`, or a directional
finite difference for implicit parameters), and where there is one, against the gradient of
an equivalent function of plain arrays or a backward pass derived by hand.

Each distinct (function, wrt, frozen fields) is transformed once and transforming costs time,
so the tests share module-level loss functions rather than writing a lambda each.
"""

import collections
import copy
import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _fixed_seed():
    """Each test draws the same numbers whichever tests run before it."""
    global rng
    rng = np.random.default_rng(1234)


def normal(*shape):
    return rng.normal(size=shape)


def thunk(f, *args):
    """`lambda: f(*args)`, one code object for every test (so it is transformed once)."""
    return lambda: f(*args)


def assert_tree_close(actual, expected, rtol=1e-10, atol=1e-12):
    """Gradients mirror their argument: compare them leaf by leaf, `None` with `None`."""
    if expected is None:
        assert actual is None, f"expected None, got {actual!r}"
        return
    if isinstance(expected, adjoint.Tangent):
        assert isinstance(actual, adjoint.Tangent), f"expected a Tangent, got {type(actual).__name__}"
        assert sorted(dir(actual)) == sorted(dir(expected))
        for name in dir(expected):
            assert_tree_close(getattr(actual, name), getattr(expected, name), rtol, atol)
        return
    if isinstance(expected, dict):
        assert type(actual) is dict and list(actual) == list(expected)
        for key in expected:
            assert_tree_close(actual[key], expected[key], rtol, atol)
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_tree_close(a, e, rtol, atol)
        return
    assert np.shape(actual) == np.shape(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def directional_fd(loss, array, direction, eps=1e-6):
    """Central finite difference of `loss()` along `direction`, moving `array` in place (an
    implicit parameter is reached by identity), and restoring it after."""
    original = array.copy()
    try:
        array += eps * direction
        plus = float(loss())
        array[...] = original - eps * direction
        minus = float(loss())
    finally:
        array[...] = original
    return (plus - minus) / (2 * eps)


def check_implicit_grads(loss, arrays, gs, seed=1):
    """`<gs[a], u>` for a random direction `u` against finite differences, array by array."""
    r = np.random.default_rng(seed)
    for a in arrays:
        u = r.normal(size=a.shape)
        analytic = float(np.sum(gs[a] * u))
        numeric = directional_fd(loss, a, u)
        assert analytic == pytest.approx(numeric, rel=1e-6, abs=1e-8)


def identity(z):
    return z


def mse(pred, target):
    return np.mean((pred - target) ** 2)


def softmax_cross_entropy(logits, onehot):
    log_probs = logits - np.log(np.sum(np.exp(logits), axis=-1, keepdims=True))
    return -np.mean(np.sum(onehot * log_probs, axis=-1))


def one_hot(labels, n):
    return np.eye(n)[labels]


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# ---- hand-derived backward passes (independent of adjoint) ----

def mlp_out(W1, b1, W2, b2, x):
    return np.tanh(x @ W1 + b1) @ W2 + b2


def manual_mlp_backward(W1, b1, W2, x, v):
    """The pullback of `mlp_out` for the output cotangent `v`: (dW1, db1, dW2, db2, dx)."""
    h = np.tanh(x @ W1 + b1)
    da = (v @ W2.T) * (1 - h ** 2)
    return x.T @ da, da.sum(axis=0), h.T @ v, v.sum(axis=0), da @ W1.T


def manual_mse_grads(W1, b1, W2, b2, x, y):
    out = mlp_out(W1, b1, W2, b2, x)
    return manual_mlp_backward(W1, b1, W2, x, 2 * (out - y) / out.size)


def manual_xent_grads(W1, b1, W2, b2, x, onehot):
    out = mlp_out(W1, b1, W2, b2, x)
    return manual_mlp_backward(W1, b1, W2, x, (softmax(out) - onehot) / out.shape[0])


def manual_dense_sq_grads(W, b, x, gamma=1.0):
    """Gradients of sum((tanh(x W + b) * gamma)^2) with respect to W and b."""
    t = np.tanh(x @ W + b)
    dz = 2 * t * gamma ** 2 * (1 - t ** 2)
    return x.T @ dz, dz.sum(axis=0)


# =====================================================================================
# 1. An MLP: a Chain of Dense layers with __call__
# =====================================================================================


class Dense:
    def __init__(self, W, b, activation=np.tanh):
        self.W = W
        self.b = b
        self.activation = activation

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


class Chain:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def make_mlp(sizes=(3, 4, 2), last=identity):
    layers = []
    for i, (n, m) in enumerate(zip(sizes[:-1], sizes[1:])):
        activation = last if i == len(sizes) - 2 else np.tanh
        layers.append(Dense(normal(n, m) * 0.7, normal(m) * 0.1, activation))
    return Chain(layers)


def weights(model):
    (l1, l2) = model.layers
    return l1.W, l1.b, l2.W, l2.b


X53 = rng.normal(size=(5, 3))
Y52 = rng.normal(size=(5, 2))
ONEHOT = one_hot(np.array([0, 1, 1, 0, 1]), 2)


def mlp_mse(model):
    return mse(model(X53), Y52)


def mlp_xent(model):
    return softmax_cross_entropy(model(X53), ONEHOT)


def model_output(model, x):
    return model(x)


def model_loss(model, x, y):
    return mse(model(x), y)


def mlp_arrays_mse(W1, b1, W2, b2):
    h = np.tanh(X53 @ W1 + b1)
    return np.mean((h @ W2 + b2 - Y52) ** 2)


def loss_and_prediction(model):
    pred = model(X53)
    return mse(pred, Y52), pred


def test_mlp_mse_matches_finite_differences():
    check_grad(mlp_mse, make_mlp())


def test_deeper_mlp_matches_finite_differences():
    check_grad(mlp_mse, make_mlp((3, 5, 4, 2)))


def test_mlp_softmax_cross_entropy_matches_finite_differences_and_hand_derived():
    model = make_mlp()
    check_grad(mlp_xent, model)
    g = adjoint.grad(mlp_xent)(model)
    manual = manual_xent_grads(*weights(model), X53, ONEHOT)
    found = (g.layers[0].W, g.layers[0].b, g.layers[1].W, g.layers[1].b)
    for f, m in zip(found, manual):
        np.testing.assert_allclose(f, m, rtol=1e-10, atol=1e-13)


def test_mlp_output_with_respect_to_model_and_input_matches_finite_differences():
    # A non-scalar output: check_grad pulls a random cotangent back to the model and to x.
    check_grad(model_output, make_mlp(), X53.copy())


def test_mlp_gradient_structure_mirrors_the_model():
    model = make_mlp()
    g = adjoint.grad(mlp_mse)(model)
    assert isinstance(g, adjoint.Tangent)
    assert isinstance(g.layers, list) and len(g.layers) == 2
    for layer, layer_grad in zip(model.layers, g.layers):
        assert isinstance(layer_grad, adjoint.Tangent)
        assert layer_grad.W.shape == layer.W.shape and layer_grad.W.dtype == layer.W.dtype
        assert layer_grad.b.shape == layer.b.shape
        assert layer_grad.activation is None
    assert g.layers[0].W.shape == (3, 4) and g.layers[1].W.shape == (4, 2)


def test_mlp_gradient_equals_plain_array_and_hand_derived_gradients():
    model = make_mlp()
    g = adjoint.grad(mlp_mse)(model)
    arrays = adjoint.grad(mlp_arrays_mse, wrt=(0, 1, 2, 3))(*weights(model))
    manual = manual_mse_grads(*weights(model), X53, Y52)
    found = (g.layers[0].W, g.layers[0].b, g.layers[1].W, g.layers[1].b)
    for f, a, m in zip(found, arrays, manual):
        np.testing.assert_allclose(f, a, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(f, m, rtol=1e-10, atol=1e-13)


def test_value_and_grad_of_a_model_with_aux():
    model = make_mlp()
    (value, pred), g = adjoint.value_and_grad(loss_and_prediction, has_aux=True)(model)
    assert float(value) == pytest.approx(float(mlp_mse(model)), rel=1e-14)
    np.testing.assert_allclose(pred, model(X53))
    manual = manual_mse_grads(*weights(model), X53, Y52)
    np.testing.assert_allclose(g.layers[0].W, manual[0], rtol=1e-10)
    np.testing.assert_allclose(g.layers[1].b, manual[3], rtol=1e-10)
    assert g.layers[0].activation is None


def test_gradient_with_model_and_data_arguments():
    model = make_mlp()
    gm, gx, gy = adjoint.gradient(model_loss, model, X53.copy(), Y52.copy())
    dW1, db1, dW2, db2, dx = manual_mse_grads(*weights(model), X53, Y52)
    np.testing.assert_allclose(gm.layers[0].W, dW1, rtol=1e-10)
    np.testing.assert_allclose(gm.layers[1].W, dW2, rtol=1e-10)
    np.testing.assert_allclose(gx, dx, rtol=1e-10)
    np.testing.assert_allclose(gy, -2 * (model(X53) - Y52) / Y52.size, rtol=1e-12)
    check_grad(model_loss, model, X53.copy(), Y52.copy())


def test_pullback_of_a_model_call():
    model = make_mlp()
    value, back = adjoint.pullback(model_output, model, X53.copy())
    np.testing.assert_allclose(value, model(X53))
    v = normal(5, 2)
    gm, gx = back(v)
    dW1, db1, dW2, db2, dx = manual_mlp_backward(model.layers[0].W, model.layers[0].b, model.layers[1].W, X53, v)
    assert_tree_close(gm.layers[0].W, dW1)
    assert_tree_close(gm.layers[0].b, db1)
    assert_tree_close(gm.layers[1].W, dW2)
    assert_tree_close(gm.layers[1].b, db2)
    assert_tree_close(gx, dx)


# =====================================================================================
# 2. An RNN cell called in a Python loop carrying its state
# =====================================================================================


class RNNCell:
    def __init__(self, Wx, Wh, b):
        self.Wx = Wx
        self.Wh = Wh
        self.b = b

    def __call__(self, h, x):
        return np.tanh(x @ self.Wx + h @ self.Wh + self.b)


State = collections.namedtuple("State", ["h", "c"])


class GatedCell:
    """A cell whose state is a namedtuple `State(h, c)`."""

    def __init__(self, Wx, Wh, Wg, b):
        self.Wx = Wx
        self.Wh = Wh
        self.Wg = Wg
        self.b = b

    def __call__(self, state, x):
        gate = 1.0 / (1.0 + np.exp(-(x @ self.Wg + state.h @ self.Wh)))
        c = gate * state.c + (1.0 - gate) * np.tanh(x @ self.Wx + self.b)
        h = np.tanh(c) * gate
        return State(h, c)


XS = rng.normal(size=(4, 2))  # 4 steps of 2 features
READOUT = rng.normal(size=3)


def make_rnn():
    return RNNCell(normal(2, 3) * 0.6, normal(3, 3) * 0.6, normal(3) * 0.1)


def rnn_loss(cell, h0):
    h = h0
    for t in range(XS.shape[0]):
        h = cell(h, XS[t])
    return np.sum(h * READOUT) + 0.1 * np.sum(h ** 2)


def rnn_loss_over_rows(cell, h0):
    h = h0
    total = 0.0
    for x in XS:
        h = cell(h, x)
        total = total + np.sum(h * READOUT)
    return total


def rnn_arrays_loss(Wx, Wh, b, h0):
    h = h0
    for t in range(XS.shape[0]):
        h = np.tanh(XS[t] @ Wx + h @ Wh + b)
    return np.sum(h * READOUT) + 0.1 * np.sum(h ** 2)


def step_returning_state(cell, h, x):
    return cell(h, x)


def test_rnn_cell_in_loop_matches_finite_differences():
    check_grad(rnn_loss, make_rnn(), normal(3))


def test_rnn_cell_loop_over_rows_accumulating_loss():
    check_grad(rnn_loss_over_rows, make_rnn(), normal(3))


def test_rnn_cell_gradient_equals_plain_arrays_gradient():
    cell, h0 = make_rnn(), normal(3)
    g_cell, g_h0 = adjoint.grad(rnn_loss, wrt=(0, 1))(cell, h0)
    gWx, gWh, gb, gh0 = adjoint.grad(rnn_arrays_loss, wrt=(0, 1, 2, 3))(cell.Wx, cell.Wh, cell.b, h0)
    assert isinstance(g_cell, adjoint.Tangent)
    np.testing.assert_allclose(g_cell.Wx, gWx, rtol=1e-12)
    np.testing.assert_allclose(g_cell.Wh, gWh, rtol=1e-12)
    np.testing.assert_allclose(g_cell.b, gb, rtol=1e-12)
    np.testing.assert_allclose(g_h0, gh0, rtol=1e-12)


def test_rnn_one_step_by_hand():
    cell, h, x = make_rnn(), normal(3), normal(2)
    v = normal(3)
    _, back = adjoint.pullback(step_returning_state, cell, h, x)
    g_cell, g_h, g_x = back(v)
    out = cell(h, x)
    da = v * (1 - out ** 2)
    np.testing.assert_allclose(g_cell.Wx, np.outer(x, da), rtol=1e-12)
    np.testing.assert_allclose(g_cell.Wh, np.outer(h, da), rtol=1e-12)
    np.testing.assert_allclose(g_cell.b, da, rtol=1e-12)
    np.testing.assert_allclose(g_h, cell.Wh @ da, rtol=1e-12)
    np.testing.assert_allclose(g_x, cell.Wx @ da, rtol=1e-12)


def test_rnn_step_passing_and_returning_state():
    # The state goes in and comes out: pulled back to the cell, the state and the input.
    check_grad(step_returning_state, make_rnn(), normal(3), normal(2))


def make_gated():
    return GatedCell(normal(2, 3) * 0.5, normal(3, 3) * 0.5, normal(2, 3) * 0.5, normal(3) * 0.1)


def gated_loss(cell, state):
    for t in range(XS.shape[0]):
        state = cell(state, XS[t])
    return np.sum(state.h * READOUT) + np.sum(state.c ** 2)


def test_rnn_state_held_in_namedtuple_matches_finite_differences():
    check_grad(gated_loss, make_gated(), State(normal(3), normal(3)))


def test_rnn_namedtuple_state_gradient_is_a_state():
    cell, state = make_gated(), State(normal(3), normal(3))
    g_cell, g_state = adjoint.grad(gated_loss, wrt=(0, 1))(cell, state)
    assert type(g_state) is State
    assert g_state.h.shape == (3,) and g_state.c.shape == (3,)
    assert isinstance(g_cell, adjoint.Tangent)
    for name in ("Wx", "Wh", "Wg", "b"):
        assert getattr(g_cell, name).shape == getattr(cell, name).shape
    # d/dc0 only through the first step's `gate * c`: nonzero, and h0 matters through the gate
    assert np.all(np.abs(g_state.c) > 0) and np.all(np.abs(g_state.h) > 0)


# =====================================================================================
# 3. A model with non-array fields
# =====================================================================================


class ConfiguredNet:
    def __init__(self, W, b, activation, n_in, n_out, name, config):
        self.W = W
        self.b = b
        self.activation = activation
        self.n_in = n_in
        self.n_out = n_out
        self.name = name
        self.config = config

    def __call__(self, x):
        assert x.shape[-1] == self.n_in
        h = x
        for _ in range(self.config["depth"]):
            h = self.activation(h @ self.W + self.b) * self.config["scale"]
        return h[:, : self.n_out]


def make_configured():
    return ConfiguredNet(normal(3, 3) * 0.6, normal(3) * 0.1, np.tanh, 3, 2, "net", {"scale": 0.5, "depth": 2})


def configured_loss(model):
    return np.sum(model(X53) ** 2) + 0.1 * len(model.name)


def configured_arrays_loss(W, b, scale):
    h = X53
    for _ in range(2):
        h = np.tanh(h @ W + b) * scale
    return np.sum(h[:, :2] ** 2)


def test_model_with_non_array_fields_matches_finite_differences():
    check_grad(configured_loss, make_configured())


def test_non_array_fields_get_none_and_config_floats_get_gradients():
    model = make_configured()
    g = adjoint.grad(configured_loss)(model)
    assert g.activation is None and g.n_in is None and g.n_out is None and g.name is None
    assert type(g.config) is dict and list(g.config) == ["scale", "depth"]
    assert g.config["depth"] is None
    assert type(g.config["scale"]) is float
    gW, gb, gscale = adjoint.grad(configured_arrays_loss, wrt=(0, 1, 2))(model.W, model.b, 0.5)
    np.testing.assert_allclose(g.W, gW, rtol=1e-12)
    np.testing.assert_allclose(g.b, gb, rtol=1e-12)
    assert g.config["scale"] == pytest.approx(gscale, rel=1e-12)
    assert model.config == {"scale": 0.5, "depth": 2} and model.name == "net"


class WithExtras:
    """A field holding a subtree without floats, and a float field the loss never reads."""

    def __init__(self, W, unused, meta):
        self.W = W
        self.unused = unused
        self.meta = meta

    def loss(self, x):
        return np.sum(np.sin(x @ self.W))


def extras_loss(model):
    return model.loss(X53)


def test_unreached_float_leaves_get_zeros_and_floatless_subtrees_none():
    model = WithExtras(normal(3, 2), normal(4), {"sizes": [3, 2], "tag": "x"})
    g = adjoint.grad(extras_loss)(model)
    assert isinstance(g.unused, np.ndarray)
    np.testing.assert_array_equal(g.unused, np.zeros(4))
    assert g.meta is None
    np.testing.assert_allclose(g.W, X53.T @ np.cos(X53 @ model.W), rtol=1e-12)
    check_grad(extras_loss, model)


# =====================================================================================
# 4. Frozen fields
# =====================================================================================


class TrainableDense:
    __trainable__ = ("W", "b")

    def __init__(self, W, b, gamma):
        self.W = W
        self.b = b
        self.gamma = gamma

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b) * self.gamma


@dataclasses.dataclass
class NormDense:
    W: np.ndarray
    b: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": False})

    def __call__(self, x):
        z = x @ self.W + self.b
        return z / np.sqrt(np.mean(z ** 2, axis=-1, keepdims=True) + self.eps)


GAMMA = rng.normal(size=2)
GAMMA4 = rng.normal(size=4)
EPS = np.array([0.1])


def sq_loss(model):
    return np.sum(model(X53) ** 2)


def trainable_from_arrays(W, b):
    return sq_loss(TrainableDense(W, b, GAMMA))


def norm_from_arrays(W, b):
    return sq_loss(NormDense(W, b, EPS))


def frozen_chain_arrays(W1, b1, W2, b2):
    return mlp_mse(Chain([TrainableDense(W1, b1, GAMMA4), NormDense(W2, b2, EPS)]))


def test_trainable_declaration_freezes_other_fields():
    layer = TrainableDense(normal(3, 2), normal(2), GAMMA)
    g = adjoint.grad(sq_loss)(layer)
    assert g.gamma is None
    gW, gb = manual_dense_sq_grads(layer.W, layer.b, X53, GAMMA)
    np.testing.assert_allclose(g.W, gW, rtol=1e-10)
    np.testing.assert_allclose(g.b, gb, rtol=1e-10)
    # finite differences of the trainable fields (gamma held fixed)
    check_grad(trainable_from_arrays, layer.W.copy(), layer.b.copy())


def test_dataclass_metadata_freezes_field():
    layer = NormDense(normal(3, 2), normal(2), EPS)
    g = adjoint.grad(sq_loss)(layer)
    assert g.eps is None
    gW, gb = adjoint.grad(norm_from_arrays, wrt=(0, 1))(layer.W, layer.b)
    np.testing.assert_allclose(g.W, gW, rtol=1e-12)
    np.testing.assert_allclose(g.b, gb, rtol=1e-12)
    check_grad(norm_from_arrays, layer.W.copy(), layer.b.copy())


def test_params_respects_trainable_declarations():
    layer = TrainableDense(normal(3, 2), normal(2), normal(2))
    ps = adjoint.params(layer)
    assert len(ps) == 2 and layer.W in ps and layer.b in ps and layer.gamma not in ps
    norm = NormDense(normal(3, 2), normal(2), np.array([0.1]))
    ps = adjoint.params(norm)
    assert len(ps) == 2 and norm.eps not in ps
    # floats are not parameters (they cannot be updated in place); ints and strings neither
    ps = adjoint.params({"W": norm.W, "s": 0.5, "n": 3, "name": "x"}, [layer])
    assert [id(p) for p in ps] == [id(norm.W), id(layer.W), id(layer.b)]


def test_frozen_fields_inside_a_chain():
    model = Chain([TrainableDense(normal(3, 4) * 0.5, normal(4), GAMMA4), NormDense(normal(4, 2), normal(2), EPS)])
    g = adjoint.grad(mlp_mse)(model)
    assert g.layers[0].gamma is None and g.layers[1].eps is None
    args = (model.layers[0].W, model.layers[0].b, model.layers[1].W, model.layers[1].b)
    expected = adjoint.grad(frozen_chain_arrays, wrt=(0, 1, 2, 3))(*args)
    found = (g.layers[0].W, g.layers[0].b, g.layers[1].W, g.layers[1].b)
    for f, e in zip(found, expected):
        np.testing.assert_allclose(f, e, rtol=1e-12)
    check_grad(frozen_chain_arrays, *[a.copy() for a in args])


def test_freeze_attribute_and_index_paths():
    model = make_mlp((3, 4, 4, 2))
    full = adjoint.grad(mlp_mse)(model)
    g = adjoint.grad(mlp_mse, freeze=["layers[0].W", "layers[2]"])(model)
    assert g.layers[0].W is None
    assert g.layers[2] is None
    assert g.layers[0].activation is None
    np.testing.assert_allclose(g.layers[0].b, full.layers[0].b, rtol=1e-12)
    np.testing.assert_allclose(g.layers[1].W, full.layers[1].W, rtol=1e-12)
    np.testing.assert_allclose(g.layers[1].b, full.layers[1].b, rtol=1e-12)


def test_freeze_everything_leaves_no_gradient():
    g = adjoint.grad(mlp_mse, freeze=["layers"])(make_mlp())
    assert g is None or adjoint.tree_leaves(g) == []


DICT_MLP = ("W1", "b1", "W2", "b2")


def dict_mlp_loss(p):
    h = np.tanh(X53 @ p["W1"] + p["b1"])
    return np.mean((h @ p["W2"] + p["b2"] - Y52) ** 2)


def make_dict_mlp():
    return {"W1": normal(3, 4), "b1": normal(4), "W2": normal(4, 2), "b2": normal(2)}


def test_freeze_dict_key_paths():
    params = make_dict_mlp()
    g = adjoint.grad(dict_mlp_loss, freeze=["['W1']", "['b2']"])(params)
    assert list(g) == list(DICT_MLP)
    assert g["W1"] is None and g["b2"] is None
    manual = manual_mse_grads(*(params[k] for k in DICT_MLP), X53, Y52)
    np.testing.assert_allclose(g["b1"], manual[1], rtol=1e-10)
    np.testing.assert_allclose(g["W2"], manual[2], rtol=1e-10)
    full = adjoint.grad(dict_mlp_loss)(params)
    for key, m in zip(DICT_MLP, manual):
        np.testing.assert_allclose(full[key], m, rtol=1e-10)


def test_freeze_nested_dict_and_list_path():
    tree = make_nested()
    full = adjoint.grad(nested_loss)(tree)
    g = adjoint.grad(nested_loss, freeze=["['layers'][1]['W']", "['scale']"])(tree)
    assert g["layers"][1]["W"] is None and g["scale"] is None
    assert_tree_close(g["layers"][0], full["layers"][0], rtol=1e-12)
    np.testing.assert_allclose(g["layers"][1]["b"], full["layers"][1]["b"], rtol=1e-12)


def test_freeze_namedtuple_field_and_tuple_index_paths():
    layers = [LayerNT(normal(3, 3) * 0.6, normal(3) * 0.1, "a"), LayerNT(normal(3, 2) * 0.6, normal(2) * 0.1, "b")]
    full = adjoint.grad(namedtuple_loss)(layers)
    g = adjoint.grad(namedtuple_loss, freeze=["[0].b"])(layers)
    assert type(g[0]) is LayerNT and g[0].b is None
    np.testing.assert_allclose(g[0].W, full[0].W, rtol=1e-12)
    assert_tree_close(g[1], full[1], rtol=1e-12)
    pairs = ((layers[0].W, layers[0].b), (layers[1].W, layers[1].b))
    g = adjoint.grad(tuple_loss, freeze=["[1][0]"])(pairs)
    assert type(g) is tuple and g[1][0] is None
    np.testing.assert_allclose(g[1][1], full[1].b, rtol=1e-12)
    np.testing.assert_allclose(g[0][0], full[0].W, rtol=1e-12)


def test_freeze_with_value_and_grad_and_gradient():
    model = make_mlp()
    manual = manual_mse_grads(*weights(model), X53, Y52)
    value, g = adjoint.value_and_grad(mlp_mse, freeze=["layers[1].b"])(model)
    assert float(value) == pytest.approx(float(mlp_mse(model)), rel=1e-14)
    assert g.layers[1].b is None
    np.testing.assert_allclose(g.layers[1].W, manual[2], rtol=1e-10)
    (g2,) = adjoint.gradient(mlp_mse, model, freeze=["layers[1].b"])
    assert g2.layers[1].b is None
    np.testing.assert_allclose(g2.layers[0].W, manual[0], rtol=1e-10)


def test_freeze_with_tuple_wrt_takes_a_dict():
    model = make_mlp()
    gm, gx = adjoint.grad(model_loss, wrt=(0, 1), freeze={0: ["layers[0]"]})(model, X53.copy(), Y52)
    dW1, db1, dW2, db2, dx = manual_mse_grads(*weights(model), X53, Y52)
    assert gm.layers[0] is None
    np.testing.assert_allclose(gm.layers[1].W, dW2, rtol=1e-10)
    np.testing.assert_allclose(gm.layers[1].b, db2, rtol=1e-10)
    np.testing.assert_allclose(gx, dx, rtol=1e-10)
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(model_loss, wrt=(0, 1), freeze=["layers[0]"])(model, X53.copy(), Y52)


def test_freeze_in_nested_layer_calls_is_decided_at_run_time():
    # The frozen fields are read inside `Dense.__call__`, a nested call: the same layer code
    # serves frozen and unfrozen layers, in one call and from call to call.
    model = make_mlp((3, 4, 4, 2))
    full = adjoint.grad(mlp_mse)(model)
    g1 = adjoint.grad(mlp_mse, freeze=["layers[1].b"])(model)
    g2 = adjoint.grad(mlp_mse, freeze=["layers[0].W"])(model)
    g3 = adjoint.grad(mlp_mse)(model)
    assert g1.layers[1].b is None and g1.layers[0].W is not None and g1.layers[2].b is not None
    assert g2.layers[0].W is None and g2.layers[1].b is not None and g2.layers[2].W is not None
    for g in (g1, g2):
        for i in range(3):
            for name in ("W", "b"):
                value = getattr(g.layers[i], name)
                if value is not None:
                    np.testing.assert_allclose(value, getattr(full.layers[i], name), rtol=1e-12)
    assert_tree_close(g3, full, rtol=1e-14)


@pytest.mark.parametrize("path", ["layers[5].W", "nonexistent", "layers[0].V", "['W']", "layers[", "layers[0]..W"])
def test_bad_freeze_path_raises(path):
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(mlp_mse, freeze=[path])(make_mlp())


def test_bad_dict_key_freeze_path_raises():
    with pytest.raises(adjoint.AdjointError, match="freeze path"):
        adjoint.grad(dict_mlp_loss, freeze=["['W3']"])(make_dict_mlp())


def test_freeze_naming_an_undifferentiated_position_raises():
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(model_loss, wrt=0, freeze={1: ["x"]})(make_mlp(), X53.copy(), Y52)


def plain_dense_loss(layer, x):
    return np.sum(np.tanh(x @ layer.W + layer.b) ** 2)


def field_bar_lines(text, name):
    return [line for line in text.splitlines() if "field_bar" in line and f"'{name}'" in line]


def test_source_omits_the_adjoint_work_of_a_frozen_field():
    layer = Dense(normal(3, 2), normal(2))
    unfrozen = adjoint.source(plain_dense_loss, wrt=0, args=(layer, X53))
    frozen = adjoint.source(plain_dense_loss, wrt=0, args=(layer, X53), freeze=["b"])
    assert field_bar_lines(unfrozen, "b") and field_bar_lines(unfrozen, "W")
    assert not field_bar_lines(frozen, "b")
    assert field_bar_lines(frozen, "W")  # W still gets its cotangent
    # and the code that runs for that freeze gives the right gradient for W, None for b
    g = adjoint.grad(plain_dense_loss, freeze=["b"])(layer, X53)
    assert g.b is None
    np.testing.assert_allclose(g.W, manual_dense_sq_grads(layer.W, layer.b, X53)[0], rtol=1e-10)


def test_source_of_a_layer_call_with_frozen_example_args():
    layer = Dense(normal(3, 2), normal(2))
    unfrozen = adjoint.source(Dense.__call__, args=(layer, X53))
    frozen = adjoint.source(Dense.__call__, wrt=0, args=(layer, X53), freeze=["b"])
    assert field_bar_lines(unfrozen, "b")
    assert not field_bar_lines(frozen, "b") and field_bar_lines(frozen, "W")


def test_source_specialised_on_trainable_declaration():
    layer = TrainableDense(normal(3, 2), normal(2), normal(2))
    text = adjoint.source(TrainableDense.__call__, args=(layer, X53))
    assert not field_bar_lines(text, "gamma")
    assert field_bar_lines(text, "W") and field_bar_lines(text, "b")


def test_source_specialised_on_dataclass_metadata():
    layer = NormDense(normal(3, 2), normal(2), EPS)
    text = adjoint.source(NormDense.__call__, args=(layer, X53))
    assert not field_bar_lines(text, "eps")
    assert field_bar_lines(text, "W") and field_bar_lines(text, "b")


def test_source_for_dict_argument_with_frozen_keys():
    params = make_dict_mlp()
    unfrozen = adjoint.source(dict_mlp_loss, wrt=0, args=(params,))
    frozen = adjoint.source(dict_mlp_loss, wrt=0, args=(params,), freeze=["['W1']", "['b2']"])
    pullback = lambda text: text.split("_pullback(", 1)[1]  # noqa: E731
    for key in DICT_MLP:
        assert f"'{key}'" in pullback(unfrozen)
    assert "'W1'" not in pullback(frozen) and "'b2'" not in pullback(frozen)
    assert "'b1'" in pullback(frozen) and "'W2'" in pullback(frozen)


# =====================================================================================
# 5. Tied weights
# =====================================================================================


def tied_chain():
    W = normal(3, 3) * 0.6
    return Chain([Dense(W, normal(3) * 0.1), Dense(W, normal(3) * 0.1)]), W


def tied_loss(model):
    out = model(X53)
    return 0.5 * np.sum(out ** 2) + np.sum(out * READOUT)


def test_tied_array_positions_add_up_to_grads_entry():
    model, W = tied_chain()
    g = adjoint.grad(tied_loss)(model)
    gs = adjoint.gradient(thunk(tied_loss, model), adjoint.params(model))
    np.testing.assert_allclose(g.layers[0].W + g.layers[1].W, gs[W], rtol=1e-12)
    np.testing.assert_allclose(g.layers[0].b, gs[model.layers[0].b], rtol=1e-12)
    np.testing.assert_allclose(g.layers[1].b, gs[model.layers[1].b], rtol=1e-12)
    assert not np.allclose(g.layers[0].W, g.layers[1].W)  # each position holds its own use
    check_implicit_grads(thunk(tied_loss, model), [W, model.layers[0].b], gs)


def test_tied_array_positions_equal_untied_copy_gradients():
    model, W = tied_chain()
    untied = Chain([Dense(W.copy(), model.layers[0].b), Dense(W.copy(), model.layers[1].b)])
    assert_tree_close(adjoint.grad(tied_loss)(model), adjoint.grad(tied_loss)(untied), rtol=1e-12)
    check_grad(tied_loss, model)


def test_params_lists_a_tied_array_once():
    model, W = tied_chain()
    ps = adjoint.params(model)
    assert len(ps) == 3
    assert sum(p is W for p in ps) == 1
    assert [id(p) for p in ps] == [id(W), id(model.layers[0].b), id(model.layers[1].b)]


def test_tied_layer_object_used_twice():
    layer = Dense(normal(3, 3) * 0.6, normal(3) * 0.1)
    model = Chain([layer, layer])
    ps = adjoint.params(model)
    assert len(ps) == 2
    g = adjoint.grad(tied_loss)(model)
    gs = adjoint.gradient(thunk(tied_loss, model), ps)
    assert isinstance(g.layers[0], adjoint.Tangent) and isinstance(g.layers[1], adjoint.Tangent)
    np.testing.assert_allclose(g.layers[0].W + g.layers[1].W, gs[layer.W], rtol=1e-12)
    np.testing.assert_allclose(g.layers[0].b + g.layers[1].b, gs[layer.b], rtol=1e-12)
    untied = Chain([Dense(layer.W.copy(), layer.b.copy()), Dense(layer.W.copy(), layer.b.copy())])
    assert_tree_close(g, adjoint.grad(tied_loss)(untied), rtol=1e-12)
    check_implicit_grads(thunk(tied_loss, model), [layer.W, layer.b], gs)


def test_freezing_one_position_of_a_tied_weight_keeps_the_other():
    model, W = tied_chain()
    untied = Chain([Dense(W.copy(), model.layers[0].b), Dense(W.copy(), model.layers[1].b)])
    expected = adjoint.grad(tied_loss)(untied)
    g = adjoint.grad(tied_loss, freeze=["layers[0].W"])(model)
    assert g.layers[0].W is None
    np.testing.assert_allclose(g.layers[1].W, expected.layers[1].W, rtol=1e-12)
    np.testing.assert_allclose(g.layers[0].b, expected.layers[0].b, rtol=1e-12)


def dict_tied_loss(p):
    return np.sum(np.tanh(X53 @ p["enc"]) * (X53 @ p["dec"]))


def test_tied_array_in_a_dict_under_two_keys():
    W = normal(3, 2)
    params = {"enc": W, "dec": W}
    g = adjoint.grad(dict_tied_loss)(params)
    gs = adjoint.gradient(thunk(dict_tied_loss, params), adjoint.params(params))
    assert len(adjoint.params(params)) == 1
    np.testing.assert_allclose(g["enc"] + g["dec"], gs[W], rtol=1e-12)
    t, d = np.tanh(X53 @ W), X53 @ W
    np.testing.assert_allclose(g["enc"], X53.T @ (d * (1 - t ** 2)), rtol=1e-10)
    np.testing.assert_allclose(g["dec"], X53.T @ t, rtol=1e-10)


class TiedLM:
    """The embedding E is used for the input lookup and for the output projection."""

    def __init__(self, E, Wh, bh):
        self.E = E
        self.Wh = Wh
        self.bh = bh

    def __call__(self, tokens):
        h = np.tanh(self.E[tokens] @ self.Wh + self.bh)
        return h @ self.E.T


TOKENS = np.array([0, 3, 2, 4, 1, 3])
TARGETS = one_hot(np.array([3, 2, 4, 1, 0, 0]), 5)


def tied_lm_loss(model):
    return softmax_cross_entropy(model(TOKENS), TARGETS)


def untied_lm_loss(E_in, E_out, Wh, bh):
    h = np.tanh(E_in[TOKENS] @ Wh + bh)
    return softmax_cross_entropy(h @ E_out.T, TARGETS)


def make_lm():
    return TiedLM(normal(5, 4) * 0.5, normal(4, 4) * 0.5, normal(4) * 0.1)


def test_tied_embedding_matches_finite_differences():
    check_grad(tied_lm_loss, make_lm())


def test_tied_embedding_gradient_is_sum_of_input_and_output_uses():
    model = make_lm()
    g = adjoint.grad(tied_lm_loss)(model)
    E = model.E
    g_in, g_out, gWh, gbh = adjoint.grad(untied_lm_loss, wrt=(0, 1, 2, 3))(E, E, model.Wh, model.bh)
    np.testing.assert_allclose(g.E, g_in + g_out, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(g.Wh, gWh, rtol=1e-10)
    np.testing.assert_allclose(g.bh, gbh, rtol=1e-10)
    assert np.abs(g_in).sum() > 0 and np.abs(g_out).sum() > 0
    # the output projection by hand: d logits = (softmax - targets) / n, dE_out = d^T h
    h = np.tanh(E[TOKENS] @ model.Wh + model.bh)
    np.testing.assert_allclose(g_out, ((softmax(h @ E.T) - TARGETS) / len(TOKENS)).T @ h, rtol=1e-10)
    gs = adjoint.gradient(thunk(tied_lm_loss, model), adjoint.params(model))
    np.testing.assert_allclose(gs[E], g.E, rtol=1e-10)
    check_grad(untied_lm_loss, E.copy(), E.copy(), model.Wh.copy(), model.bh.copy())


# =====================================================================================
# 6. Script models: weights as module globals and closure variables
# =====================================================================================


W1 = rng.normal(size=(3, 4)) * 0.6
b1 = rng.normal(size=4) * 0.1
W2 = rng.normal(size=(4, 2)) * 0.6
W_UNUSED = rng.normal(size=(2, 2))


def hidden(x):
    return np.tanh(x @ W1 + b1)


def predict(x):
    return hidden(x) @ W2


def script_loss(x, y):
    return np.mean((predict(x) - y) ** 2)


def script_objective():
    return script_loss(X53, Y52)


def test_global_weights_gradient_matches_hand_derived():
    ps = adjoint.params(W1, b1, W2, W_UNUSED)
    assert len(ps) == 4
    gs = adjoint.gradient(lambda: script_loss(X53, Y52), ps)
    assert isinstance(gs, adjoint.Grads)
    assert len(gs) == 4 and [id(p) for p in gs] == [id(W1), id(b1), id(W2), id(W_UNUSED)]
    dW1, db1, dW2, _, _ = manual_mse_grads(W1, b1, W2, 0.0, X53, Y52)
    np.testing.assert_allclose(gs[W1], dW1, rtol=1e-10)
    np.testing.assert_allclose(gs[b1], db1, rtol=1e-10)
    np.testing.assert_allclose(gs[W2], dW2, rtol=1e-10)
    assert gs[W_UNUSED].shape == W_UNUSED.shape
    np.testing.assert_array_equal(gs[W_UNUSED], np.zeros((2, 2)))


def test_global_weights_gradient_matches_finite_differences():
    gs = adjoint.gradient(script_objective, adjoint.params(W1, b1, W2))
    check_implicit_grads(script_objective, [W1, b1, W2], gs)


def test_grads_iterates_params_in_order_and_refuses_others():
    gs = adjoint.gradient(script_objective, adjoint.params(W2, W1))
    assert [id(p) for p in gs] == [id(W2), id(W1)]
    assert W2 in gs and b1 not in gs
    with pytest.raises(KeyError):
        gs[b1]
    with pytest.raises(KeyError):
        gs[W1.copy()]  # by identity, not by value


def test_subset_of_global_weights():
    # Only W2 is a parameter: W1 and b1 are constants.
    gs = adjoint.gradient(script_objective, adjoint.params(W2))
    np.testing.assert_allclose(gs[W2], manual_mse_grads(W1, b1, W2, 0.0, X53, Y52)[2], rtol=1e-10)


def make_closure_model(W, b, V):
    def features(x):
        return np.tanh(x @ W + b)

    def loss(x, y):
        return np.mean((features(x) @ V - y) ** 2)

    return loss


def test_closure_weights_gradient():
    W, b, V, unused = normal(3, 4) * 0.6, normal(4) * 0.1, normal(4, 2) * 0.6, normal(3)
    loss = make_closure_model(W, b, V)
    gs = adjoint.gradient(thunk(loss, X53, Y52), adjoint.params([W, b, V, unused]))
    dW, db, dV, _, _ = manual_mse_grads(W, b, V, 0.0, X53, Y52)
    for p, e in zip((W, b, V), (dW, db, dV)):
        np.testing.assert_allclose(gs[p], e, rtol=1e-10)
    np.testing.assert_array_equal(gs[unused], np.zeros(3))
    check_implicit_grads(thunk(loss, X53, Y52), [W, b, V], gs)


def test_closure_holding_a_dict_of_weights():
    params = {"W": normal(3, 4) * 0.6, "b": normal(4) * 0.1}

    def loss():
        return np.sum(np.tanh(X53 @ params["W"] + params["b"]) ** 2)

    gs = adjoint.gradient(loss, adjoint.params(params))
    gW, gb = manual_dense_sq_grads(params["W"], params["b"], X53)
    np.testing.assert_allclose(gs[params["W"]], gW, rtol=1e-10)
    np.testing.assert_allclose(gs[params["b"]], gb, rtol=1e-10)


def argument_and_global_loss(A):
    return np.sum(hidden(X53) ** 2) + np.sum(A * A)


def test_implicit_parameter_passed_as_argument_and_read_as_global():
    # W1 reaches the loss both as an argument and through `hidden`'s global read: they add.
    gs = adjoint.gradient(thunk(argument_and_global_loss, W1), adjoint.params(W1))
    np.testing.assert_allclose(gs[W1], manual_dense_sq_grads(W1, b1, X53)[0] + 2 * W1, rtol=1e-10)


# =====================================================================================
# 7. Nested containers, namedtuples, frozen dataclasses, __slots__
# =====================================================================================


def nested_loss(tree):
    h = X53
    for layer in tree["layers"]:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return tree["scale"] * np.sum(h ** 2)


def make_nested():
    return {"layers": [{"W": normal(3, 3) * 0.6, "b": normal(3) * 0.1},
                       {"W": normal(3, 2) * 0.6, "b": normal(2) * 0.1}],
            "scale": 0.5}


def test_nested_dict_list_tree_matches_finite_differences():
    check_grad(nested_loss, make_nested())


def test_nested_dict_list_tree_gradient_mirrors_it():
    tree = make_nested()
    g = adjoint.grad(nested_loss)(tree)
    assert type(g) is dict and list(g) == ["layers", "scale"]
    assert type(g["layers"]) is list and len(g["layers"]) == 2
    for layer, layer_grad in zip(tree["layers"], g["layers"]):
        assert type(layer_grad) is dict and list(layer_grad) == ["W", "b"]
        assert layer_grad["W"].shape == layer["W"].shape and layer_grad["b"].shape == layer["b"].shape
    assert type(g["scale"]) is float
    # d/dscale = sum(h^2) = loss / scale
    assert g["scale"] == pytest.approx(float(nested_loss(tree)) / 0.5, rel=1e-12)
    # the last layer by hand
    h1 = np.tanh(X53 @ tree["layers"][0]["W"] + tree["layers"][0]["b"])
    gW, gb = manual_dense_sq_grads(tree["layers"][1]["W"], tree["layers"][1]["b"], h1, np.sqrt(0.5))
    np.testing.assert_allclose(g["layers"][1]["W"], gW, rtol=1e-10)
    np.testing.assert_allclose(g["layers"][1]["b"], gb, rtol=1e-10)


def tuple_forward(params):
    h = X53
    for W, b in params:
        h = np.tanh(h @ W + b)
    return h


def tuple_loss(params):
    return np.sum(tuple_forward(params) ** 2)


def tuple_mse(params):
    return mse(tuple_forward(params), Y52)


def test_list_of_tuples_tree():
    params = [(normal(3, 3) * 0.6, normal(3) * 0.1), (normal(3, 2) * 0.6, normal(2) * 0.1)]
    check_grad(tuple_loss, params)
    g = adjoint.grad(tuple_loss)(params)
    assert type(g) is list and all(type(t) is tuple and len(t) == 2 for t in g)


def test_tuple_of_tuples_tree():
    params = ((normal(3, 3) * 0.6, normal(3) * 0.1), (normal(3, 2) * 0.6, normal(2) * 0.1))
    check_grad(tuple_loss, params)
    g = adjoint.grad(tuple_loss)(params)
    assert type(g) is tuple and all(type(t) is tuple for t in g)
    expected = adjoint.grad(tuple_loss)(list(params))
    for t, e in zip(g, expected):
        assert_tree_close(t, e, rtol=1e-14)


LayerNT = collections.namedtuple("LayerNT", ["W", "b", "name"])


def namedtuple_loss(layers):
    h = X53
    for layer in layers:
        h = np.tanh(h @ layer.W + layer.b)
    return np.sum(h ** 2)


def test_namedtuple_layers():
    layers = [LayerNT(normal(3, 3) * 0.6, normal(3) * 0.1, "a"), LayerNT(normal(3, 2) * 0.6, normal(2) * 0.1, "b")]
    check_grad(namedtuple_loss, layers)
    g = adjoint.grad(namedtuple_loss)(layers)
    assert type(g) is list and all(type(t) is LayerNT for t in g)
    assert g[0].name is None and g[1].name is None
    expected = adjoint.grad(tuple_loss)([(layer.W, layer.b) for layer in layers])
    for t, (eW, eb) in zip(g, expected):
        np.testing.assert_allclose(t.W, eW, rtol=1e-12)
        np.testing.assert_allclose(t.b, eb, rtol=1e-12)


@dataclasses.dataclass(frozen=True)
class FrozenDense:
    W: np.ndarray
    b: np.ndarray
    units: int = 0

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class SlotDense:
    __slots__ = ("W", "b", "label")

    def __init__(self, W, b, label):
        self.W = W
        self.b = b
        self.label = label

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


@pytest.mark.parametrize("make_layer", [lambda W, b: FrozenDense(W, b, b.size), lambda W, b: SlotDense(W, b, "dense")],
                         ids=["frozen-dataclass", "slots"])
def test_frozen_dataclass_and_slots_layers(make_layer):
    model = Chain([make_layer(normal(3, 3) * 0.6, normal(3) * 0.1), make_layer(normal(3, 2) * 0.6, normal(2) * 0.1)])
    check_grad(mlp_mse, model)
    g = adjoint.grad(mlp_mse)(model)
    assert all(isinstance(t, adjoint.Tangent) for t in g.layers)
    other = "units" if isinstance(model.layers[0], FrozenDense) else "label"
    assert getattr(g.layers[0], other) is None and getattr(g.layers[1], other) is None
    expected = adjoint.grad(tuple_mse)([(layer.W, layer.b) for layer in model.layers])
    for t, (eW, eb) in zip(g.layers, expected):
        np.testing.assert_allclose(t.W, eW, rtol=1e-12)
        np.testing.assert_allclose(t.b, eb, rtol=1e-12)


@dataclasses.dataclass
class Scaled:
    w: float
    shift: float
    W: np.ndarray


def scaled_loss(m):
    return np.sum(np.sin(m.w * (X53 @ m.W) + m.shift))


def test_python_float_fields_on_objects():
    model = Scaled(0.7, -0.2, normal(3, 2))
    check_grad(scaled_loss, model)
    g = adjoint.grad(scaled_loss)(model)
    assert type(g.w) is float and type(g.shift) is float
    z = model.w * (X53 @ model.W) + model.shift
    assert g.shift == pytest.approx(float(np.sum(np.cos(z))), rel=1e-12)
    assert g.w == pytest.approx(float(np.sum(np.cos(z) * (X53 @ model.W))), rel=1e-12)
    np.testing.assert_allclose(g.W, model.w * X53.T @ np.cos(z), rtol=1e-12)


def test_tree_leaves_and_tree_map_on_models():
    model = Chain([Dense(normal(3, 3), normal(3)), SlotDense(normal(3, 2), normal(2), "x")])
    leaves = adjoint.tree_leaves(model)
    expected_leaves = [model.layers[0].W, model.layers[0].b, model.layers[1].W, model.layers[1].b]
    assert len(leaves) == 4 and all(a is b for a, b in zip(leaves, expected_leaves))
    g = adjoint.grad(mlp_mse)(model)
    updated = adjoint.tree_map(lambda p, d: p - 0.1 * d, model, g)
    assert type(updated) is Chain and type(updated.layers[1]) is SlotDense
    assert updated.layers[1].label == "x" and updated.layers[0].activation is np.tanh
    np.testing.assert_allclose(updated.layers[0].W, model.layers[0].W - 0.1 * g.layers[0].W)
    np.testing.assert_allclose(updated.layers[1].b, model.layers[1].b - 0.1 * g.layers[1].b)
    # a None in the gradient (a frozen field) keeps the leaf as it is
    frozen_g = adjoint.grad(mlp_mse, freeze=["layers[0].W"])(model)
    kept = adjoint.tree_map(lambda p, d: p - d, model, frozen_g)
    assert kept.layers[0].W is model.layers[0].W
    np.testing.assert_allclose(kept.layers[0].b, model.layers[0].b - frozen_g.layers[0].b)


def test_tree_map_and_leaves_on_nested_tree_with_tied_weight():
    tree = make_nested()
    doubled = adjoint.tree_map(lambda x: 2 * x, tree)
    assert doubled["scale"] == 1.0
    np.testing.assert_array_equal(doubled["layers"][1]["W"], 2 * tree["layers"][1]["W"])
    assert len(adjoint.tree_leaves(tree)) == 5
    layer = Dense(normal(2, 2), normal(2))
    mapped = adjoint.tree_map(lambda x: x + 1.0, Chain([layer, layer]))
    assert mapped.layers[0] is mapped.layers[1]  # a tied layer maps to one new layer


# =====================================================================================
# 8. Objects built inside the function, properties, methods calling methods, global models
# =====================================================================================


@dataclasses.dataclass
class DenseDC:
    W: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


PairNT = collections.namedtuple("PairNT", ["W", "b"])


class Holder:
    def __init__(self, W, b, tag):
        self.W = W
        self.b = b
        self.tag = tag

    def apply(self, x):
        return np.tanh(x @ self.W + self.b)


def built_dataclass(W, b):
    layer = DenseDC(W, b)
    return np.sum(layer(X53) ** 2)


def built_namedtuple(W, b):
    pair = PairNT(W, b)
    return np.sum(np.tanh(X53 @ pair.W + pair.b) ** 2)


def built_plain(W, b):
    holder = Holder(W, b, "tag")
    return np.sum(holder.apply(X53) ** 2)


def built_from_model_fields(model):
    layers = [DenseDC(layer.W * 1.0, layer.b) for layer in model.layers]
    h = X53
    for layer in layers:
        h = layer(h)
    return np.sum(h ** 2)


@pytest.mark.parametrize("f", [built_dataclass, built_namedtuple, built_plain])
def test_objects_built_inside_carry_gradients(f):
    W, b = normal(3, 2), normal(2)
    check_grad(f, W, b)
    gW, gb = adjoint.grad(f, wrt=(0, 1))(W, b)
    eW, eb = manual_dense_sq_grads(W, b, X53)
    np.testing.assert_allclose(gW, eW, rtol=1e-10)
    np.testing.assert_allclose(gb, eb, rtol=1e-10)


def test_objects_built_inside_from_model_fields():
    model = make_mlp((3, 3, 2), last=np.tanh)
    check_grad(built_from_model_fields, model)
    g = adjoint.grad(built_from_model_fields)(model)
    assert_tree_close(g, adjoint.grad(sq_loss)(model), rtol=1e-12)


class Doubling:
    def __init__(self, W):
        self.W = W * 2.0

    def __call__(self, x):
        return np.tanh(x @ self.W)


def built_transforming(W):
    return sq_loss(Doubling(W))


def test_object_whose_init_transforms_its_argument_is_refused_not_miscomputed():
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(built_transforming)(normal(3, 2))


class PropertyModel:
    def __init__(self, raw, scale, b):
        self.raw = raw
        self.scale = scale
        self.b = b

    @property
    def W(self):
        return self.raw * self.scale

    @property
    def bias(self):
        return np.tanh(self.b)

    def __call__(self, x):
        return np.sin(x @ self.W + self.bias)


def test_property_getters():
    model = PropertyModel(normal(3, 2), 0.8, normal(2))
    check_grad(sq_loss, model)
    g = adjoint.grad(sq_loss)(model)
    assert set(dir(g)) == {"raw", "scale", "b"}
    z = X53 @ (model.raw * 0.8) + np.tanh(model.b)
    dz = np.sin(2 * z)  # d/dz sin(z)^2
    np.testing.assert_allclose(g.raw, 0.8 * X53.T @ dz, rtol=1e-10)
    assert g.scale == pytest.approx(float(np.sum(model.raw * (X53.T @ dz))), rel=1e-10)
    np.testing.assert_allclose(g.b, dz.sum(axis=0) * (1 - np.tanh(model.b) ** 2), rtol=1e-10)


class Autoencoder:
    def __init__(self, We, be, Wd):
        self.We = We
        self.be = be
        self.Wd = Wd

    def encode(self, x):
        return np.tanh(x @ self.We + self.be)

    def decode(self, z):
        return z @ self.Wd

    def penalty(self):
        return np.sum(self.We ** 2) + np.sum(self.Wd ** 2)

    def loss(self, x):
        return np.mean((self.decode(self.encode(x)) - x) ** 2) + 0.01 * self.penalty()


def make_autoencoder():
    return Autoencoder(normal(3, 2) * 0.6, normal(2) * 0.1, normal(2, 3) * 0.6)


def manual_autoencoder_grads(m, x):
    h = np.tanh(x @ m.We + m.be)
    r = h @ m.Wd
    dr = 2 * (r - x) / r.size
    da = (dr @ m.Wd.T) * (1 - h ** 2)
    return x.T @ da + 0.02 * m.We, da.sum(axis=0), h.T @ dr + 0.02 * m.Wd


def ae_loss(model):
    return model.loss(X53)


def test_methods_calling_other_methods():
    model = make_autoencoder()
    check_grad(ae_loss, model)
    g = adjoint.grad(ae_loss)(model)
    for name, e in zip(("We", "be", "Wd"), manual_autoencoder_grads(model, X53)):
        np.testing.assert_allclose(getattr(g, name), e, rtol=1e-10)


GLOBAL_AE = Autoencoder(rng.normal(size=(3, 2)) * 0.6, rng.normal(size=2) * 0.1, rng.normal(size=(2, 3)) * 0.6)


def test_method_of_a_global_model_under_implicit_gradient():
    ps = adjoint.params(GLOBAL_AE)
    assert len(ps) == 3
    gs = adjoint.gradient(lambda: GLOBAL_AE.loss(X53), ps)
    arrays = (GLOBAL_AE.We, GLOBAL_AE.be, GLOBAL_AE.Wd)
    for p, e in zip(arrays, manual_autoencoder_grads(GLOBAL_AE, X53)):
        np.testing.assert_allclose(gs[p], e, rtol=1e-10)
    check_implicit_grads(lambda: GLOBAL_AE.loss(X53), arrays, gs)


def global_model_loss():
    return GLOBAL_AE.loss(X53)


def test_function_reading_a_global_model():
    gs = adjoint.gradient(global_model_loss, adjoint.params(GLOBAL_AE))
    for name, e in zip(("We", "be", "Wd"), manual_autoencoder_grads(GLOBAL_AE, X53)):
        np.testing.assert_allclose(gs[getattr(GLOBAL_AE, name)], e, rtol=1e-10)


GLOBAL_CHAIN = Chain([Dense(rng.normal(size=(3, 4)) * 0.6, rng.normal(size=4) * 0.1),
                      Dense(rng.normal(size=(4, 2)) * 0.6, rng.normal(size=2) * 0.1, identity)])


def global_chain_loss():
    return mse(GLOBAL_CHAIN(X53), Y52)


def test_global_chain_model_under_implicit_gradient():
    gs = adjoint.gradient(global_chain_loss, adjoint.params(GLOBAL_CHAIN))
    manual = manual_mse_grads(*weights(GLOBAL_CHAIN), X53, Y52)
    for p, e in zip(weights(GLOBAL_CHAIN), manual):
        np.testing.assert_allclose(gs[p], e, rtol=1e-10)


class Residual:
    def __init__(self, inner, out):
        self.inner = inner
        self.out = out

    def __call__(self, x):
        return self.out(x + self.inner(x))


def test_composed_residual_model():
    model = Residual(Dense(normal(3, 3) * 0.5, normal(3) * 0.1), Dense(normal(3, 2) * 0.5, normal(2) * 0.1))
    check_grad(sq_loss, model)
    g = adjoint.grad(sq_loss)(model)
    assert isinstance(g.inner, adjoint.Tangent) and isinstance(g.out, adjoint.Tangent)
    r = X53 + model.inner(X53)
    np.testing.assert_allclose(g.out.W, manual_dense_sq_grads(model.out.W, model.out.b, r)[0], rtol=1e-10)


# =====================================================================================
# 9. User data is never touched
# =====================================================================================


def test_model_arrays_unchanged_after_grad():
    model = make_mlp((3, 4, 2))
    before = copy.deepcopy(model)
    layers_before = list(model.layers)
    g = adjoint.grad(mlp_mse)(model)
    adjoint.value_and_grad(mlp_mse, freeze=["layers[0].W"])(model)
    adjoint.gradient(thunk(mlp_mse, model), adjoint.params(model))
    adjoint.pullback(model_output, model, X53)[1](np.ones((5, 2)))
    adjoint.source(mlp_mse, wrt=0, args=(model,))
    assert model.layers == layers_before
    for layer, old in zip(model.layers, before.layers):
        np.testing.assert_array_equal(layer.W, old.W)
        np.testing.assert_array_equal(layer.b, old.b)
        assert layer.activation is old.activation
    # the gradient shares no memory with the model: updating it changes nothing
    for layer, lg in zip(model.layers, g.layers):
        assert not np.may_share_memory(layer.W, lg.W) and not np.may_share_memory(layer.b, lg.b)
        lg.W *= 0.0
        lg.b += 1.0
    for layer, old in zip(model.layers, before.layers):
        np.testing.assert_array_equal(layer.W, old.W)
        np.testing.assert_array_equal(layer.b, old.b)


def test_containers_and_globals_unchanged_after_grad():
    tree = make_nested()
    before = copy.deepcopy(tree)
    adjoint.grad(nested_loss)(tree)
    assert tree["scale"] == before["scale"]
    for layer, old in zip(tree["layers"], before["layers"]):
        np.testing.assert_array_equal(layer["W"], old["W"])
        np.testing.assert_array_equal(layer["b"], old["b"])
    globals_before = [W1.copy(), b1.copy(), W2.copy()]
    gs = adjoint.gradient(script_objective, adjoint.params(W1, b1, W2))
    for now, old in zip((W1, b1, W2), globals_before):
        np.testing.assert_array_equal(now, old)
        assert not np.may_share_memory(gs[now], now)


def test_tied_model_unchanged_and_still_tied_after_grad():
    model, W = tied_chain()
    W_before = W.copy()
    adjoint.grad(tied_loss)(model)
    adjoint.gradient(thunk(tied_loss, model), adjoint.params(model))
    assert model.layers[0].W is W and model.layers[1].W is W
    np.testing.assert_array_equal(W, W_before)


# =====================================================================================
# 10. Training loops with adjoint.optim
# =====================================================================================


def regression_problem():
    r = np.random.default_rng(11)
    X = r.normal(size=(32, 3))
    y = np.tanh(X @ np.array([[1.5], [-2.0], [0.7]])) + 0.01 * r.normal(size=(32, 1))
    model = Chain([Dense(r.normal(size=(3, 8)) * 0.3, np.zeros(8)),
                   Dense(r.normal(size=(8, 1)) * 0.3, np.zeros(1), identity)])
    return X, y, model


@pytest.mark.parametrize("make_optimizer", [lambda: adjoint.optim.SGD(lr=0.05, momentum=0.9),
                                            lambda: adjoint.optim.Adam(lr=0.02)], ids=["sgd-momentum", "adam"])
def test_training_loop_decreases_loss(make_optimizer):
    X, y, model = regression_problem()
    opt = make_optimizer()
    first = float(model_loss(model, X, y))
    arrays = adjoint.tree_leaves(model)
    for _ in range(150):
        grads = adjoint.grad(model_loss)(model, X, y)
        model = opt.step(model, grads)
    last = float(model_loss(model, X, y))
    assert last < first / 10, (first, last)
    assert all(a is b for a, b in zip(adjoint.tree_leaves(model), arrays))  # updated in place


def test_training_loop_with_implicit_grads():
    X, y, model = regression_problem()
    ps = adjoint.params(model)
    opt = adjoint.optim.Adam(lr=0.02)
    first = float(model_loss(model, X, y))
    for _ in range(150):
        opt.step(model, adjoint.gradient(thunk(model_loss, model, X, y), ps))
    assert float(model_loss(model, X, y)) < first / 10


def momentum_loss(m):
    return np.sum(m["w"] ** 2) * m["s"] + m["s"] ** 2


def test_sgd_momentum_steps_by_hand():
    model = {"w": np.array([1.0, -2.0]), "s": np.array(0.5)}  # a trainable scalar: a 0-d array
    opt = adjoint.optim.SGD(lr=0.1, momentum=0.9)
    w, s = model["w"].copy(), 0.5
    vw, vs = np.zeros(2), 0.0
    for _ in range(3):
        g = adjoint.grad(momentum_loss)(model)
        gw, gs_ = 2 * w * s, np.sum(w ** 2) + 2 * s
        np.testing.assert_allclose(g["w"], gw)
        assert g["s"] == pytest.approx(gs_)
        vw, vs = 0.9 * vw + gw, 0.9 * vs + gs_
        w, s = w - 0.1 * vw, s - 0.1 * vs
        model = opt.step(model, g)
        np.testing.assert_allclose(model["w"], w)
        assert model["s"] == pytest.approx(s)


def test_adam_first_step_moves_each_weight_by_lr():
    model = Dense(normal(3, 2), normal(2))
    before = copy.deepcopy(model)
    g = adjoint.grad(sq_loss)(model)
    adjoint.optim.Adam(lr=0.01).step(model, g)
    np.testing.assert_allclose(model.W, before.W - 0.01 * np.sign(g.W), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(model.b, before.b - 0.01 * np.sign(g.b), rtol=1e-6, atol=1e-9)


def test_optimizer_updates_a_tied_weight_once_with_the_summed_gradient():
    model, W = tied_chain()
    W_before = W.copy()
    g = adjoint.grad(tied_loss)(model)
    adjoint.optim.SGD(lr=0.1).step(model, g)
    assert model.layers[0].W is W and model.layers[1].W is W
    np.testing.assert_allclose(W, W_before - 0.1 * (g.layers[0].W + g.layers[1].W), rtol=1e-12)


def test_optimizer_leaves_frozen_fields_alone():
    layer = TrainableDense(normal(3, 2), normal(2), normal(2))
    gamma_before, W_before = layer.gamma.copy(), layer.W.copy()
    g = adjoint.grad(sq_loss)(layer)
    adjoint.optim.SGD(lr=0.1).step(layer, g)
    np.testing.assert_array_equal(layer.gamma, gamma_before)
    np.testing.assert_allclose(layer.W, W_before - 0.1 * g.W)
