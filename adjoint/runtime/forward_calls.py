"""Calls whose forward-mode derivative generated code leaves to run time: Python functions,
closures, methods, and primitives reached through them.

Each helper calls the function and returns `(value, tangent)`. A closure's tangent is a dict
from the names it closes over to their tangents, as its cotangent is in reverse mode; an
object's is its `Tangent` (or anything with the same fields).
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from .building import construct_jvp, is_constructible
from .cotangents import RuleError
from .tangents import holds_floats, zero_tangent
from .marks import marked

__all__ = ["jvp", "closure_jvp", "method_jvp", "keywords_jvp", "field_tangent", "install_tangent_transformer"]

_tangent_hook = None


def install_tangent_transformer(hook) -> None:
    """Set how `jvp` differentiates a Python function: `hook(fn, wrt) -> JVP function`, called as
    `jvp_fn(tangents, *args, **kwargs)` with one tangent per entry of `wrt`."""
    global _tangent_hook
    _tangent_hook = hook


def jvp(fn, primals, tangents, /, outermost=False, **kwargs):
    """`(fn(*primals, **kwargs), its tangent)` for the tangents of the primals (None: constant).

    `fn` is resolved here, at run time: a derivative made by adjoint (`adjoint.grad(f)`), a
    forward rule, a non-differentiable primitive, a bound method, partial or callable object
    (their function, with what they bind held constant), or a Python function, transformed
    once per code object and called. `outermost` is for `adjoint.jvp`: the function may then
    update its arguments in place.

    >>> import numpy as np
    >>> jvp(np.sin, (0.0,), (3.0,))
    (np.float64(0.0), np.float64(3.0))
    """
    from .. import frules, registry  # noqa: PLC0415  (they import this package)

    special = None if isinstance(fn, types.MethodType) else marked(fn, "__adjoint_frule__", None)
    if special is not None:  # (a bound method's function's rule takes the receiver first: below)
        return special(tuple(primals), tuple(tangents), **kwargs)
    if outermost and type(fn) is types.FunctionType and frules.lookup(fn) is None and registry.lookup(fn) is None:
        return _call_transformed(fn, primals, tangents, {}, kwargs, outermost=True)
    if isinstance(fn, types.BuiltinMethodType) and isinstance(getattr(fn, "__self__", None), (np.ndarray, np.generic)):
        return method_jvp(fn.__self__, None, fn.__name__, primals, tangents, **kwargs)  # `x.dot`: the array first
    rule = frules.lookup(fn) if not isinstance(fn, types.MethodType) else None
    if rule is not None:
        return rule.frule(tuple(primals), tuple(tangents), **kwargs)
    if isinstance(fn, type) and registry.lookup(fn) is None and is_constructible(fn):
        return construct_jvp(fn, primals, tangents, kwargs)
    if registry.is_non_differentiable(fn) or all(t is None for t in tangents):
        value = fn(*primals, **kwargs)
        return value, zero_tangent(value)
    if isinstance(fn, types.MethodType):  # its function's rules take the receiver first
        return jvp(fn.__func__, (fn.__self__, *primals), (None, *tangents), **kwargs)
    if registry.lookup(fn) is not None:
        name = getattr(fn, "__qualname__", repr(fn))
        raise RuleError(
            f"adjoint has a reverse rule for `{name}` but no forward rule: register one with "
            f"@adjoint.frule({getattr(fn, '__name__', 'fn')})"
        )
    if isinstance(fn, functools.partial):
        bound = tuple(fn.args)
        return jvp(fn.func, (*bound, *primals), (None,) * len(bound) + tuple(tangents), **{**fn.keywords, **kwargs})
    if not isinstance(fn, types.FunctionType):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):
            return jvp(call, (fn, *primals), (None, *tangents), **kwargs)
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        raise RuleError(
            f"adjoint cannot differentiate `{name}` in forward mode: it has no forward rule and is not a "
            "Python function. Register one with @adjoint.frule."
        )
    return _call_transformed(fn, primals, tangents, {}, kwargs)


def closure_jvp(fn, fn_tangent, primals, tangents, /, **kwargs):
    """`jvp` of `fn`, which may close over varied values: `fn_tangent` maps the names it closes
    over to their tangents (a bound method's or callable object's: the receiver's tangent).

    >>> import numpy as np
    >>> def scaled(w):
    ...     return lambda x: x * w
    >>> f = scaled(np.array([2.0, 3.0]))
    >>> closure_jvp(f, {"w": np.ones(2)}, (np.ones(2),), (None,))
    (array([2., 3.]), array([1., 1.]))
    """
    if fn_tangent is None or isinstance(fn_tangent, dict) and not any(t is not None for t in fn_tangent.values()):
        return jvp(fn, primals, tangents, **kwargs)
    special = None if isinstance(fn, types.MethodType) else marked(fn, "__adjoint_frule__", None)
    if special is not None:  # a gradient of a closure: the closure's tangent comes along
        return special(tuple(primals), tuple(tangents), closure=fn_tangent, **kwargs)
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
        return jvp(fn.__func__, (fn.__self__, *primals), (fn_tangent, *tangents), **kwargs)
    if isinstance(fn, functools.partial):
        bound = tuple(fn.args)
        parts = tuple(fn_tangent) if isinstance(fn_tangent, (tuple, list)) else (None,) * len(bound)
        return jvp(fn.func, (*bound, *primals), (*parts, *tangents), **{**fn.keywords, **kwargs})
    if not isinstance(fn, types.FunctionType):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):
            return jvp(call, (fn, *primals), (fn_tangent, *tangents), **kwargs)
        return jvp(fn, primals, tangents, **kwargs)
    captured = {name: t for name, t in fn_tangent.items() if t is not None and name in fn.__code__.co_freevars}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            if cell.cell_contents is fn:  # a recursive function: its own calls carry the same tangent
                captured[name] = fn_tangent
        except ValueError:  # an empty cell
            pass
    return _call_transformed(fn, primals, tangents, captured, kwargs)


def keywords_jvp(fn, primals, tangents, mapping, mapping_tangent, /, **named):
    """`jvp` of `fn(*primals, **mapping, **named)` where the keyword arguments in `mapping` have
    tangents (`mapping_tangent`, by name): a keyword naming a positional parameter is passed by
    position, and the rest reach a `**kwargs` parameter, whose tangent is then a dict.

    >>> def f(a, b=1.0):
    ...     return a * b
    >>> keywords_jvp(f, (2.0,), (None,), {"b": 3.0}, {"b": 1.0})
    (6.0, 2.0)
    """
    from .calls import _keywords_by_position  # noqa: PLC0415

    primals, tangents = list(primals), list(tangents)
    keywords, keyword_tangents = dict(mapping or {}), dict(mapping_tangent or {})
    if isinstance(fn, type) and is_constructible(fn):  # `State(h=h)`: fields hold the keywords
        return construct_jvp(fn, primals, tangents, {**keywords, **named}, keyword_tangents)
    for name in _keywords_by_position(fn, len(primals), keywords):
        primals.append(keywords.pop(name))
        tangents.append(keyword_tangents.pop(name, None))
    through = {k: t for k, t in keyword_tangents.items() if k in keywords and t is not None}
    if not through:
        return jvp(fn, tuple(primals), tuple(tangents), **keywords, **named)
    if not (isinstance(fn, types.FunctionType) and fn.__code__.co_flags & inspect.CO_VARKEYWORDS):
        name = sorted(through)[0]
        keyword_only = isinstance(fn, types.FunctionType) and name in fn.__code__.co_varnames[
            fn.__code__.co_argcount : fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount]
        hint = "make it a positional parameter" if keyword_only else "pass it by position"
        raise RuleError(
            f"the derivative cannot flow through the keyword argument `{name}=` into "
            f"`{getattr(fn, '__qualname__', fn)}`: {hint}"
        )
    everything = {**keywords, **named}
    dkwargs = {k: through[k] if k in through else zero_tangent(v) for k, v in everything.items()}
    return _call_transformed(fn, primals, tangents, {}, everything, kwargs_tangent=dkwargs)


def _call_transformed(fn, primals, tangents, captured: dict, kwargs, outermost=False, kwargs_tangent=None):
    """Call the JVP function of `fn`; `outermost` (a call from `adjoint.jvp`, not from generated
    code) lets `fn` update its arguments in place, as Python would let it."""
    if _tangent_hook is None:
        raise RuleError(f"no forward rule for {fn!r} and no compiler installed to differentiate it")
    code = fn.__code__
    named = code.co_argcount
    positions = tuple(i for i, t in enumerate(tangents) if t is not None)
    wrt = positions + tuple(sorted(captured)) + (("**",) if kwargs_tangent is not None else ())
    jvp_fn = _tangent_hook(fn, wrt, outermost, primals)
    given = [tangents[i] for i in positions if i < named]
    if any(i >= named for i in positions):  # `*args`: one tuple of tangents for them all
        given.append(tuple(
            t if t is not None else zero_tangent(p) for p, t in zip(primals[named:], tangents[named:])
        ))
    given += [captured[name] for name in sorted(captured)]
    if kwargs_tangent is not None:
        given.append(kwargs_tangent)
    return jvp_fn(tuple(given), *primals, **kwargs)


def method_jvp(receiver, receiver_tangent, name, primals, tangents, /, **kwargs):
    """`jvp` of the method call `receiver.name(*primals, **kwargs)`, whatever the receiver's
    type: an array's method by its rule (the receiver first), a Python method as a function of
    the object and its arguments, a field holding something callable as a closure.

    >>> import numpy as np
    >>> method_jvp(np.array([1.0, 2.0]), np.array([1.0, 1.0]), "sum", (), ())
    (np.float64(3.0), np.float64(2.0))
    """
    from .. import frules, registry  # noqa: PLC0415

    if isinstance(receiver, (np.ndarray, np.generic)):
        method = getattr(type(receiver), name, None) if isinstance(receiver, np.ndarray) else getattr(np.ndarray, name, None)
        rule = frules.lookup(method) if method is not None else None
        if rule is None:
            bound = getattr(receiver, name)
            if registry.is_non_differentiable(method) or (receiver_tangent is None and all(t is None for t in tangents)):
                value = bound(*primals, **kwargs)
                return value, zero_tangent(value)
            raise RuleError(f"adjoint has no forward rule for the array method `{type(receiver).__name__}.{name}`")
        reverse = registry.lookup(method) if kwargs else None
        refusal = reverse.refusal(len(primals) + 1, kwargs) if reverse is not None else None
        if refusal:  # as reverse mode refuses it (`x.sum(initial=1.0)`)
            raise RuleError(f"adjoint's rule for `{type(receiver).__name__}.{name}` {refusal}")
        return rule.frule((receiver, *primals), (receiver_tangent, *tangents), **kwargs)
    if isinstance(receiver, super):
        method = getattr(receiver, name)
        if isinstance(method, types.MethodType) and isinstance(method.__func__, types.FunctionType):
            return jvp(method.__func__, (method.__self__, *primals), (receiver_tangent, *tangents), **kwargs)
    attribute = inspect.getattr_static(type(receiver), name, None)
    if isinstance(attribute, types.FunctionType) and name not in getattr(receiver, "__dict__", ()):
        return jvp(attribute, (receiver, *primals), (receiver_tangent, *tangents), **kwargs)
    if isinstance(attribute, (staticmethod, classmethod)):
        return jvp(getattr(receiver, name), primals, tangents, **kwargs)
    if type(receiver) is dict and name in _DICT_TANGENTS:
        value = getattr(receiver, name)(*primals, **kwargs)
        if receiver_tangent is None:
            return value, zero_tangent(value)
        return value, _DICT_TANGENTS[name](receiver, receiver_tangent, value, primals, tangents)
    if type(receiver) in (list, tuple) and name == "copy":
        return receiver.copy(), type(receiver)(receiver_tangent) if receiver_tangent is not None else zero_tangent(receiver)
    member = getattr(receiver, name)
    if isinstance(member, types.BuiltinMethodType):  # a library's method (`xs.count(v)`): no tangent
        value = member(*primals, **kwargs)
        if holds_floats(value):
            raise RuleError(
                f"adjoint has no forward rule for the method `{type(receiver).__name__}.{name}`: "
                "compute with the values themselves, or register an @adjoint.frule for a function doing it"
            )
        return value, zero_tangent(value)
    return closure_jvp(member, field_tangent(receiver, receiver_tangent, name, member), primals, tangents, **kwargs)


def _get_tangent(receiver, receiver_tangent, value, primals, tangents):
    key = primals[0]
    if key in receiver:
        return field_tangent(None, receiver_tangent, key, value)
    default = tangents[1] if len(tangents) > 1 else None
    return zero_tangent(value) if default is None else default


# A dict's tangent is a dict of its entries' tangents: these methods read it as they read the dict.
_DICT_TANGENTS = {
    "get": _get_tangent,
    "values": lambda d, t, value, *_: [field_tangent(None, t, k, v) for k, v in d.items()],
    "items": lambda d, t, value, *_: [(zero_tangent(k), field_tangent(None, t, k, v)) for k, v in d.items()],
    "copy": lambda d, t, value, *_: {k: field_tangent(None, t, k, v) for k, v in d.items()},
}


def field_tangent(obj, tangent, name, value):
    """The tangent of `obj.name` (whose value is `value`), `tangent` being `obj`'s (a
    `Tangent`, a dict, or anything with the fields): the field's tangent, zeros if it has none; a
    property's getter is differentiated (it runs again, as in reverse mode).

    >>> field_tangent(None, None, "W", 2.0), field_tangent(None, {"W": 1.0}, "W", 2.0)
    (0.0, 1.0)
    """
    if tangent is None:
        return zero_tangent(value)
    getter = inspect.getattr_static(type(obj), name, None) if obj is not None else None
    if isinstance(getter, (property, functools.cached_property)):
        function = getter.fget if isinstance(getter, property) else getter.func
        return jvp(function, (obj,), (tangent,))[1]
    if isinstance(value, types.MethodType) and value.__self__ is obj:
        return tangent  # `f = model.apply`: the method moves with its receiver
    if isinstance(tangent, dict):
        part = tangent.get(name)
    elif _class_constant(obj, name):
        part = None  # `self.scale` read from the class: the tangent's class has it too, unmoved
    else:
        part = getattr(tangent, name, None)
    return zero_tangent(value) if part is None else part


def _class_constant(obj, name) -> bool:
    """Whether `obj.name` is a plain value its class holds, not a field of the object."""
    if obj is None or name in getattr(obj, "__dict__", ()):
        return False
    held = inspect.getattr_static(type(obj), name, _ABSENT)
    return held is not _ABSENT and not hasattr(type(held), "__get__")


_ABSENT = object()
