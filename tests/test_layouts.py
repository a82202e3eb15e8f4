"""adjoint/layouts.py: what each type's values are made of, worked out once per type. Its answers
must be the general functions' (`is_struct`, `fields_of`, `is_differentiable`, `tree.children`),
and must not outlive what they were worked out from."""

import abc
import collections
import dataclasses
import gc
import numbers
import weakref

import numpy as np
import pytest

import adjoint
from adjoint import layouts, tree
from adjoint.layouts import layout_of
from adjoint.runtime import is_differentiable
from adjoint.runtime.structs import Tangent, fields_of, is_struct


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    activation: object = np.tanh


@dataclasses.dataclass
class Extended:
    W: np.ndarray

    def __post_init__(self):
        self.cache = 2.0  # not a field: `fields_of` lists it after the fields


@dataclasses.dataclass
class Reordered:
    W: np.ndarray
    b: np.ndarray

    def __init__(self, W, b):
        self.b, self.W = b, W  # set out of field order: `fields_of` gives field order


class Plain:
    def __init__(self, W):
        self.W, self.n = W, 3


class Slotted:
    __slots__ = ("W", "n")

    def __init__(self, W):
        self.W, self.n = W, 3


@dataclasses.dataclass(slots=True)
class SlottedDataclass:
    W: np.ndarray


class OwnAttributes:
    def __init__(self):
        self.W = np.ones(2)

    def __getattribute__(self, name):
        return object.__getattribute__(self, name)


class Positive:
    """A descriptor that stores its value in the instance's dict under the same name."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        return self if obj is None else abs(obj.__dict__[self.name])

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value


@dataclasses.dataclass
class WithDescriptor:
    scale: float = Positive()


class Disguised:
    @property
    def __class__(self):
        return float


Point = collections.namedtuple("Point", "x y")


class Tagged(dict):
    pass


VALUES = [
    1.5, np.float64(2.0), np.float32(1.0), 2j, np.ones(2), np.arange(3), np.ones(2, dtype=np.float32),
    3, True, "s", None, len, np.tanh, lambda x: x, Dense, {"W": np.ones(1)}, [1.0, 2], (1.0,), Point(1.0, 2),
    Tagged(a=1.0), collections.OrderedDict(a=1.0), Tangent(Dense, W=np.ones(1)),
    Dense(np.ones(2), np.ones(2)), Extended(np.ones(2)), Reordered(np.ones(1), np.ones(2)), Plain(1.0),
    Slotted(np.ones(2)), SlottedDataclass(np.ones(1)), OwnAttributes(), WithDescriptor(-2.0), Disguised(),
    adjoint.params(np.ones(2)),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_layout_answers_as_the_general_functions_do(value):
    layout = layout_of(type(value))
    assert layouts.is_differentiable(value, layout) == is_differentiable(value)
    assert tree.children(value) == tree._children_of_any(value)
    if layout.kind in (layouts.OBJECT, layouts.DATACLASS, layouts.STRUCT):
        assert is_struct(value)
        assert list(layouts.fields(value, layout).items()) == list(fields_of(value).items())
    elif layout.kind is not layouts.GENERIC:
        assert not is_struct(value)


def test_a_dataclass_whose_dict_is_not_in_field_order_is_read_as_fields_of_reads_it():
    value = Reordered(np.ones(1), np.ones(2))
    assert list(layouts.fields(value, layout_of(Reordered))) == ["W", "b"]
    assert [key for key, _ in tree.children(value)] == ["W", "b"]


def test_a_field_behind_a_descriptor_is_read_through_it():
    value = WithDescriptor(-2.0)
    assert layout_of(WithDescriptor).kind is layouts.STRUCT
    assert tree.children(value) == [("scale", 2.0)]


def test_a_value_disguised_as_another_type_is_asked_every_time():
    assert layout_of(Disguised).kind is layouts.GENERIC


def test_a_class_is_not_kept_alive_and_its_entry_goes_with_it():
    def make():
        class Layer:
            def __init__(self):
                self.W = np.ones(2)

        return Layer

    Layer = make()
    key = id(Layer)
    assert layout_of(Layer).kind is layouts.OBJECT and key in layouts._layouts.entries
    tree.tree_leaves(Layer())
    alive = weakref.ref(Layer)
    del Layer
    gc.collect()
    assert alive() is None
    assert key not in layouts._layouts.entries


def test_an_abc_registration_is_seen():
    class Amount:
        def __init__(self, value):
            self.value = value

    assert tree.children(Amount(1.0)) == [("value", 1.0)]
    numbers.Number.register(Amount)  # now `is_struct` says it is a number: a leaf
    assert not is_struct(Amount(1.0))
    assert tree.children(Amount(1.0)) == []
    assert layout_of(Amount).kind is layouts.LEAF


def test_metadata_frozen_fields_are_kept_per_class():
    @dataclasses.dataclass
    class Norm:
        scale: np.ndarray
        eps: np.ndarray = dataclasses.field(default=None, metadata={"trainable": False})

    assert layout_of(Norm).metadata_frozen == {"eps"}
    assert layout_of(Dense).metadata_frozen == frozenset()


def test_an_abc_subclass_check_by_registration_is_not_missed_by_kind():
    class Meta(abc.ABC):
        pass

    class Holder:
        def __init__(self):
            self.W = np.ones(1)

    assert layout_of(Holder).kind is layouts.OBJECT
    Meta.register(Holder)  # a registration unrelated to adjoint: the table is rebuilt, same answers
    assert layout_of(Holder).kind is layouts.OBJECT
