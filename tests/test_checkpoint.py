"""adjoint.checkpoint: the same derivatives as without it (against finite differences and the
unrolled code) for every way a checkpointed function is made and reached, its random draws
replayed, what it refuses, and the memory it saves (the 100-step RNN of examples/checkpoint_rnn.py)."""

import pathlib
import runpy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"
rng = np.random.default_rng(0)
W3, h3 = rng.normal(size=(3, 3)), rng.normal(size=3)


def step(h, W):
    return np.tanh(W @ h)


checkpointed_step = adjoint.checkpoint(step)


def unrolled(W, h):
    for _ in range(4):
        h = step(h, W)
    return np.sum(h ** 2)


def checkpointed(W, h):
    for _ in range(4):
        h = checkpointed_step(h, W)
    return np.sum(h ** 2)


def test_a_checkpointed_function_gives_the_same_derivatives():
    W, h = rng.normal(size=(3, 3)), rng.normal(size=3)
    for a, b in zip(adjoint.grad(checkpointed, (0, 1))(W, h), adjoint.grad(unrolled, (0, 1))(W, h)):
        np.testing.assert_array_equal(a, b)
    V = rng.normal(size=(3, 3))
    np.testing.assert_allclose(adjoint.jvp(checkpointed, (W, h), (V, None)), adjoint.jvp(unrolled, (W, h), (V, None)))
    np.testing.assert_allclose(adjoint.hvp(checkpointed, W, V, h), adjoint.hvp(unrolled, W, V, h), rtol=1e-12)
    check_grad(checkpointed, W, h)


def test_checkpoint_keeps_the_function_as_it_is_in_plain_calls():
    assert checkpointed_step.__name__ == "step" and checkpointed_step.__doc__ == step.__doc__
    h, W = np.ones(2), np.eye(2)
    np.testing.assert_array_equal(checkpointed_step(h, W), step(h, W))
    with pytest.raises(adjoint.AdjointError, match="needs a function"):
        adjoint.checkpoint(3.0)


def test_a_checkpointed_closure_made_inside_the_function():
    def loss(W, h):
        layer = adjoint.checkpoint(lambda h: np.tanh(W @ h))  # closes over W
        for _ in range(3):
            h = layer(h)
        return np.sum(h ** 2)

    W, h = rng.normal(size=(3, 3)), rng.normal(size=3)
    check_grad(loss, W, h)


def test_a_checkpointed_function_is_its_own_gradient_target():
    h, W = rng.normal(size=3), rng.normal(size=(3, 3))
    g = adjoint.grad(lambda W: np.sum(checkpointed_step(h, W)))(W)
    np.testing.assert_allclose(g, adjoint.grad(lambda W: np.sum(step(h, W)))(W), rtol=1e-14)


def noisy(h, W, generator):
    return np.tanh(W @ h + 0.1 * np.random.normal(size=h.shape) + 0.1 * generator.normal(size=h.shape))


@pytest.mark.parametrize("preserve", [True, False])
def test_random_draws_are_replayed_when_the_segment_runs_again(preserve):
    def loss(W, h, segment, generator):
        for _ in range(3):
            h = segment(h, W, generator)
        return np.sum(h ** 2)

    W, h = rng.normal(size=(3, 3)), rng.normal(size=3)
    segment = adjoint.checkpoint(noisy, preserve_rng_state=preserve)
    np.random.seed(5)
    expected = adjoint.grad(loss)(W, h, noisy, np.random.default_rng(7))
    np.random.seed(5)
    if preserve:
        np.testing.assert_allclose(adjoint.grad(loss)(W, h, segment, np.random.default_rng(7)), expected, rtol=1e-13)
    else:  # NumPy's global generator moved on: the second run differs, and is refused
        with pytest.raises(adjoint.AdjointError, match="gave a different value when it ran again"):
            adjoint.grad(loss)(W, h, segment, np.random.default_rng(7))


def test_checkpointing_a_100_step_rnn_every_10_steps_needs_at_least_3x_less_memory():
    example = runpy.run_path(str(EXAMPLES / "checkpoint_rnn.py"))
    args = example["problem"]()
    (dW, dU), plain = example["peak_memory"](example["loss"], *args)
    (cW, cU), checkpointed = example["peak_memory"](example["checkpointed_loss"], *args)
    np.testing.assert_allclose(cW, dW, rtol=1e-12)
    np.testing.assert_allclose(cU, dU, rtol=1e-12)
    assert plain >= 3 * checkpointed, (plain, checkpointed)


def test_the_checkpoint_example_runs(capsys):
    runpy.run_path(str(EXAMPLES / "checkpoint_rnn.py"), run_name="__main__")
    assert "gradients agree: True" in capsys.readouterr().out


W_global = np.eye(2) * 0.6 + 0.1


@adjoint.checkpoint
def global_block(h):
    return np.tanh(W_global @ h)


def test_a_checkpointed_function_reading_implicit_parameters():
    def loss(block):
        h = np.ones(2)
        for _ in range(3):
            h = block(h)
        return np.sum(h ** 2)

    ps = adjoint.params(W_global)
    checkpointed = adjoint.gradient(lambda: loss(global_block), ps)[W_global]
    plain = adjoint.gradient(lambda: loss(lambda h: np.tanh(W_global @ h)), ps)[W_global]
    np.testing.assert_allclose(checkpointed, plain, rtol=1e-14)


def test_checkpoints_made_by_the_decorator_factory_or_held_in_variables():
    def curried(W, h):
        layer = adjoint.checkpoint(preserve_rng_state=False)(lambda x: np.tanh(W @ x))
        return np.sum(layer(layer(h)) ** 2)

    def passed(W, h, wrap=adjoint.checkpoint):
        layer = wrap(lambda x: np.tanh(W @ x))
        return np.sum(layer(h) ** 2)

    def gradient_in_a_variable(W, h, make=adjoint.grad):
        return np.sum(make(lambda W: np.sum(np.tanh(W @ h) ** 2))(W) ** 2)

    for f in (curried, passed, gradient_in_a_variable):
        check_grad(f, W3, h3, forward=f is not gradient_in_a_variable)


class Layer:
    def __init__(self, W):
        self.W = W

    @adjoint.checkpoint
    def forward(self, x):
        return np.tanh(self.W @ x)


def test_a_checkpointed_method_of_an_object_held_constant():
    layer = Layer(W3)
    bound = layer.forward

    def through_the_object(x):
        return np.sum(layer.forward(x) ** 2)

    def through_a_bound_method(x):
        return np.sum(bound(x) ** 2)

    expected = adjoint.grad(lambda x: np.sum(np.tanh(W3 @ x) ** 2))(h3)
    for f in (through_the_object, through_a_bound_method):
        np.testing.assert_allclose(adjoint.grad(f)(h3), expected, rtol=1e-13)
        check_grad(f, h3)
    V = rng.normal(size=3)
    np.testing.assert_allclose(adjoint.hvp(through_the_object, h3, V),
                               adjoint.hvp(lambda x: np.sum(np.tanh(W3 @ x) ** 2), h3, V), rtol=1e-12)


def test_keywords_of_a_checkpointed_function():
    @adjoint.checkpoint
    def scaled(x, a=1.0, *, b=1.0):
        return np.sin(x) * a * b

    check_grad(lambda x, a: np.sum(scaled(x, a=a)), h3, 2.0)
    with pytest.raises(adjoint.AdjointError, match="pass them by position"):
        adjoint.grad(lambda x, b: np.sum(scaled(x, b=b)), 1)(h3, 2.0)


def test_checkpoint_keeps_the_signature_and_is_idempotent():
    import inspect

    assert str(inspect.signature(checkpointed_step)) == "(h, W)"
    twice = adjoint.checkpoint(checkpointed_step)
    check_grad(lambda W, h: np.sum(twice(h, W) ** 2), W3, h3)


def test_a_checkpointed_function_that_updates_its_argument_is_refused_before_it_runs():
    @adjoint.checkpoint
    def doubles(h):
        h *= 2.0
        return np.sum(h)

    h = np.ones(3)
    with pytest.raises(adjoint.AdjointError, match="updates its argument `h` in place"):
        adjoint.grad(lambda h: doubles(h) * 1.0)(h)
    assert np.array_equal(h, np.ones(3))


class NoisyLayer:
    def __init__(self, W, seed):
        self.W, self.rng = W, np.random.default_rng(seed)

    @adjoint.checkpoint(preserve_rng_state=False)
    def __call__(self, h):
        return np.tanh(self.W @ h + 0.1 * self.rng.normal(size=h.shape))


def test_generators_held_by_arguments_are_replayed():
    import random as python_random

    def noisy(h, parts):
        rng, py = parts
        return np.tanh(W3 @ h + rng.normal(size=3) + py.random())

    segment = adjoint.checkpoint(noisy, preserve_rng_state=False)
    fresh = lambda: (np.random.default_rng(1), python_random.Random(2))  # noqa: E731
    expected = adjoint.grad(lambda h: np.sum(noisy(h, fresh()) ** 2))(h3)
    np.testing.assert_allclose(adjoint.grad(lambda h: np.sum(segment(h, fresh()) ** 2))(h3), expected, rtol=1e-13)
    layer = NoisyLayer(W3, 4)
    g = adjoint.grad(lambda h: np.sum(layer(layer(h)) ** 2))(h3)  # the layer's own generator
    assert np.all(np.isfinite(g))


class Dense:
    def __init__(self, W):
        self.W = W

    def __call__(self, h):
        return np.tanh(self.W @ h)


def test_checkpointing_an_object_holding_floats_is_refused():
    with pytest.raises(adjoint.AdjointError, match="holds float values"):
        adjoint.checkpoint(Dense(W3))
    with pytest.raises(adjoint.AdjointError, match="holds float values"):
        adjoint.checkpoint(Dense(W3).__call__)


class Counter:
    def bump(self, h):
        h += 1.0
        return np.sum(h)


def test_a_checkpointed_bound_method_that_updates_its_argument_is_refused_before_it_runs():
    bump = adjoint.checkpoint(Counter().bump)
    h = np.ones(2)
    with pytest.raises(adjoint.AdjointError, match="updates its argument `h` in place"):
        adjoint.grad(lambda h: bump(h) * 2.0)(h)
    assert np.array_equal(h, np.ones(2))


def energy(x, k):
    return k * np.sum(np.cos(x)) + np.sum(x ** 4) / 4


def test_the_gradient_of_a_checkpointed_function_differentiated_again():
    x, k = rng.normal(size=3), 1.5
    for e in (energy, adjoint.checkpoint(energy)):
        force = adjoint.grad(e)
        check_grad(lambda k: np.sum(force(x, k) ** 2), k)
        value, gradient = adjoint.value_and_grad(e)(x, k)
        assert value == pytest.approx(energy(x, k)) and np.allclose(gradient, -k * np.sin(x) + x ** 3)


def doubled(fn):
    """A decorator of yours: `functools.wraps` copies adjoint's marks onto the wrapper."""
    import functools

    return functools.wraps(fn)(lambda *args: 2.0 * fn(*args))


def test_a_decorator_of_yours_around_a_checkpoint_or_a_gradient_is_differentiated():
    inner = lambda x: np.sum(np.sin(x))  # noqa: E731
    for wrapped in (doubled(adjoint.checkpoint(inner)), doubled(adjoint.grad(inner))):
        check_grad(lambda x: np.sum(wrapped(x)), h3, forward=False)
    assert adjoint.checkpoint(doubled(adjoint.checkpoint(inner)))(h3) == pytest.approx(2.0 * inner(h3))


def test_checkpoint_decorating_a_function_defined_inside():
    def loss(W, h):
        @adjoint.checkpoint
        def block(h):
            return np.tanh(W @ h)

        @adjoint.checkpoint(preserve_rng_state=False)
        def block2(h):
            return np.sin(W @ h)

        for _ in range(2):
            h = block2(block(h))
        return np.sum(h ** 2)

    check_grad(loss, W3, h3)


def test_hvp_through_a_checkpointed_function_called_with_keywords():
    def loss(W, x):
        return np.sum(checkpointed_step(x, W=W) ** 2)

    V = rng.normal(size=(3, 3))
    expected = adjoint.hvp(lambda W, x: np.sum(step(x, W) ** 2), W3, V, h3)
    np.testing.assert_allclose(adjoint.hvp(loss, W3, V, h3), expected, rtol=1e-12)


class Cell:
    def __init__(self, W):
        self.W = W

    def step(self, h):  # named like an update, which adjoint takes it for
        return np.tanh(self.W @ h)

    def advance(self, h):
        return np.tanh(self.W @ h)

    @adjoint.checkpoint
    def __call__(self, h):
        for _ in range(3):
            h = self.advance(h)
        return h

    @adjoint.checkpoint
    def stepped(self, h):
        for _ in range(3):
            h = self.step(h)
        return h


def test_a_recurrent_cell_and_a_method_named_like_an_update():
    check_grad(lambda cell, h: np.sum(cell(h) ** 2), Cell(W3), h3)
    with pytest.raises(adjoint.TransformError, match="a method named `step` to update its object: if it does not, rename"):
        adjoint.grad(lambda cell, h: np.sum(cell.stepped(h) ** 2))(Cell(W3), h3)


def test_a_checkpointed_call_whose_result_goes_unused_and_keyword_only_parameters():
    def loss(W, h):
        unused = checkpointed_step(h, W)  # noqa: F841  (a dead store: no effect to refuse)
        return np.sum(step(h, W) ** 2)

    check_grad(loss, W3, h3)

    @adjoint.checkpoint
    def keyword_only(h, *, W):
        return np.tanh(W @ h)

    with pytest.raises(adjoint.AdjointError, match="keyword-only parameters carry no gradients yet"):
        adjoint.grad(lambda W, h: np.sum(keyword_only(h, W=W)))(W3, h3)
