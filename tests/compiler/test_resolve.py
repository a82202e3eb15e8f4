"""compiler.resolve: what each call is, including calls that ask for a non-float dtype."""

import numpy as np

import adjoint
from adjoint.testing import check_grad

def sum_as_int(x):
    return np.sum(x, dtype=np.int64) * 1.0


def test_integer_dtype_reduction_has_zero_gradient():
    # expected: zero gradient (or refusal) through np.sum(x, dtype=int); actual: ones (np.mean/np.full(dtype=int) too)
    check_grad(sum_as_int, np.array([0.3, 1.6]))
