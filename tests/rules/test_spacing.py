"""Rules of adjoint/rules/spacing.py (np.diff, np.gradient, np.linspace), checked directly
(check_rrule) over shapes, axes, keywords and dtypes, through the compiler (check_grad), and
against autograd where it has the function."""

import numpy as np
import pytest

import adjoint
from adjoint.compiler import inline
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, sample, shape_id

RRULE_PRIMITIVES = [np.diff, np.gradient, np.linspace]


def dtype_id(dtype):
    return np.dtype(dtype).name


# ---- np.diff ------------------------------------------------------------------------------------------

# (shape, positional arguments after the array, keyword arguments)
DIFFS = [
    ((3,), (), {}),
    ((3,), (2,), {}),
    ((3,), (0,), {}),
    ((3,), (3,), {}),  # as many differences as entries: an empty result
    ((2, 3), (), {}),
    ((2, 3), (1, 0), {}),
    ((2, 3), (), {"n": 2, "axis": 1}),
    ((1, 3), (), {"axis": -2}),
    ((2, 3, 4), (2, -2), {}),
    ((3,), (), {"prepend": 0.5}),
    ((3,), (2,), {"append": np.array([1.0, -2.0])}),
    ((2, 3), (), {"n": 3, "axis": 0, "prepend": np.ones((1, 3)), "append": 2.0}),
    ((2, 3), (0,), {"prepend": 1.0}),  # with n = 0 NumPy ignores the ends
]

DIFF_CASES = [
    pytest.param(shape, extra, kwargs, dtype, id=f"{shape_id(shape)}-{extra}-{sorted(kwargs)}-{dtype_id(dtype)}")
    for shape, extra, kwargs in DIFFS for dtype in DTYPES
]


@pytest.mark.parametrize("shape, extra, kwargs, dtype", DIFF_CASES)
def test_diff_rule_matches_finite_differences(rng, shape, extra, kwargs, dtype):
    check_rrule(np.diff, sample(rng, "real", shape, dtype), *extra, **kwargs)


def test_diff_of_complex_and_integer_arrays(rng):
    check_rrule(np.diff, sample(rng, "complex", (2, 3)), 2, prepend=1j)
    _, back = lookup(np.diff).rrule(np.arange(4), 2)
    assert back(np.ones(2)) == (None,)


# ---- np.gradient --------------------------------------------------------------------------------------

# (shape, spacings, keyword arguments): along one axis or several, with no spacing, one for
# every axis, or one per axis (Python floats and ints, a NumPy scalar, a 0-d array).
GRADIENTS = [
    ((3,), (), {}),
    ((2,), (0.5,), {}),  # two points: the two one-sided differences
    ((3,), (0.5,), {"edge_order": 2}),
    ((5,), (2,), {"edge_order": 2}),
    ((2, 3), (), {}),
    ((2, 3), (0.5,), {}),
    ((2, 3), (0.5, 2), {"axis": None}),
    ((2, 3), (np.float32(0.7),), {"axis": 1}),
    ((3, 4), (np.array(1.5),), {"axis": -2, "edge_order": 2}),
    ((3, 4), (0.3, 0.8), {"axis": (1, 0), "edge_order": 2}),
    ((1, 3), (0.5,), {"axis": -1}),
    ((2, 3, 4), (), {"axis": (0, 2)}),
    ((3, 3, 4), (0.5, 1.5, 2.0), {"edge_order": 2}),
]

GRADIENT_CASES = [
    pytest.param(shape, spacings, kwargs, dtype,
                 id=f"{shape_id(shape)}-{len(spacings)}-spacings-{kwargs}-{dtype_id(dtype)}".replace(" ", ""))
    for shape, spacings, kwargs in GRADIENTS for dtype in DTYPES
]


@pytest.mark.parametrize("shape, spacings, kwargs, dtype", GRADIENT_CASES)
def test_gradient_rule_matches_finite_differences(rng, shape, spacings, kwargs, dtype):
    check_rrule(np.gradient, sample(rng, "real", shape, dtype), *spacings, **kwargs)


def test_gradient_of_complex_and_integer_arrays(rng):
    check_rrule(np.gradient, sample(rng, "complex", (3, 4)), 0.5, edge_order=2)
    value, back = lookup(np.gradient).rrule(np.arange(6).reshape(2, 3), 0.5, axis=1)
    f_bar, h_bar = back(np.ones_like(value))
    assert f_bar is None and h_bar == pytest.approx(-2 * 6.0 / 0.5)  # each slope is 2: -sum(g * 2) / h


def test_gradient_gives_none_to_an_integer_spacing_and_skips_unused_axes(rng):
    f = rng.normal(size=(3, 4))
    value, back = lookup(np.gradient).rrule(f, 2, 0.5)
    f_bar, first_bar, second_bar = back((None, np.ones(f.shape)))
    assert first_bar is None and second_bar == pytest.approx(-np.sum(value[1]) / 0.5)
    _, alone = lookup(np.gradient).rrule(f, 0.5, axis=1)
    np.testing.assert_allclose(f_bar, alone(np.ones(f.shape))[0])


def test_gradient_returns_what_numpy_returns(rng):
    f = rng.normal(size=(3, 4))
    assert type(lookup(np.gradient).rrule(f)[0]) is type(np.gradient(f))
    assert isinstance(lookup(np.gradient).rrule(f, axis=0)[0], np.ndarray)


# ---- np.linspace --------------------------------------------------------------------------------------

# (start shape, stop shape, positional arguments after them, keyword arguments)
LINSPACES = [
    (None, None, (), {}),
    (None, None, (5,), {"endpoint": False}),
    (None, (), (1,), {}),
    ((), None, (2, False), {}),
    ((3,), (3,), (4,), {}),
    ((3,), None, (4,), {"axis": -1}),
    ((2, 1), (3,), (3,), {"axis": 1}),
    ((1, 3), (2, 3), (4,), {"axis": -2, "endpoint": False}),
]

LINSPACE_CASES = [
    pytest.param(start, stop, extra, kwargs, dtype,
                 id=f"{shape_id(start)}-{shape_id(stop)}-{extra}-{kwargs}-{dtype_id(dtype)}".replace(" ", ""))
    for start, stop, extra, kwargs in LINSPACES for dtype in DTYPES
    if dtype is np.float64 or (start, stop) != (None, None)
]


@pytest.mark.parametrize("start, stop, extra, kwargs, dtype", LINSPACE_CASES)
def test_linspace_rule_matches_finite_differences(rng, start, stop, extra, kwargs, dtype):
    check_rrule(np.linspace, sample(rng, "real", start, dtype), sample(rng, "real", stop, dtype), *extra, **kwargs)


def test_linspace_into_float32_casts_the_cotangent_back(rng):
    check_rrule(np.linspace, rng.normal(size=3), 2.0, 4, dtype=np.float32, eps=1e-2)  # linear: any step is exact


def test_linspace_of_complex_and_integer_ends(rng):
    check_rrule(np.linspace, sample(rng, "complex", (3,)), 1.5, 4)
    _, back = lookup(np.linspace).rrule(0, 3, 4)
    assert back(np.ones(4)) == (None, None)


INLINED = [np.diff, np.linspace]


@pytest.mark.parametrize("primitive", INLINED, ids=lambda p: p.__name__)
def test_spacing_rules_are_inlinable(primitive):
    assert inline.plan_for(lookup(primitive)) is not None


# ---- through the compiler -------------------------------------------------------------------------------

W = np.linspace(-1.0, 2.0, 12).reshape(3, 4)


def second_differences(x):
    return np.sum(np.diff(x, n=2, axis=1) ** 2) + np.sum(np.diff(x, axis=0) * W[:2])


def differences_from_zero(x):
    return np.sum(np.diff(x, prepend=0.0, append=1.0) ** 2)


def slopes_in_both_directions(x):
    rows, columns = np.gradient(x, 0.5)
    return np.sum(rows ** 2) + np.sum(columns * W)


def slopes_of_second_order(x, h):
    return np.sum(np.gradient(x, h, axis=1, edge_order=2) ** 2) + np.sum(np.gradient(x, 2.0, h, axis=(1, 0))[1])


def ramp_between(x):
    return np.sum(np.linspace(x[0], x[1], 5, axis=-1) ** 2 * np.arange(5.0)) + np.sum(np.linspace(0.0, x[2, 0], 3))


GRAD_CASES = [
    pytest.param(second_differences, id="diff-n-axis"),
    pytest.param(differences_from_zero, id="diff-prepend-append"),
    pytest.param(slopes_in_both_directions, id="gradient-unpacked"),
    pytest.param(ramp_between, id="linspace"),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
@pytest.mark.parametrize("fn", GRAD_CASES)
def test_spacing_through_compiler_matches_finite_differences(rng, fn, dtype):
    x = sample(rng, "real", (3, 4), dtype)
    check_grad(fn, x)
    assert adjoint.grad(fn)(x).dtype == dtype


def test_gradient_spacing_through_compiler(rng):
    check_grad(slopes_of_second_order, rng.normal(size=(3, 4)), 0.7)


# ---- what is refused -------------------------------------------------------------------------------------

def ramp_with_step(x):
    values, step = np.linspace(0.0, x, 4, retstep=True)
    return np.sum(values) * step


def slopes_at_coordinates(x):
    return np.sum(np.gradient(x, np.array([0.0, 1.0, 3.0])) ** 2)


def differences_after_a_positional_value(x):
    return np.sum(np.diff(x, 1, -1, x[0]) ** 2)


def test_keywords_and_arguments_out_of_scope_are_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="retstep="):
        adjoint.grad(ramp_with_step)(1.5)
    with pytest.raises(adjoint.AdjointError, match="scalar spacings"):
        adjoint.grad(slopes_at_coordinates)(rng.normal(size=3))
    with pytest.raises(adjoint.AdjointError, match="positional"):  # a value to prepend, differentiable
        adjoint.grad(differences_after_a_positional_value)(rng.normal(size=3))


# ---- against autograd --------------------------------------------------------------------------------------

AUTOGRAD_CASES = [  # (primitive, array shape, positional arguments after it, keyword arguments)
    pytest.param(np.diff, (3, 4), (2, 0), {}, id="diff"),
    pytest.param(np.diff, (3, 4), (), {}, id="diff-last-axis"),
    pytest.param(np.gradient, (3, 4), (), {"axis": 1}, id="gradient-axis"),
    pytest.param(np.gradient, (4, 5), (), {}, id="gradient-all-axes"),
]


@pytest.mark.parametrize("primitive, shape, extra, kwargs", AUTOGRAD_CASES)
def test_cotangents_agree_with_autograd(rng, primitive, shape, extra, kwargs):
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    x = rng.normal(size=shape)
    value, back = lookup(primitive).rrule(x, *extra, **kwargs)
    g = tuple(rng.normal(size=np.shape(v)) for v in value) if isinstance(value, tuple) else rng.normal(size=value.shape)
    theirs = getattr(anp, primitive.__name__)
    autograd_back, _ = autograd.make_vjp(lambda x: theirs(x, *extra, **kwargs))(x)
    np.testing.assert_allclose(back(g)[0], autograd_back(g), rtol=1e-12, atol=1e-12)


def test_linspace_agrees_with_autograd():
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    g = np.arange(5.0) ** 2
    _, back = lookup(np.linspace).rrule(0.5, 2.0, 5)
    for argnum, cotangent in enumerate(back(g)):
        autograd_back, _ = autograd.make_vjp(lambda start, stop: anp.linspace(start, stop, 5), argnum)(0.5, 2.0)
        assert cotangent == pytest.approx(autograd_back(g), rel=1e-12)


def linspace_with_retstep_by_position(x):
    return np.sum(np.linspace(x[0], x[1], 5, True, True)[0])


def test_linspace_refuses_retstep_passed_by_position():
    with pytest.raises(adjoint.AdjointError, match="positional"):
        adjoint.grad(linspace_with_retstep_by_position)(np.array([1.0, 3.0]))
