"""Rules of adjoint/rules/scipy_special.py (`scipy.special.logsumexp`), loaded the first time a
scipy function is looked up; `import adjoint` alone never imports scipy."""

import subprocess
import sys

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, axis_variants, check_each, sample

scipy_special = pytest.importorskip("scipy.special")
logsumexp = scipy_special.logsumexp

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [logsumexp]


def weighted(b, variants):
    """`(axis, b, keepdims)` per `(axis, keepdims)`: `b` by position, so that it gets a cotangent."""
    return [(axis, b, keepdims) for axis, keepdims in variants]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 3)])
def test_logsumexp_rule(rng, shape, dtype):
    check_each(logsumexp, sample(rng, "real", shape, dtype), weighted(None, axis_variants(len(shape))))


# (shape of a, shape of b): b of a's shape, broadcasting against it, or stretching it.
B_SHAPES = [((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 3), (2, 1)), ((2, 3), ()), ((3,), (2, 3)), ((1, 3), (2, 3))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("a_shape, b_shape", B_SHAPES)
def test_logsumexp_rule_with_weights(rng, a_shape, b_shape, dtype):
    a, b = sample(rng, "real", a_shape, dtype), sample(rng, "positive", b_shape, dtype)
    check_each(logsumexp, a, weighted(b, axis_variants(len(np.broadcast_shapes(a_shape, b_shape)))))


def test_logsumexp_of_a_python_float_and_of_complex_inputs(rng):
    check_rrule(logsumexp, 0.5)
    check_rrule(logsumexp, sample(rng, "complex", (2, 3)), 1)


def test_logsumexp_gradient_is_the_softmax():
    a = np.log(np.array([[1.0, 3.0], [2.0, 2.0]]))
    _, back = lookup(logsumexp).rrule(a, axis=1)
    np.testing.assert_allclose(back(np.array([1.0, 2.0]))[0], [[0.25, 0.75], [1.0, 1.0]])


def test_logsumexp_of_large_inputs_has_finite_gradients():
    a = np.array([1000.0, 1000.0, -1000.0])
    _, back = lookup(logsumexp).rrule(a, None, np.array([1.0, 3.0, 2.0]))
    a_bar, _, b_bar = back(1.0)
    np.testing.assert_allclose(a_bar, [0.25, 0.75, 0.0])
    np.testing.assert_allclose(b_bar, [0.25, 0.25, 0.0])


def test_zero_weights_take_no_share_of_the_gradient(rng):
    a, b = rng.normal(size=3), np.array([1.0, 0.0, 2.0])
    check_rrule(logsumexp, a, None, b)
    assert lookup(logsumexp).rrule(a, None, b)[1](1.0)[0][1] == 0


def test_logsumexp_keeps_float32_and_integer_inputs_get_none(rng):
    _, back = lookup(logsumexp).rrule(np.zeros(3, dtype=np.float32), None, np.ones(3, dtype=np.float32))
    a_bar, _, b_bar = back(np.float64(1.0))
    assert a_bar.dtype == b_bar.dtype == np.float32
    check_rrule(logsumexp, np.arange(3), None, rng.uniform(0.5, 2.0, size=3))


def test_return_sign_is_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="return_sign="):
        adjoint.grad(signed_logsumexp)(rng.normal(size=3))


# ---- through the compiler ---------------------------------------------------------------------------

def log_partition(x):
    return np.sum(logsumexp(x, axis=1) ** 2) + logsumexp(x)


def log_partition_by_module_path(x):
    return np.sum(scipy_special.logsumexp(x, axis=0, keepdims=True) * x)


def log_partition_with_constant_weights(x):
    return np.sum(logsumexp(x, axis=1, b=np.array([0.5, 1.0, 2.0])) ** 2)


def log_partition_with_weights(x, b):
    return np.sum(logsumexp(x, 1, b) ** 2)


def signed_logsumexp(x):
    value, sign = logsumexp(x, return_sign=True)
    return value * sign


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [log_partition, log_partition_by_module_path, log_partition_with_constant_weights],
                         ids=lambda fn: fn.__name__)
def test_logsumexp_through_the_compiler(rng, fn, dtype):
    check_grad(fn, sample(rng, "real", (2, 3), dtype))


def test_logsumexp_weights_get_gradients_through_the_compiler(rng):
    check_grad(log_partition_with_weights, rng.normal(size=(2, 3)), rng.uniform(0.5, 2.0, size=3))


def test_importing_adjoint_does_not_import_scipy():
    check = "import adjoint, sys; assert 'scipy' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], check=True)
