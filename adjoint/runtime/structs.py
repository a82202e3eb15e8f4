"""Objects as values with cotangents: `Tangent`, an object's fields, and building objects.

The cotangent of an object (a dataclass, frozen or not, a class with `__slots__`, a plain
class) is a `Tangent` whose attributes mirror the object's fields; a namedtuple's is the same
namedtuple type. In generated code these are sparse: a field nothing flowed into is absent
(`None`, which counts as zero), so reading one weight of a large model costs one entry, not a
model of zeros. The API completes them at its edge (see `adjoint.tree`).

Before:  y = m.W                      After (pullback):  m_bar = adj.field_bar(y_bar, m, "W")
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import types

import numpy as np

from .cotangents import RuleError, add, is_differentiable, zeros_like


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
    """

    __slots__ = ("_Tangent__type", "_Tangent__fields")

    def __init__(self, primal_type, fields=None, /, **named):
        object.__setattr__(self, "_Tangent__type", primal_type)
        object.__setattr__(self, "_Tangent__fields", {**(fields or {}), **named})

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

    def __add__(self, other):
        """Field by field, a field absent from one side counting as zero (`cotangents.add`)."""
        if not isinstance(other, Tangent):
            return NotImplemented
        mine, theirs = self.__fields, tangent_fields(other)
        return Tangent(self.__type, {name: add(mine.get(name), theirs.get(name)) for name in {**mine, **theirs}})


def tangent_type(g) -> type:
    """The type of the object whose cotangent `g` (a `Tangent`) is."""
    return object.__getattribute__(g, "_Tangent__type")


def tangent_fields(g) -> dict:
    """The fields of a `Tangent`, by name (the dict itself: do not update it)."""
    return object.__getattribute__(g, "_Tangent__fields")


# ---- what an object is made of ---------------------------------------------------------------

_NOT_STRUCTS = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
                functools.partial, np.ndarray, np.generic, numbers.Number, str, bytes, Tangent)


def is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_struct(value) -> bool:
    """Whether `value` is an object of the user's whose fields can carry gradients: a
    dataclass, or an object of a Python class with a `__dict__` or `__slots__`."""
    if isinstance(value, _NOT_STRUCTS) or type(value).__module__ == "builtins":
        return False
    return dataclasses.is_dataclass(value) or hasattr(value, "__dict__") or bool(_slot_names(type(value)))


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


@functools.lru_cache(maxsize=None)
def _slot_names(cls) -> tuple:
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if s not in ("__dict__", "__weakref__")]
    return tuple(names)


# ---- cotangents of field reads ---------------------------------------------------------------

def field_bar(g, obj, name):
    """The cotangent of `obj` from that of `obj.name`: only that field carries `g`.

    A method's cotangent is already its receiver's (a bound method carries only its object); a
    property's getter is run again and differentiated.

    >>> class Model:
    ...     pass
    >>> m = Model(); m.W = 1.0
    >>> field_bar(2.0, m, "W")
    Tangent[Model](W=2.0)
    """
    if g is None:
        return None
    kind = _attribute_kind(type(obj), name)
    if kind is _METHOD:
        return g
    if kind is not None:  # a property: its getter computed the value from the object
        from . import vjp  # noqa: PLC0415  (the package imports this module)

        return vjp((0,), kind.fget, obj)[1](g)[0]
    if is_namedtuple(obj):
        return type(obj)._make(g if field == name else None for field in type(obj)._fields)
    return Tangent(type(obj), {name: g})


_METHOD = "method"


@functools.lru_cache(maxsize=None)
def _attribute_kind(cls, name):
    """`_METHOD` for a method of `cls`, the property for a property, None for anything else
    (a field of the instance)."""
    attribute = inspect.getattr_static(cls, name, None)
    if isinstance(attribute, (types.FunctionType, staticmethod, classmethod)):
        return _METHOD
    if isinstance(attribute, property):
        return attribute
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
    elif isinstance(g, (tuple, list)):
        part = g[key]
    else:
        part = None
    return zeros_like(value) if part is None else part


# ---- building objects --------------------------------------------------------------------------

def is_constructible(cls) -> bool:
    """Whether adjoint follows gradients through calls of the class `cls`: dataclasses,
    namedtuples, and classes whose `__init__` is written in Python."""
    if not isinstance(cls, type) or cls.__module__ == "builtins" or issubclass(cls, (np.ndarray, np.generic)):
        return False
    return (
        dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))
        or isinstance(getattr(cls, "__init__", None), types.FunctionType)
    )


def construct(cls, args, keywords):
    """Build `cls(*args, **keywords)`; return it and a pullback from its cotangent to
    `(arg_bars, keyword_bars)`.

    Each argument that carries a gradient must be stored unchanged in a field (as dataclasses
    and namedtuples do, and `self.W = W` in an `__init__`); that field's cotangent is the
    argument's. A constructor that transforms a differentiable argument is refused, and so is
    a gradient reaching a field that no argument was stored in unless the class is a dataclass
    or namedtuple (whose other fields are defaults: constants).
    """
    obj = cls(*args, **keywords)
    stored = _stored_fields(obj)
    where = {}
    for key, value in [*enumerate(args), *keywords.items()]:
        if _carries_float(value):
            name = next((n for n, v in stored.items() if v is value), None)
            if name is None:
                raise RuleError(
                    f"`{cls.__qualname__}(...)` does not store its argument {_argument(key)} unchanged in a field, "
                    "so adjoint cannot follow its gradient: create the object outside the differentiated function, "
                    "or store the argument as it is and compute with it in a method"
                )
            where[key] = name
    plain = dataclasses.is_dataclass(cls) or is_namedtuple(obj)

    def construct_pullback(g):
        fields = _fields_of_cotangent(g)
        if not plain:
            mapped = set(where.values())
            for name, part in fields.items():
                if name not in mapped and part is not None and _carries_float(stored.get(name)):
                    raise RuleError(
                        f"a gradient reached the field `{name}` of a `{cls.__qualname__}` built in differentiated "
                        "code, which its `__init__` computed rather than stored from an argument: adjoint cannot "
                        "follow it. Make the class a dataclass, or pass the value as an argument"
                    )
        arg_bars = tuple(item_bar(fields, where[i], a) if i in where else None for i, a in enumerate(args))
        keyword_bars = {k: item_bar(fields, where[k], v) if k in where else None for k, v in keywords.items()}
        return arg_bars, keyword_bars

    return obj, construct_pullback


def construct_vjp(wrt, cls, /, *args, **kwargs):
    """`construct` as `vjp` calls it: the pullback returns one cotangent per argument."""
    obj, pullback = construct(cls, args, kwargs)
    return obj, lambda g: pullback(g)[0]


def _stored_fields(obj) -> dict:
    if is_namedtuple(obj):
        return dict(zip(type(obj)._fields, obj))
    return fields_of(obj)


def _fields_of_cotangent(g) -> dict:
    if g is None:
        return {}
    if isinstance(g, Tangent):
        return tangent_fields(g)
    if is_namedtuple(g):
        return dict(zip(type(g)._fields, g))
    raise RuleError(f"internal error: an object's cotangent is a {type(g).__name__}")


def _carries_float(value, seen=()) -> bool:
    """Whether `value` holds a float anywhere (`seen`: the objects being looked into)."""
    if isinstance(value, dict):
        value = list(value.values())
    elif is_struct(value) and id(value) not in seen:
        seen, value = (*seen, id(value)), list(fields_of(value).values())
    if isinstance(value, (tuple, list)):
        return any(_carries_float(v, seen) for v in value)
    return is_differentiable(value)


def _argument(key) -> str:
    return f"`{key}=`" if isinstance(key, str) else f"{key}"
