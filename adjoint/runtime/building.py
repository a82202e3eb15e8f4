"""Building objects from differentiable values: `Dense(W, b)`, `State(h=h)` in differentiated code.

The object is built by its own class, so it is exactly what plain Python builds; its pullback
maps the object's cotangent (a `Tangent`, or a namedtuple for a namedtuple) back to the
arguments stored in its fields.

Before:  layer = Dense(W, b)      After:  layer, Dense_pullback = adj.vjp((0, 1), Dense, W, b)
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np

from .cotangents import RuleError, add, is_differentiable
from .structs import Tangent, fields_of, is_namedtuple, is_struct, item_bar, tangent_fields


def is_constructible(cls) -> bool:
    """Whether adjoint follows gradients through calls of the class `cls`: dataclasses,
    namedtuples, and classes whose `__init__` is written in Python.

    >>> @dataclasses.dataclass
    ... class Dense:
    ...     W: np.ndarray
    >>> is_constructible(Dense), is_constructible(dict), is_constructible(np.ndarray)
    (True, False, False)
    """
    if not isinstance(cls, type) or cls.__module__ == "builtins" or issubclass(cls, (np.ndarray, np.generic)):
        return False
    return (
        dataclasses.is_dataclass(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields"))
        or isinstance(getattr(cls, "__init__", None), types.FunctionType)
    )


def construct(cls, args, keywords):
    """Build `cls(*args, **keywords)`; return it and a pullback from its cotangent to
    `(arg_bars, keyword_bars)`.

    Which field holds which argument: a namedtuple's and a dataclass's fields in order (and by
    name for keywords); for another class, the fields that hold the very object passed (all
    of them, so `self.W = self.V = W` gives W both gradients; an object passed twice gets its
    cotangent at its first place). Each argument that carries a gradient must be stored
    unchanged, or the call is refused. A gradient reaching a field that no argument was
    stored in is refused unless that field is a constant: a dataclass or namedtuple default,
    or an `__init__` default value stored as it is.

    >>> import collections
    >>> Pair = collections.namedtuple("Pair", "w n")
    >>> obj, back = construct(Pair, (np.ones(2), 3), {})
    >>> back(Pair(np.array([1.0, 2.0]), None))  # the int gets no cotangent
    ((array([1., 2.]), None), {})
    """
    obj = cls(*args, **keywords)
    stored, where = _placement(cls, obj, args, keywords)
    for key, value in [*enumerate(args), *keywords.items()]:
        if where.get(key) is _AGAIN:
            continue
        if _carries_float(value) and not any(_at(stored, place) is value for place in where.get(key, ())):
            raise RuleError(
                f"`{cls.__qualname__}(...)` does not store its argument {_argument(key)} unchanged in a field, "
                "so adjoint cannot follow its gradient: create the object outside the differentiated function, "
                "or store the argument as it is and compute with it in a method"
            )
    places = {place for found in where.values() for place in found}
    constants = _constant_fields(cls, obj, stored, {p for p in places if isinstance(p, str)})

    def construct_pullback(g):
        fields = _fields_of_cotangent(g)
        for name, part in fields.items():
            for place, part_here in _unmapped_parts(name, part, stored.get(name), places):
                if place not in constants and part_here is not None and _carries_float(_at(stored, place)):
                    raise RuleError(
                        f"a gradient reached the field `{name}` of a `{cls.__qualname__}` built in differentiated "
                        "code, which its constructor computed rather than stored from an argument: adjoint cannot "
                        "follow it. Pass the value as an argument, or compute it in a method or property"
                    )

        def bar(key, value):
            total = None
            for place in where.get(key, ()):
                total = add(total, _at(fields, place))
            return None if key not in where else item_bar({"": total}, "", value)

        arg_bars = tuple(bar(i, a) for i, a in enumerate(args))
        keyword_bars = {k: bar(k, v) for k, v in keywords.items()}
        return arg_bars, keyword_bars

    return obj, construct_pullback


def construct_jvp(cls, primals, tangents, keywords=None, keyword_tangents=None):
    """Build `cls(*primals, **keywords)` (as `construct` does, with its checks) and its tangent:
    a `Tangent` (a namedtuple of tangents for a namedtuple) whose fields hold the tangents of the
    arguments stored in them. A float field the constructor computed gets a tangent that refuses
    to be used, as reverse mode refuses a gradient reaching it.

    >>> import collections
    >>> Pair = collections.namedtuple("Pair", "w n")
    >>> construct_jvp(Pair, (np.ones(2), 3), (np.array([1.0, 2.0]), None))
    (Pair(w=array([1., 1.]), n=3), Pair(w=array([1., 2.]), n=0))
    """
    from .tangents import zero_tangent  # noqa: PLC0415

    keywords, keyword_tangents = dict(keywords or {}), dict(keyword_tangents or {})
    obj, _ = construct(cls, tuple(primals), keywords)
    stored, where = _placement(cls, obj, tuple(primals), keywords)
    places = {place for found in where.values() for place in found}
    constants = _constant_fields(cls, obj, stored, {p for p in places if isinstance(p, str)})
    fields = {
        name: zero_tangent(value) if name in constants or name in places or not _carries_float(value)
        or any(isinstance(p, tuple) and p[0] == name for p in places) else Untracked(cls, name)
        for name, value in stored.items()
    }
    for key, tangent in [*enumerate(tangents), *keyword_tangents.items()]:
        for place in where.get(key, ()) if tangent is not None else ():
            if isinstance(place, str):
                fields[place] = tangent
            else:
                name, index = place
                items = list(fields[name])
                items[index] = tangent
                fields[name] = type(stored[name])(items)
    if is_namedtuple(obj):
        return obj, type(obj)._make(fields[name] for name in type(obj)._fields)
    return obj, Tangent(cls, fields)


class Untracked:
    """The tangent of a field a constructor computed from its arguments: adjoint cannot follow
    it, so using it refuses, naming the field (unused, it costs nothing)."""

    def __init__(self, cls, name):
        self.message = (
            f"the field `{name}` of a `{cls.__qualname__}` built in differentiated code was computed by its "
            "constructor rather than stored from an argument: adjoint cannot follow its derivative. Pass the "
            "value as an argument, or compute it in a method or property"
        )

    def _refuse(self, *args, **kwargs):
        raise RuleError(self.message)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __matmul__ = __rmatmul__ = __neg__ = __pow__ = __getitem__ = __array__ = _refuse
    __array_ufunc__ = __array_function__ = _refuse


def _placement(cls, obj, args, keywords):
    """The fields of `obj` and, per argument (position or keyword), the places it is stored in."""
    stored = _stored_fields(obj)
    where = _fields_by_position(cls, obj, args, keywords) if _is_record(cls) else _fields_by_identity(stored, args, keywords)
    return stored, where


def _is_record(cls) -> bool:
    """A namedtuple, or a dataclass with the `__init__` dataclasses write (its source is
    generated: `<string>`): fields follow the arguments."""
    if issubclass(cls, tuple):
        return True
    init = getattr(cls, "__init__", None)
    return dataclasses.is_dataclass(cls) and getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>"


def _fields_by_position(cls, obj, args, keywords) -> dict:
    if issubclass(cls, tuple):
        names = list(cls._fields)
    else:
        names = [f.name for f in dataclasses.fields(cls) if f.init]
    where = {i: (names[i],) for i in range(min(len(args), len(names)))}
    where.update({k: (k,) for k in keywords if k in names})
    return where


class _Again(tuple):
    """The fields of an argument whose object an earlier argument passed: none of its own."""


_AGAIN = _Again()


def _fields_by_identity(stored, args, keywords) -> dict:
    where, taken = {}, set()
    for key, value in [*enumerate(args), *keywords.items()]:
        if id(value) in taken:
            where[key] = _AGAIN  # the same object passed again: its cotangent goes to its first place
            continue
        taken.add(id(value))
        where[key] = tuple(
            place for name, field in stored.items() for place in (
                [name] if field is value
                else [(name, i) for i, item in enumerate(field) if item is value] if type(field) in (list, tuple)
                else []
            )
        )
    return where


def _at(fields, place):
    """What `fields` (a dict of fields or of their cotangents) holds at `place`: a field's name,
    or `(name, i)` for item `i` of a list or tuple field (`self.layers = list(layers)`)."""
    if isinstance(place, str):
        return fields.get(place)
    container = fields.get(place[0])
    return container[place[1]] if isinstance(container, (list, tuple)) and place[1] < len(container) else None


def _unmapped_parts(name, part, stored, places):
    """`(place, cotangent)` for the parts of field `name`'s cotangent no argument was stored in."""
    if name in places or part is None:
        return []
    if type(stored) in (list, tuple) and isinstance(part, (list, tuple)) and any(p[0] == name for p in places if isinstance(p, tuple)):
        return [((name, i), item) for i, item in enumerate(part) if (name, i) not in places]
    return [(name, part)]


def _constant_fields(cls, obj, stored, mapped) -> set:
    """The fields that hold constants: defaults of a namedtuple or of a dataclass without a
    `__post_init__`, and `__init__` default values stored as they are."""
    if issubclass(cls, tuple) or dataclasses.is_dataclass(cls) and not hasattr(cls, "__post_init__") and all(
        f.init for f in dataclasses.fields(cls)
    ):
        return set(stored) - mapped
    init = getattr(cls, "__init__", None)
    defaults = [*(getattr(init, "__defaults__", None) or ()), *(getattr(init, "__kwdefaults__", None) or {}).values()]
    return {name for name, value in stored.items() if any(value is d for d in defaults)}


def construct_vjp(wrt, cls, /, *args, **kwargs):
    """`construct` as `vjp` calls it: the pullback returns one cotangent per argument.

    >>> import collections
    >>> Pair = collections.namedtuple("Pair", "w n")
    >>> obj, back = construct_vjp((0,), Pair, np.ones(2), 3)
    >>> back(Pair(np.array([1.0, 2.0]), None))
    (array([1., 2.]), None)
    """
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
