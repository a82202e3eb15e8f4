"""The rule of the function np.astype (adjoint/rules/shape.py), which is `x.astype`'s rule (checked
in test_methods.py) called as a function: directly (check_rrule) and through the compiler."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, sample, shape_id

RRULE_PRIMITIVES = [np.astype]

ASTYPES = [  # (from, to, keyword arguments): between float dtypes the cotangent is cast back
    (np.float64, np.float64, {}), (np.float32, np.float64, {}), (np.float64, np.float32, {"copy": False}),
    (np.float32, np.complex128, {}), (np.complex128, np.complex64, {}),
]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3)], ids=shape_id)
@pytest.mark.parametrize("source, target, kwargs", ASTYPES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_astype_function_rule_matches_finite_differences(rng, shape, source, target, kwargs):
    x = sample(rng, "complex" if np.dtype(source).kind == "c" else "real", shape).astype(source)
    # Linear: any step is exact; a float32 or complex64 value needs a large one, and looser tolerances.
    check_rrule(np.astype, x, target, eps=1e-2, rtol=1e-5, **kwargs)
    assert lookup(np.astype).rrule(x.real, np.int64)[1](np.ones(shape)) == (None,)  # an integer result: none


def astype_function_then_scale(x):
    halves = np.astype(x, np.float32) * np.arange(6.0, dtype=np.float32).reshape(2, 3)
    return np.sum(halves) + np.sum(x.astype(np.float64) ** 2)


def astype_on_a_device(x):
    return np.sum(np.astype(x, np.float32, device="cpu"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_astype_function_through_compiler_keeps_the_dtype(rng, dtype):
    x = sample(rng, "real", (2, 3), dtype)
    check_grad(astype_function_then_scale, x, eps=1e-3, rtol=1e-2)  # computed in float32 inside
    assert adjoint.grad(astype_function_then_scale)(x).dtype == dtype
    with pytest.raises(adjoint.AdjointError, match="device="):
        adjoint.grad(astype_on_a_device)(x)
