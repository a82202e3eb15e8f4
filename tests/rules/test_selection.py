"""Rules of adjoint/rules/selection.py (diagonals, triangles, take, take_along_axis, compress,
extract, sort, select, real_if_close; partition in test_partition.py), and the index-finding
functions that carry no gradient."""

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.compiler import inline
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, sample

# (primitive, shape, domain, positional arguments after the array, keyword arguments); the
# index and condition operands are integer and boolean arrays, which get no cotangent.
SELECTIONS = [
    (np.diag, (3,), (), {}),
    (np.diag, (3,), (1,), {}),
    (np.diag, (2,), (), {"k": -2}),
    (np.diag, (3, 3), (), {}),
    (np.diag, (2, 3), (1,), {}),
    (np.diag, (2, 3), (), {"k": -1}),
    (np.diag, (1, 3), (), {}),
    (np.diagonal, (2, 3), (), {}),
    (np.diagonal, (2, 3), (1,), {}),
    (np.diagonal, (3, 2), (), {"offset": -1}),
    (np.diagonal, (2, 3, 4), (), {"axis1": 1, "axis2": 2}),
    (np.diagonal, (2, 3, 4), (1, -1, 0), {}),
    (np.ndarray.diagonal, (3, 3), (), {"offset": 1}),
    (np.trace, (3, 3), (), {}),
    (np.trace, (1, 3), (), {}),
    (np.trace, (2, 3), (1,), {}),
    (np.trace, (2, 3), (4,), {}),  # an empty diagonal: a zero trace, a zero cotangent
    (np.trace, (2, 3, 4), (), {"offset": -1, "axis1": 2, "axis2": 0}),
    (np.trace, (3, 3), (), {"dtype": np.float64}),  # a float32 array's cotangent is cast back
    (np.ndarray.trace, (2, 3, 3), (0, 1, 2), {}),
    (np.tril, (3, 3), (), {}),
    (np.tril, (2, 3), (1,), {}),
    (np.tril, (3,), (), {"k": -1}),
    (np.tril, (2, 3, 4), (), {}),
    (np.triu, (3, 3), (), {}),
    (np.triu, (2, 3), (-1,), {}),
    (np.triu, (3,), (), {}),
    (np.triu, (1, 3), (), {"k": 1}),
    (np.take, (), (0,), {}),
    (np.take, (3,), (np.array([0, 2, 0, -1]),), {}),  # repeated indices accumulate
    (np.take, (2, 3), (np.array([[0, 5], [5, 1]]),), {}),
    (np.take, (2, 3), (np.array([2, 0, 2]),), {"axis": 1}),
    (np.take, (2, 3), (1, 0), {}),
    (np.take, (2, 3), (np.array([[1, 0], [1, 1]]),), {"axis": -2}),
    (np.take, (1, 3), (np.array([4, -5, 2]),), {"axis": 1, "mode": "wrap"}),
    (np.take, (2, 3), (np.array([7, -2, 1]),), {"axis": 1, "mode": "clip"}),
    (np.ndarray.take, (2, 3), (np.array([1, 1]), 0), {}),
    (np.take_along_axis, (2, 3), (np.array([[2, 2], [0, 1]]),), {"axis": 1}),
    (np.take_along_axis, (2, 3), (np.array([[1, 0, 1]]), 0), {}),
    (np.take_along_axis, (1, 3), (np.array([[2], [0], [2]]),), {"axis": -1}),  # a broadcast row, read thrice
    (np.take_along_axis, (2, 3), (np.array([5, 0, 5]),), {"axis": None}),
    (np.take_along_axis, (3,), (np.array([-1, 0]), 0), {}),
    (np.sort, (3,), (), {}),
    (np.sort, (2, 3), (), {}),
    (np.sort, (2, 3), (0,), {}),
    (np.sort, (2, 3), (), {"axis": None}),
    (np.sort, (1, 3), (), {"axis": -1, "kind": "stable"}),
    (np.sort, (2, 3, 4), (1,), {"kind": "heapsort"}),
    (np.sort, (2, 3), (), {"stable": True}),
]

SELECTION_CASES = [
    pytest.param(primitive, shape, extra, kwargs, dtype,
                 id=f"{primitive.__qualname__}-{shape}-{extra}-{kwargs}-{dtype.__name__}".replace(" ", ""))
    for primitive, shape, extra, kwargs in SELECTIONS
    for dtype in DTYPES
]

# (primitive, condition, shape, keyword arguments): the condition comes first.
CONDITIONED = [
    (np.compress, [True, False, True], (2, 3), {"axis": 1}),
    (np.compress, [False, True], (2, 3), {"axis": 0}),
    (np.compress, [True, True], (2, 3), {"axis": -1}),  # shorter than the axis: the rest dropped
    (np.compress, np.array([1, 0, 0, 1, 1]), (2, 3), {}),  # `axis=None` flattens
    (np.extract, np.array([[True, False, True], [False, False, True]]), (2, 3), {}),
    (np.extract, np.array([2, 0, -1]), (3,), {}),
]

SELECT_CASES = [  # (condlist, choicelist, default): each choice a shape, a Python float or an int
    pytest.param(2, ((2, 3), (2, 3)), None, id="two-choices-python-float-default"),
    pytest.param(2, ((2, 3), None), (2, 3), id="float-choice-array-default"),
    pytest.param(3, ((3,), (1, 3), ()), (2, 1), id="broadcast-choices-and-default"),
    pytest.param(2, ((2, 3), "int"), "int", id="int-choice-int-default"),
]

RRULE_PRIMITIVES = list({
    id(p): p for p in [s[0] for s in SELECTIONS] + [c[0] for c in CONDITIONED] + [np.select, np.real_if_close]
}.values())


def _domain(primitive):
    return "distinct" if primitive is np.sort else "real"


@pytest.mark.parametrize("primitive, shape, extra, kwargs, dtype", SELECTION_CASES)
def test_selection_rule_matches_finite_differences(rng, primitive, shape, extra, kwargs, dtype):
    check_rrule(primitive, sample(rng, _domain(primitive), shape, dtype), *extra, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("primitive, condition, shape, kwargs", CONDITIONED,
                         ids=lambda v: getattr(v, "__name__", None))
def test_condition_rule_matches_finite_differences(rng, primitive, condition, shape, kwargs, dtype):
    check_rrule(primitive, condition, sample(rng, "real", shape, dtype), **kwargs)


def test_trace_into_float32_casts_the_cotangent_back(rng):
    check_rrule(np.trace, rng.normal(size=(3, 3)), dtype=np.float32, eps=0.1)  # linear: any step is exact


def test_take_of_a_python_float(rng):
    check_rrule(np.take, 0.5, 0)


def test_integer_arrays_get_no_cotangent():
    ints = np.arange(6).reshape(2, 3)
    for primitive, args in [
        (np.diagonal, (ints,)), (np.trace, (ints,)), (np.diag, (ints,)), (np.diag, (ints[0],)),
        (np.take, (ints, [0, 2], 1)), (np.take_along_axis, (ints, np.array([[0], [2]]), 1)),
        (np.compress, ([True, False], ints, 0)),
    ]:
        value, back = lookup(primitive).rrule(*args)
        assert all(c is None for c in back(np.ones(np.shape(value)))), primitive


def test_diagonal_and_take_of_complex_arrays(rng):
    z = sample(rng, "complex", (2, 3))
    check_rrule(np.diagonal, z, 1)
    check_rrule(np.trace, z)
    check_rrule(np.take, z, np.array([0, 0, 4]))
    check_rrule(np.sort, sample(rng, "distinct", (4,)) + 0j)


def _choice(rng, spec, dtype, shape=(2, 3)):
    if spec == "int":
        return 2
    return sample(rng, "real", spec, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("sequence", [list, tuple])
@pytest.mark.parametrize("conditions, choices, default", SELECT_CASES)
def test_select_rule_matches_finite_differences(rng, conditions, choices, default, sequence, dtype):
    # Overlapping conditions: where two hold, the first one's choice is picked.
    x = rng.normal(size=(2, 3))
    condlist = sequence([x > 0, x < 0.5, np.abs(x) > 1][:conditions])
    choicelist = sequence(_choice(rng, spec, dtype) for spec in choices)
    check_rrule(np.select, condlist, choicelist, _choice(rng, default, dtype))


def test_select_sends_each_entry_to_the_first_true_condition_or_the_default():
    conditions = [np.array([True, True, False, False]), np.array([False, True, True, False])]
    _, back = lookup(np.select).rrule(conditions, [np.zeros(4), np.zeros(4)], np.zeros(4))
    conditions_bar, (a_bar, b_bar), default_bar = back(np.array([1.0, 2.0, 3.0, 4.0]))
    assert conditions_bar is None
    np.testing.assert_array_equal(a_bar, [1.0, 2.0, 0.0, 0.0])
    np.testing.assert_array_equal(b_bar, [0.0, 0.0, 3.0, 0.0])
    np.testing.assert_array_equal(default_bar, [0.0, 0.0, 0.0, 4.0])


def test_take_accumulates_repeated_indices():
    _, back = lookup(np.take).rrule(np.zeros((2, 3)), np.array([2, 0, 2, 2]), axis=1)
    x_bar, indices_bar = back(np.arange(8.0).reshape(2, 4))
    assert indices_bar is None
    np.testing.assert_array_equal(x_bar, [[1.0, 0.0, 0.0 + 2.0 + 3.0], [5.0, 0.0, 4.0 + 6.0 + 7.0]])


def test_sort_gives_each_entry_the_cotangent_of_its_sorted_slot():
    _, back = lookup(np.sort).rrule(np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]), axis=1)
    (x_bar,) = back(np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]))
    np.testing.assert_array_equal(x_bar, [[30.0, 10.0, 20.0], [40.0, 60.0, 50.0]])


# Rules in the inlinable shape are stitched into generated code (see adjoint.compiler.inline).
INLINED = [np.diag, np.diagonal, np.trace, np.tril, np.triu, np.take, np.compress, np.extract, np.select]


@pytest.mark.parametrize("primitive", INLINED, ids=lambda p: p.__name__)
def test_selection_rules_are_inlinable(primitive):
    assert inline.plan_for(lookup(primitive)) is not None


# ---- through the compiler ------------------------------------------------------------------------

W = np.linspace(-1.0, 2.0, 6).reshape(2, 3)


def diag_both_ways(x):
    return np.sum(np.diag(np.diag(x @ x.T, k=0)) ** 2) + np.sum(np.diag(x[0], 1) * np.arange(16.0).reshape(4, 4))


def diagonal_and_trace(x):
    return np.sum(np.diagonal(x, offset=1, axis1=0, axis2=1) ** 2) + np.trace(x, -1) * np.trace(x @ x.T)


def diagonal_and_trace_methods(x):
    return np.sum(x.diagonal(1) * 3.0) + x.trace(offset=0) ** 2


def triangles(x):
    return np.sum(np.tril(x, k=1) ** 2 * W) + np.sum(np.triu(x, -1) * W[::-1])


def take_with_repeats(x, indices):
    return np.sum(np.take(x, indices, axis=1) ** 2) + np.sum(x.take(indices) * np.arange(3.0))


def take_along_rows(x):
    order = np.argsort(x, axis=1)
    return np.sum(np.take_along_axis(x, order, axis=1) * W) + np.sum(np.take_along_axis(x, order[:, :1], 1) ** 2)


def sort_then_weight(x):
    return np.sum(np.sort(x, axis=0) * W) + np.sum(np.sort(x, axis=None, kind="stable") ** 3)


def compress_and_extract(x):
    kept = np.compress(x[0] > 0, x, axis=1)
    return np.sum(kept ** 2) + np.sum(np.extract(x > 0.5, x) * 2.0) + np.sum(x.compress([True, False], axis=0))


def piecewise_by_select(x, y):
    return np.sum(np.select([x < -0.5, x < 0.5], [x ** 2, y * x], np.sin(x)) * W)


def index_queries(x):
    order = np.argsort(x.ravel())
    last = np.argpartition(x.ravel(), 2)[:2]
    place = np.searchsorted(np.sort(x.ravel()), 0.0) + np.digitize(x, [0.0]).sum() + x.ravel().searchsorted(0.5)
    count = np.count_nonzero(x > 0) + len(np.flatnonzero(x > 0)) + len(np.argwhere(x > 0)) + len(np.nonzero(x)[0])
    positions = x.ravel().argpartition(1)
    flat = x.ravel()
    return np.sum(flat[order] * np.arange(6.0)) + np.sum(flat[last]) * (place + count) + flat[positions[0]]


def test_index_queries_carry_no_gradient(rng):
    for query in (np.argsort, np.argpartition, np.searchsorted, np.nonzero, np.flatnonzero, np.argwhere,
                  np.count_nonzero, np.digitize, np.ndarray.argpartition, np.ndarray.searchsorted):
        assert registry.is_non_differentiable(query)
    check_grad(index_queries, sample(rng, "distinct", (2, 3)))


GRAD_CASES = [
    pytest.param(diag_both_ways, (3, 3), id="diag"),
    pytest.param(diagonal_and_trace, (3, 4), id="diagonal-trace"),
    pytest.param(diagonal_and_trace_methods, (3, 3), id="x.diagonal-x.trace"),
    pytest.param(triangles, (2, 3), id="tril-triu"),
    pytest.param(take_along_rows, (2, 3), id="take_along_axis"),
    pytest.param(sort_then_weight, (2, 3), id="sort"),
    pytest.param(compress_and_extract, (2, 3), id="compress-extract-x.compress"),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("fn, shape", GRAD_CASES)
def test_selection_through_compiler_matches_finite_differences(rng, fn, shape, dtype):
    check_grad(fn, sample(rng, "distinct", shape, dtype))


def test_take_through_compiler_with_integer_indices(rng):
    check_grad(take_with_repeats, rng.normal(size=(2, 3)), np.array([2, 0, 2]))


def test_select_through_compiler(rng):
    check_grad(piecewise_by_select, sample(rng, "distinct", (2, 3)), 0.7)
    check_grad(piecewise_by_select, sample(rng, "distinct", (2, 3)), rng.normal(size=(2, 3)))


@pytest.mark.parametrize("fn", [take_along_rows, sort_then_weight, compress_and_extract, triangles])
def test_selection_keeps_float32(rng, fn):
    assert adjoint.grad(fn)(sample(rng, "distinct", (2, 3), np.float32)).dtype == np.float32


def test_take_gives_no_gradient_to_its_indices(rng):
    _, x_bar_indices = adjoint.grad(take_with_repeats, wrt=(0, 1))(rng.normal(size=(2, 3)), np.array([0, 1, 1]))
    assert x_bar_indices is None


def sort_by_field(x):
    return np.sum(np.sort(x, order="f"))


def take_into_buffer(x):
    return np.sum(x.take([0, 1], mode="wrap", out=np.empty(2)))


def test_keywords_out_of_scope_are_refused():
    with pytest.raises(adjoint.AdjointError, match="order="):
        adjoint.grad(sort_by_field)(np.ones(3))
    with pytest.raises(adjoint.AdjointError, match="out="):
        adjoint.grad(take_into_buffer)(np.ones(3))


# ---- np.real_if_close ------------------------------------------------------------------------------

REAL_IF_CLOSE = [  # (domain, shape, dtype, imaginary part added, keyword arguments)
    pytest.param("real", None, np.float64, 0.0, {}, id="python-float"),
    pytest.param("real", (2, 3), np.float64, 0.0, {}, id="real-(2,3)"),
    pytest.param("real", (3,), np.float32, 0.0, {"tol": 1000}, id="real-(3,)-float32"),
    pytest.param("real", (2, 3), np.float64, 1e-17, {}, id="nearly-real-(2,3)"),
    pytest.param("real", (3,), np.float32, 1e-9, {}, id="nearly-real-(3,)-complex64"),
    pytest.param("complex", (2, 3), np.float64, 0.0, {}, id="complex-(2,3)"),
    pytest.param("complex", (), np.float32, 0.0, {"tol": 1e6}, id="complex-()-complex64"),
]


@pytest.mark.parametrize("domain, shape, dtype, imaginary, kwargs", REAL_IF_CLOSE)
def test_real_if_close_rule_matches_finite_differences(rng, domain, shape, dtype, imaginary, kwargs):
    z = sample(rng, domain, shape, dtype)
    if imaginary:
        z = (z + 1j * imaginary).astype(np.complex64 if dtype is np.float32 else np.complex128)
    check_rrule(np.real_if_close, z, **kwargs)


def test_real_if_close_gives_a_complex_input_the_real_cotangent():
    z = np.array([1.5 + 1e-17j, -0.5])
    value, back = lookup(np.real_if_close).rrule(z)
    (z_bar,) = back(np.array([2.0, 3.0]))
    assert value.dtype == np.float64 and z_bar.dtype == np.complex128
    np.testing.assert_array_equal(z_bar, [2.0, 3.0])


def test_real_if_close_of_integers_has_no_cotangent():
    assert lookup(np.real_if_close).rrule(np.arange(3))[1](np.ones(3)) == (None,)


def test_real_if_close_is_inlinable():
    assert inline.plan_for(lookup(np.real_if_close)) is not None


def real_part_of_round_trip(x):
    return np.sum(np.real_if_close(np.fft.ifft(np.fft.fft(x))) * W[:, :2]) + np.sum(np.real_if_close(x) ** 2)


def test_real_if_close_through_compiler(rng):
    check_grad(real_part_of_round_trip, rng.normal(size=(2, 2)))


# ---- np.unique and np.bincount: integer-looking, but their values carry gradients -----------------

X_SELECTION = np.array([0.3, 1.2, -0.5, 2.0])
W_SELECTION = np.array([[0.5, -1.0, 0.25], [1.5, 0.2, -0.7]])


@pytest.mark.parametrize("args, kwargs", [
    ((np.array([0.3, 1.2, -0.5, 2.0]),), {}),
    ((np.array([[0.3, 1.2], [0.7, -0.5]]),), {"return_counts": True}),
    ((np.array([0.3, 1.2, -0.5]), True, True, True), {}),
    ((np.array([[0.3, 1.2], [0.7, -0.5], [0.1, 0.1]]),), {"axis": 0}),
    ((np.array([[0.3, 1.2], [0.7, -0.5]]),), {"axis": -1, "return_inverse": True}),
    ((np.array([0.3 + 1j, -0.5]),), {}),
])
def test_unique_rule(args, kwargs):
    check_rrule(np.unique, *args, **kwargs)


def distinct_sines(a):
    copies = a[np.array([0, 1, 0, 2, 2, 2])]
    return np.sum(np.sin(np.unique(copies)) * np.array([1.0, 2.0, 3.0]))


def distinct_rows(a):
    copies = a[[0, 1, 0]]
    values, counts = np.unique(copies, axis=0, return_counts=True)
    return np.sum(np.sin(values) * counts[:, np.newaxis])


@pytest.mark.parametrize("f, arg", [(distinct_sines, np.array([0.3, 1.2, -0.5])), (distinct_rows, W_SELECTION)])
def test_a_distinct_values_cotangent_is_shared_between_its_copies(f, arg):
    check_grad(f, arg)  # copies move together: the only moves that keep unique's shape


def test_unique_shares_a_cotangent_equally():
    _, back = registry.lookup(np.unique).rrule(np.array([2.0, 1.0, 2.0, 2.0]))
    np.testing.assert_allclose(back(np.array([6.0, 9.0]))[0], [3.0, 6.0, 3.0, 3.0])  # 2's three copies: 3 each


@pytest.mark.parametrize("args, kwargs", [
    ((np.array([0, 2, 2, 1]), np.array([0.3, 1.2, -0.5, 2.0])), {}),
    ((np.array([0, 2, 2]), np.array([0.3, 1.2, -0.5], dtype=np.float32)), {"minlength": 5}),
    ((np.array([1, 1]), [0.5, 2.5]), {}),
    (((0, 1, 1), (0.5, 2.5, -1.0)), {}),  # tuples, read as arrays
])
def test_bincount_rule(args, kwargs):
    check_rrule(np.bincount, *args, **kwargs)


def weighted_counts(w):
    return np.sum(np.bincount(np.array([0, 2, 2, 1]), weights=w, minlength=4) ** 2)


def test_bincount_differentiates_through_its_weights():
    check_grad(weighted_counts, X_SELECTION)


RRULE_PRIMITIVES += [np.unique, np.bincount]
