"""What the values of each type are made of as trees, worked out once per type.

Every gradient of a model asks of each node of the model what kind of node it is and what its
fields are (`tree.children`, and the walks of `trainable` and `structure`). The general answers
(`runtime.structs.is_struct`, `fields_of`, `dataclasses.fields`) take dozens of steps each, and
nearly all of what they find depends on the node's type alone. `layout_of(type(node))` works
that out once per type, and `fields(obj, layout)` then reads an object's fields in a step or
two where its type allows, giving exactly what `fields_of` gives.

What is kept, and why it stays true:

- A `Layout` per type, in a table keyed by the type's id that forgets the type when the type
  is collected (a class defined in a loop is not kept alive, and its id is not mistaken for a
  later class's).
- Only what a class's definition fixes: its bases, `__slots__`, dataclass fields and their
  metadata, whether its instances hold a `__dict__`, and which of its attributes are
  descriptors. A type whose instances could answer differently one by one (attribute access
  of its own, a `__class__` of its own, an instance `__dict__` found some other way) is
  `GENERIC`: its values are asked the general questions every time.
- The table is emptied when an ABC registration changes what `isinstance` says
  (`numbers.Number.register(cls)` makes cls's objects leaves): see `abc.get_cache_token`.
- A class's `__trainable__`, which may be assigned or reassigned between calls, is not kept:
  `trainable.frozen_fields` reads it every time.

>>> import dataclasses, numpy as np
>>> @dataclasses.dataclass
... class Dense:
...     W: np.ndarray
...     b: np.ndarray
>>> layout = layout_of(Dense)
>>> layout.kind == DATACLASS, layout.names
(True, ('W', 'b'))
>>> fields(Dense(1.0, 2.0), layout)
{'W': 1.0, 'b': 2.0}
"""

from __future__ import annotations

import abc
import dataclasses
import types

import numpy as np

from .runtime import is_differentiable as _is_differentiable
from .runtime import structs
from .runtime.remembered import ByIdentity
from .runtime.structs import Tangent

# The kinds of node. The first three hold no children: a `FLOAT` is always differentiable, an
# `ARRAY` (an ndarray or NumPy scalar) when its dtype is a float or complex one.
FLOAT, ARRAY, LEAF = "float", "array", "leaf"
DICT, LIST, TUPLE, NAMEDTUPLE, TANGENT = "dict", "list", "tuple", "namedtuple", "tangent"  # exact types
OBJECT = "object"  # an object whose fields are its instance `__dict__`
DATACLASS = "dataclass"  # a dataclass whose fields are usually its instance `__dict__`, in field order
STRUCT = "struct"  # any other object of the user's: `fields_of` reads its fields
GENERIC = "generic"  # decided value by value, by the general functions
OBJECTS = frozenset({OBJECT, DATACLASS, STRUCT})  # the kinds of a user's object (`is_struct`)


class Layout:
    """What the values of one type are made of: its `kind`, the dataclass field `names` (in
    order), and the fields that dataclass metadata declares frozen (`metadata_frozen`). It
    also keeps the `plans` made for trees rooted at values of the type (see `adjoint.plans`),
    so that they go with it."""

    __slots__ = ("kind", "names", "metadata_frozen", "plans", "plan_calls", "plan_builds")

    def __init__(self, kind, names=(), metadata_frozen=frozenset()):
        self.kind, self.names, self.metadata_frozen = kind, names, metadata_frozen
        self.plans, self.plan_calls, self.plan_builds = (), 0, 0

    def __repr__(self):
        return f"Layout({self.kind!r}, names={self.names!r})"


_layouts = ByIdentity()  # type -> its Layout, while the type lives
_abc_token = abc.get_cache_token()


def layout_of(cls) -> Layout:
    """The `Layout` of the values of type `cls` (worked out on first use, then kept)."""
    global _abc_token
    if _abc_token != abc.get_cache_token():  # a registration may have changed `isinstance` answers
        _layouts.clear()
        _abc_token = abc.get_cache_token()
    entry = _layouts.entries.get(id(cls))  # (`_layouts.get(cls)`, without its call)
    if entry is not None and entry[0]() is cls:
        return entry[1]
    layout = _layouts[cls] = _worked_out(cls)
    return layout


def fields(obj, layout: Layout) -> dict:
    """`obj`'s fields by name, in declaration order, as `runtime.structs.fields_of` gives them;
    `layout` is `layout_of(type(obj))`, of kind `OBJECT`, `DATACLASS` or `STRUCT`. The dict may
    be the object's own `__dict__`: read it, never update it."""
    if layout.kind is OBJECT:
        return obj.__dict__
    if layout.kind is DATACLASS:
        held = obj.__dict__
        keys = tuple(held)
        if keys == layout.names or keys[: len(layout.names)] == layout.names:  # set in field order
            return held
    return structs.fields_of(obj)


def is_differentiable(value, layout: Layout) -> bool:
    """`runtime.is_differentiable(value)`, told from `value`'s layout."""
    if layout.kind is FLOAT:
        return True
    if layout.kind is ARRAY:
        return value.dtype.kind in "fc"
    return layout.kind is GENERIC and _is_differentiable(value)


def _worked_out(cls) -> Layout:
    """`cls`'s layout, its kind told as `tree.children`, `runtime.is_differentiable` and
    `runtime.structs.is_struct` would tell it of every value of the type (in their order)."""
    layout = Layout(_kind(cls))
    if dataclasses.is_dataclass(cls):
        layout.metadata_frozen = _frozen_by_metadata(cls)
        if layout.kind is DATACLASS:
            layout.names = tuple(f.name for f in dataclasses.fields(cls))
    return layout


def _kind(cls) -> str:
    if _class_attribute(cls, "__class__") is not object.__dict__["__class__"]:  # `isinstance` asks the value
        return GENERIC
    if issubclass(cls, (float, complex)) and not hasattr(cls, "__tree_children__"):
        return FLOAT
    if hasattr(cls, "__tree_children__"):  # `Grads`, `Params`: they say what they hold
        return GENERIC
    if issubclass(cls, (np.ndarray, np.generic)):
        return ARRAY
    exact = _EXACT.get(cls)
    if exact is not None:
        return exact
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return NAMEDTUPLE
    if issubclass(cls, (dict, list, tuple, Tangent)):  # a subclass: `tree.children` asks the value
        return GENERIC
    if issubclass(cls, structs._NOT_STRUCTS) or cls.__module__.split(".")[0] in ("builtins", "numpy"):
        return LEAF  # what `is_struct` says of its values
    dataclass, standard = dataclasses.is_dataclass(cls), _standard_attributes(cls)
    if _has_slots(cls) or dataclass and not standard:  # objects, whose fields `fields_of` reads
        return STRUCT
    if not standard:  # `is_struct` asks each value whether it has a `__dict__`
        return GENERIC
    if not dataclass:
        return OBJECT
    if any(_is_data_descriptor(_class_attribute(cls, f.name)) for f in dataclasses.fields(cls)):
        return STRUCT  # `getattr` of such a field is not what the instance's dict holds
    return DATACLASS


_EXACT = {dict: DICT, list: LIST, tuple: TUPLE, Tangent: TANGENT}


def _frozen_by_metadata(cls) -> frozenset:
    """A dataclass's fields whose metadata says `trainable: False` (fixed when it is made)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("trainable", True) is False)


def _standard_attributes(cls) -> bool:
    """Whether every instance of `cls` has a `__dict__`, found the standard way, and attribute
    reads of them are Python's own (no `__getattribute__` of the class's)."""
    return (
        cls.__dictoffset__ != 0
        and isinstance(_class_attribute(cls, "__dict__"), types.GetSetDescriptorType)
        and _class_attribute(cls, "__getattribute__") is object.__dict__["__getattribute__"]
    )


def _has_slots(cls) -> bool:
    """Whether a class of `cls`'s MRO declares slots that hold fields (what `fields_of` reads
    besides the instance's dict; worked out here, not by `structs._slot_names`, whose cache
    would keep the class alive)."""
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str) or any(name not in ("__dict__", "__weakref__") for name in slots):
            return True
    return False


def _class_attribute(cls, name):
    """`name` as the first class of `cls`'s MRO holding it has it (no descriptor called)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _is_data_descriptor(attribute) -> bool:
    kind = type(attribute)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")
