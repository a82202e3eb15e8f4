"""compiler.resolve: what each call is, including calls that ask for a non-float dtype."""

import numpy as np

import adjoint
from adjoint.testing import check_grad

def sum_as_int(x):
    return np.sum(x, dtype=np.int64) * 1.0


def test_integer_dtype_reduction_has_zero_gradient():
    # expected: zero gradient (or refusal) through np.sum(x, dtype=int); actual: ones (np.mean/np.full(dtype=int) too)
    check_grad(sum_as_int, np.array([0.3, 1.6]))


# ---- regressions from the fourth review ----

def _positional_int_dtype(x):
    return 1.0 * np.sum(x, None, int) + 1.0 * np.mean(x, None, int) + np.sum(np.full(3, x[0], int))


def test_positional_integer_dtype_has_no_gradient():
    # silently before: ones (dtype passed positionally was not seen)
    np.testing.assert_array_equal(adjoint.grad(_positional_int_dtype)(np.array([1.3, 2.7, -0.4])), np.zeros(3))


_DTYPE = np.float64


def _global_dtype(x):
    return np.sum(x, dtype=_DTYPE)


def test_rebinding_a_module_level_dtype_recompiles(monkeypatch):
    x = np.array([1.5, 2.5])
    np.testing.assert_array_equal(adjoint.grad(_global_dtype)(x), np.ones(2))
    monkeypatch.setattr(__import__(__name__), "_DTYPE", np.int64)
    np.testing.assert_array_equal(adjoint.grad(lambda v: 1.0 * _global_dtype(v))(x), np.zeros(2))


def _dtype_of_input(x):
    return np.sum(x ** 2, dtype=x.dtype)


def test_dtype_taken_from_the_input_is_supported():
    # refused before ("dtype= must be a constant"); ordinary NumPy code
    check_grad(_dtype_of_input, np.array([0.5, -1.5]))
