"""adjoint's gradients agree with HIPS autograd's, when autograd is installed (`.[bench]`).

Each loss is written once against `np`; autograd runs the same code with `np` bound to
`autograd.numpy`. The losses cross the rule families, so a convention that differs from
autograd's (ties, complex numbers, a missed factor) shows up here as well as in the
finite-difference checks.
"""

import types

import numpy as np
import pytest

import adjoint

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")


def elementwise(x):
    return np.sum(np.arcsinh(x) * np.sqrt(x) + np.logaddexp(x, 0.5 * x) + np.hypot(x, 1.0) + np.sinc(x))


def extrema_and_clip(x):
    return np.sum(np.maximum(x, 0.0) + np.clip(x, -0.5, 0.5) + np.fmin(x, 0.2))


def reductions(x):
    return np.sum(np.cumsum(x, axis=1) ** 2) + np.std(x, axis=0, ddof=1).sum() + np.prod(x[0]) + np.max(x)


def moments(x):
    return np.sum(np.var(x, axis=1, keepdims=True) * np.mean(x, axis=0))


def norms(x):
    return np.linalg.norm(x) + np.linalg.norm(x, ord=3, axis=1).sum() + np.linalg.norm(x, axis=0).sum()


def shapes(x):
    y = np.moveaxis(np.expand_dims(x, 0), 0, -1)
    return np.sum(np.roll(np.fliplr(np.squeeze(y, -1)), 1, axis=1) * np.rot90(np.tile(x, (1, 1)), 2))


def assembly(x):
    a, b = np.split(np.concatenate([x, 2.0 * x], axis=0), 2)
    return np.sum(np.vstack([a, b]) ** 2 * np.hstack([b, a]).T[:3, :2].sum()) + np.sum(np.repeat(x, 2, axis=1))


def selection(x):
    m = x @ x.T
    return np.trace(m) + np.sum(np.triu(m, 1) ** 2) + np.sum(np.diag(m) * np.sort(x[0])[:2]) + np.sum(x[:, [0, 2, 2]] ** 2)


def products(x):
    return np.sum(np.einsum("ij,kj->ik", x, x) ** 2) + np.sum(np.outer(x[0], x[1])) + np.sum(np.kron(x[:, :2], x[:1, :2]))


def decompositions(x):
    a = x[:, :2] @ x[:, :2].T + 2.0 * np.eye(2)
    return np.linalg.det(a) + np.sum(np.linalg.inv(a)) + np.sum(np.linalg.solve(a, x[:, 0])) + np.sum(np.linalg.eigh(a)[0] ** 2)


def fft(x):
    return np.sum(np.abs(np.fft.rfft(x, axis=0)) ** 2) + np.sum(np.real(np.fft.fft(x[0]) * np.fft.ifft(x[1])))


def complex_parts(z):
    return np.sum(np.abs(z) ** 2 + np.real(z * z) + np.imag(np.exp(z)) + np.angle(z))


LOSSES = [elementwise, extrema_and_clip, reductions, moments, norms, shapes, assembly, selection, products,
          decompositions, fft]


def under_autograd(f):
    """`f` with `np` bound to autograd.numpy."""
    return types.FunctionType(f.__code__, {**f.__globals__, "np": anp}, f.__name__)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_gradients_agree_with_autograd(loss, rng):
    x = rng.uniform(0.3, 1.2, size=(2, 3))
    np.testing.assert_allclose(adjoint.grad(loss)(x), autograd.grad(under_autograd(loss))(x), rtol=1e-9, atol=1e-12)


def test_complex_gradients_agree_with_autograd(rng):
    z = rng.normal(size=(2, 3)) + 1j * rng.normal(size=(2, 3))
    np.testing.assert_allclose(
        adjoint.grad(complex_parts)(z), autograd.grad(under_autograd(complex_parts))(z), rtol=1e-9, atol=1e-12
    )
