"""Model programs (structural gradients) that exposed bugs in adjoint when first tested.

Each test states what a correct implementation does, and its docstring describes the bug as
it was found (all fixed since). Do not weaken them to make them pass.
"""

import collections

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(5)
X = rng.normal(size=(4, 3))


def sq_loss(model):
    return np.sum(model(X) ** 2)


# ---- 1. a function returning a namedtuple cannot be pulled back --------------------------

State = collections.namedtuple("State", ["h", "c"])


def namedtuple_step(state):
    return State(np.tanh(state.h) * state.c, state.c * 2.0)


class GatedCell:
    def __init__(self, Wx, Wh, b):
        self.Wx = Wx
        self.Wh = Wh
        self.b = b

    def __call__(self, state, x):
        gate = 1.0 / (1.0 + np.exp(-(x @ self.Wx + state.h @ self.Wh)))
        c = gate * state.c + (1.0 - gate) * np.tanh(x @ self.Wx + self.b)
        return State(np.tanh(c) * gate, c)


def cell_step(cell, state, x):
    return cell(state, x)


def test_pullback_of_a_function_returning_a_namedtuple():
    """`arguments.complete` rebuilds the output cotangent with `type(value)(generator)`, which
    a namedtuple's `__new__` refuses: `TypeError: State.__new__() missing 1 required
    positional argument: 'c'`. (`testing._combine` has the same bug, so `check_grad` of such a
    function fails even after `complete` is fixed.) Returning a namedtuple from a nested call
    works; only the outermost function's output breaks."""
    h, c = np.array([0.3, -0.7]), np.array([1.5, 0.5])
    value, back = adjoint.pullback(namedtuple_step, State(h, c))
    assert type(value) is State
    (g,) = back(State(np.ones(2), np.ones(2)))
    assert type(g) is State
    np.testing.assert_allclose(g.h, c * (1 - np.tanh(h) ** 2))
    np.testing.assert_allclose(g.c, np.tanh(h) + 2.0)


def test_check_grad_of_an_rnn_step_returning_a_namedtuple_state():
    """The same bug, met where it matters: one step of a cell whose state is a namedtuple."""
    cell = GatedCell(rng.normal(size=(2, 3)) * 0.5, rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3) * 0.1)
    check_grad(cell_step, cell, State(rng.normal(size=3), rng.normal(size=3)), rng.normal(size=2))


# ---- 2. super().method(...) drops the receiver's gradient ------------------------------------


class Base:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x):
        return np.tanh(x @ self.W + self.b)

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class Sub(Base):
    def forward(self, x):
        return super().forward(x)


class ResidualBlock(Base):
    def __call__(self, x):
        return x + super().__call__(x)


def sub_forward_loss(model):
    return np.sum(model.forward(X) ** 2)


def test_super_method_call_keeps_the_receivers_gradient():
    """`super()` is treated as a constant: the generated pullback of `Sub.forward` returns
    `adj.zeros_like(self)` for `self`, so every field read through `super().forward(x)` gets
    a zero gradient, silently. (The gradient with respect to `x` is right; writing
    `Base.forward(self, x)` instead works.)"""
    model = Sub(rng.normal(size=(3, 2)), rng.normal(size=2))
    g = adjoint.grad(sub_forward_loss)(model)
    t = np.tanh(X @ model.W + model.b)
    dz = 2 * t * (1 - t ** 2)
    np.testing.assert_allclose(g.W, X.T @ dz)
    np.testing.assert_allclose(g.b, dz.sum(axis=0))


def test_residual_block_calling_super_call_matches_finite_differences():
    """The same bug in a common model pattern: `x + super().__call__(x)` in a subclass."""
    block = ResidualBlock(rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3) * 0.1)
    check_grad(sq_loss, block)


# ---- 3. check_grad on a model with declared-frozen fields ------------------------------------


class TrainableDense:
    __trainable__ = ("W",)

    def __init__(self, W, gamma):
        self.W = W
        self.gamma = gamma

    def __call__(self, x):
        return np.tanh(x @ self.W) * self.gamma


def test_check_grad_of_a_model_with_trainable_declaration():
    """`check_grad` moves every float leaf of a model, including the fields its class
    declares frozen (`__trainable__`, `field(metadata={"trainable": False})`), while adjoint
    (rightly) gives those `None`, read as zero: the check reports a mismatch
    (`<pullback, u> = ... but finite differences give <v, J u> = ...`) though adjoint's
    gradient of the trainable fields is right. check_grad should leave frozen fields still
    (or take a `freeze=`), so models with frozen fields can be checked at all."""
    layer = TrainableDense(rng.normal(size=(3, 2)), rng.normal(size=2))
    check_grad(sq_loss, layer)


# ---- 4. models with a back-reference (a cycle) -----------------------------------------------


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b
        self.parent = None

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b)


class Chain:
    def __init__(self, layers):
        self.layers = layers
        for layer in layers:
            layer.parent = self  # a back-reference, as many model libraries keep

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def make_cyclic_chain():
    return Chain([Dense(rng.normal(size=(3, 3)) * 0.6, rng.normal(size=3)), Dense(rng.normal(size=(3, 2)) * 0.6, rng.normal(size=2))])


def test_tree_map_on_a_model_with_a_back_reference():
    """`adjoint.grad`, `params`, `tree_leaves` and `optim` handle the cycle, but
    `adjoint.tree_map` recurses forever (`RecursionError`): `tree._map` records an object in
    `done` only after mapping its children, and never when a second tree is given."""
    model = make_cyclic_chain()
    g = adjoint.grad(sq_loss)(model)
    assert g.layers[0].parent is None
    doubled = adjoint.tree_map(lambda p: 2 * p, model)
    np.testing.assert_array_equal(doubled.layers[0].W, 2 * model.layers[0].W)
    stepped = adjoint.tree_map(lambda p, d: p - 0.1 * d, model, g)
    np.testing.assert_allclose(stepped.layers[1].b, model.layers[1].b - 0.1 * g.layers[1].b)


def test_check_grad_of_a_model_with_a_back_reference():
    """`check_grad` moves the model with `tree_map(fn, arg, u)`: the same unbounded recursion."""
    check_grad(sq_loss, make_cyclic_chain())


# ---- 5. freeze paths that are not checked ------------------------------------------------------


def dict_loss(p):
    return np.sum(p["W"] ** 2)


def test_non_string_freeze_path_raises_adjoint_error():
    """`freeze=[3]` raises `AttributeError: 'int' object has no attribute 'startswith'` from
    `trainable.parse_path` rather than an `AdjointError` saying what a path is."""
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(dict_loss, freeze=[3])({"W": np.ones(2)})


def test_freeze_path_on_an_array_argument_is_not_silently_ignored():
    """A freeze path given for an argument that is a plain array names nothing in it, yet it is
    silently ignored (the array gets its full gradient); a path that does not exist in a
    container argument raises `AdjointError`."""
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(lambda w: np.sum(w ** 2), freeze=["W"])(np.ones(2))


# ---- 6. an explicitly requested implicit parameter held in a declared-frozen field -------------

DECLARED = TrainableDense(rng.normal(size=(3, 2)), rng.normal(size=2))


def declared_loss():
    return sq_loss(DECLARED)


def test_implicit_gradient_of_an_array_held_in_a_declared_frozen_field():
    """`adjoint.params(layer.gamma)` asks for gamma's gradient explicitly, and the loss depends
    on it, but `gs[gamma]` comes back as zeros, silently: `TrainableDense.__call__` is
    compiled specialised on `__trainable__`, so its pullback never hands gamma's cotangent to
    the collector. Either the gradient or an error is acceptable; silent zeros are not."""
    gamma = DECLARED.gamma
    try:
        gs = adjoint.gradient(declared_loss, adjoint.params(gamma))
    except adjoint.AdjointError:
        return
    t = np.tanh(X @ DECLARED.W)
    np.testing.assert_allclose(gs[gamma], np.sum(2 * t ** 2 * gamma, axis=0))
