"""Rules of adjoint/rules/assembly.py: joins, splits, tile, repeat, pad, append, insert, delete.

Each rule is checked with `check_rrule` (values, cotangent shapes and dtypes, the inner-product
identity against finite differences; list and tuple operands are perturbed item by item) over
the shared grid, and through the compiler with `check_grad` on small user functions that
build their lists in code, in loops, and unpack the pieces of a split.
"""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import ARRAY_SHAPES, DTYPES, grid, sample

# The primitives the tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [
    np.concatenate, np.stack, np.hstack, np.vstack, np.dstack, np.column_stack, np.block, np.append,
    np.split, np.array_split, np.hsplit, np.vsplit, np.dsplit,
    np.tile, np.repeat, np.ndarray.repeat, np.pad, np.insert, np.delete,
]


def tolerance(dtype):
    return {"rtol": 1e-4} if dtype == np.float32 else {}


# ---- joins ----------------------------------------------------------------------------------------

# (item shapes, axis) pairs NumPy can concatenate.
CONCATENATIONS = [
    ([(3,), (2,)], 0), ([(2, 3), (1, 3)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (2, 2)], -1),
    ([(2, 3), (3,), ()], None), ([(1, 3), (1, 3)], 0),
]


@pytest.mark.parametrize("shapes, axis, dtype", grid(CONCATENATIONS, DTYPES))
@pytest.mark.parametrize("sequence", [list, tuple])
def test_concatenate(rng, shapes, axis, dtype, sequence):
    arrays = sequence(sample(rng, "real", s, dtype) for s in shapes)
    check_rrule(np.concatenate, arrays, axis=axis, **tolerance(dtype))


def test_concatenate_of_python_floats_flattened(rng):
    check_rrule(np.concatenate, [0.5, rng.normal(size=(2, 2)), -1.5], axis=None)


def test_concatenate_dtype_keyword(rng):
    # The map is linear, so a wide finite-difference step is exact and outlasts float32 rounding.
    check_rrule(np.concatenate, [rng.normal(size=2), rng.normal(size=3)], dtype=np.float32, eps=0.1, rtol=1e-4)
    check_rrule(np.concatenate, [rng.normal(size=2), rng.normal(size=3)], casting="unsafe", dtype=np.float32,
                eps=0.1, rtol=1e-4)


def test_concatenate_of_an_array_joins_its_rows(rng):
    check_rrule(np.concatenate, rng.normal(size=(3, 2, 2)), axis=1)


def test_join_parts_keep_each_items_dtype_and_int_items_get_none():
    items = [np.ones(2, dtype=np.float32), np.ones(3), np.arange(2)]
    _, back = lookup(np.concatenate).rrule(items)
    (items_bar,) = back(np.arange(7.0))
    assert type(items_bar) is list and items_bar[2] is None
    assert [b.dtype for b in items_bar[:2]] == [np.float32, np.float64]
    np.testing.assert_array_equal(items_bar[1], [2.0, 3.0, 4.0])
    check_rrule(np.concatenate, items, rtol=1e-4)


def test_complex_join_is_a_plain_transpose_and_real_items_take_the_real_part(rng):
    check_rrule(np.concatenate, [sample(rng, "complex", (2,)), sample(rng, "real", (3,))])
    _, back = lookup(np.concatenate).rrule([np.ones(1), np.ones(1, dtype=complex)])
    (items_bar,) = back(np.array([1 + 2j, 3 + 4j]))
    assert items_bar[0].dtype == np.float64 and items_bar[0][0] == 1.0 and items_bar[1][0] == 3 + 4j


@pytest.mark.parametrize("shape", ARRAY_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, -1, "last"])
def test_stack(rng, shape, dtype, axis):
    axis = len(shape) if axis == "last" else axis
    arrays = [sample(rng, "real", shape, dtype) for _ in range(3)]
    check_rrule(np.stack, arrays, axis=axis, **tolerance(dtype))
    check_rrule(np.stack, tuple(arrays), axis, dtype=np.float64, **tolerance(dtype))


@pytest.mark.parametrize("primitive, shapes", [
    (np.hstack, [(3,), (2,), ()]), (np.hstack, [(2, 3), (2, 1)]), (np.hstack, [None, (2,)]),
    (np.vstack, [(3,), (2, 3), (1, 3)]), (np.vstack, [None, ()]), (np.vstack, [(2, 3, 2), (1, 3, 2)]),
    (np.dstack, [(3,), (3,)]), (np.dstack, [(2, 3), (2, 3), (2, 3, 2)]), (np.dstack, [None, ()]),
    (np.column_stack, [(3,), (3, 2)]), (np.column_stack, [(2, 3), (2,), (2, 1)]),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_stacks(rng, primitive, shapes, dtype):
    check_rrule(primitive, [sample(rng, "real", s, dtype) for s in shapes], **tolerance(dtype))


@pytest.mark.parametrize("primitive", [np.hstack, np.vstack])
def test_stack_dtype_keyword(rng, primitive):
    check_rrule(primitive, (rng.normal(size=3), rng.normal(size=3)), dtype=np.float32, eps=0.1, rtol=1e-4)


@pytest.mark.parametrize("shapes", [
    [(2,), (3,)],
    [[(2, 2), (2, 1)], [(1, 3)]],
    [[(1, 1), (1, 2)], [(3,)]],  # a 1-D item in a 2-D block gets a leading axis
    [[[(1, 2, 1), (1, 2, 2)]], [[(1, 2, 3)]]],
    [[(2,), None]],
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_block(rng, shapes, dtype):
    def build(spec):
        return [build(s) for s in spec] if isinstance(spec, list) else sample(rng, "real", spec, dtype)

    check_rrule(np.block, build(shapes), **tolerance(dtype))


@pytest.mark.parametrize("arr, values, axis", [
    ((3,), (2,), None), ((2, 3), (3,), None), ((2, 3), (1, 3), 0), ((2, 3), (2, 2), 1), ((2,), None, None),
    (None, (2,), None),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_append(rng, arr, values, axis, dtype):
    check_rrule(np.append, sample(rng, "real", arr, dtype), sample(rng, "real", values, dtype), axis=axis,
                **tolerance(dtype))


# ---- splits ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, sections, axis", [
    ((4,), 2, 0), ((6,), [1, 4], 0), ((4, 3), 2, 0), ((2, 6), 3, 1), ((2, 6), [2, 3], -1), ((2, 4), [3, 9], 1),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_split(rng, shape, sections, axis, dtype):
    check_rrule(np.split, sample(rng, "real", shape, dtype), sections, axis=axis, **tolerance(dtype))


@pytest.mark.parametrize("shape, sections, axis", [((5,), 3, 0), ((2, 5), 2, 1), ((2, 3), 4, 0), ((3, 2), [1], 0)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_array_split(rng, shape, sections, axis, dtype):
    check_rrule(np.array_split, sample(rng, "real", shape, dtype), sections, axis, **tolerance(dtype))


@pytest.mark.parametrize("primitive, shape, sections", [
    (np.hsplit, (4,), 2), (np.hsplit, (2, 4), [1]), (np.vsplit, (4, 3), 2), (np.vsplit, (3, 2), [1, 2]),
    (np.dsplit, (1, 2, 4), 2), (np.dsplit, (2, 1, 3), [1]),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_hsplit_vsplit_dsplit(rng, primitive, shape, sections, dtype):
    check_rrule(primitive, sample(rng, "real", shape, dtype), sections, **tolerance(dtype))


def test_split_pieces_nothing_flowed_into_count_as_zero():
    x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    _, back = lookup(np.split).rrule(x, [1], axis=0)
    (x_bar,) = back([None, np.ones((2, 2))])
    assert x_bar.dtype == np.float32
    np.testing.assert_array_equal(x_bar, [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])


# ---- copies ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, reps", [
    (None, 3), ((), (2, 2)), ((3,), 2), ((3,), (2, 1)), ((2, 3), (2, 2)), ((2, 3), 2), ((1, 3), (2, 1, 3)),
    ((2, 3), 0),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_tile(rng, shape, reps, dtype):
    check_rrule(np.tile, sample(rng, "real", shape, dtype), reps, **tolerance(dtype))


@pytest.mark.parametrize("shape, repeats, axis", [
    (None, 3, None), ((), 2, None), ((3,), 2, None), ((3,), [1, 0, 3], 0), ((2, 3), 2, None), ((2, 3), 3, 1),
    ((2, 3), [2, 1], 0), ((2, 3), np.array([0, 2, 1]), -1), ((1, 3), [2], 0),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat(rng, shape, repeats, axis, dtype):
    x = sample(rng, "real", shape, dtype)
    check_rrule(np.repeat, x, repeats, axis=axis, **tolerance(dtype))
    if np.ndim(x) > 0:  # finite differences turn a 0-d array into a NumPy scalar, which has no `ndarray.repeat`
        check_rrule(np.ndarray.repeat, x, repeats, axis, **tolerance(dtype))


PAD_WIDTHS = [1, (2,), (1, 2), ((0, 2),), "per axis"]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 3)])
@pytest.mark.parametrize("pad_width", PAD_WIDTHS)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad(rng, shape, pad_width, mode):
    if pad_width == "per axis":
        pad_width = tuple((i + 1, i) for i in range(len(shape)))
    check_rrule(np.pad, rng.normal(size=shape), pad_width, mode)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pad_constant_values_and_dtypes(rng, dtype):
    x = sample(rng, "real", (2, 3), dtype)
    check_rrule(np.pad, x, ((1, 0), (2, 1)), constant_values=0.5, **tolerance(dtype))
    check_rrule(np.pad, x, 1, "constant", constant_values=((1.0, 2.0), (3.0, 4.0)), **tolerance(dtype))
    check_rrule(np.pad, x, 3, mode="reflect", **tolerance(dtype))  # wider than the array: reflected again


def test_pad_modes_that_compute_values_are_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="'mean'"):
        lookup(np.pad).rrule(rng.normal(size=3), 1, "mean")


@pytest.mark.parametrize("arr, obj, values, axis", [
    ((4,), 1, None, None), ((4,), [0, 2, 4], (3,), None), ((2, 3), 1, (3,), 0), ((2, 3), [1, 1], (2, 2), 1),
    ((2, 3), 2, (2, 1), 1), ((2, 3), 1, None, -1), ((2, 3), slice(0, 2), (2,), 1), ((2, 2), 3, (), None),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_insert(rng, arr, obj, values, axis, dtype):
    check_rrule(np.insert, sample(rng, "real", arr, dtype), obj, sample(rng, "real", values, dtype), axis=axis,
                **tolerance(dtype))


@pytest.mark.parametrize("shape, obj, axis", [
    ((4,), 1, None), ((2, 3), [0, 4], None), ((2, 3), 1, 1), ((3, 2), [0, 2], 0), ((2, 3), slice(None, None, 2), -1),
    ((3,), np.array([True, False, True]), 0),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_delete(rng, shape, obj, axis, dtype):
    check_rrule(np.delete, sample(rng, "real", shape, dtype), obj, axis=axis, **tolerance(dtype))


def test_copies_of_complex_arrays(rng):
    z = sample(rng, "complex", (2, 3))
    check_rrule(np.tile, z, (2, 1))
    check_rrule(np.repeat, z, [1, 2], axis=0)
    check_rrule(np.pad, z, 1, "wrap")
    check_rrule(np.insert, z, 1, sample(rng, "complex", (3,)), axis=0)


def test_integer_arrays_get_no_cotangent():
    ints = np.arange(6).reshape(2, 3)
    for primitive, args in [(np.tile, (ints, 2)), (np.repeat, (ints, 2)), (np.pad, (ints, 1)),
                            (np.delete, (ints, 0)), (np.split, (ints, 3, 1))]:
        value, back = lookup(primitive).rrule(*args)
        g = [np.ones(np.shape(p)) for p in value] if isinstance(value, list) else np.ones(np.shape(value))
        assert back(g)[0] is None


# ---- through the compiler -------------------------------------------------------------------------

def concatenate_literal(a, b):
    return np.sum(np.concatenate([a, b], axis=1) ** 2)


def concatenate_flattened(a, b):
    return np.sum(np.sin(np.concatenate((a, 2.0 * b, 0.5), axis=None)))


def stacks_of_a_loop(x):
    hs = []
    h = x
    for _ in range(3):
        h = np.tanh(h)
        hs.append(h)
    return np.sum(np.stack(hs, axis=1) ** 2) + np.sum(np.concatenate(hs) ** 3)


def stacks_side_by_side(a, b):
    return np.sum(np.hstack([a, b]) ** 2) + np.sum(np.vstack((a, b)) ** 3) + np.sum(np.dstack([a, b]) * a[0, :1])


def columns(a, v):
    return np.sum(np.column_stack([v, a]) ** 2)


def blocks(a, b, c, d):
    return np.sum(np.block([[a, b], [c, d]]) ** 2)


def unpacked_split(x):
    a, b = np.split(x, 2)
    return np.sum(a * 2.0 + b ** 2)


def one_piece_used(x):
    pieces = np.array_split(x, 3, axis=1)
    return np.sum(pieces[1] ** 2)


def hsplit_vsplit(x):
    left, right = np.hsplit(x, [1])
    top, bottom = np.vsplit(x, 2)
    return np.sum(left * right[:, :1]) + np.sum(np.sin(top) * bottom)


def tiled_and_repeated(x):
    return np.sum(np.tile(x, (2, 1)) ** 2) + np.sum(x.repeat(2, axis=1) ** 3) + np.sum(np.repeat(x, [1, 2], axis=0))


def padded(x):
    return np.sum(np.pad(x, ((1, 2), (0, 1)), mode="edge") ** 2) + np.sum(np.pad(x, 1, constant_values=1.5) ** 3)


def appended_inserted_deleted(x, v):
    return np.sum(np.append(x, v) ** 2) + np.sum(np.insert(x, 1, v, axis=1) ** 3) + np.sum(np.delete(x, 0, axis=1) ** 2)


def pad_odd_reflection(x):
    return np.sum(np.pad(x, 1, mode="reflect", reflect_type="odd"))


def pad_mean(x):
    return np.sum(np.pad(x, 1, mode="mean"))


@pytest.mark.parametrize("f, shapes", [
    (concatenate_literal, [(2, 3), (2, 2)]), (concatenate_flattened, [(2, 2), (3,)]), (stacks_of_a_loop, [(2, 3)]),
    (stacks_side_by_side, [(2, 3), (2, 3)]), (columns, [(3, 2), (3,)]),
    (blocks, [(2, 2), (2, 1), (1, 2), (1, 1)]), (unpacked_split, [(4, 3)]), (one_piece_used, [(2, 5)]),
    (hsplit_vsplit, [(2, 3)]), (tiled_and_repeated, [(2, 3)]), (padded, [(2, 3)]),
    (appended_inserted_deleted, [(2, 3), (2,)]),
])
def test_through_the_compiler(rng, f, shapes):
    check_grad(f, *(rng.normal(size=s) for s in shapes))


def test_float32_through_the_compiler(rng):
    a, b = (rng.normal(size=(2, 3)).astype(np.float32) for _ in range(2))
    grads = adjoint.grad(concatenate_literal, wrt=(0, 1))(a, b)
    assert [g.dtype for g in grads] == [np.float32, np.float32]
    np.testing.assert_allclose(grads[0], 2 * a, rtol=1e-6)


def test_keywords_out_of_scope_are_refused(rng):
    with pytest.raises(adjoint.AdjointError, match="reflect_type="):
        adjoint.grad(pad_odd_reflection)(rng.normal(size=3))


def test_pad_modes_that_compute_values_are_refused_through_the_compiler(rng):
    with pytest.raises(adjoint.AdjointError, match="'mean'"):
        adjoint.grad(pad_mean)(rng.normal(size=3))


def pad_with_a_differentiable_constant(x, c):
    return np.sum(np.pad(x, 1, constant_values=c))


def test_a_differentiable_pad_constant_is_refused(rng):
    # np.pad takes `constant_values=` by keyword only, and keywords carry no gradient.
    with pytest.raises(adjoint.AdjointError, match="constant_values="):
        adjoint.grad(pad_with_a_differentiable_constant, wrt=(0, 1))(rng.normal(size=3), 0.5)


# ---- nested lists of values inside a join: each value gets its entry's cotangent ---------------

def rotation_of(theta, v):
    c, s = np.cos(theta), np.sin(theta)
    R = np.stack([[c, -s], [s, c]])
    return np.sum((R @ v) ** 2 * np.array([1.0, 3.0]))


def weights_with_bias(w, b, x):
    return np.sum((x @ np.concatenate([w, [b]])) ** 2)


def rows_built_in_a_loop(x):
    rows = []
    for i in range(2):
        rows.append([x[i], x[i] ** 2])
    return np.sum(np.vstack(rows) * np.array([[1.0, 2.0], [3.0, 4.0]]))


def select_from_nested_choices(a, b):
    return np.sum(np.select([np.array([True, False])], [[a, b]], [b, a]) * np.array([1.0, 2.0]))


def multi_dot_of_a_nested_matrix(a, b, M, v):
    return np.linalg.multi_dot([[[a, b]], M, v])


@pytest.mark.parametrize("f, args", [
    (rotation_of, (0.4, np.array([1.0, 2.0]))),
    (weights_with_bias, (np.array([0.5, -1.0]), 0.3, np.array([[1.0, 2.0, 1.0], [0.5, 0.1, 1.0]]))),
    (rows_built_in_a_loop, (np.array([0.7, -0.4]),)),
    (select_from_nested_choices, (0.3, 0.9)),
    (multi_dot_of_a_nested_matrix, (0.3, 0.9, np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([0.2, 0.4]))),
], ids=lambda v: getattr(v, "__name__", ""))
def test_values_in_nested_lists_of_a_join_get_their_gradients(f, args):
    check_grad(f, *args)
