"""within_gradient, stop_gradient, hook and checkpoint: in plain calls, gradients, forward mode,
second derivatives and threads, checked against finite differences and against the same code
without them."""

import pathlib
import runpy
import threading

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"
rng = np.random.default_rng(0)


# ---- within_gradient --------------------------------------------------------------------------

seen = []


@adjoint.non_differentiable
def record_mode():
    """Runs as it is inside differentiated code: it asks the run-time flag."""
    seen.append(adjoint.within_gradient())
    return 0.0


def asks(x):
    return x * (2.0 if adjoint.within_gradient() else 3.0) + record_mode()


def test_within_gradient_is_false_in_plain_calls_and_true_in_every_derivative():
    seen.clear()
    assert not adjoint.within_gradient()
    assert asks(1.0) == 3.0 and seen == [False]
    assert adjoint.grad(asks)(1.0) == 2.0
    value, tangent = adjoint.jvp(asks, (1.0,), (1.0,))
    assert (value, tangent) == (2.0, 2.0)
    assert adjoint.grad(adjoint.grad(lambda x: asks(x) * x))(1.0) == 4.0  # d2/dx2 of 2x^2
    assert adjoint.hvp(lambda x: asks(x) ** 2, 1.0, 1.0) == 8.0
    assert seen[1:] and all(seen[1:])
    assert not adjoint.within_gradient()


def test_within_gradient_is_true_in_a_pullback_and_false_after_an_error():
    def loss(x):
        return np.sum(adjoint.hook(x, lambda g: seen.append(adjoint.within_gradient())))

    seen.clear()
    value, back = adjoint.pullback(loss, np.ones(2))
    back(1.0)
    assert seen == [True]
    with pytest.raises(ZeroDivisionError):
        adjoint.grad(lambda x: x / 0)(1)  # an int argument: Python's own division error
    assert not adjoint.within_gradient()


def test_within_gradient_is_written_as_true_in_generated_code_and_the_other_branch_dropped():
    def f(x):
        if adjoint.within_gradient():
            y = x * 2.0
        else:
            y = np.sort(x)  # no adjoint work for the branch that never runs
        return np.sum(y)

    code = adjoint.source(f).split("\n", 1)[1]  # after the header naming the function
    assert "within_gradient" not in code and "sort" not in code and "if " not in code
    assert f(np.array([2.0, 1.0])) == 3.0  # the user's function is untouched


def test_within_gradient_per_thread():
    inside, outside_done = threading.Event(), threading.Event()
    answers = {}

    @adjoint.non_differentiable
    def wait_inside():
        answers["inside"] = adjoint.within_gradient()
        inside.set()
        assert outside_done.wait(10)
        return 0.0

    def loss(x):
        return x * x + wait_inside()

    def differentiate():
        answers["gradient"] = adjoint.grad(loss)(3.0)

    thread = threading.Thread(target=differentiate)
    thread.start()
    assert inside.wait(10)
    answers["outside"] = adjoint.within_gradient()  # this thread is not differentiating
    outside_done.set()
    thread.join(10)
    assert answers == {"inside": True, "outside": False, "gradient": 6.0}


def dropout(x, rate, seed):
    """Active only under differentiation (as a training-mode layer would be)."""
    if not adjoint.within_gradient():
        return x
    keep = np.random.default_rng(seed).random(x.shape) >= rate
    return x * keep / (1 - rate)


def dropout_loss(W, x):
    return np.sum(dropout(np.tanh(x @ W), 0.5, seed=1) ** 2)


def test_a_dropout_layer_drops_only_under_differentiation():
    W, x = rng.normal(size=(3, 6)), rng.normal(size=(4, 3))
    assert np.array_equal(dropout(x, 0.5, 1), x)
    keep = np.random.default_rng(1).random((4, 6)) >= 0.5
    h = np.tanh(x @ W)
    expected = x.T @ (2 * (h * keep / 0.5) * keep / 0.5 * (1 - h ** 2))
    np.testing.assert_allclose(adjoint.grad(dropout_loss)(W, x), expected, rtol=1e-12)
    check_grad(dropout_loss, W, x)  # finite differences run the layer as differentiated: dropping


# ---- stop_gradient ----------------------------------------------------------------------------

def test_stop_gradient_holds_its_value_constant():
    def f(x):
        return np.sum(x * adjoint.stop_gradient(np.sin(x)))

    x = rng.normal(size=3)
    np.testing.assert_allclose(adjoint.grad(f)(x), np.sin(x), rtol=1e-14)
    _, tangent = adjoint.jvp(f, (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(np.sin(x)), rtol=1e-14)
    np.testing.assert_allclose(adjoint.hvp(f, x, np.ones(3)), np.zeros(3), atol=0)
    assert "sin_bar" not in adjoint.source(f) and "cos" not in adjoint.source(f)


def test_stop_gradient_of_a_container_and_its_target_values():
    def f(params):
        target = adjoint.stop_gradient(params)  # a copy of the parameters, held still
        return (params["w"] - 2 * target["w"]) ** 2

    assert adjoint.grad(f)({"w": 3.0}) == {"w": 2 * (3.0 - 6.0)}


# ---- hook -------------------------------------------------------------------------------------

def clip(g):
    return np.clip(g, -1.0, 1.0)


def test_a_clipping_hook_clips_the_cotangent_flowing_back():
    def loss(x):
        y = adjoint.hook(x * 3.0, clip)
        return np.sum(y ** 2)

    x = np.array([0.1, -2.0, 0.05])
    np.testing.assert_allclose(adjoint.grad(loss)(x), 3.0 * np.clip(2 * 3.0 * x, -1, 1), rtol=1e-14)


def test_a_logging_hook_sees_the_cotangent_and_keeps_it():
    logged = []

    def loss(x):
        return np.sum(np.sin(adjoint.hook(x, logged.append)))

    x = rng.normal(size=3)
    np.testing.assert_allclose(adjoint.grad(loss)(x), np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(logged, [np.cos(x)], rtol=1e-14)
    check_grad(loss, x)


def test_a_hook_is_the_identity_in_forward_mode():
    def loss(x):
        return np.sum(adjoint.hook(x, lambda g: 10 * g) ** 2)

    value, tangent = adjoint.jvp(loss, (np.ones(2),), (np.array([1.0, 0.0]),))
    assert (value, tangent) == (2.0, 2.0)


def test_a_hook_returning_the_wrong_shape_or_under_a_second_derivative_is_refused():
    def loss(x):
        return np.sum(adjoint.hook(x, lambda g: np.sum(g)) ** 2)

    with pytest.raises(adjoint.AdjointError, match="shaped like the cotangent"):
        adjoint.grad(loss)(np.ones(2))

    def hooked(x):
        return np.sum(adjoint.hook(x, clip) ** 3)

    with pytest.raises(adjoint.AdjointError, match="Remove the hook for second derivatives"):
        adjoint.hvp(hooked, np.ones(2), np.ones(2))


# ---- checkpoint -------------------------------------------------------------------------------

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


def test_a_hook_that_changes_its_cotangent_in_place_changes_only_its_own():
    def clip_in_place(g):
        return np.clip(g, -0.1, 0.1, out=g)

    def loss(x, W):
        skip = x * 3.0  # `+` hands the same cotangent to both branches
        return np.sum(5.0 * (adjoint.hook(x @ W, clip_in_place) + skip))

    x, W = np.ones(2), np.eye(2)
    np.testing.assert_allclose(adjoint.grad(loss)(x, W), [15.1, 15.1], rtol=1e-14)
    value, back = adjoint.pullback(lambda x: adjoint.hook(x, clip_in_place) + x, np.ones(2))
    cotangent = np.ones(2)
    np.testing.assert_allclose(back(cotangent)[0], [1.1, 1.1])
    assert np.array_equal(cotangent, np.ones(2))  # the caller's cotangent is not touched


def test_hooks_by_keyword_and_on_lists_of_arrays_of_different_shapes():
    def loss(x):
        return np.sum(adjoint.hook(x=x, fn=lambda g: 2 * g) ** 2)

    assert np.array_equal(adjoint.grad(loss)(np.ones(2)), [4.0, 4.0])
    assert adjoint.jvp(loss, (np.ones(2),), (np.ones(2),)) == (2.0, 4.0)

    def parts(a, b):
        a2, b2 = adjoint.hook([a, b], lambda gs: [2 * g for g in gs])
        return np.sum(a2) + np.sum(b2 ** 2)

    ga, gb = adjoint.grad(parts, (0, 1))(np.ones(2), np.ones(3))
    assert np.array_equal(ga, [2.0, 2.0]) and np.array_equal(gb, [4.0, 4.0, 4.0])


def global_dropout_loss(W, x):
    """Dropout drawing from NumPy's global generator: check_grad replays its draws."""
    h = np.tanh(x @ W)
    if adjoint.within_gradient():
        h = h * (np.random.random(h.shape) >= 0.5) * 2.0
    return np.sum(h ** 2)


def test_check_grad_replays_the_global_generators_draws():
    np.random.seed(3)
    check_grad(global_dropout_loss, rng.normal(size=(3, 4)), rng.normal(size=(2, 3)))


# ---- checkpoint: the ways it is reached --------------------------------------------------------

W3, h3 = rng.normal(size=(3, 3)), rng.normal(size=3)


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


# ---- second review: hooks on models, in-place hooks, layers, generators in check_grad -------------

def test_a_hook_on_a_model_changes_only_the_models_cotangent():
    from support import Point

    def zero_in_place(g):
        g.x[...] = 0.0
        g.y[...] = 0.0

    def loss(p, v):
        moved = adjoint.hook(Point(v * 1.0, v * 2.0), zero_in_place)
        return np.sum(moved.x + v) + np.sum(moved.y)  # `+` hands `v` the same cotangent array

    np.testing.assert_allclose(adjoint.grad(loss, 1)(None, np.ones(2)), [1.0, 1.0])


def test_a_hook_that_clips_in_place_and_returns_nothing():
    def loss(x):
        return np.sum(5.0 * adjoint.hook(x, lambda g: np.clip(g, -1.0, 1.0, out=g)))

    np.testing.assert_array_equal(adjoint.grad(loss)(np.zeros(3)), np.ones(3))


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


def test_check_grad_replays_a_generator_among_the_arguments():
    def noisy(x, rng):
        return np.sum(x * (rng.random(x.shape) > 0.5))

    check_grad(noisy, np.ones(4), np.random.default_rng(0))


# ---- third review ----------------------------------------------------------------------------------

def test_a_hook_returning_a_misshapen_item_of_a_list_is_refused():
    def loss(a, b):
        a2, b2 = adjoint.hook([np.sin(a), b], lambda gs: [gs[0][:1], gs[1]])
        return np.sum(a2 * b2)

    with pytest.raises(adjoint.AdjointError, match=r"of shape \(1,\) for one of shape \(3,\) at \[0\]"):
        adjoint.grad(loss)(np.ones(3), np.ones(3))


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

    def step(self, h):  # named like an update, but computes a new value
        return np.tanh(self.W @ h)

    @adjoint.checkpoint
    def __call__(self, h):
        for _ in range(3):
            h = self.step(h)
        return h


def test_a_recurrent_cell_whose_method_is_called_step():
    check_grad(lambda cell, h: np.sum(cell(h) ** 2), Cell(W3), h3)
