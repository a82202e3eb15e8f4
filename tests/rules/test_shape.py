"""Rules of adjoint/rules/shape.py (transpose, the `.T` attribute, reshape), checked directly and through the compiler."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

# (primitive, shape, positional arguments after x, keyword arguments, dtype)
RRULE_CASES = [
    pytest.param(np.transpose, (2, 3), (), {}, np.float64, id="transpose-(2,3)"),
    pytest.param(np.transpose, (2, 3, 4), (), {}, np.float64, id="transpose-(2,3,4)"),
    pytest.param(np.transpose, (2, 3, 4), (), {"axes": (1, 0, 2)}, np.float64, id="transpose-(2,3,4)-axes=(1,0,2)"),
    pytest.param(np.transpose, (2, 3, 4), (), {"axes": (2, 0, 1)}, np.float64, id="transpose-(2,3,4)-axes=(2,0,1)"),
    pytest.param(np.transpose, (2, 3, 4), (), {"axes": (1, 2, 0)}, np.float32, id="transpose-(2,3,4)-axes=(1,2,0)-float32"),
    pytest.param(np.reshape, (2, 3), (-1,), {}, np.float64, id="reshape-(2,3)-to--1"),
    pytest.param(np.reshape, (2, 3), ((3, 2),), {}, np.float64, id="reshape-(2,3)-to-(3,2)"),
    pytest.param(np.reshape, (2, 3, 4), ((4, -1),), {}, np.float64, id="reshape-(2,3,4)-to-(4,-1)"),
    pytest.param(np.reshape, (6,), ((1, 2, 3),), {}, np.float64, id="reshape-(6,)-to-(1,2,3)"),
    pytest.param(np.reshape, (2, 3), ((3, 2),), {"order": "F"}, np.float64, id="reshape-(2,3)-to-(3,2)-order=F"),
    pytest.param(np.reshape, (2, 3), (-1,), {}, np.float32, id="reshape-(2,3)-to--1-float32"),
    pytest.param(np.squeeze, (2, 1, 3, 1), (), {}, np.float64, id="squeeze-(2,1,3,1)"),
    pytest.param(np.squeeze, (2, 1, 3, 1), (), {"axis": -1}, np.float64, id="squeeze-(2,1,3,1)-axis=-1"),
    pytest.param(np.squeeze, (1, 3), (0,), {}, np.float32, id="squeeze-(1,3)-axis=0-float32"),
    pytest.param(np.ravel, (2, 3), (), {}, np.float64, id="ravel-(2,3)"),
    pytest.param(np.ravel, (2, 3, 4), ("F",), {}, np.float64, id="ravel-(2,3,4)-F"),
    pytest.param(np.ravel, (2, 3), (), {"order": "A"}, np.float32, id="ravel-(2,3)-A-float32"),
]

# Attributes cannot be called, so check_rrule cannot check them; their rules are checked
# against the linear map they implement (see test_T_attribute_rule_is_the_transpose_map).
ATTRIBUTE_RULES = [np.ndarray.T]

# The primitives the rule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [case.values[0] for case in RRULE_CASES] + ATTRIBUTE_RULES + [np.full]


def transpose_2d(x):
    return np.transpose(x)


def transpose_3d_with_axes(x):
    return np.transpose(x, (2, 0, 1))


def transpose_3d_with_axes_keyword(x):
    return np.transpose(x, axes=(1, 2, 0))


def transpose_attribute(x):
    return x.T


def transpose_attribute_then_scale(x):
    return x.T * np.arange(1.0, 1.0 + x.size).reshape(x.T.shape)


def reshape_flat(x):
    return np.reshape(x, -1)


def reshape_to_tuple(x):
    return np.reshape(x, (3, 2))


def reshape_then_matmul(x):
    return np.reshape(x, (3, -1)) @ np.ones((2, 2))


GRAD_CASES = [
    pytest.param(transpose_2d, (2, 3), np.float64, id="transpose_2d"),
    pytest.param(transpose_3d_with_axes, (2, 3, 4), np.float64, id="transpose_3d_with_axes"),
    pytest.param(transpose_3d_with_axes_keyword, (2, 3, 4), np.float64, id="transpose_3d_with_axes_keyword"),
    pytest.param(transpose_attribute, (2, 3), np.float64, id="x.T-(2,3)"),
    pytest.param(transpose_attribute, (2, 3, 4), np.float64, id="x.T-(2,3,4)"),
    pytest.param(transpose_attribute, (3,), np.float64, id="x.T-(3,)"),
    pytest.param(transpose_attribute, (2, 3), np.float32, id="x.T-(2,3)-float32"),
    pytest.param(transpose_attribute_then_scale, (2, 3), np.float64, id="transpose_attribute_then_scale"),
    pytest.param(reshape_flat, (2, 3), np.float64, id="reshape_flat"),
    pytest.param(reshape_to_tuple, (2, 3), np.float64, id="reshape_to_tuple"),
    pytest.param(reshape_to_tuple, (6,), np.float32, id="reshape_to_tuple-float32"),
    pytest.param(reshape_then_matmul, (2, 3), np.float64, id="reshape_then_matmul"),
]


@pytest.mark.parametrize("primitive, shape, extra, kwargs, dtype", RRULE_CASES)
def test_shape_rule_matches_finite_differences(rng, primitive, shape, extra, kwargs, dtype):
    check_rrule(primitive, rng.normal(size=shape).astype(dtype), *extra, **kwargs)


@pytest.mark.parametrize("fn, shape, dtype", GRAD_CASES)
def test_shape_function_through_compiler_matches_finite_differences(rng, fn, shape, dtype):
    check_grad(fn, rng.normal(size=shape).astype(dtype))


def test_transpose_rule_with_positional_axes_matches_finite_differences(rng):
    # `axes` is a positional argument here: it gets no cotangent (None, or left out).
    check_rrule(np.transpose, rng.normal(size=(2, 3, 4)), (1, 0, 2))


@pytest.mark.parametrize("shape, dtype", [((2, 3), np.float64), ((2, 3, 4), np.float64), ((2, 3), np.float32)],
                         ids=["(2,3)", "(2,3,4)", "(2,3)-float32"])
def test_T_attribute_rule_is_the_transpose_map(rng, shape, dtype):
    # T is linear: J u = u reversed in its axes, so <pullback(v), u> must equal <v, u.T>.
    x = rng.normal(size=shape).astype(dtype)
    value, back = lookup(np.ndarray.T).rrule(x)
    np.testing.assert_array_equal(value, np.moveaxis(x, range(x.ndim), range(x.ndim)[::-1]))
    v = rng.normal(size=value.shape).astype(dtype)
    u = rng.normal(size=shape).astype(dtype)
    (x_bar,) = back(v)
    assert x_bar.shape == x.shape and x_bar.dtype == x.dtype
    np.testing.assert_allclose(np.sum(x_bar * u), np.sum(v * np.transpose(u)), rtol=1e-5)


def test_reshape_shape_argument_gets_no_cotangent(rng):
    _, back = lookup(np.reshape).rrule(rng.normal(size=(2, 3)), (3, 2))
    x_bar, shape_bar = back(np.arange(6.0).reshape(3, 2))
    assert shape_bar is None
    np.testing.assert_array_equal(x_bar, np.arange(6.0).reshape(2, 3))


FULL_CASES = [
    pytest.param((2, 3), 1.5, id="python-float-fill"),
    pytest.param((2, 3), np.array([0.5, -1.0, 2.0]), id="broadcast-row-fill"),
    pytest.param((4,), np.array(0.25, dtype=np.float32), id="0d-float32-fill"),
]


@pytest.mark.parametrize("shape, fill", FULL_CASES)
def test_full_rule_sums_the_cotangent_into_the_fill_value(shape, fill):
    check_rrule(np.full, shape, fill)


def fill_and_scale(x):
    return np.sum(np.full((3, 2), x) * np.arange(6.0).reshape(3, 2))


def test_full_through_compiler_matches_finite_differences():
    check_grad(fill_and_scale, 0.7)
    check_grad(fill_and_scale, np.array([1.0, -2.0]))



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 2. np.transpose with negative axes: untranspose argsorts the axes as written.
def _transpose_negative_axes(x, w):
    return np.sum(np.transpose(x, (-1, 0)) * w)


def test_transpose_with_negative_axes():
    # expected: gradient is w.T; actual: silently w (argsort((-1, 0)) is the identity)
    check_grad(_transpose_negative_axes, RNG.normal(size=(2, 2)), RNG.normal(size=(2, 2)))


# ---- 5. reshape with order="A" -------------------------------------------------------------

W23 = np.arange(6.0).reshape(2, 3)


def _reshape_order_a(x):
    y = np.reshape(x, (3, 2), order="A")  # x is C-contiguous: read in C order
    return np.sum(y.T * W23)


def test_reshape_order_a_follows_the_forward_layout():
    # expected: reshape(W23.T, (2, 3)) = [[0, 3, 1], [4, 2, 5]];
    # actual: [[0, 2, 4], [1, 3, 5]] -- the pullback reshapes the cotangent with order="A"
    # too (rules/shape.py reshape_rrule), and the cotangent (a transpose) is F-contiguous,
    # so it is read in F order. With an F-contiguous x and a C-contiguous cotangent the
    # same happens the other way round (check_grad cannot see that one: its shifted
    # inputs are C-contiguous).
    x = np.arange(6.0).reshape(2, 3) / 5
    np.testing.assert_allclose(adjoint.grad(_reshape_order_a)(x), np.reshape(W23.T, (2, 3)))


def ravel_fortran_ordered(x):
    return np.sum(np.ravel(x.T, order="K") * np.arange(6.0))  # x.T is in Fortran order


def squeeze_then_scale(x):
    return np.sum(np.squeeze(x, axis=1) * np.arange(3.0))


def test_ravel_and_squeeze_through_compiler_match_finite_differences(rng):
    check_grad(ravel_fortran_ordered, rng.normal(size=(2, 3)))
    check_grad(squeeze_then_scale, rng.normal(size=(2, 1, 3)))
