"""Rules of NumPy's array methods (adjoint/rules/methods.py, and the function rules methods share)."""

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

# (method, shape, positional arguments after the array, keyword arguments)
CASES = [
    pytest.param(np.ndarray.sum, (2, 3), (), {}, id="sum"),
    pytest.param(np.ndarray.sum, (2, 3), (1,), {}, id="sum-positional-axis"),
    pytest.param(np.ndarray.sum, (2, 3), (), {"axis": 0, "keepdims": True}, id="sum-axis-keepdims"),
    pytest.param(np.ndarray.mean, (2, 3), (), {"axis": -1}, id="mean"),
    pytest.param(np.ndarray.max, (2, 3), (), {"axis": 1}, id="max"),
    pytest.param(np.ndarray.min, (2, 3), (), {}, id="min"),
    pytest.param(np.ndarray.prod, (2, 3), (), {"axis": 0}, id="prod"),
    pytest.param(np.ndarray.var, (2, 3), (), {"axis": 1, "ddof": 1}, id="var"),
    pytest.param(np.ndarray.std, (2, 3), (), {"keepdims": True}, id="std"),
    pytest.param(np.ndarray.dot, (2, 3), (np.linspace(-1.0, 1.0, 3),), {}, id="dot"),
    pytest.param(np.ndarray.clip, (2, 3), (-0.5, 0.5), {}, id="clip"),
    pytest.param(np.ndarray.clip, (2, 3), (), {"max": 0.2}, id="clip-max-keyword"),
    pytest.param(np.ndarray.squeeze, (2, 1, 3), (), {"axis": 1}, id="squeeze"),
    pytest.param(np.ndarray.ravel, (2, 3), ("F",), {}, id="ravel-F"),
    pytest.param(np.ndarray.flatten, (2, 3), (), {}, id="flatten"),
    pytest.param(np.ndarray.flatten, (2, 3), (), {"order": "F"}, id="flatten-F"),
    pytest.param(np.ndarray.copy, (2, 3), (), {}, id="copy"),
    pytest.param(np.ndarray.reshape, (2, 3), (3, 2), {}, id="reshape-spread"),
    pytest.param(np.ndarray.reshape, (2, 3), ((3, 2),), {}, id="reshape-tuple"),
    pytest.param(np.ndarray.reshape, (2, 3), (-1,), {}, id="reshape--1"),
    pytest.param(np.ndarray.reshape, (2, 3), (3, 2), {"order": "F"}, id="reshape-order-F"),
    pytest.param(np.ndarray.transpose, (2, 3, 4), (), {}, id="transpose"),
    pytest.param(np.ndarray.transpose, (2, 3, 4), (1, 2, 0), {}, id="transpose-spread"),
    pytest.param(np.ndarray.transpose, (2, 3, 4), ((2, 0, 1),), {}, id="transpose-tuple"),
    pytest.param(np.ndarray.astype, (2, 3), (np.float64,), {}, id="astype-same"),
    pytest.param(np.ndarray.compress, (2, 3), ([True, False, True], 1), {}, id="compress-axis"),
    pytest.param(np.ndarray.compress, (2, 3), (np.array([0, 1, 1, 0, 1]),), {}, id="compress-flat"),
    pytest.param(np.ndarray.compress, (2, 3), ([False, True],), {"axis": 0}, id="compress-axis-keyword"),
]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = sorted({case.values[0] for case in CASES}, key=lambda m: m.__name__)


@pytest.mark.parametrize("method, shape, extra, kwargs", CASES)
def test_method_rule_matches_finite_differences(rng, method, shape, extra, kwargs):
    check_rrule(method, rng.normal(size=shape), *extra, **kwargs)


@pytest.mark.parametrize("method, shape, extra, kwargs", CASES)
def test_method_rule_on_float32(rng, method, shape, extra, kwargs):
    check_rrule(method, rng.normal(size=shape).astype(np.float32), *extra, **kwargs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_astype_between_floats_casts_the_cotangent_back(rng, dtype):
    x = rng.normal(size=(2, 3)).astype(dtype)
    other = np.float64 if dtype == np.float32 else np.float32
    check_rrule(np.ndarray.astype, x, other, eps=0.1)  # linear: any step is exact, and float32 needs a large one


def test_astype_to_an_integer_dtype_has_no_gradient(rng):
    value, back = lookup(np.ndarray.astype).rrule(rng.normal(size=3), np.int32)
    assert value.dtype == np.int32 and back(np.ones(3)) == (None,)


@pytest.mark.parametrize("order", ["A", "K"])
def test_flatten_and_ravel_follow_the_layout(rng, order):
    x = np.asfortranarray(rng.normal(size=(2, 3)))
    for method in (np.ndarray.flatten, np.ndarray.ravel):
        value, back = lookup(method).rrule(x, order)
        (x_bar,) = back(value)
        np.testing.assert_array_equal(x_bar, x)


def test_copy_keeps_the_requested_layout(rng):
    x = rng.normal(size=(2, 3)).T
    value, _ = lookup(np.ndarray.copy).rrule(x)
    assert value.flags.c_contiguous and not np.shares_memory(value, x)


def test_methods_share_their_function_rules_where_arguments_line_up():
    for method, function in [(np.ndarray.sum, np.sum), (np.ndarray.dot, np.dot), (np.ndarray.clip, np.clip),
                             (np.ndarray.ravel, np.ravel), (np.ndarray.prod, np.prod)]:
        assert lookup(method).definition is lookup(function).definition


def test_lookup_of_a_bound_method_finds_the_method_rule(rng):
    x = rng.normal(size=(2, 3))
    assert lookup(x.sum) is lookup(np.ndarray.sum)
    assert lookup(np.float64(1.5).sum) is lookup(np.ndarray.sum)
    value, back = lookup(x.sum).rrule(x, axis=0)  # the receiver first
    np.testing.assert_allclose(value, x.sum(axis=0))
    np.testing.assert_array_equal(back(np.ones(3))[0], np.ones((2, 3)))


def test_lookup_of_a_bound_method_without_rule_is_none(rng):
    x = rng.normal(size=3)
    assert lookup(x.partition) is None and not registry.is_non_differentiable(x.partition)  # in place: no rule
    assert lookup(np.float64(1.0).is_integer) is None  # a NumPy scalar's method arrays lack


@pytest.mark.parametrize(
    "name", ["argmax", "argmin", "argsort", "argpartition", "searchsorted", "nonzero", "any", "all"]
)
def test_index_and_truth_methods_are_non_differentiable(name):
    x = np.array([1.0, 3.0, 2.0])
    assert registry.is_non_differentiable(getattr(np.ndarray, name))
    assert registry.is_non_differentiable(getattr(x, name))


def compress_method_rows(x):
    return np.sum(x.compress([True, False, True], axis=1) ** 2) + np.sum(x.compress(x.ravel() > 0) * 3.0)


def compress_method_into_buffer(x):
    return np.sum(x.compress([True, False], 0, out=np.empty((1, 3))))


def test_compress_method_through_compiler(rng):
    x = rng.normal(size=(2, 3))
    check_grad(compress_method_rows, x)
    check_grad(compress_method_rows, x.astype(np.float32))
    assert adjoint.grad(compress_method_rows)(x.astype(np.float32)).dtype == np.float32


def test_compress_method_refuses_out(rng):
    with pytest.raises(adjoint.AdjointError, match="out="):
        adjoint.grad(compress_method_into_buffer)(rng.normal(size=(2, 3)))
