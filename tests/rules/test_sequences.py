"""Rules of adjoint/rules/sequences.py (list, tuple, np.array and np.asarray of sequences, float conversions).

Each is linear, so its pullback must satisfy <pullback(g), u> = <g, f(u)> for any input
direction `u`: the tests check that identity, which covers sequence arguments that
`check_rrule` (which perturbs arrays and floats only) passes over.
"""

import builtins

import numpy as np
import pytest

import adjoint  # noqa: F401  (registers the built-in rules)
from adjoint.registry import lookup
from adjoint.testing import check_rrule

# The primitives the tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [
    builtins.list, builtins.tuple, np.array, np.asarray, np.float64, np.float32, np.float16,
    np.ndarray.item,
]


def inner(a, b) -> float:
    """<a, b> over arrays, floats and nested lists and tuples; None is zero."""
    if a is None or b is None:
        return 0.0
    if isinstance(a, (tuple, list)):
        return sum(inner(x, y) for x, y in zip(a, b))
    return float(np.sum(np.asarray(a) * np.asarray(b)))


def assert_adjoint(primitive, args, directions, rng):
    value, back = lookup(primitive).rrule(*args)
    g = np.asarray(rng.normal(size=np.shape(value))) if isinstance(value, np.ndarray) else type(value)(
        rng.normal(size=np.shape(v)) for v in value
    )
    assert inner(back(g), directions) == pytest.approx(inner(g, primitive(*directions)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("primitive", [builtins.list, builtins.tuple])
def test_list_and_tuple_of_an_array_match_finite_differences(rng, primitive, dtype):
    check_rrule(primitive, rng.normal(size=(3, 2)).astype(dtype))


@pytest.mark.parametrize("primitive", [builtins.list, builtins.tuple])
def test_list_and_tuple_of_a_sequence_hand_each_item_its_cotangent(primitive):
    _, back = lookup(primitive).rrule((1.5, np.ones(2), 3))
    (items_bar,) = back(primitive([2.0, np.array([1.0, 2.0]), None]))
    assert type(items_bar) is tuple and items_bar[0] == 2.0 and items_bar[2] is None
    np.testing.assert_array_equal(items_bar[1], [1.0, 2.0])


@pytest.mark.parametrize("primitive", [np.array, np.asarray])
def test_array_of_nested_lists_is_adjoint_to_its_pullback(rng, primitive):
    obj = [[1.5, np.float64(2.0)], [np.float32(3.0), -1.0]]
    directions = [[float(rng.normal()) for _ in row] for row in obj]
    assert_adjoint(primitive, (obj,), (directions,), rng)


@pytest.mark.parametrize("primitive", [np.array, np.asarray])
def test_array_of_a_list_of_arrays_matches_finite_differences(rng, primitive):
    rows = [rng.normal(size=3), rng.normal(size=3)]
    value, back = lookup(primitive).rrule(rows)
    (rows_bar, _) = back(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(rows_bar[1], [3.0, 4.0, 5.0])
    check_rrule(primitive, rng.normal(size=(2, 3)))


@pytest.mark.parametrize("primitive", [np.array, np.asarray])
def test_array_of_float32_items_and_arrays_keeps_their_precision(rng, primitive):
    check_rrule(primitive, rng.normal(size=(2, 3)).astype(np.float32))
    check_rrule(primitive, rng.normal(size=(2, 3)).astype(np.float32), dtype=np.float64)
    rows = [rng.normal(size=3).astype(np.float32), np.float32(0.5) * np.ones(3, dtype=np.float32)]
    _, back = lookup(primitive).rrule(rows)
    (rows_bar, _) = back(np.ones((2, 3)))
    assert all(row.dtype == np.float32 for row in rows_bar)


@pytest.mark.parametrize("kind", [np.float64, np.float32])
def test_float_conversions(kind):
    # a linear map: any step is exact, and a float32 result needs a large one
    check_rrule(kind, 0.7, eps=0.1)
    check_rrule(kind, np.float64(0.3), eps=0.1)
    check_rrule(kind, np.float32(0.3), eps=0.1)
    check_rrule(kind, np.array([0.3, -1.2], dtype=np.float32), eps=0.1)


# float16 keeps about 3 digits: a step of 0.05 measures the slope to within 1%.
@pytest.mark.parametrize("x", [0.7, np.float64(-0.4), np.float32(0.7), np.array([0.7, -1.2], dtype=np.float32)],
                         ids=["float", "float64", "float32", "float32-array"])
def test_float16_conversion_matches_finite_differences(x):
    check_rrule(np.float16, x, eps=0.05, rtol=1e-2)


def test_float16_conversion_casts_the_gradient_back():
    value, back = lookup(np.float16).rrule(np.float64(0.5))
    assert type(value) is np.float16
    (x_bar,) = back(np.float16(2.0))
    assert x_bar == 2.0 and type(x_bar) is np.float64


def test_item_of_an_array_and_of_a_scalar():
    check_rrule(np.ndarray.item, np.array([[0.4]]))
    check_rrule(np.ndarray.item, np.array([0.1, 0.2, 0.3], dtype=np.float32), 2)
    check_rrule(np.ndarray.item, np.array([0.1, 0.2, 0.3]), 1)
    check_rrule(np.ndarray.item, np.array([[0.1, 0.2], [0.3, 0.4]]), 1, 0)
    check_rrule(np.ndarray.item, np.array([[0.1, 0.2], [0.3, 0.4]]), (1, 0))  # one tuple index
    value, back = lookup(np.ndarray.item).rrule(np.float64(2.5))
    assert value == 2.5 and back(1.0)[0] == 1.0
