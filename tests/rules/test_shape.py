"""Rules of adjoint/rules/shape.py (transposes, reshapes, broadcasting, flips, rolls, rotations),
checked directly and through the compiler."""

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.compiler import inline
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, SHAPES, sample, shape_id

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
ATTRIBUTE_RULES = [np.ndarray.T, np.ndarray.mT]

# The primitives the rule tests below exercise (read by test_registry_coverage); MOVES are
# the flips, rolls, rotations, axis moves and broadcasts checked on the grid further down.
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


@pytest.mark.parametrize("attribute", ATTRIBUTE_RULES, ids=["T", "mT"])
@pytest.mark.parametrize("shape", [(2, 3), (4, 2, 3), (1, 2, 3)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transposing_attributes_match_finite_differences(rng, attribute, shape, dtype):
    check_rrule(attribute, rng.normal(size=shape).astype(dtype))


def stack_of_matrices_transposed(x):
    return np.sum((x.mT @ x) ** 2)


def test_mT_through_the_compiler(rng):
    check_grad(stack_of_matrices_transposed, rng.normal(size=(2, 3, 2)))


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


# ---- moves of axes, broadcasts, flips, rolls and rotations, on the grid -----------------------------

# (primitive, shapes it applies to, positional arguments after the array, keyword arguments)
MOVES = [
    (np.moveaxis, [(3,)], (0, 0), {}),
    (np.moveaxis, [(2, 3, 4)], (0, -1), {}),
    (np.moveaxis, [(2, 3, 4)], (-1, 0), {}),
    (np.moveaxis, [(2, 3, 4)], ((0, 1), (2, 0)), {}),
    (np.swapaxes, [(2, 3), (1, 3)], (0, 1), {}),
    (np.swapaxes, [(2, 3, 4)], (-1, 0), {}),
    (np.ndarray.swapaxes, [(2, 3, 4)], (2, 1), {}),
    (np.expand_dims, [None, (), (3,), (2, 3), (1, 3)], (0,), {}),
    (np.expand_dims, [(3,), (2, 3)], (), {"axis": -1}),
    (np.expand_dims, [(2, 3)], ((0, 3),), {}),
    (np.broadcast_to, [None, (), (3,), (1, 3)], ((2, 3),), {}),
    (np.broadcast_to, [(2, 1)], ((4, 2, 3),), {}),
    (np.atleast_1d, SHAPES, (), {}),
    (np.atleast_2d, SHAPES, (), {}),
    (np.atleast_3d, SHAPES, (), {}),
    (np.flip, [None, (), (3,), (2, 3), (1, 3)], (), {}),
    (np.flip, [(3,), (2, 3), (1, 3)], (0,), {}),
    (np.flip, [(2, 3), (2, 3, 4)], (), {"axis": -1}),
    (np.flip, [(2, 3, 4)], ((0, 2),), {}),
    (np.fliplr, [(2, 3), (1, 3), (2, 3, 4)], (), {}),
    (np.flipud, [(3,), (2, 3), (1, 3)], (), {}),
    (np.roll, [None, (), (3,), (2, 3), (1, 3)], (1,), {}),
    (np.roll, [(2, 3)], (-4,), {"axis": 1}),
    (np.roll, [(2, 3)], ((1, 2),), {"axis": (0, 1)}),
    (np.roll, [(2, 3, 4)], ((1, -1),), {"axis": (2, 2)}),
    (np.rot90, [(2, 3), (1, 3)], (), {}),
    (np.rot90, [(2, 3)], (2,), {}),
    (np.rot90, [(2, 3)], (), {"k": -1}),
    (np.rot90, [(2, 3, 4)], (3,), {"axes": (2, 1)}),
    (np.rollaxis, [(3,)], (0,), {}),
    (np.rollaxis, [(2, 3), (1, 3)], (1,), {}),
    (np.rollaxis, [(2, 3, 4)], (2, 1), {}),
    (np.rollaxis, [(2, 3, 4)], (0, 3), {}),
    (np.rollaxis, [(2, 3, 4)], (-1,), {"start": -2}),
    (np.rollaxis, [(2, 3, 4)], (1, 1), {}),  # in place already: the same array
]

MOVE_CASES = [
    pytest.param(primitive, shape, extra, kwargs, dtype,
                 id=f"{primitive.__qualname__}-{shape_id(shape)}-{extra}-{kwargs}-{dtype.__name__}")
    for primitive, shapes, extra, kwargs in MOVES
    for shape in shapes
    for dtype in DTYPES
    if shape is not None or dtype is np.float64  # a Python float has no float32
]

RRULE_PRIMITIVES += list({id(m[0]): m[0] for m in MOVES}.values())


@pytest.mark.parametrize("primitive, shape, extra, kwargs, dtype", MOVE_CASES)
def test_move_rule_matches_finite_differences(rng, primitive, shape, extra, kwargs, dtype):
    check_rrule(primitive, sample(rng, "real", shape, dtype), *extra, **kwargs)


@pytest.mark.parametrize("promote", [np.atleast_1d, np.atleast_2d, np.atleast_3d], ids=lambda p: p.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_atleast_of_several_arrays_gives_each_its_cotangent(rng, promote, dtype):
    check_rrule(promote, sample(rng, "real", (3,), dtype), 1.5, sample(rng, "real", (2, 3), dtype))


def test_atleast_of_several_arrays_gives_none_to_an_integer_one_and_an_unused_one(rng):
    x = rng.normal(size=3)
    _, back = lookup(np.atleast_2d).rrule(x, np.arange(2), 2.0)
    x_bar, n_bar, y_bar = back((np.ones((1, 3)), np.ones((1, 2)), None))
    np.testing.assert_array_equal(x_bar, np.ones(3))
    assert n_bar is None and y_bar is None


# Rules in the inlinable shape are stitched into generated code (see adjoint.compiler.inline).
INLINED = [
    np.moveaxis, np.swapaxes, np.expand_dims, np.broadcast_to, np.flip, np.fliplr, np.flipud, np.roll, np.rollaxis,
]


@pytest.mark.parametrize("primitive", INLINED, ids=lambda p: p.__name__)
def test_move_rules_are_inlinable(primitive):
    assert inline.plan_for(lookup(primitive)) is not None


# ---- through the compiler ------------------------------------------------------------------------

W234 = np.linspace(-1.0, 2.0, 24).reshape(2, 3, 4)


def moveaxis_then_weight(x):
    return np.sum(np.moveaxis(x, 0, -1) * np.transpose(W234, (1, 2, 0)))


def swapaxes_method_then_weight(x):
    return np.sum(x.swapaxes(0, 2) ** 2 * W234)


def expand_dims_then_broadcast(x):
    return np.sum(np.expand_dims(x, axis=0) * W234[:, :1, :3] ** 2)


def broadcast_to_then_weight(x):
    return np.sum(np.broadcast_to(x, (2, 3)) * np.arange(6.0).reshape(2, 3))


def atleast_2d_matmul(x):
    return np.sum(np.atleast_2d(x) @ np.ones((3, 2)) * np.atleast_2d(x).T[:2])


def atleast_1d_of_two(x, y):
    a, b = np.atleast_1d(x, y)
    return np.sum(a * np.arange(3.0)) + np.sum(b ** 2)


def flip_axis_keyword(x):
    return np.sum(np.flip(x, axis=1) * np.arange(6.0).reshape(2, 3))


def flip_all_and_lr_ud(x):
    return np.sum((np.flip(x) + np.fliplr(x) * 2.0 + np.flipud(x) * 3.0) * np.arange(6.0).reshape(2, 3))


def roll_shift_and_axis(x):
    return np.sum(np.roll(x, 2, axis=1) * np.arange(6.0).reshape(2, 3)) + np.sum(np.roll(x, -1) * x)


def rollaxis_then_weight(x):
    return np.sum(np.rollaxis(x, 2, 0) * np.transpose(W234, (2, 0, 1))) + np.sum(np.rollaxis(x, 0, start=3) ** 2)


def rot90_k_and_axes(x):
    return np.sum(np.rot90(x, 3, axes=(1, 0)) * np.arange(6.0).reshape(3, 2)) + np.sum(np.rot90(x) ** 3)


MOVE_GRAD_CASES = [
    pytest.param(moveaxis_then_weight, (2, 3, 4), np.float64, id="moveaxis"),
    pytest.param(swapaxes_method_then_weight, (4, 3, 2), np.float64, id="x.swapaxes"),
    pytest.param(expand_dims_then_broadcast, (3,), np.float64, id="expand_dims"),
    pytest.param(broadcast_to_then_weight, None, np.float64, id="broadcast_to-float"),
    pytest.param(broadcast_to_then_weight, (1, 3), np.float32, id="broadcast_to-(1,3)-float32"),
    pytest.param(atleast_2d_matmul, (3,), np.float64, id="atleast_2d"),
    pytest.param(flip_axis_keyword, (2, 3), np.float32, id="flip-axis-float32"),
    pytest.param(flip_all_and_lr_ud, (2, 3), np.float64, id="flip-fliplr-flipud"),
    pytest.param(roll_shift_and_axis, (2, 3), np.float64, id="roll"),
    pytest.param(rot90_k_and_axes, (2, 3), np.float64, id="rot90"),
    pytest.param(rollaxis_then_weight, (2, 3, 4), np.float64, id="rollaxis"),
    pytest.param(rollaxis_then_weight, (2, 3, 4), np.float32, id="rollaxis-float32"),
]


@pytest.mark.parametrize("fn, shape, dtype", MOVE_GRAD_CASES)
def test_move_through_compiler_matches_finite_differences(rng, fn, shape, dtype):
    check_grad(fn, sample(rng, "real", shape, dtype))


def test_atleast_1d_of_two_arrays_through_compiler(rng):
    check_grad(atleast_1d_of_two, rng.normal(size=3), 0.5)


def test_move_keeps_float32(rng):
    x = rng.normal(size=(2, 3)).astype(np.float32)
    for fn in (flip_axis_keyword, roll_shift_and_axis, rot90_k_and_axes, broadcast_to_then_weight):
        assert adjoint.grad(fn)(x).dtype == np.float32, fn.__name__


def test_broadcast_to_sums_the_cotangent_of_a_python_float():
    assert adjoint.grad(broadcast_to_then_weight)(0.5) == pytest.approx(15.0)


def test_roll_back_is_the_opposite_roll():
    # The cotangent of entry i is the weight at the slot entry i was rolled to: (i + 2) mod 3.
    x = np.zeros((2, 3))
    expected = np.roll(np.arange(6.0).reshape(2, 3), -2, axis=1)
    np.testing.assert_array_equal(adjoint.grad(roll_shift_and_axis)(x), expected)


def comparisons_only(x):
    same = np.isclose(x, 0.5) | np.array_equal(x, x)
    return np.sum(np.where(same, x, 2.0 * x)) + np.allclose(x, 0.0) + np.array_equiv(x, x[:1])


def test_comparisons_carry_no_gradient(rng):
    for query in (np.isclose, np.allclose, np.array_equal, np.array_equiv):
        assert registry.is_non_differentiable(query)
    check_grad(comparisons_only, rng.normal(size=(2, 3)))


def keyword_out_of_scope(x):
    return np.sum(np.reshape(x, (3, 1), copy=True))


def test_a_keyword_out_of_scope_is_refused():
    with pytest.raises(adjoint.AdjointError, match="copy="):
        adjoint.grad(keyword_out_of_scope)(np.ones(3))


# ---- np.arange: its length is piecewise constant, its values move with start and step ------------

@pytest.mark.parametrize("bounds, kwargs", [
    ((0.25, 3.0), {}),  # start moves every value; stop only decides how many
    ((0.25, 3.0, 0.3), {}),  # step moves each as far as its position
    ((np.float64(4.1), None, 0.7), {}),  # one bound: it is the stop
    ((3.5,), {}),
    ((0.5, 2.1, 0.5), {"dtype": np.float32, "eps": 1e-3, "rtol": 1e-2}),  # float32 values: coarser differences
    ((1, 5, 2), {"dtype": float}),  # integer bounds carry no cotangent
])
def test_arange_rule(bounds, kwargs):
    check_rrule(np.arange, *bounds, **kwargs)


def sines_from(start, step):
    return np.sum(np.sin(np.arange(start, 3.0, step)))


def squares_up_to(stop):
    return np.sum(np.arange(0.0, stop) ** 2) * stop


@pytest.mark.parametrize("f, args", [(sines_from, (0.25, 0.3)), (squares_up_to, (3.5,))])
def test_arange_differentiates_through_start_and_step(f, args):
    check_grad(f, *args)


RRULE_PRIMITIVES += [np.arange]
