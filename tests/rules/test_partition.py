"""The rule of np.partition (adjoint/rules/selection.py), checked directly (check_rrule), against
where each entry went, and through the compiler.

NumPy's `partition` and `argpartition` may arrange the entries between the kth ones differently
(lanes of some hundreds of entries take a vectorized selection on CPUs with AVX-512), so the
rule must not take its permutation from `argpartition`: the long lanes below catch that.
"""

import numpy as np
import pytest

import adjoint
from adjoint.compiler import inline
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, sample

RRULE_PRIMITIVES = [np.partition]

PARTITIONS = [  # (shape, positional arguments after the array, keyword arguments)
    ((3,), (1,), {}),
    ((3,), (-1,), {}),
    ((2, 3), (0,), {}),
    ((2, 3), (1, 0), {}),
    ((1, 3), ([0, 2],), {}),
    ((2, 3), (3,), {"axis": None}),
    ((2, 3, 4), (2,), {"axis": 2, "kind": "introselect"}),
    ((40,), (13,), {}),
    ((300,), (100,), {}),
    ((2, 300), ([20, 150, 290],), {"axis": -1}),
    ((300, 2), (30, 0), {}),
]
PARTITION_CASES = [
    pytest.param(shape, extra, kwargs, id=f"{shape}-{extra}-{kwargs}".replace(" ", ""))
    for shape, extra, kwargs in PARTITIONS
]


@pytest.mark.parametrize("shape, extra, kwargs", PARTITION_CASES)
def test_partition_rule_matches_finite_differences(rng, shape, extra, kwargs):
    check_rrule(np.partition, sample(rng, "distinct", shape), *extra, **kwargs)


def expected_partition_bar(x, value, g, axis):
    """A reference: each entry of `x` (distinct values) gets the cotangent of the slot of
    `value` that holds it, found by comparing values along each lane."""
    if axis is None:
        return np.reshape(expected_partition_bar(np.ravel(x), value, g, -1), np.shape(x))
    lanes, value_lanes, g_lanes = (np.moveaxis(v, axis, -1) for v in (x, value, g))
    slot = np.argmax(lanes[..., :, None] == value_lanes[..., None, :], axis=-1)
    return np.moveaxis(np.take_along_axis(g_lanes, slot, -1), -1, axis)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("shape, extra, kwargs", PARTITION_CASES)
def test_partition_sends_each_slot_to_the_entry_it_holds(rng, shape, extra, kwargs, dtype):
    # In float32, finite differences (taken in float64) would see NumPy arrange the entries
    # differently: the cotangent is checked against where each entry went instead.
    x = sample(rng, "distinct", shape, dtype)
    value, back = lookup(np.partition).rrule(x, *extra, **kwargs)
    g = rng.normal(size=value.shape).astype(dtype)
    x_bar, kth_bar = back(g)
    assert kth_bar is None and x_bar.dtype == dtype
    axis = kwargs.get("axis", extra[1] if len(extra) > 1 else -1)
    np.testing.assert_array_equal(x_bar, expected_partition_bar(x, value, g, axis))


def test_partition_with_ties_gives_each_tied_entry_one_slot():
    _, back = lookup(np.partition).rrule(np.array([2.0, 1.0, 2.0, 0.0]), 1)
    x_bar, _ = back(np.array([1.0, 10.0, 100.0, 1000.0]))
    assert x_bar[3] == 1.0 and x_bar[1] == 10.0 and sorted(x_bar[[0, 2]]) == [100.0, 1000.0]


def test_partition_of_integers_has_no_cotangent():
    _, back = lookup(np.partition).rrule(np.array([3, 1, 2]), 1)
    assert back(np.ones(3)) == (None, None)


def test_partition_is_inlinable():
    assert inline.plan_for(lookup(np.partition)) is not None


# ---- through the compiler ------------------------------------------------------------------------

W = np.linspace(-1.0, 2.0, 12).reshape(3, 4)


def weights_by_partition(x):
    return np.sum(np.partition(x, 1, axis=0) * W) + np.sum(np.partition(x.ravel(), [2, 8]) ** 3)


def smallest_and_rest(x):
    # Depends on the entries between the kth ones only through symmetric functions: the same
    # in float32 and float64, however NumPy arranges them.
    part = np.partition(x, 2, axis=1)
    return np.sum(part[:, 2] * W[:, 0]) + np.sum(part[:, :2] ** 2) + np.sum(np.exp(part[:, 3:]))


def test_partition_through_compiler(rng):
    check_grad(weights_by_partition, sample(rng, "distinct", (3, 4)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.__name__)
def test_partition_through_compiler_keeps_the_dtype(rng, dtype):
    x = sample(rng, "distinct", (3, 4), dtype)
    check_grad(smallest_and_rest, x)
    assert adjoint.grad(smallest_and_rest)(x).dtype == dtype


def partition_by_field(x):
    return np.sum(np.partition(x, 1, order="f"))


def test_partition_order_is_refused():
    with pytest.raises(adjoint.AdjointError, match="order="):
        adjoint.grad(partition_by_field)(np.ones(3))
