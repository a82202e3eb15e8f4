"""compiler.effects: which calls of your own functions may update the arrays they are given."""

import numpy as np
import pytest

import adjoint
from adjoint.compiler import effects, pipeline, resolve


def _callee(fn):
    return resolve.Callee(resolve.PYTHON, fn.__name__, fn)


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def scale_(y):
    y *= 2.0
    return y


def zero_first(y):
    y[0] = 0.0
    return y


def zero_a_slice(y):
    y[0:1] = 0.0
    return y


def add_at(y, i):
    np.add.at(y, i, 1.0)
    return y


def grow(xs):
    xs.append(1.0)
    return xs


def update_inside(y):
    def inner():
        y[0] = 0.0

    inner()
    return y


def test_only_code_that_may_update_is_lowered(monkeypatch):
    lowered = []
    lower = pipeline.lower
    monkeypatch.setattr(pipeline, "lower", lambda fn, *a, **k: lowered.append(fn) or lower(fn, *a, **k))
    effects._updating.clear()
    assert not effects.updates_its_arguments(_callee(sigmoid))
    assert lowered == []  # nothing in its code can update: its transform is not run to tell
    assert effects.updates_its_arguments(_callee(scale_))
    assert lowered == [scale_]


@pytest.mark.parametrize("fn", [scale_, zero_first, zero_a_slice, add_at, grow, update_inside])
def test_every_kind_of_update_is_seen_in_the_code(fn):
    assert effects._may_update(fn.__code__)


def test_a_helper_updating_its_argument_is_still_refused_after_a_read():
    def f(x):
        h = x * 2.0
        y = np.sum(h)
        zero_first(h)
        return y

    with pytest.raises(adjoint.TransformError, match="updates `h` after"):
        adjoint.grad(f)(np.ones(3))


def test_a_helper_that_updates_nothing_is_differentiated():
    def f(x):
        return np.sum(sigmoid(x) * x)

    adjoint.testing.check_grad(f, np.array([0.5, -1.0]))
