"""compiler.shifts: the shift of a log-sum-exp carries no derivative, where (and only where)
its contributions cancel."""

import dataclasses
import re

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(0)


def rows(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def everything(z):
    m = z.max()
    return np.log(np.sum(np.exp(z - m))) + m


def by_position(z):
    m = np.amax(z, -1, keepdims=True)
    return np.sum(m + np.log(np.exp(z - m).sum(-1, keepdims=True)))


@pytest.mark.parametrize("f", [rows, everything, by_position])
def test_the_shift_gets_no_adjoint_and_the_gradient_is_the_softmax(f):
    text = adjoint.source(f)
    pullback = text[text.index("_pullback("):]
    assert not re.search(r"\bm_bar\b", pullback) and "chosen" not in pullback
    z = rng.normal(size=(4, 5))
    check_grad(f, z)
    e = np.exp(z - np.max(z, axis=-1, keepdims=True) if f is not everything else z - z.max())
    softmax = e / np.sum(e, axis=-1 if f is not everything else None, keepdims=True)
    np.testing.assert_allclose(adjoint.grad(f)(z), softmax, rtol=1e-12)


def test_ties_at_the_maximum_are_exact():
    z = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    e = np.exp(z - 3.0)
    np.testing.assert_allclose(adjoint.grad(rows)(z), e / e.sum(axis=1, keepdims=True), rtol=1e-12)
    check_grad(rows, z)


def shift_read_again(z):
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m) + np.sum(m ** 2)


def exp_read_again(z):
    m = np.max(z, axis=1, keepdims=True)
    e = np.exp(z - m)
    return np.sum(np.log(np.sum(e, axis=1, keepdims=True)) + m) + np.sum(e)


def other_axis(z):
    m = np.max(z, axis=0, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def unkept(z):
    m = np.max(z, axis=1)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1)) + m)


def other_shift(z, c):
    m = np.max(c, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def test_the_shift_keeps_its_other_uses():
    assert "adj.add_chosen(" in adjoint.source(shift_read_again) or "unreduce_chosen" in adjoint.source(shift_read_again)
    check_grad(shift_read_again, rng.normal(size=(3, 4)))


@pytest.mark.parametrize("f", [exp_read_again, other_axis])
def test_what_does_not_cancel_keeps_the_shifts_derivative(f):
    assert re.search(r"\bm_bar\b", adjoint.source(f))
    check_grad(f, rng.normal(size=(3, 4)))


def test_an_unkept_shift_that_broadcasts_along_rows_keeps_its_derivative():
    assert re.search(r"\bm_bar\b", adjoint.source(unkept))
    check_grad(unkept, rng.normal(size=(4, 4)))


def test_a_shift_taken_from_another_array_is_differentiated():
    text = adjoint.source(other_shift, wrt=(0, 1))
    assert "c_bar" in text
    check_grad(other_shift, rng.normal(size=(3, 4)), rng.normal(size=(3, 4)))


def test_forward_mode_and_second_derivatives_agree_with_finite_differences():
    z, v = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    assert "adj.tangent_like(dz" not in adjoint.source(rows, mode="jvp")  # `z - m` has `z`'s shape: `dz` as it is
    _, tangent = adjoint.jvp(rows, (z,), (v,))
    e = np.exp(z - z.max(axis=1, keepdims=True))
    softmax = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(tangent, np.sum(softmax * v), rtol=1e-12)
    h = 1e-5
    expected = (adjoint.grad(rows)(z + h * v) - adjoint.grad(rows)(z - h * v)) / (2 * h)
    np.testing.assert_allclose(adjoint.hvp(rows, z, v), expected, rtol=1e-6, atol=1e-8)


def unshifted_on_one_arm(z, plain):
    m = np.max(z, axis=1, keepdims=True)
    if plain:
        e = np.exp(z)
    else:
        e = np.exp(z - m)
    s = np.sum(e, axis=1, keepdims=True)
    y = np.log(s) + m
    return np.sum(y * y)


def shift_from_a_branch(z, w, c):
    if c > 0:
        m = w
    else:
        m = np.max(z, axis=1, keepdims=True)
    y = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return np.sum(y * y)


@pytest.mark.parametrize("plain", [True, False])
def test_a_name_bound_on_two_arms_of_a_branch_keeps_its_derivative(plain):
    check_grad(lambda z: unshifted_on_one_arm(z, plain), rng.normal(size=(3, 4)))
    z, w = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    check_grad(lambda z, w: shift_from_a_branch(z, w, 1.0 if plain else -1.0), z, w)


@dataclasses.dataclass  # (eq without frozen: instances cannot be hashed)
class _Scale:
    factor: np.ndarray

    def __call__(self, x):
        return np.max(x * self.factor)


_scale = _Scale(np.array([1.0, 3.0, 2.0]))


def _calls_an_unhashable_global(x):
    return _scale(x) + np.max(x)


def test_a_global_callable_that_cannot_be_hashed_is_differentiated():
    check_grad(_calls_an_unhashable_global, np.array([0.5, 0.2, 0.1]))
