"""adjoint/runtime/building.py: building objects from differentiable values (`construct`)."""

import dataclasses

import numpy as np
import pytest

from adjoint.runtime import RuleError
from adjoint.runtime.building import construct, construct_vjp, is_constructible
from support import Computed, Dense, FrozenDense, Plain, Point, Slotted
from adjoint.runtime.structs import Tangent

class Stored:
    """Stores its argument, and also computes a float field of its own."""

    def __init__(self, W):
        self.W = W
        self.norm = float(np.sum(W))


W = np.array([[1.0, 2.0], [3.0, -1.0]])
B = np.array([0.5, -0.5])


# ---- is_constructible -------------------------------------------------------------------------


class NoInit:
    pass


class InheritsInit(Plain):
    pass


@pytest.mark.parametrize("cls", [Dense, FrozenDense, Point, Plain, InheritsInit, Slotted], ids=lambda c: c.__name__)
def test_constructible_classes(cls):
    assert is_constructible(cls)


@pytest.mark.parametrize(
    "value", [dict, list, int, float, np.ndarray, np.float64, NoInit, Dense(W, B), len, "Dense"],
    ids=lambda c: getattr(c, "__name__", type(c).__name__),
)
def test_not_constructible(value):
    assert not is_constructible(value)


# ---- construct / construct_vjp ----------------------------------------------------------------


def test_construct_builds_the_object_and_routes_field_cotangents_to_arguments():
    obj, back = construct(Dense, (W,), {"b": B})
    assert isinstance(obj, Dense) and obj.W is W and obj.b is B
    gW, gb = np.ones_like(W), np.full(2, 3.0)
    arg_bars, keyword_bars = back(Tangent(Dense, W=gW, b=gb))
    assert arg_bars[0] is gW and keyword_bars == {"b": gb}


def test_construct_gives_zeros_for_fields_without_cotangent_and_none_for_ints():
    _, back = construct(Dense, (W, B, 3), {})
    arg_bars, keyword_bars = back(Tangent(Dense, W=np.ones_like(W)))
    np.testing.assert_array_equal(arg_bars[1], np.zeros(2))
    assert arg_bars[2] is None and keyword_bars == {}
    arg_bars, _ = back(None)
    assert not arg_bars[0].any() and not arg_bars[1].any() and arg_bars[2] is None


def test_construct_a_namedtuple_takes_a_namedtuple_cotangent():
    obj, back = construct(Point, (1.5,), {"y": np.ones(2)})
    assert obj == Point(1.5, obj.y)
    arg_bars, keyword_bars = back(Point(2.0, None))
    assert arg_bars == (2.0,)
    np.testing.assert_array_equal(keyword_bars["y"], [0.0, 0.0])


def test_construct_a_frozen_dataclass_and_a_plain_class():
    _, back = construct(FrozenDense, (W, B), {})
    assert back(Tangent(FrozenDense, b=1.0))[0][1] == 1.0
    obj, back = construct(Plain, (2.5,), {"name": "layer"})
    assert obj.name == "layer"
    assert back(Tangent(Plain, W=4.0)) == ((4.0,), {"name": None})


def test_construct_refuses_a_constructor_that_transforms_a_float_argument():
    with pytest.raises(RuleError, match=r"`Computed\(\.\.\.\)` does not store its argument 0"):
        construct(Computed, (W,), {})
    with pytest.raises(RuleError, match="`W=`"):
        construct(Computed, (), {"W": W})


def test_construct_does_not_refuse_a_transformed_argument_without_floats():
    class Counter:
        def __init__(self, n):
            self.n = n + 1

    obj, back = construct(Counter, (2,), {})
    assert obj.n == 3 and back(None) == ((None,), {})


def test_construct_refuses_a_gradient_reaching_a_computed_float_field():
    _, back = construct(Stored, (W,), {})
    assert back(Tangent(Stored, W=np.ones_like(W)))[0][0].shape == W.shape
    with pytest.raises(RuleError, match="`norm`"):
        back(Tangent(Stored, norm=1.0))


def test_construct_ignores_gradients_reaching_default_fields_of_a_dataclass():
    @dataclasses.dataclass
    class WithDefault:
        W: np.ndarray
        scale: float = 2.0

    _, back = construct(WithDefault, (W,), {})
    arg_bars, _ = back(Tangent(WithDefault, W=np.ones_like(W), scale=5.0))
    np.testing.assert_array_equal(arg_bars[0], np.ones_like(W))


def test_construct_an_object_holding_a_cyclic_argument_terminates():
    parent = Plain(W)
    parent.me = parent
    obj, back = construct(Plain, (parent,), {})
    g = Tangent(Plain, W=Tangent(Plain, W=np.ones_like(W)))
    assert obj.W is parent and back(g)[0][0].W.shape == W.shape


def test_construct_vjp_returns_one_cotangent_per_positional_argument():
    obj, back = construct_vjp((0, 1), Dense, W, B)
    bars = back(Tangent(Dense, W=1.0, b=2.0))
    assert bars == (1.0, 2.0)
