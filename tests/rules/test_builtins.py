"""Rules of adjoint/rules/builtins.py: Python's `sum`, `max` and `min`, and the non-differentiable built-ins."""

import builtins

import numpy as np
import pytest

import adjoint  # noqa: F401  (registers the built-in rules)
from adjoint import registry
from adjoint import runtime as adj
from adjoint.registry import lookup
from adjoint.testing import check_rrule

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [builtins.sum, builtins.max, builtins.min, builtins.super]


# ---- sum ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4,), (3, 2)])
def test_sum_over_an_array_matches_finite_differences(rng, shape, dtype):
    check_rrule(builtins.sum, rng.normal(size=shape).astype(dtype), 0.5)
    check_rrule(builtins.sum, rng.normal(size=shape).astype(dtype), rng.normal(size=shape[1:]).astype(dtype))


@pytest.mark.parametrize("container", [list, tuple])
def test_sum_over_a_sequence_gives_each_item_the_cotangent(container):
    items = container([1.5, np.array([1.0, 2.0]), 3, np.float32(2.0)])
    value, back = lookup(builtins.sum).rrule(items, 0.25)
    np.testing.assert_allclose(value, [7.75, 8.75])
    items_bar, start_bar = back(np.array([1.0, 10.0]))
    assert type(items_bar) is container and len(items_bar) == 4
    assert items_bar[0] == 11.0 and items_bar[2] is None and start_bar == 11.0
    np.testing.assert_array_equal(items_bar[1], [1.0, 10.0])
    assert items_bar[3] == 11.0 and items_bar[3].dtype == np.float32


def test_sum_of_a_generator_of_floats_is_refused():
    with pytest.raises(adj.RuleError, match=r"generator.*sum\(\[\.\.\.\]\)"):
        lookup(builtins.sum).rrule(x * 2.0 for x in [1.0, 2.0])


def test_sum_of_a_generator_of_ints_has_no_gradient_to_give():
    value, _ = lookup(builtins.sum).rrule(i for i in range(4))
    assert value == 6
    assert adj.vjp((), builtins.sum, range(4))[0] == 6


# ---- max and min ------------------------------------------------------------------------------------

@pytest.mark.parametrize("primitive", [builtins.max, builtins.min])
@pytest.mark.parametrize("args", [(0.5, -1.5), (0.5, 2.0, -1.0), (np.float64(0.5), 2.0, np.float32(-1.0))],
                         ids=["two", "three", "numpy-scalars"])
def test_max_and_min_of_numbers_match_finite_differences(primitive, args):
    check_rrule(primitive, *args)


def test_max_gives_the_cotangent_to_the_first_of_equal_arguments():
    a, b = 2.0, 2.0
    value, back = lookup(builtins.max).rrule(1.0, a, b)
    assert value is a
    assert back(5.0) == (0.0, 5.0, 0.0)


@pytest.mark.parametrize("items", [[1.0, 5.0, 5.0, 2.0], (1.0, 5.0, 5.0, 2.0), np.array([1.0, 5.0, 5.0, 2.0])],
                         ids=["list", "tuple", "array"])
def test_max_of_an_iterable_gives_its_cotangent_to_the_chosen_item(items):
    value, back = lookup(builtins.max).rrule(items)
    assert value == 5.0
    (items_bar,) = back(3.0)
    assert type(items_bar) is type(items)
    np.testing.assert_array_equal(items_bar, [0.0, 3.0, 0.0, 0.0])


def test_min_with_a_key_gives_the_cotangent_to_the_chosen_item():
    value, back = lookup(builtins.min).rrule([3.0, -4.0, 1.0], key=abs)
    assert value == 1.0
    assert back(2.0) == ([0.0, 0.0, 2.0],)


def test_max_with_a_default_of_an_empty_list_gives_no_cotangent():
    value, back = lookup(builtins.max).rrule([], default=0.0)
    assert value == 0.0 and back(1.0) == ([],)


# ---- no gradient ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "primitive",
    [len, range, isinstance, issubclass, type, int, bool, round, print, repr, str, id, hash, hasattr, callable,
     all, any, ord, chr],
)
def test_builtins_whose_results_carry_no_gradient(primitive):
    assert registry.is_non_differentiable(primitive)


# ---- super ------------------------------------------------------------------------------------------

class _Base:
    def __init__(self, w):
        self.w = w

    def scaled(self, x):
        return self.w * x


class _Child(_Base):
    def scaled(self, x):
        return 2.0 * super().scaled(x)


def test_super_rule_hands_the_proxys_cotangent_to_the_object():
    child = _Child(np.array([1.0, 2.0], dtype=np.float32))
    # check_rrule checks the proxy against a plain `super(_Child, child)` and that the class gets
    # no cotangent; a proxy has no fields of its own to perturb (the object's cotangent reaches
    # it through the methods called on it), so its pullback is checked here by hand.
    check_rrule(builtins.super, _Child, child)
    value, back = registry.lookup(builtins.super).rrule(_Child, child)
    np.testing.assert_array_equal(value.scaled(3.0), [3.0, 6.0])  # _Base's method, not _Child's
    child_bar = adj.Tangent(_Child, w=np.array([0.5, -1.0], dtype=np.float32))
    cls_bar, obj_bar = back(child_bar)
    assert cls_bar is None and obj_bar is child_bar


def test_super_method_call_in_differentiated_code_reaches_the_objects_fields(rng):
    from adjoint.testing import check_grad

    child = _Child(rng.normal(size=2))
    check_grad(lambda c, x: np.sum(c.scaled(x) ** 2), child, rng.normal(size=2))
