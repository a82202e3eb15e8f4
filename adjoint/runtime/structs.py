"""Objects as values with cotangents: `Tangent`, an object's fields, and building objects.

The cotangent of an object (a dataclass, frozen or not, a class with `__slots__`, a plain
class) is a `Tangent` whose attributes mirror the object's fields; a namedtuple's is the same
namedtuple type. In generated code these are sparse: a field nothing flowed into is absent
(`None`, which counts as zero), so reading one weight of a large model costs one entry, not a
model of zeros. The API completes them at its edge (see `adjoint.tree`).

Before:  y = m.W                      After (pullback):  m_bar = adj.field_bar(y_bar, m, "W")
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import numbers
import types

import numpy as np

from .cotangents import add, zeros_like
from .remembered import ByIdentity, class_attribute


class Tangent:
    """The cotangent of an object: one attribute per field, `None` where a field has none.

    >>> import dataclasses, numpy as np
    >>> @dataclasses.dataclass
    ... class Dense:
    ...     W: np.ndarray
    ...     size: int
    >>> g = Tangent(Dense, W=np.ones(2), size=None)
    >>> g.W, g.size
    (array([1., 1.]), None)
    >>> g
    Tangent[Dense](W=array([1., 1.]), size=None)

    Gradients add (`g + h`, `sum(gs)`), subtract, negate, and scale by numbers (`0.5 * g`,
    `g / n`), leaf by leaf; `None` stays `None`.
    """

    __slots__ = ("_Tangent__type", "_Tangent__fields")

    def __init__(self, primal_type, fields=None, /, **named):
        _set_type(self, primal_type)
        _set_fields(self, {**(fields or {}), **named})

    def __getattr__(self, name):
        fields = object.__getattribute__(self, "_Tangent__fields")
        if name in fields:
            return fields[name]
        raise AttributeError(f"{self!r} has no field {name!r}")

    def __setattr__(self, name, value):
        self.__fields[name] = value  # `g.W *= 0.5` on a gradient: allowed, it is the user's value

    def __repr__(self):
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__fields.items())
        return f"Tangent[{self.__type.__name__}]({shown})"

    def __dir__(self):
        return list(self.__fields)

    def __reduce__(self):  # copies and pickles
        return Tangent, (self.__type, dict(self.__fields))

    def __radd__(self, other):  # `sum(tangents)` starts from 0
        return self if other == 0 or other is None else NotImplemented

    def __sub__(self, other):
        return self + -other if isinstance(other, Tangent) else NotImplemented

    def __neg__(self):
        return _each_leaf(self, lambda leaf: -leaf)

    def __mul__(self, scale):  # `0.5 * g`: every leaf scaled
        return _each_leaf(self, lambda leaf: leaf * scale) if np.ndim(scale) == 0 and not isinstance(scale, Tangent) else NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, scale):
        return _each_leaf(self, lambda leaf: leaf / scale) if np.ndim(scale) == 0 and not isinstance(scale, Tangent) else NotImplemented

    def __add__(self, other):
        """Field by field, a field absent from one side counting as zero (`cotangents.add`)."""
        if not isinstance(other, Tangent):
            return NotImplemented
        fields = dict(self.__fields)
        for name, part in tangent_fields(other).items():
            fields[name] = add(fields.get(name), part)
        return owning(self.__type, fields)


# The slots' own setters (`__setattr__` is the user's: `g.W = ...` sets a field)
_set_type, _set_fields = Tangent._Tangent__type.__set__, Tangent._Tangent__fields.__set__


def owning(primal_type, fields: dict) -> Tangent:
    """A `Tangent` that takes `fields` as its own (the caller made the dict and lets go of it):
    what the runtime's helpers make, at half the cost of the constructor's copy.

    >>> owning(dict, {"W": 1.0})
    Tangent[dict](W=1.0)
    """
    tangent = _new(Tangent)
    _set_type(tangent, primal_type)
    _set_fields(tangent, fields)
    return tangent


_new = object.__new__


def _each_leaf(value, op):
    """`value` (a cotangent: a Tangent, containers, None) with `op` applied to each leaf."""
    if value is None:
        return None
    if isinstance(value, Tangent):
        return owning(tangent_type(value), {k: _each_leaf(v, op) for k, v in tangent_fields(value).items()})
    if isinstance(value, dict):
        return {k: _each_leaf(v, op) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        parts = [_each_leaf(v, op) for v in value]
        return type(value)._make(parts) if hasattr(type(value), "_fields") else type(value)(parts)
    return op(value)


def tangent_type(g) -> type:
    """The type of the object whose cotangent `g` (a `Tangent`) is.

    >>> class Layer:
    ...     pass
    >>> tangent_type(Tangent(Layer, W=np.ones(2))) is Layer
    True
    """
    return object.__getattribute__(g, "_Tangent__type")


def tangent_fields(g) -> dict:
    """The fields of a `Tangent`, by name (the dict itself: do not update it).

    >>> class Layer:
    ...     pass
    >>> tangent_fields(Tangent(Layer, W=np.ones(2), size=None))
    {'W': array([1., 1.]), 'size': None}
    """
    return object.__getattribute__(g, "_Tangent__fields")


# ---- what an object is made of ---------------------------------------------------------------

_NOT_STRUCTS = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
                functools.partial, np.ndarray, np.generic, np.ufunc, numbers.Number, str, bytes, Tangent,
                dict, list, tuple, set, frozenset)


def is_namedtuple(value) -> bool:
    """Whether `value` is a namedtuple (a tuple whose class has `_fields`).

    >>> import collections
    >>> is_namedtuple(collections.namedtuple("Point", "x y")(1.0, 2.0)), is_namedtuple((1.0, 2.0))
    (True, False)
    """
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_struct(value) -> bool:
    """Whether `value` is an object of the user's whose fields can carry gradients: a
    dataclass, or an object of a Python class with a `__dict__` or `__slots__`.

    >>> class Layer:
    ...     def __init__(self, W):
    ...         self.W = W
    >>> is_struct(Layer(np.ones(2))), is_struct(np.ones(2)), is_struct({"W": 1.0})
    (True, False, False)
    """
    kind = type(value)
    entry = _struct_classes.entries.get(id(kind))  # (`_struct_classes.get(kind)`, without its call)
    if entry is not None and entry[0]() is kind and entry[1][1] == abc.get_cache_token():
        return entry[1][0]
    if isinstance(value, _NOT_STRUCTS) or kind.__module__.split(".")[0] in ("builtins", "numpy"):
        answer = False
    else:
        answer = dataclasses.is_dataclass(value) or hasattr(value, "__dict__") or bool(_slot_names(kind))
    if kind.__getattribute__ is object.__getattribute__ and not hasattr(kind, "__getattr__"):
        # the answer is the class's (no attribute hook decides `__dict__` per object); until an
        # ABC learns of a new virtual subclass (`numbers.Number.register`), which bumps the token
        _struct_classes[kind] = (answer, abc.get_cache_token())
    return answer


_struct_classes = ByIdentity()  # class -> (whether its objects are structs, `abc`'s cache token then)


def fields_of(obj) -> dict:
    """An object's fields by name, in declaration order: a dataclass's fields, then any other
    attributes it holds in its `__slots__` or `__dict__`.

    >>> class Layer:
    ...     def __init__(self, W):
    ...         self.W, self.size = W, 2
    >>> fields_of(Layer(1.5))
    {'W': 1.5, 'size': 2}
    """
    fields = {}
    if dataclasses.is_dataclass(obj):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if hasattr(obj, f.name)}
    for name in _slot_names(type(obj)):
        if name not in fields and hasattr(obj, name):
            fields[name] = getattr(obj, name)
    for name, value in getattr(obj, "__dict__", {}).items():
        fields.setdefault(name, value)
    return fields


def _slot_names(cls) -> tuple:
    names = _slots.get(cls)
    if names is None:
        names = []
        for klass in cls.__mro__:
            slots = klass.__dict__.get("__slots__", ())
            names += [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]
        _slots[cls] = names = tuple(names)
    return names


_slots = ByIdentity()  # class -> the slot names of its classes (fixed when a class is made)


# ---- cotangents of field reads ---------------------------------------------------------------

def field_bar(g, obj, name):
    """The cotangent of `obj` from that of `obj.name`: only that field carries `g`.

    A method's cotangent is already its receiver's (a bound method carries only its object),
    and so is that of a field holding a bound method of the object (`self.fn = self.forward`).
    A property's getter is run again and differentiated (getters must be pure functions of the
    object). A class attribute read through the object keeps its entry (the API's completion
    drops it: a constant shared by the instances; implicit parameters may be held there).

    >>> class Model:
    ...     pass
    >>> m = Model(); m.W = 1.0
    >>> field_bar(2.0, m, "W")
    Tangent[Model](W=2.0)
    """
    if g is None:
        return None
    instance = getattr(obj, "__dict__", None)
    if instance is not None and name in instance and getattr(type(obj), name, _MISSING) is _MISSING:
        # an instance field that no class attribute shadows or describes: the common read
        value = instance[name]
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            return g
        return owning(type(obj), {name: g})
    kind = _attribute_kind(type(obj), name)
    if isinstance(kind, types.FunctionType):  # a property's getter computed the value from the object
        return runtime.vjp((0,), kind, obj)[1](g)[0]
    if instance is not None and name in instance:  # an instance field, whatever the class holds
        value = instance[name]
        if isinstance(value, types.MethodType) and value.__self__ is obj:
            return g
    elif kind is _METHOD:
        return g
    if is_namedtuple(obj):
        return type(obj)._make(g if field == name else None for field in type(obj)._fields)
    return owning(type(obj), {name: g})


def field_bars(gs, obj):
    """The cotangent of `obj` from those of several of its fields: `gs` maps field names to
    their cotangents (None: none). The same as adding the `field_bar` of each, made as one
    `Tangent` where the fields are plain instance fields (the common read: no class attribute
    shadows or describes them); generated code gathers a method's reads of one object's fields
    into one call.

    >>> class Model:
    ...     pass
    >>> m = Model(); m.W, m.b = 1.0, 2.0
    >>> field_bars({"W": 2.0, "b": 0.5}, m)
    Tangent[Model](W=2.0, b=0.5)
    >>> field_bars({"W": None}, m) is None
    True
    """
    instance = getattr(obj, "__dict__", None)
    cls = type(obj)
    views = ()  # the dictionaries of the classes before `object` (which takes no attributes)
    if instance is not None and type(cls) is type:  # (a metaclass of its own may answer otherwise)
        mro = cls.__mro__
        views = (cls.__dict__,) if len(mro) == 2 else tuple(klass.__dict__ for klass in mro[:-1])
    fields, others = {}, None
    for name, g in gs.items():
        if g is None:
            continue
        if views and name in instance and name not in _OBJECT_ATTRIBUTES:
            for view in views:
                if name in view:
                    break
            else:  # an instance field no class attribute shadows or describes: the common read
                value = instance[name]
                if not (type(value) is types.MethodType and value.__self__ is obj):
                    fields[name] = g
                    continue
        others = add(others, field_bar(g, obj, name))  # a property, a method, a namedtuple's field...
    if not fields:
        return others
    return owning(cls, fields) if others is None else add(owning(cls, fields), others)


_METHOD = "method"
_OBJECT_ATTRIBUTES = frozenset(object.__dict__)  # (fixed: `object` takes no attributes)
_MISSING = object()


def _attribute_kind(cls, name):
    """What `name` is on the class `cls`: `_METHOD`, a property's getter function, or None
    (a field, a slot, or a class attribute: its entry stays, see `field_bar`)."""
    attribute = class_attribute(cls, name)
    if isinstance(attribute, (types.FunctionType, staticmethod, classmethod)):
        return _METHOD
    if isinstance(attribute, property) and isinstance(attribute.fget, types.FunctionType):
        return attribute.fget
    if isinstance(attribute, functools.cached_property):  # its cache in the instance is not a field
        return attribute.func
    return None


def item_bar(g, key, value):
    """The cotangent of `value`, held under `key` in a container's or closure's cotangent `g`
    (a dict, a `Tangent`, a tuple or list; None is zero): zeros shaped like `value` if absent.

    >>> item_bar({"W": 2.0}, "W", 1.0), item_bar({}, "b", np.ones(2))
    (2.0, array([0., 0.]))
    """
    if type(g) is dict:
        part = g.get(key)
    elif isinstance(g, Tangent):
        part = tangent_fields(g).get(key)
    elif isinstance(g, (tuple, list)) or isinstance(g, np.ndarray) and isinstance(key, int):
        part = g[key]  # an array: a reduction's arithmetic made one of a list's cotangent (`np.std([a, b])`)
    else:
        part = None
    return zeros_like(value) if part is None else part


from .. import runtime  # noqa: E402  (the package imports this module)
