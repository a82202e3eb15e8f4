"""adjoint/model_calls.py: the general path's work on a call's arguments, and the forward
functions a gradient function keeps per kind of call. What it keeps must be given up as soon as
the function, its defaults, a name its code resolved or the rules change."""

import numpy as np
import pytest

import adjoint
from adjoint import model_calls
from adjoint.model_calls import ModelCalls, differentiated

W = np.array([1.0, 2.0])


def scale(x):
    return 2.0 * x


def loss(p, k=1.0):
    return np.sum(scale(p["W"]) * k)


def test_differentiated_tells_planned_models_floats_and_the_rest():
    known = differentiated(({"W": W}, 1.5, np.arange(2), {"n": 3}), (0, 1, 2, 3), None, loss)
    assert known.wrt == (0, 1) and sorted(known.planned) == [0]
    assert known.frozen == ((0, ()),) and known.freezings == {} and not known.pruned


def test_differentiated_with_freeze_works_out_the_paths():
    known = differentiated(({"W": W, "V": W},), (0,), ["['V']"], loss)
    assert known.planned == {} and known.frozen == ((0, ("['V']",)),)


def test_a_kept_forward_function_is_found_again_for_the_same_kind_of_call():
    calls = ModelCalls()
    grad = adjoint.grad(loss)
    g = grad({"W": W})
    np.testing.assert_allclose(g["W"], [2.0, 2.0])
    args = ({"W": W},)
    known = differentiated(args, (0,), None, loss)
    assert calls.forward(loss, known) is None  # nothing kept yet
    adjoint.api._pullback(loss, args, {}, (0,), calls=calls)
    forward = calls.forward(loss, known)
    assert forward is not None
    assert calls.forward(loss, differentiated(({"W": W, "n": 1},), (0,), None, loss)) is forward  # same kind
    other = differentiated(args, (0,), ["['W']"], loss)
    assert calls.forward(loss, other) is None  # another frozen key


def test_new_defaults_code_names_and_rules_are_seen(monkeypatch):
    def local_loss(p, k=1.0):
        return np.sum(scale(p["W"]) * k)

    grad = adjoint.grad(local_loss)
    np.testing.assert_allclose(grad({"W": W})["W"], [2.0, 2.0])
    local_loss.__defaults__ = (3.0,)
    np.testing.assert_allclose(grad({"W": W})["W"], [6.0, 6.0])
    local_loss.__code__ = (lambda p, k=1.0: np.sum(p["W"] ** 2 * k)).__code__
    np.testing.assert_allclose(grad({"W": W})["W"], 2 * 3.0 * W)
    local_loss.__code__ = loss.__code__
    monkeypatch.setitem(globals(), "scale", lambda x: 5.0 * x)  # a name the code resolved, rebound
    np.testing.assert_allclose(grad({"W": W})["W"], [15.0, 15.0])

    def twice(x):
        return 2.0 * x

    def uses_twice(p):
        return np.sum(twice(p["W"]))

    grad = adjoint.grad(uses_twice)
    np.testing.assert_allclose(grad({"W": W})["W"], [2.0, 2.0])

    @adjoint.rrule(twice)
    def twice_rrule(x):
        return 2.0 * x, lambda g: (7.0 * g,)  # a deliberately different rule: it must be used now

    np.testing.assert_allclose(grad({"W": W})["W"], [7.0, 7.0])


def test_a_function_that_updates_an_argument_is_checked_on_every_call():
    def updates(p, x):
        x *= 2.0
        return np.sum(p["W"] * x)

    grad = adjoint.grad(updates)
    x = np.ones(2)
    np.testing.assert_allclose(grad({"W": W}, x)["W"], [2.0, 2.0])
    with pytest.raises(adjoint.AdjointError, match="shares its memory"):
        grad({"W": x}, x)


def test_kinds_of_call_kept_are_bounded():
    calls = ModelCalls()
    for n in range(40):
        args = ({f"w{i}": 1.0 for i in range(n + 1)},)
        adjoint.api._pullback(lambda p: sum(p.values()), args, {}, (0,), calls=calls)
    assert len(calls.found) <= 16
    assert model_calls.ModelCalls.__slots__ == ("found",)


def test_grad_and_value_and_grad_pull_back_at_once_as_pullback_does():
    model = {"W": W, "n": 3}

    def aux_loss(p, x):
        return np.sum(p["W"] * x), "aux"

    x = np.array([3.0, 4.0])
    _, back = adjoint.pullback(aux_loss, model, x)
    expected = back((1.0, None))
    (value, aux), (g, gx) = adjoint.value_and_grad(aux_loss, wrt=(0, 1), has_aux=True)(model, x)
    assert aux == "aux" and float(value) == 11.0
    np.testing.assert_allclose(g["W"], expected[0]["W"])
    np.testing.assert_allclose(gx, expected[1])
    assert g["n"] is None
    with pytest.raises(adjoint.AdjointError, match="return a float scalar"):
        adjoint.grad(lambda p: p["W"] * 2.0)(model)


def test_grad_of_a_layer_and_of_a_bound_method_pull_back_at_once():
    class Scale:
        def __init__(self, s):
            self.s = s

        def __call__(self, p):
            return np.sum(p["W"] * self.s)

        def loss(self, p):
            return self(p) * 2.0

    layer = Scale(np.array([5.0, 6.0]))
    np.testing.assert_allclose(adjoint.grad(layer)({"W": W})["W"], [5.0, 6.0])
    np.testing.assert_allclose(adjoint.grad(layer.loss)({"W": W})["W"], [10.0, 12.0])
