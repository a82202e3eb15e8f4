"""gradient_jvps: forward mode over a gradient at floats and float arrays runs one generated
function, found with identity checks, and gives what the general path gives; other calls take
the general path."""

import numpy as np
import pytest

import adjoint
from adjoint import gradient_jvps, gradient_rules
from adjoint.testing import check_grad

rng = np.random.default_rng(0)
W, x, v = rng.normal(size=(3, 4)), rng.normal(size=(5, 3)), rng.normal(size=(3, 4))


def loss(W, x, scale=2.0):
    return scale * np.sum(np.tanh(x @ W) ** 2)


def finite_difference_hvp(W, x, v, eps=1e-6):
    gradient = adjoint.grad(loss)
    return (gradient(W + eps * v, x) - gradient(W - eps * v, x)) / (2 * eps)


@pytest.fixture
def general_path(monkeypatch):
    """Counts the calls that take the general path (the gradient's forward rule)."""
    calls = []
    original = gradient_rules._gradient_frule
    monkeypatch.setattr(gradient_rules, "_gradient_frule", lambda *a, **k: calls.append(1) or original(*a, **k))
    return calls


def test_a_hessian_vector_product_takes_the_plain_path_and_is_right(general_path):
    gradient = adjoint.grad(loss)
    assert isinstance(gradient.__adjoint_plain_jvps__, gradient_jvps.PlainGradientJvps)
    for _ in range(2):  # (found, then found again)
        value, product = adjoint.jvp(gradient, (W, x), (v, None))
        np.testing.assert_allclose(value, gradient(W, x))
        np.testing.assert_allclose(product, finite_difference_hvp(W, x, v), rtol=1e-6, atol=1e-8)
    assert general_path == []


def test_tuple_wrt_gives_tuples_with_zero_tangents_where_nothing_moves(general_path):
    gradient = adjoint.grad(loss, wrt=(0, 1))
    (gW, gx), (dgW, dgx) = adjoint.jvp(gradient, (W, x), (v, None))
    general = gradient_rules._gradient_frule(loss, (0, 1), (0, 1), (W, x), (v, None))
    general_path.clear()
    for got, expected in zip((gW, gx, dgW, dgx), general[0] + general[1]):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert not np.shares_memory(gW, dgW) and not np.shares_memory(gx, dgx)
    assert general_path == []


def test_a_tangent_of_another_precision_takes_the_general_path(general_path):
    gradient = adjoint.grad(loss)
    _, product = adjoint.jvp(gradient, (W, x), (v.astype(np.float32), None))
    np.testing.assert_allclose(product, finite_difference_hvp(W, x, v.astype(np.float32)), rtol=1e-5, atol=1e-6)
    assert general_path == [1]


@pytest.mark.parametrize("tangents, message", [
    ((np.ones(4), None), "has shape"),
    ((v, 1.0), "argument 1"),
])
def test_tangents_that_do_not_fit_are_refused_as_the_general_path_refuses_them(tangents, message):
    with pytest.raises(adjoint.AdjointError, match=message):
        adjoint.jvp(adjoint.grad(loss), (W, x), tangents)


def test_python_floats_and_defaults_rebound_after_the_first_call():
    def cubic(a, b=2.0):
        return a ** 3 * b

    gradient = adjoint.grad(cubic)
    assert adjoint.jvp(gradient, (1.5,), (1.0,)) == (pytest.approx(3 * 1.5 ** 2 * 2.0), pytest.approx(6 * 1.5 * 2.0))
    cubic.__defaults__ = (5.0,)
    assert adjoint.jvp(gradient, (1.5,), (1.0,))[1] == pytest.approx(6 * 1.5 * 5.0)
    check_grad(lambda a: adjoint.grad(cubic)(a), 1.5)



_squash = np.tanh  # (a rule's primitive: its rule is written into the code)


def squashed(W, x):
    return np.sum(_squash(x @ W) ** 2)


def test_a_global_rebound_after_the_first_call_is_seen(monkeypatch):
    gradient = adjoint.grad(squashed)
    first = adjoint.jvp(gradient, (W, x), (v, None))[1]
    monkeypatch.setitem(globals(), "_squash", np.sin)  # the code was written for `np.tanh`
    again = adjoint.jvp(gradient, (W, x), (v, None))[1]
    sine = adjoint.jvp(adjoint.grad(lambda W, x: np.sum(np.sin(x @ W) ** 2)), (W, x), (v, None))[1]
    np.testing.assert_allclose(again, sine)
    assert not np.allclose(first, again)


def softmax_cross_entropy(W, x, y):
    z = np.tanh(x @ W)
    m = np.max(z, axis=1, keepdims=True)
    return -np.sum(y * (z - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) - m))


def test_the_hessian_vector_products_code_casts_no_tangent_whose_shape_is_known():
    from adjoint.compiler import pipeline

    y = np.eye(3)[[0, 1, 2, 0, 1]]
    W3, v3 = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    with pipeline.recording() as texts:
        _, product = adjoint.jvp(adjoint.grad(softmax_cross_entropy), (W3, x, y), (v3, None, None))
    (text,) = [t for t in texts if "softmax_cross_entropy_gradient_jvp" in t]
    assert "tangent_like" not in text  # cotangents shaped as their primals (`adj.unbroadcast`, `adj.unreduce`)
    gradient, eps = adjoint.grad(softmax_cross_entropy), 1e-6
    expected = (gradient(W3 + eps * v3, x, y) - gradient(W3 - eps * v3, x, y)) / (2 * eps)
    np.testing.assert_allclose(product, expected, rtol=1e-6, atol=1e-8)
