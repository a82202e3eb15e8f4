"""Broadcasting and dtypes, property-based: every shape pair NumPy broadcasts gets exact cotangents."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from adjoint.testing import check_grad


def mixed_arithmetic(a, b):
    return np.sum(a * b - a / (1.0 + b ** 2) + np.tanh(a + 2.0 * b))


def reduced_then_broadcast(a, b):
    centred = a - np.mean(a, axis=-1, keepdims=True)
    return np.sum(np.exp(centred * 0.1) * b)


@settings(max_examples=40, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3), st.sampled_from([np.float64, np.float32]), st.integers(0, 2**16))
def test_binary_operations_unbroadcast_exactly(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.normal(size=s).astype(dtype) for s in shapes.input_shapes)
    check_grad(mixed_arithmetic, a, b)


@settings(max_examples=25, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=3), st.integers(0, 2**16))
def test_reductions_feeding_broadcasts(shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = (rng.normal(size=s) for s in shapes.input_shapes)
    check_grad(reduced_then_broadcast, a, b)
