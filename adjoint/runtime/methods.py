"""Method calls whose meaning depends on the receiver's type, known only at run time.

`x.sum()` on an array is its rule; `d.get(k)` on a dict routes cotangents to its entries;
`model.forward(x)` on your object differentiates the method with the object as an input, so
the object gets a `Tangent`; `self.layer(x)`, a field holding something callable, is called
as a closure and its cotangent goes to that field.
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from .calls import _captured_names, _carries_gradient, argument_positions, closure_vjp, no_closure_pullback
from .cotangents import RuleError, zeros_like
from .remembered import class_attribute
from .structs import field_bar, is_namedtuple, is_struct


def method_vjp(wrt, receiver, name, /, *args, **kwargs):
    """Call the method `receiver.name(*args, **kwargs)`, whatever the receiver's type.

    `wrt` numbers the receiver 0 and the arguments from 1; the pullback returns `(receiver_bar,
    *arg_bars)`. An array's method is differentiated by its rule; a dict's `get`, `values`
    and `items` route cotangents to its entries; any other object's method is differentiated
    as a function of the object and its arguments, so the object gets a `Tangent`. A field
    holding something callable (`self.layer(x)`, `self.activation(h)`) is called as a closure
    and its cotangent goes to that field.

    >>> import numpy as np
    >>> value, back = method_vjp((0,), np.array([1.0, 2.0]), "sum")
    >>> back(2.0)
    (array([2., 2.]),)
    """
    vjp = runtime.vjp
    if isinstance(receiver, (np.ndarray, np.generic)):
        return vjp(wrt, getattr(receiver, name), *args, **kwargs)
    if type(receiver) is dict and name in _DICT_METHODS:
        return _DICT_METHODS[name](receiver, *args, **kwargs)
    if isinstance(receiver, super):  # `super().forward(x)`: a base class's method, on the object
        method = getattr(receiver, name)
        if isinstance(method, types.MethodType) and isinstance(method.__func__, types.FunctionType):
            return vjp(wrt, method.__func__, method.__self__, *args, **kwargs)
    struct = is_struct(receiver)
    if 0 in wrt and not (struct or isinstance(receiver, (dict, list, tuple))) and not _carries_gradient(
        receiver
    ):  # a library's object holding no floats (`self.rng.normal(...)`): nothing flows into it
        wrt = tuple(i for i in wrt if i > 0)
    if 0 in wrt and (struct or is_namedtuple(receiver)):
        if name in getattr(receiver, "__dict__", ()):  # a field holding something callable
            return _field_call(wrt, receiver, name, args, kwargs)
        attribute = class_attribute(type(receiver), name)
        if not isinstance(attribute, (types.FunctionType, staticmethod, classmethod)):  # a property returning it
            return _field_call(wrt, receiver, name, args, kwargs)
        if isinstance(attribute, types.FunctionType):
            return vjp(wrt, attribute, receiver, *args, **kwargs)
        wrt = tuple(i for i in wrt if i > 0)  # a static or class method: the receiver is not an input
    if 0 in wrt:
        value = getattr(receiver, name)(*args, **kwargs)
        if not _carries_gradient(value):  # `xs.count(x)`, `xs.index(x)`: nothing flows back
            inputs = (receiver, *args)
            return value, lambda g: tuple(zeros_like(v) if i in wrt else None for i, v in enumerate(inputs))
        raise RuleError(
            f"the gradient would have to flow into the `{type(receiver).__name__}` whose method `{name}` "
            "is called, and adjoint cannot follow it there: call a function on its items instead"
        )
    value, pullback = vjp(tuple(i - 1 for i in wrt), getattr(receiver, name), *args, **kwargs)
    return value, no_closure_pullback(pullback)


def _field_call(wrt, receiver, name, args, kwargs):
    """`receiver.name(*args, **kwargs)` where `receiver.name` is a field's value (or a
    property's) that is called: as a closure, whose cotangent goes to that field. A library's
    callable there (`np.tanh`), or a function closing over nothing differentiable (`identity`),
    holds no gradient: it is differentiated as a plain call, and the receiver gets none from it."""
    field = getattr(receiver, name)
    if _holds_no_gradient(field):
        value, pullback = runtime.vjp(argument_positions(wrt), field, *args, **kwargs)
        return value, no_closure_pullback(pullback)
    value, pullback = closure_vjp(wrt, field, *args, **kwargs)

    def field_call_pullback(g):
        cotangents = pullback(g)
        if type(cotangents) is tuple and cotangents[0] is None:  # nothing for the field: as it is
            return cotangents
        return _into_field(cotangents, receiver, name)

    return value, field_call_pullback


def _holds_no_gradient(fn) -> bool:
    """Whether `closure_vjp` would give the callable `fn` no cotangent whatever it is called
    with: it carries no marks of adjoint's (`adjoint.checkpoint`, `adjoint.grad(f)`), and it is
    a ufunc, a Python function that closes over nothing differentiable and has no default
    holding floats (a model in a default is one), or none of a Python function, a bound method, a partial or an object with a
    Python `__call__`."""
    kind = type(fn)
    if kind is np.ufunc:  # (a ufunc takes no attributes, so it carries no marks)
        return True
    if getattr(fn, "__adjoint_vjp__", None) is not None or getattr(fn, "__adjoint_rrule__", None) is not None:
        return False
    if kind is types.FunctionType:  # as `closure_vjp` tells: captured values, then defaults holding floats
        return not _captured_names(fn) and not any(_carries_gradient(d) for d in fn.__defaults__ or ())
    return not (
        isinstance(fn, (types.MethodType, functools.partial))
        or isinstance(getattr(kind, "__call__", None), types.FunctionType)
    )


def method_function(receiver, name):
    """The function `receiver.name(...)` calls with the receiver first, for a starred method
    call (`self.forward(*args, **kwargs)`, `x.reshape(*shape)`).

    >>> method_function(np.ones(2), "sum") is np.ndarray.sum
    True
    """
    if isinstance(receiver, super):
        raise RuleError(
            f"a starred call through `super()` (`super().{name}(*args)`) is not supported: call the base "
            f"class's method with the object first, `Base.{name}(self, *args)`"
        )
    method = getattr(receiver, name)
    function = getattr(method, "__func__", None)
    if getattr(method, "__self__", None) is receiver and function is not None:
        return function  # a Python method
    if isinstance(inspect.getattr_static(type(receiver), name, None), (staticmethod, classmethod)):
        raise RuleError(
            f"`{type(receiver).__name__}.{name}` is a static or class method: call it on the class with "
            f"the starred arguments, `{type(receiver).__name__}.{name}(*args)`"
        )
    if isinstance(receiver, (np.ndarray, np.generic)) and getattr(np.ndarray, name, None) is not None:
        return getattr(np.ndarray, name)
    raise RuleError(
        f"`{type(receiver).__name__}.{name}` is not a method of the object (a field holding a function?): "
        "adjoint follows starred calls of methods only; pass the arguments by position"
    )


def _into_field(cotangents, receiver, name):
    """`(field_value_bar, *arg_bars)` as `(receiver_bar, *arg_bars)`."""
    return (field_bar(cotangents[0], receiver, name), *cotangents[1:])


# ---- dict methods -----------------------------------------------------------------------------

def _dict_get(d, key, default=None):
    value = d.get(key, default)

    def get_pullback(g):
        d_bar = {k: zeros_like(v) for k, v in d.items()}
        if key in d:
            d_bar[key] = g
            return d_bar, None, None
        return d_bar, None, g

    return value, get_pullback


def _dict_values(d):
    keys = list(d)

    def values_pullback(g):
        return ({k: (zeros_like(d[k]) if part is None else part) for k, part in zip(keys, g)},)

    return [d[k] for k in keys], values_pullback


def _dict_items(d):
    keys = list(d)

    def items_pullback(g):
        return ({k: (zeros_like(d[k]) if part is None else part[1]) for k, part in zip(keys, g)},)

    return [(k, d[k]) for k in keys], items_pullback


def _dict_keys(d):
    return list(d), lambda g: (None,)


_DICT_METHODS = {"get": _dict_get, "values": _dict_values, "items": _dict_items, "keys": _dict_keys}


from .. import runtime  # noqa: E402  (the package imports this module)
