"""adjoint/runtime/remembered.py: `ByIdentity` (a value per object, forgotten with the object) and
`class_attribute` (a class's attribute, remembered and checked again against the class dicts)."""

import abc
import functools
import gc
import inspect
import weakref

import numpy as np
import pytest

from adjoint.runtime.remembered import ByIdentity, class_attribute


# ---- ByIdentity ---------------------------------------------------------------------------------


def test_a_value_is_found_by_the_object_itself_not_by_an_equal_one():
    table = ByIdentity()
    key = (lambda: 1)
    table[key] = "first"
    assert table.get(key) == "first"
    assert table.get(lambda: 1) is None
    assert table.get(key.__code__, "absent") == "absent"


def test_an_object_made_in_a_loop_is_not_kept_alive():
    table = ByIdentity()
    for k in range(50):
        cls = type(f"Layer{k}", (), {})
        table[cls] = k
    del cls
    gc.collect()
    assert len(table) == 0


def test_an_object_that_cannot_be_weakly_referenced_is_never_remembered():
    table, plain = ByIdentity(), object()
    table[plain] = "a plain object"
    assert table.get(plain) is None and len(table) == 0


def test_a_dead_objects_reused_id_does_not_find_its_value():
    table = ByIdentity()
    first = type("First", (), {})
    table[first] = "first"
    key = id(first)
    reference = table.entries[key][0]
    del first
    gc.collect()
    assert reference() is None and key not in table.entries


# ---- class_attribute ----------------------------------------------------------------------------


class Base:
    scale = 2.0

    def forward(self, x):
        return x


class Layer(Base):
    def __call__(self, x):
        return x


@pytest.mark.parametrize("name", ["forward", "__call__", "scale", "missing", "__init__", "mro"])
def test_it_is_what_getattr_static_finds(name):
    for _ in range(2):  # looked up, then remembered
        assert class_attribute(Layer, name, "absent") is inspect.getattr_static(Layer, name, "absent")


def make_classes():
    class Parent:
        def forward(self, x):
            return x

    class Child(Parent):
        pass

    return Parent, Child


def test_a_monkeypatched_method_is_seen():
    Parent, Child = make_classes()
    original = class_attribute(Child, "forward")
    assert original is Parent.__dict__["forward"]

    def replaced(self, x):
        return 2 * x

    Parent.forward = replaced
    assert class_attribute(Child, "forward") is replaced


def test_a_method_defined_on_a_subclass_since_shadows_the_base():
    Parent, Child = make_classes()
    class_attribute(Child, "forward")
    Child.forward = staticmethod(lambda x: x)
    assert isinstance(class_attribute(Child, "forward"), staticmethod)
    del Child.forward
    assert class_attribute(Child, "forward") is Parent.__dict__["forward"]


def test_the_same_function_as_a_static_method_is_seen():
    Parent, Child = make_classes()
    function = class_attribute(Child, "forward")
    Parent.forward = staticmethod(function)  # `getattr` would give the same function back
    assert isinstance(class_attribute(Child, "forward"), staticmethod)


def test_an_attribute_missing_then_added_is_seen():
    Parent, Child = make_classes()
    assert class_attribute(Child, "W") is None
    Parent.W = property(lambda self: 1.0)
    assert isinstance(class_attribute(Child, "W"), property)


def test_new_bases_are_seen():
    Parent, Child = make_classes()
    class_attribute(Child, "forward")

    class Other:
        def forward(self, x):
            return -x

    Child.__bases__ = (Other,)
    assert class_attribute(Child, "forward") is Other.__dict__["forward"]


def test_abstract_classes_and_classes_made_in_a_loop():
    class Interface(abc.ABC):
        @abc.abstractmethod
        def forward(self, x): ...

    class Impl(Interface):
        def forward(self, x):
            return x

    assert class_attribute(Impl, "forward") is Impl.__dict__["forward"]
    functions = [class_attribute(type("L", (), {"f": lambda self: k}), "f") for k in range(3)]
    assert len(set(map(id, functions))) == 3


@pytest.mark.parametrize("name", ["forward", "missing"])
def test_a_class_looked_up_is_not_kept_alive(name):
    def make():
        class Layer:
            def forward(self, x):
                return x

        return Layer

    Layer = make()
    class_attribute(Layer, name)
    alive = weakref.ref(Layer)
    del Layer
    gc.collect()
    assert alive() is None


def test_a_class_with_a_metaclass_of_its_own_is_looked_up_afresh():
    class Meta(type):
        pass

    class Special(metaclass=Meta):
        def forward(self, x):
            return x

    assert class_attribute(Special, "forward") is Special.__dict__["forward"]
    Special.forward = functools.partial(np.add, 1)
    assert isinstance(class_attribute(Special, "forward"), functools.partial)
