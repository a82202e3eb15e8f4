"""Unit tests of the helpers in adjoint/runtime.py that generated code and rules call."""

import numpy as np
import pytest

import adjoint  # noqa: F401  (installs the compiler hook that runtime.vjp uses)
from adjoint import runtime as adj


def scaled_square(x, scale=2.0):
    return scale * x ** 2


# ---- zeros_like and add ---------------------------------------------------------------------------

def test_zeros_like_float_is_float_zero():
    zero = adj.zeros_like(2.5)
    assert type(zero) is float and zero == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zeros_like_array_keeps_shape_and_dtype(dtype):
    zero = adj.zeros_like(np.ones((2, 3), dtype=dtype))
    assert zero.shape == (2, 3) and zero.dtype == dtype and not zero.any()


@pytest.mark.parametrize("value", [3, True, "s", np.arange(3), None], ids=["int", "bool", "str", "int-array", "None"])
def test_zeros_like_non_float_is_none(value):
    assert adj.zeros_like(value) is None


def test_zeros_like_tuple_is_tuple_of_zeros():
    zero = adj.zeros_like((1.5, np.ones(2, dtype=np.float32), 4))
    assert type(zero) is tuple and len(zero) == 3
    assert type(zero[0]) is float and zero[0] == 0.0
    assert zero[1].dtype == np.float32 and not zero[1].any()
    assert zero[2] is None


def test_add_treats_none_as_zero():
    x = np.array([1.0, 2.0])
    assert adj.add(None, x) is x
    assert adj.add(x, None) is x
    assert adj.add(None, None) is None
    np.testing.assert_array_equal(adj.add(x, x), [2.0, 4.0])


def test_add_of_tuples_adds_elementwise_with_none_entries():
    total = adj.add((1.0, None, np.array([1.0])), (2.0, 5.0, np.array([3.0])))
    assert type(total) is tuple
    assert total[0] == 3.0 and total[1] == 5.0
    np.testing.assert_array_equal(total[2], [4.0])


def test_add_of_lists_keeps_list():
    assert adj.add([1.0, 2.0], [3.0, 4.0]) == [4.0, 6.0]


# ---- unbroadcast ----------------------------------------------------------------------------------

def test_unbroadcast_sums_leading_dims():
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(adj.unbroadcast(g, np.zeros(4)), g.sum(axis=(0, 1)))


def test_unbroadcast_sums_size_one_dims_keeping_them():
    g = np.arange(6.0).reshape(2, 3)
    out = adj.unbroadcast(g, np.zeros((1, 3)))
    assert out.shape == (1, 3)
    np.testing.assert_array_equal(out, [[3.0, 5.0, 7.0]])
    np.testing.assert_array_equal(adj.unbroadcast(g, np.zeros((2, 1))), [[3.0], [12.0]])


def test_unbroadcast_sums_leading_and_size_one_dims_together():
    g = np.ones((4, 2, 3))
    out = adj.unbroadcast(g, np.zeros((2, 1)))
    assert out.shape == (2, 1)
    np.testing.assert_array_equal(out, np.full((2, 1), 12.0))


def test_unbroadcast_to_python_float_sums_everything():
    out = adj.unbroadcast(np.arange(6.0).reshape(2, 3), 1.5)
    assert np.shape(out) == () and out == 15.0


def test_unbroadcast_casts_float64_to_float32():
    x = np.zeros((2, 3), dtype=np.float32)
    out = adj.unbroadcast(np.full((2, 3), 0.5), x)
    assert out.dtype == np.float32
    out = adj.unbroadcast(np.full((4, 2, 3), 0.5), x)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, dtype=np.float32))


def test_unbroadcast_passes_python_float_through():
    assert adj.unbroadcast(2.5, 1.0) == 2.5
    assert type(adj.unbroadcast(2.5, 1.0)) is float


def test_unbroadcast_same_shape_returns_values_unchanged():
    g = np.arange(3.0)
    np.testing.assert_array_equal(adj.unbroadcast(g, np.zeros(3)), g)


# ---- unreduce -------------------------------------------------------------------------------------

def test_unreduce_without_axis_spreads_scalar():
    out = adj.unreduce(2.0, np.zeros((2, 3)))
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))


@pytest.mark.parametrize(
    "axis, g, expected",
    [
        (0, [1.0, 2.0, 3.0], [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]),
        (-2, [1.0, 2.0, 3.0], [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]),
        (1, [1.0, 2.0], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]),
        (-1, [1.0, 2.0], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]),
    ],
    ids=["axis=0", "axis=-2", "axis=1", "axis=-1"],
)
def test_unreduce_with_axis_repeats_along_that_axis(axis, g, expected):
    out = adj.unreduce(np.array(g), np.zeros((2, 3)), axis=axis)
    np.testing.assert_array_equal(out, expected)


def test_unreduce_with_keepdims_broadcasts_kept_axis():
    g = np.array([[1.0], [2.0]])
    out = adj.unreduce(g, np.zeros((2, 3)), axis=1, keepdims=True)
    np.testing.assert_array_equal(out, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])


def test_unreduce_with_tuple_of_axes():
    out = adj.unreduce(np.array([1.0, 2.0]), np.zeros((3, 2, 4)), axis=(0, -1))
    assert out.shape == (3, 2, 4)
    np.testing.assert_array_equal(out[:, 0, :], 1.0)
    np.testing.assert_array_equal(out[:, 1, :], 2.0)


def test_unreduce_casts_to_input_dtype():
    out = adj.unreduce(np.array([1.0, 2.0]), np.zeros((2, 3), dtype=np.float32), axis=1)
    assert out.dtype == np.float32


# ---- max/min cotangents and ties ------------------------------------------------------------------

def test_unreduce_chosen_shares_between_ties():
    x = np.array([[1.0, 4.0, 4.0], [3.0, 3.0, 3.0], [0.0, -1.0, 2.0]])
    ans = np.max(x, axis=1)
    out = adj.unreduce_chosen(np.array([2.0, 3.0, 5.0]), x, ans, axis=1)
    np.testing.assert_allclose(out, [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.0, 0.0, 5.0]])


def test_unreduce_chosen_without_axis_and_with_keepdims():
    x = np.array([[1.0, 4.0], [4.0, 0.0]])
    np.testing.assert_allclose(adj.unreduce_chosen(6.0, x, np.max(x)), [[0.0, 3.0], [3.0, 0.0]])
    ans = np.min(x, axis=0, keepdims=True)
    out = adj.unreduce_chosen(np.array([[2.0, 3.0]]), x, ans, axis=0, keepdims=True)
    np.testing.assert_allclose(out, [[2.0, 0.0], [0.0, 3.0]])


def test_unreduce_chosen_keeps_float32():
    x = np.array([[1.0, 4.0, 4.0]], dtype=np.float32)
    out = adj.unreduce_chosen(np.ones(1, dtype=np.float32), x, np.max(x, axis=1), axis=1)
    np.testing.assert_allclose(out, [[0.0, 0.5, 0.5]])
    assert out.dtype == np.float32


def test_tie_weight_is_one_zero_or_half():
    x = np.array([3.0, 1.0, 2.0])
    other = np.array([1.0, 3.0, 2.0])
    ans = np.maximum(x, other)
    np.testing.assert_array_equal(adj.tie_weight(x, ans, other), [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(adj.tie_weight(other, ans, x), [0.0, 1.0, 0.5])


def test_tie_weight_on_python_floats():
    assert adj.tie_weight(2.0, 2.0, 2.0) == 0.5
    assert adj.tie_weight(2.0, 2.0, 1.0) == 1.0


# ---- products and shapes ----------------------------------------------------------------------------

def test_matmul_bars_match_explicit_formulas_for_matrices(rng):
    a, b, g = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(2, 4))
    np.testing.assert_allclose(adj.matmul_lhs_bar(g, a, b), g @ b.T)
    np.testing.assert_allclose(adj.matmul_rhs_bar(g, a, b), a.T @ g)


def test_matmul_bars_for_matrix_times_vector(rng):
    a, b, g = rng.normal(size=(2, 3)), rng.normal(size=3), rng.normal(size=2)
    np.testing.assert_allclose(adj.matmul_lhs_bar(g, a, b), np.outer(g, b))
    np.testing.assert_allclose(adj.matmul_rhs_bar(g, a, b), a.T @ g)


def test_matmul_bars_for_vector_times_vector(rng):
    # a @ b is the inner product: its cotangents are g * b and g * a.
    a, b, g = rng.normal(size=3), rng.normal(size=3), 1.5
    np.testing.assert_allclose(adj.matmul_lhs_bar(g, a, b), g * b)
    np.testing.assert_allclose(adj.matmul_rhs_bar(g, a, b), g * a)


def test_matmul_bars_sum_over_broadcast_batch(rng):
    a, b, g = rng.normal(size=(2, 3)), rng.normal(size=(5, 3, 4)), rng.normal(size=(5, 2, 4))
    np.testing.assert_allclose(adj.matmul_lhs_bar(g, a, b), sum(g[i] @ b[i].T for i in range(5)))
    np.testing.assert_allclose(adj.matmul_rhs_bar(g, a, b), np.stack([a.T @ g[i] for i in range(5)]))


def test_untranspose_without_axes_reverses():
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(adj.untranspose(np.transpose(x)), x)


@pytest.mark.parametrize("axes", [(1, 0, 2), (2, 0, 1), (1, 2, 0)])
def test_untranspose_inverts_permutation(axes):
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(adj.untranspose(np.transpose(x, axes), axes), x)


def test_unindex_accumulates_repeated_integer_indices():
    out = adj.unindex(np.array([1.0, 2.0, 4.0]), np.zeros(4), np.array([0, 0, 2]))
    np.testing.assert_array_equal(out, [3.0, 0.0, 4.0, 0.0])


def test_unindex_with_slice_places_cotangent():
    out = adj.unindex(np.array([1.0, 2.0]), np.zeros(5), slice(1, 3))
    np.testing.assert_array_equal(out, [0.0, 1.0, 2.0, 0.0, 0.0])


def test_unindex_with_tuple_of_slice_and_int():
    out = adj.unindex(np.array([1.0, 2.0]), np.zeros((2, 3)), (slice(None), 1))
    np.testing.assert_array_equal(out, [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]])


def test_unindex_with_scalar_index_keeps_input_dtype():
    out = adj.unindex(np.float32(5.0), np.zeros(3, dtype=np.float32), 1)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [0.0, 5.0, 0.0])


# ---- vjp dispatch -----------------------------------------------------------------------------------

def test_vjp_uses_registered_rule(rng):
    x = rng.normal(size=3)
    value, back = adj.vjp((0,), np.sin, x)
    np.testing.assert_allclose(value, np.sin(x))
    (x_bar,) = back(np.full(3, 2.0))
    np.testing.assert_allclose(x_bar, 2.0 * np.cos(x))


def test_vjp_of_non_differentiable_primitive_gives_no_cotangents():
    x = np.zeros((2, 3))
    value, back = adj.vjp((), np.shape, x)
    assert value == (2, 3)
    assert back(None) == (None,)


def test_vjp_transforms_plain_python_function(rng):
    x = rng.normal(size=3)
    value, back = adj.vjp((0,), scaled_square, x)
    np.testing.assert_allclose(value, 2.0 * x ** 2)
    cotangents = back(np.ones(3))
    assert len(cotangents) == 1  # one per argument passed, not per parameter
    np.testing.assert_allclose(cotangents[0], 4.0 * x)


def test_vjp_of_python_function_with_all_arguments_passed(rng):
    x = rng.normal(size=3)
    value, back = adj.vjp((0, 1), scaled_square, x, 3.0)
    x_bar, scale_bar = back(np.ones(3))
    np.testing.assert_allclose(x_bar, 6.0 * x)
    assert scale_bar == pytest.approx(np.sum(x ** 2))


def full_of_row(x):
    r = x + 0.0
    return np.sum(np.full((3,), r) * np.arange(3.0)) + np.sum(r * np.arange(3.0))


def test_full_fill_value_with_leading_unit_axis():
    # expected: gradient [[0, 2, 4]]; actual: [[3, 4, 5]] (unbroadcast sums a (3,) cotangent to shape (1,) for a (1, 3) fill value)
    np.testing.assert_allclose(adjoint.grad(full_of_row)(np.ones((1, 3))), [[0.0, 2.0, 4.0]])


# ---- regressions from the fourth review ----

def _dynamic_int_dtype(x, reduce):
    return 1.0 * reduce(x, dtype=int)


def test_rule_reached_at_run_time_with_integer_dtype_has_no_gradient():
    # silently before: ones (the dtype check ran only for rules resolved at transform time)
    np.testing.assert_array_equal(adjoint.grad(_dynamic_int_dtype)(np.array([1.3, 2.7]), np.sum), np.zeros(2))


def _dynamic_where(x, select):
    y = select(x, 2.0, 1.0)
    return np.sum(y * x)


def test_rule_reached_at_run_time_returning_none_for_a_float_argument():
    # crashed before: float + NoneType (np.where's condition gets None, here a float array)
    x = np.array([0.5, 0.0, -1.5])
    np.testing.assert_allclose(adjoint.grad(_dynamic_where)(x, np.where), np.where(x, 2.0, 1.0))
