"""within_gradient, stop_gradient and hook (adjoint.steering; checkpoint has tests of its own): in
plain calls, gradients, forward mode, second derivatives and threads, checked against finite
differences and against the same code without them."""

import threading

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad


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


# ---- check_grad runs the function as differentiated -----------------------------------------------

def global_dropout_loss(W, x):
    """Dropout drawing from NumPy's global generator: check_grad replays its draws."""
    h = np.tanh(x @ W)
    if adjoint.within_gradient():
        h = h * (np.random.random(h.shape) >= 0.5) * 2.0
    return np.sum(h ** 2)


def test_check_grad_replays_the_global_generators_draws():
    np.random.seed(3)
    check_grad(global_dropout_loss, rng.normal(size=(3, 4)), rng.normal(size=(2, 3)))


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


def test_check_grad_replays_a_generator_among_the_arguments():
    def noisy(x, rng):
        return np.sum(x * (rng.random(x.shape) > 0.5))

    check_grad(noisy, np.ones(4), np.random.default_rng(0))


def test_a_hook_returning_a_misshapen_item_of_a_list_is_refused():
    def loss(a, b):
        a2, b2 = adjoint.hook([np.sin(a), b], lambda gs: [gs[0][:1], gs[1]])
        return np.sum(a2 * b2)

    with pytest.raises(adjoint.AdjointError, match=r"of shape \(1,\) for one of shape \(3,\) at \[0\]"):
        adjoint.grad(loss)(np.ones(3), np.ones(3))
