"""Rules of adjoint/rules/containers.py: `adj.setitem`, `adj.append` and `adj.add_at`, which
`normalize` writes for `x[i] = v`, `xs.append(v)` and `np.add.at(x, i, v)`."""

import numpy as np
import pytest

import adjoint  # noqa: F401  (registers the built-in rules)
from adjoint import runtime as adj
from adjoint.registry import lookup
from adjoint.testing import check_rrule

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [adj.setitem, adj.append, adj.add_at]

# (shape of x, index, value)
SETITEM_CASES = [
    pytest.param((4,), 2, 0.5, id="int-python-float"),
    pytest.param((4,), slice(1, 4, 2), np.array([0.5, -1.0]), id="slice-with-step"),
    pytest.param((2, 3), (slice(None), 1), 0.5, id="column-broadcast-float"),
    pytest.param((2, 3), 0, np.array([[1.0, 2.0, 3.0]]), id="row-from-leading-unit-axis"),
    pytest.param((2, 3), (np.array([1, 0]), np.array([2, 2])), np.array([0.5, -1.0]), id="distinct-fancy"),
    pytest.param((2, 3), np.array([[True, False, True], [False, True, False]]), 2.0, id="mask"),
]


@pytest.mark.parametrize("shape, index, value", SETITEM_CASES)
def test_setitem_rule_matches_finite_differences(rng, shape, index, value):
    check_rrule(adj.setitem, rng.normal(size=shape), index, value)


def test_setitem_rule_keeps_float32(rng):
    check_rrule(adj.setitem, rng.normal(size=(2, 3)).astype(np.float32), 1, np.float32(0.5))


def test_setitem_rule_refuses_repeated_indices_in_the_pullback():
    _, back = lookup(adj.setitem).rrule(np.zeros(3), [1, 1], np.array([1.0, 2.0]))
    with pytest.raises(adj.RuleError, match="repeated"):
        back(np.ones(3))


def test_setitem_rule_on_a_list_and_a_dict():
    _, back = lookup(adj.setitem).rrule([1.0, 2.0], 0, 5.0)
    assert back([3.0, 4.0]) == ([None, 4.0], None, 3.0)  # the overwritten item: zero (None)
    _, back = lookup(adj.setitem).rrule({"a": 1.0}, "a", 5.0)
    assert back({"a": 3.0}) == ({"a": 0.0}, None, 3.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_append_rule_matches_finite_differences(rng, dtype):
    check_rrule(adj.append, [1.0, rng.normal(size=2).astype(dtype)], rng.normal(size=3).astype(dtype))


def test_append_rule_gives_the_list_its_part_of_the_cotangent():
    _, back = lookup(adj.append).rrule([1.0, 2.0], 3.0)
    assert back([4.0, 5.0, 6.0]) == ([4.0, 5.0], 6.0)


# (shape of x, index, value): repeated indices add up
ADD_AT_CASES = [
    pytest.param((4,), [0, 2, 0], np.array([0.5, -1.0, 2.0]), id="repeated"),
    pytest.param((4,), [1, 1], 0.5, id="repeated-python-float"),
    pytest.param((2, 3), ([0, 1, 0], [2, 2, 2]), np.array([1.0, 2.0, 3.0]), id="fancy-2d"),
    pytest.param((2, 3), 1, np.array([1.0, 2.0, 3.0]), id="row"),
    pytest.param((3, 2), [0, 0], np.array([1.0, -2.0]), id="rows-broadcast"),
]


@pytest.mark.parametrize("shape, index, value", ADD_AT_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_at_rule_matches_finite_differences(rng, shape, index, value, dtype):
    value = np.asarray(value, dtype=dtype) if isinstance(value, np.ndarray) else value
    check_rrule(adj.add_at, rng.normal(size=shape).astype(dtype), index, value)
