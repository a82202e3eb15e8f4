"""Unit tests of the helpers in adjoint/runtime/ that generated code and rules call."""

import functools
import logging

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


def test_zeros_like_dict_has_same_keys():
    zero = adj.zeros_like({"w": np.ones(2, dtype=np.float32), "n": 3, "pair": (1.0, 2)})
    assert list(zero) == ["w", "n", "pair"]
    assert zero["w"].dtype == np.float32 and not zero["w"].any()
    assert zero["n"] is None and zero["pair"] == (0.0, None)


def test_add_of_dicts_takes_the_union_of_keys():
    total = adj.add({"a": 1.0, "b": None, "c": np.array([1.0])}, {"b": 2.0, "c": np.array([2.0]), "d": 4.0})
    assert list(total) == ["a", "b", "c", "d"]
    assert total["a"] == 1.0 and total["b"] == 2.0 and total["d"] == 4.0
    np.testing.assert_array_equal(total["c"], [3.0])


def test_add_of_nested_dicts_and_lists():
    assert adj.add({"xs": [1.0, None]}, {"xs": [2.0, 3.0]}) == {"xs": [3.0, 3.0]}


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


@pytest.mark.parametrize("kind", [np.float32, np.float16])
def test_unbroadcast_of_a_numpy_scalar_onto_its_own_type_is_the_scalar(kind):
    g = kind(2.5)
    assert adj.unbroadcast(g, kind(1.0)) is g


def test_unbroadcast_of_a_float64_scalar_onto_a_float32_one_is_cast():
    out = adj.unbroadcast(np.float64(2.5), np.float32(1.0))
    assert out.dtype == np.float32 and out == 2.5


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


@pytest.mark.parametrize("g", [np.float32(2.0), np.float16(2.0), np.float64(2.0), 2.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unreduce_spreads_a_scalar_of_any_float_type_in_the_arrays_dtype(g, dtype):
    out = adj.unreduce(g, np.zeros((2, 3), dtype=dtype))
    assert out.dtype == dtype and out.flags.writeable
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0))


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


def test_unreduce_chosen_with_a_nan_row_and_a_tied_row_shares_only_the_ties():
    # two chosen entries in one row and none in the NaN row: as many as rows, yet not one per row
    x = np.array([[1.0, 4.0, 4.0], [np.nan, 0.0, 1.0], [2.0, 0.0, 1.0]])
    ans = np.max(x, axis=1, keepdims=True)
    out = adj.unreduce_chosen(np.array([[2.0], [3.0], [5.0]]), x, ans, axis=1, keepdims=True)
    np.testing.assert_allclose(out, [[0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])


def test_unreduce_of_a_small_array_is_a_writeable_array_of_its_dtype():
    x = np.zeros((2, 3), dtype=np.float32)
    total = adj.unreduce(2.0, x)
    kept = adj.unreduce(np.ones((2, 1), dtype=np.float32), x, axis=1, keepdims=True)
    for out in (total, kept):
        assert out.dtype == np.float32 and out.shape == (2, 3) and out.flags.writeable
    np.testing.assert_array_equal(total, np.full((2, 3), 2.0))
    assert np.iscomplexobj(adj.unreduce(np.ones((2, 1)) * 1j, x.astype(complex), axis=1, keepdims=True))


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


@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, True), (-1, False), ((0, 1), False)])
def test_prod_bar_is_the_product_of_the_others_even_at_zeros(axis, keepdims):
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]])
    ans = np.prod(x, axis=axis, keepdims=keepdims)
    g = np.arange(1.0, 1.0 + np.size(ans)).reshape(np.shape(ans))
    expected = np.zeros_like(x)
    for i in np.ndindex(x.shape):  # a product is affine in each entry: its slope is f(1) - f(0)
        one, zero = x.copy(), x.copy()
        one[i], zero[i] = 1.0, 0.0
        expected[i] = np.sum(g * (np.prod(one, axis=axis, keepdims=keepdims) - np.prod(zero, axis=axis, keepdims=keepdims)))
    np.testing.assert_allclose(adj.prod_bar(g, x, axis=axis, keepdims=keepdims), expected)


def test_prod_bar_of_empty_and_0d_arrays():
    assert adj.prod_bar(1.0, np.zeros((0, 3)), axis=0).shape == (0, 3)
    assert adj.prod_bar(2.0, np.array(4.0)) == 2.0


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_unravel_inverts_ravel(order, layout):
    x = np.asarray(np.arange(6.0).reshape(2, 3), order=layout)
    np.testing.assert_array_equal(adj.unravel(np.ravel(x, order=order), x, order=order), x)


def test_unravel_refuses_memory_order_of_a_non_contiguous_array():
    with pytest.raises(adj.RuleError, match="order='K'"):
        adj.unravel(np.zeros(3), np.zeros((2, 6))[:, ::2], order="K")


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


def inner(a, b):
    """<a, b> over arrays, floats and (nested) lists, tuples and dicts; None is zero."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, dict):
        return sum(inner(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return sum(inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


# Reading `x[index]` is linear in x: its adjoint satisfies <unindex(g), u> = <g, u[index]>.
READS = [
    pytest.param((5,), 2, id="int"),
    pytest.param((5,), -1, id="negative-int"),
    pytest.param((5,), slice(4, 0, -2), id="slice-with-negative-step"),
    pytest.param((3, 4), (slice(None), np.array([0, 2, 0])), id="repeated-fancy-in-tuple"),
    pytest.param((3, 4), np.array([[True, False, True, False]] * 3), id="boolean-mask"),
    pytest.param((3, 4), (Ellipsis, None, 1), id="ellipsis-and-newaxis"),
    pytest.param((3, 4), [2, 2, 0], id="repeated-list"),
    pytest.param((3, 4), ((1, 1), 2), id="repeated-tuple-in-tuple"),
]


@pytest.mark.parametrize("shape, index", READS)
def test_unindex_is_the_adjoint_of_indexing(rng, shape, index):
    x, u = rng.normal(size=shape), rng.normal(size=shape)
    g = rng.normal(size=np.shape(x[index]))
    x_bar = adj.unindex(g, x, index)
    assert x_bar.shape == x.shape and x_bar.dtype == x.dtype
    assert inner(x_bar, u) == pytest.approx(inner(g, u[index]))


@pytest.mark.parametrize("container", [tuple, list])
@pytest.mark.parametrize("index", [1, -1, slice(None, None, -2), slice(1, None)])
def test_unindex_of_a_sequence_keeps_its_kind(container, index):
    x = container([1.0, np.ones(2), 3, 4.0])
    g = x[index]  # any cotangent of the right shape: the read values themselves
    x_bar = adj.unindex(g, x, index)
    assert type(x_bar) is container and len(x_bar) == 4
    positions = range(4)[index]
    for i, part in enumerate(x_bar):
        if i == positions or not isinstance(positions, int) and i in positions:
            np.testing.assert_array_equal(part, x[i])
        else:
            assert part is None  # zero: items nothing flowed into cost nothing


def test_unindex_of_a_dict_holds_only_the_key_read():
    # the other entries are zero by absence: reading one weight of many costs one entry
    x = {"w": np.ones(2), "b": 0.5, "n": 3}
    x_bar = adj.unindex(np.array([1.0, 2.0]), x, "w")
    assert list(x_bar) == ["w"]
    np.testing.assert_array_equal(x_bar["w"], [1.0, 2.0])


def test_unindex_of_none_is_zero():
    np.testing.assert_array_equal(adj.unindex(None, np.ones(3), 1), np.zeros(3))


# ---- buffers ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "x, dtype",
    [(np.ones((2, 3), dtype=np.float32), np.float32), (np.arange(3), np.float64), (np.float32(2.0), np.float32)],
    ids=["float32-array", "int-array", "numpy-scalar"],
)
def test_buffer_like_array_is_float_zeros_of_its_shape(x, dtype):
    buffer = adj.buffer_like(x)
    assert type(buffer) is np.ndarray and buffer.shape == np.shape(x) and buffer.dtype == dtype
    assert not buffer.any() and buffer.flags.writeable


def test_buffer_like_containers():
    assert adj.buffer_like((1.0, 2, [3.0])) == [None, None, None]  # None is zero
    assert adj.buffer_like({"a": 1.0, "b": "s"}) == {}


def test_buffer_like_is_fresh_each_time():
    x = np.ones(2)
    first = adj.buffer_like(x)
    first[0] = 5.0
    assert not adj.buffer_like(x).any()


def test_scatter_add_accumulates_repeated_fancy_indices_in_place():
    buffer = adj.buffer_like(np.ones((2, 3)))
    value = np.array([1.0, 2.0, 3.0])
    assert adj.scatter_add(buffer, (np.array([0, 0, 1]), np.array([1, 1, 2])), value) is buffer
    np.testing.assert_array_equal(buffer, [[0.0, 3.0, 0.0], [0.0, 0.0, 3.0]])
    adj.scatter_add(buffer, [1, 1], np.ones((2, 3)))
    np.testing.assert_array_equal(buffer, [[0.0, 3.0, 0.0], [2.0, 2.0, 5.0]])


@pytest.mark.parametrize(
    "index, value, expected",
    [
        (1, 2.0, [0.0, 2.0, 0.0, 0.0]),
        (slice(0, 4, 2), np.array([1.0, 2.0]), [1.0, 0.0, 2.0, 0.0]),
        (slice(1, 3), np.ones((5, 2)), [0.0, 5.0, 5.0, 0.0]),  # broadcast along a leading axis
        ((Ellipsis,), 1.5, [1.5, 1.5, 1.5, 1.5]),
        (np.array([True, False, False, True]), np.array([1.0, 2.0]), [1.0, 0.0, 0.0, 2.0]),
        ([3, 3, 3], np.array([1.0, 2.0, 3.0]), [0.0, 0.0, 0.0, 6.0]),
    ],
    ids=["int", "slice", "summed-broadcast", "ellipsis", "mask", "repeated-list"],
)
def test_scatter_add_into_an_array(index, value, expected):
    buffer = adj.buffer_like(np.zeros(4, dtype=np.float32))
    adj.scatter_add(buffer, index, value)
    np.testing.assert_array_equal(buffer, expected)
    assert buffer.dtype == np.float32


def test_scatter_add_of_a_row_adds_it_and_casts_another_dtype():
    buffer = adj.buffer_like(np.zeros((3, 2), dtype=np.float32))
    adj.scatter_add(buffer, 1, np.array([1.0, 2.0], dtype=np.float32))
    adj.scatter_add(buffer, 1, np.array([0.5, 0.5]))  # float64 into float32
    adj.scatter_add(buffer, -1, np.array([1.0, 1.0], dtype=np.float32))
    np.testing.assert_array_equal(buffer, [[0.0, 0.0], [1.5, 2.5], [1.0, 1.0]])
    assert buffer.dtype == np.float32


def test_scatter_add_of_none_adds_nothing():
    buffer = adj.buffer_like(np.zeros(2))
    adj.scatter_add(buffer, 0, None)
    assert not buffer.any()


def test_scatter_add_into_a_list_by_int_and_slice():
    x = [1.0, np.ones(2), 3, 4.0]
    buffer = adj.buffer_like(x)
    adj.scatter_add(buffer, -1, 2.0)
    adj.scatter_add(buffer, -1, 1.0)
    adj.scatter_add(buffer, slice(None, 2), [5.0, np.array([1.0, 2.0])])
    adj.scatter_add(buffer, slice(None, None, -2), [7.0, 8.0])  # positions 3 and 1
    assert buffer[0] == 5.0 and buffer[2] is None and buffer[3] == 10.0
    np.testing.assert_array_equal(buffer[1], [9.0, 10.0])
    assert type(adj.from_buffer(buffer, tuple(x))) is tuple


def test_scatter_add_into_a_dict():
    buffer = adj.buffer_like({"a": 1.0, "b": np.ones(2)})
    adj.scatter_add(buffer, "b", np.array([1.0, 2.0]))
    adj.scatter_add(buffer, "b", 1.0)
    adj.scatter_add(buffer, "a", 3.0)
    assert buffer["a"] == 3.0
    np.testing.assert_array_equal(buffer["b"], [2.0, 3.0])


def test_scatter_add_does_not_mutate_the_values_it_adds():
    value = np.array([1.0, 2.0])
    buffer = [value, 0.0]
    adj.scatter_add(buffer, 0, np.ones(2))
    np.testing.assert_array_equal(value, [1.0, 2.0])


def test_from_buffer_gives_the_primal_kind():
    assert adj.from_buffer([1.0, 2.0], (0.0, 0.0)) == (1.0, 2.0)
    buffer = np.zeros(2)
    assert adj.from_buffer(buffer, np.ones(2)) is buffer
    scalar = adj.from_buffer(np.array(2.5, dtype=np.float32), np.float32(1.0))
    assert type(scalar) is np.float32 and scalar == 2.5


# ---- setitem and append -----------------------------------------------------------------------------

def test_setitem_returns_a_copy_and_leaves_the_array_alone():
    x = np.zeros(3)
    y = adj.setitem(x, slice(0, 2), 5.0)
    np.testing.assert_array_equal(y, [5.0, 5.0, 0.0])
    np.testing.assert_array_equal(x, [0.0, 0.0, 0.0])


def test_setitem_keeps_dtype_and_layout():
    x = np.zeros((2, 3), dtype=np.int64, order="F")
    y = adj.setitem(x, (0, 0), 2.7)
    assert y.dtype == np.int64 and y[0, 0] == 2 and y.flags.f_contiguous


def test_setitem_on_lists_and_dicts_copies():
    xs, d = [1.0, 2.0], {"a": 1.0}
    assert adj.setitem(xs, -1, 5.0) == [1.0, 5.0] and xs == [1.0, 2.0]
    assert adj.setitem(xs, slice(0, 1), [7.0, 8.0]) == [7.0, 8.0, 2.0]
    assert adj.setitem(d, "b", 2.0) == {"a": 1.0, "b": 2.0} and d == {"a": 1.0}


def test_setitem_on_a_tuple_raises_type_error_like_python():
    with pytest.raises(TypeError, match="'tuple' object does not support item assignment"):
        adj.setitem((1.0, 2.0), 0, 3.0)


# Assignment is linear in (x, value): its adjoint satisfies
# <x_bar, u> + <value_bar, w> = <g, setitem(u, index, w)>.
WRITES = [
    pytest.param((4,), 1, (), id="int"),
    pytest.param((4,), -1, (), id="negative-int"),
    pytest.param((4,), slice(0, 3), (), id="slice-broadcast-scalar"),
    pytest.param((3, 4), (slice(None), 2), (3,), id="column"),
    pytest.param((3, 4), 1, (1, 4), id="row-from-leading-unit-axis"),
    pytest.param((3, 4), (slice(None), slice(1, 3)), (2,), id="broadcast-row"),
    pytest.param((3, 4), (np.array([2, 0]), np.array([1, 1])), (2,), id="distinct-fancy"),
    pytest.param((3, 4), np.array([[True, False, False, True]] * 3), (6,), id="mask"),
]


@pytest.mark.parametrize("shape, index, value_shape", WRITES)
def test_setitem_bar_is_the_adjoint_of_assignment(rng, shape, index, value_shape):
    x, u = rng.normal(size=shape), rng.normal(size=shape)
    value, w = rng.normal(size=value_shape), rng.normal(size=value_shape)
    g = rng.normal(size=shape)
    x_bar, value_bar = adj.setitem_bar(g, x, index, value)
    assert x_bar.shape == x.shape and np.shape(value_bar) == value.shape
    assert inner(x_bar, u) + inner(value_bar, w) == pytest.approx(inner(g, adj.setitem(u, index, w)))


def test_setitem_bar_of_a_python_float_is_a_float():
    _, value_bar = adj.setitem_bar(np.array([1.0, 2.0, 3.0]), np.zeros(3), slice(1, 3), 0.5)
    assert type(value_bar) is float and value_bar == 5.0


def test_setitem_bar_of_a_list_of_values_is_a_list():
    _, value_bar = adj.setitem_bar(np.array([1.0, 2.0, 3.0]), np.zeros(3), slice(0, 2), [0.5, 0.25])
    assert value_bar == [1.0, 2.0]


def test_setitem_bar_keeps_value_dtype_and_gives_none_for_an_int():
    g = np.ones(3, dtype=np.float32)
    _, value_bar = adj.setitem_bar(g, np.zeros(3, dtype=np.float32), slice(None), np.array([1.0, 2.0, 3.0]))
    assert value_bar.dtype == np.float64
    assert adj.setitem_bar(g, np.zeros(3, dtype=np.float32), 0, 1)[1] is None


def test_setitem_bar_refuses_repeated_indices():
    with pytest.raises(adj.RuleError, match="repeated indices"):
        adj.setitem_bar(np.ones(3), np.zeros(3), [0, 2, 0], np.ones(3))
    with pytest.raises(adj.RuleError, match="repeated indices"):
        adj.setitem_bar(np.ones((2, 2)), np.zeros((2, 2)), (np.array([1, 1]), np.array([0, 0])), 1.0)


def test_setitem_bar_does_not_mutate_its_inputs():
    g, x, value = np.ones(3), np.zeros(3), np.array([5.0])
    x_bar, _ = adj.setitem_bar(g, x, slice(0, 1), value)
    np.testing.assert_array_equal(g, np.ones(3))
    np.testing.assert_array_equal(x, np.zeros(3))
    x_bar[:] = 7.0  # a fresh array, not a view of g
    np.testing.assert_array_equal(g, np.ones(3))


def test_setitem_bar_of_a_read_only_cotangent():
    g = np.broadcast_to(2.0, (3,))
    x_bar, value_bar = adj.setitem_bar(g, np.zeros(3), 0, 1.0)
    np.testing.assert_array_equal(x_bar, [0.0, 2.0, 2.0])
    assert value_bar == 2.0


def test_setitem_bar_of_none_is_none():
    assert adj.setitem_bar(None, np.zeros(2), 0, 1.0) == (None, None)


@pytest.mark.parametrize(
    "index, value, x_bar, value_bar",
    [
        (1, 5.0, [1.0, None, 3.0, 4.0], 2.0),
        (-1, 5.0, [1.0, 2.0, 3.0, None], 4.0),
        (slice(1, 3), [5.0, 6.0], [1.0, None, None, 4.0], [2.0, 3.0]),
        (slice(None, None, 2), (5.0, 6.0), [None, 2.0, None, 4.0], (1.0, 3.0)),
    ],
    ids=["int", "negative-int", "slice", "extended-slice-tuple-value"],
)
def test_setitem_bar_of_a_list(index, value, x_bar, value_bar):
    x = [10.0, 20.0, 30.0, 40.0]
    g = [1.0, 2.0, 3.0, 4.0]
    assert adj.setitem_bar(g, x, index, value) == (x_bar, value_bar)
    assert g == [1.0, 2.0, 3.0, 4.0] and x == [10.0, 20.0, 30.0, 40.0]


def test_setitem_bar_of_a_list_slice_of_another_length():
    # x = [a, b, c]; x[1:2] = [v, w] gives [a, v, w, c]
    x_bar, value_bar = adj.setitem_bar([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0], slice(1, 2), [5.0, 6.0])
    assert x_bar == [1.0, None, 4.0] and value_bar == [2.0, 3.0]


def test_setitem_bar_of_a_dict():
    x = {"w": np.ones(2), "b": 1.0}
    g = {"w": np.array([1.0, 2.0]), "b": 3.0, "new": 4.0}
    assert adj.setitem_bar(g, x, "new", 9.0) == ({"w": g["w"], "b": 3.0}, 4.0)
    x_bar, value_bar = adj.setitem_bar(g, x, "b", 9.0)
    assert x_bar == {"w": g["w"], "b": 0.0} and value_bar == 3.0


def test_append_returns_a_new_list():
    xs = [1.0]
    ys = adj.append(xs, np.ones(2))
    assert len(ys) == 2 and xs == [1.0] and ys is not xs


def test_append_needs_a_list():
    with pytest.raises(TypeError, match="tuple"):
        adj.append((1.0,), 2.0)


def test_append_bar_splits_the_last_cotangent_off():
    assert adj.append_bar([1.0, 2.0, 3.0], 0.5) == ([1.0, 2.0], 3.0)
    assert adj.append_bar(None, 0.5) == (None, 0.0)


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


class Scaler:
    """A Python object whose methods and `__call__` generated code may call."""

    def __init__(self, scale):
        self.scale = scale

    def loss(self, x, y):
        return np.sum(self.scale * x * y)

    def __call__(self, x):
        return np.sum(self.scale * x ** 2)


def weighted(x, w, offset=0.0):
    return np.sum(w * x) + offset


def test_vjp_of_bound_python_method_drops_the_receiver(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    value, back = adj.vjp((0, 1), Scaler(3.0).loss, x, y)
    assert value == pytest.approx(np.sum(3.0 * x * y))
    x_bar, y_bar = back(1.0)  # one cotangent per argument: none for the receiver
    np.testing.assert_allclose(x_bar, 3.0 * y)
    np.testing.assert_allclose(y_bar, 3.0 * x)


def test_vjp_of_callable_object_calls_its_python_call(rng):
    x = rng.normal(size=3)
    value, back = adj.vjp((0,), Scaler(2.0), x)
    assert value == pytest.approx(np.sum(2.0 * x ** 2))
    (x_bar,) = back(1.0)
    np.testing.assert_allclose(x_bar, 4.0 * x)


def test_vjp_of_partial_treats_bound_arguments_as_constants(rng):
    x, w = rng.normal(size=3), rng.normal(size=3)
    value, back = adj.vjp((0,), functools.partial(weighted, w=w, offset=1.0), x)
    assert value == pytest.approx(np.sum(w * x) + 1.0)
    (x_bar,) = back(1.0)
    np.testing.assert_allclose(x_bar, w)


def test_vjp_of_array_method_returns_the_receivers_cotangent_first(rng):
    x, y = rng.normal(size=3), rng.normal(size=3)
    value, back = adj.vjp((0, 1), x.dot, y)
    assert value == pytest.approx(x @ y)
    x_bar, y_bar = back(2.0)
    np.testing.assert_allclose(x_bar, 2.0 * y)
    np.testing.assert_allclose(y_bar, 2.0 * x)


def test_vjp_of_array_method_with_shape_arguments(rng):
    x = rng.normal(size=(2, 3))
    value, back = adj.vjp((0,), x.reshape, 3, 2)
    assert value.shape == (3, 2)
    x_bar, *rest = back(np.arange(6.0).reshape(3, 2))
    assert rest == [None, None]
    np.testing.assert_array_equal(x_bar, np.arange(6.0).reshape(2, 3))


def test_vjp_of_numpy_scalar_method():
    value, back = adj.vjp((0,), np.float64(2.5).clip, 0.0, 1.0)
    assert value == 1.0
    assert back(3.0)[0] == 0.0


def test_vjp_of_non_differentiable_array_method_gives_zeros_to_the_receiver():
    x = np.array([1.0, 3.0, 2.0])
    value, back = adj.vjp((0,), x.argmax)
    assert value == 1
    (x_bar,) = back(None)
    np.testing.assert_array_equal(x_bar, np.zeros(3))
    assert adj.vjp((0,), np.float64(2.0).argmax)[0] == 0  # a NumPy scalar's own method is called


def test_vjp_of_array_method_with_integer_dtype_result_has_no_gradient():
    x = np.array([1.5, 2.5])
    value, back = adj.vjp((0,), x.astype, int)
    np.testing.assert_array_equal(value, [1, 2])
    np.testing.assert_array_equal(back(np.ones(2))[0], np.zeros(2))


def test_vjp_of_array_method_without_rule_says_which():
    with pytest.raises(adj.RuleError, match="ndarray.tolist"):
        adj.vjp((0,), np.ones(2).tolist)


def test_vjp_of_bound_non_differentiable_python_method():
    logger = logging.getLogger("adjoint.tests")
    value, back = adj.vjp((), logger.debug, "x is %s", np.ones(2))
    assert value is None and back(None) == (None, None)


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


# ---- what vjp remembers about a function between calls -------------------------------------------


def test_a_rule_registered_for_a_function_after_vjp_transformed_it_is_used():
    def cube(x):
        return x ** 3

    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(adj.vjp((0,), cube, x)[1](np.ones(2))[0], 3 * x ** 2)
    adjoint.rrule(cube)(lambda x: (cube(x), lambda g: (10.0 * g,)))
    np.testing.assert_allclose(adj.vjp((0,), cube, x)[1](np.ones(2))[0], [10.0, 10.0])


def test_a_function_declared_non_differentiable_after_vjp_transformed_it_gets_no_cotangent():
    def bucket(x):
        return x * 2.0

    x = np.array([1.0, 2.0])
    assert adj.vjp((0,), bucket, x)[1](np.ones(2))[0] is not None
    adjoint.non_differentiable(bucket)
    np.testing.assert_array_equal(adj.vjp((0,), bucket, x)[1](np.ones(2))[0], np.zeros(2))


def test_a_checkpoint_and_a_gradient_are_still_called_by_their_marks_after_plain_calls():
    def square_sum(x):
        return np.sum(x * x)

    x = np.array([1.0, -2.0])
    adj.vjp((0,), square_sum, x)
    np.testing.assert_allclose(adj.vjp((0,), adjoint.checkpoint(square_sum), x)[1](1.0)[0], 2 * x)
    second = adj.vjp((0,), adjoint.grad(square_sum), x)[1](np.ones(2))[0]  # the Hessian's rows, summed
    np.testing.assert_allclose(second, [2.0, 2.0])
