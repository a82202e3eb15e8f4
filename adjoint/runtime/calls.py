"""Calls whose differentiation generated code leaves to run time: closures and `*args` (methods
are in `methods`).

Each helper calls the function and returns `(value, pullback)`, like `vjp`; what its pullback
returns is stated in its docstring. A function's cotangent is a dict from the names it closes
over to their cotangents (Zygote's view of a closure: a struct of its captures).
"""

from __future__ import annotations

import functools
import inspect
import types

import numpy as np

from .cotangents import RuleError, add, is_differentiable, zeros_like
from .indexing import unpack_bar
from .building import construct, is_constructible
from .structs import fields_of, is_struct
from .marks import marked


def closure_vjp(wrt, fn, /, *args, **kwargs):
    """Call `fn(*args, **kwargs)`, where `fn` may close over differentiable values.

    `wrt` numbers `fn` as 0 and the arguments from 1. The pullback returns `(fn_bar,
    *arg_bars)`: `fn_bar` maps each name `fn` closes over that holds a float value (or another
    such function) to its cotangent. An object with a Python `__call__` (a layer) gets its own
    cotangent, a `Tangent`, and so does the receiver of a bound method.

    >>> import numpy as np
    >>> def scaled(w):
    ...     return lambda x: x * w
    >>> f = scaled(np.array([2.0, 3.0]))
    >>> value, back = closure_vjp((0, 1), f, np.ones(2))
    >>> fn_bar, x_bar = back(np.ones(2))
    >>> fn_bar["w"], x_bar
    (array([1., 1.]), array([2., 3.]))
    """
    vjp, zeros_for_none = runtime.vjp, runtime.zeros_for_none
    # a bound method's function's rules take the receiver first (below); most callables carry no
    # marks at all, which two `getattr`s tell without asking `marked` whether a mark is meant
    marks = not isinstance(fn, types.MethodType) and (
        getattr(fn, "__adjoint_vjp__", None) is not None or getattr(fn, "__adjoint_rrule__", None) is not None
    )
    staged = marked(fn, "__adjoint_vjp__", None) if marks else None
    if staged is not None:  # a checkpointed function (`adjoint.checkpoint`): the closure's cotangent first
        return staged(tuple(i - 1 for i in wrt if i > 0), 0 in wrt, args, kwargs) if 0 in wrt else _no_closure(
            staged(tuple(i - 1 for i in wrt if i > 0), False, args, kwargs)
        )
    special = marked(fn, "__adjoint_rrule__", None) if marks else None
    if special is not None:  # a gradient made by adjoint (of a function that may close over floats)
        value, pullback = special(*args, closure=0 in wrt, **kwargs)
        arg_wrt = tuple(i - 1 for i in wrt if i > 0)
        if 0 not in wrt:
            zero_filled = zeros_for_none(pullback, args, arg_wrt)
            return value, lambda g: (None, *zero_filled(g))

        def gradient_closure_pullback(g):
            closure_bar, *arg_bars = pullback(g)
            filled = zeros_for_none(lambda _: arg_bars, args, arg_wrt)(g)
            return (closure_bar, *filled)

        return value, gradient_closure_pullback
    if 0 in wrt and not isinstance(fn, types.FunctionType):
        if isinstance(fn, functools.partial):  # its cotangent: a tuple, its bound arguments'
            count = len(fn.args)
            inner = tuple(i for i, a in enumerate(fn.args) if _carries_gradient(a)) + tuple(i - 1 + count for i in wrt if i)
            value, pullback = vjp(inner, fn.func, *fn.args, *args, **{**fn.keywords, **kwargs})
            return value, lambda g: _bound_parts(pullback(g), count)
        if isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType):
            return vjp(wrt, fn.__func__, fn.__self__, *args, **kwargs)
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType):  # `layer(x)`: `__call__` with the layer first
            return vjp(wrt, call, fn, *args, **kwargs)
    arg_wrt = argument_positions(wrt)
    captured = _captured_names(fn) if 0 in wrt else []
    defaulted = _defaulted(fn, args, kwargs) if 0 in wrt else {}
    if not captured and not defaulted:
        value, pullback = vjp(arg_wrt, fn, *args, **kwargs)
        return value, no_closure_pullback(pullback)
    forward = runtime._transform_hook(fn, tuple(sorted(set(arg_wrt) | set(defaulted))) + tuple(captured), args)
    value, pullback = forward(*args, **kwargs)
    count = positional_count(fn, len(args))

    def closure_pullback(g):
        cotangents = tuple(pullback(g))
        closure_bar = dict(zip(captured, cotangents[count:]))
        closure_bar.update({name: cotangents[position] for position, name in defaulted.items()})
        for name in captured:
            if _cell(fn, name) is fn:  # a recursive function: its own calls' cotangents are ours
                closure_bar = add({k: v for k, v in closure_bar.items() if k != name}, closure_bar[name] or {})
                closure_bar[name] = None
        return (closure_bar, *cotangents[: len(args)])

    return value, closure_pullback


def argument_positions(wrt) -> tuple:
    """The positions among the arguments of a call's `wrt` that numbers the callable (or the
    receiver) 0 and the arguments from 1, as `closure_vjp` and `method_vjp` take it.

    >>> argument_positions((0, 2, 3))
    (1, 2)
    """
    positions = _argument_positions.get(wrt)
    if positions is None:  # (a generated call's `wrt` is a constant: a few of them per program)
        positions = _argument_positions[wrt] = tuple(i - 1 for i in wrt if i > 0)
    return positions


_argument_positions: dict[tuple, tuple] = {}


def _no_closure(value_and_pullback):
    value, pullback = value_and_pullback
    return value, no_closure_pullback(pullback)


def no_closure_pullback(pullback):
    """`pullback` with a `None` first: the cotangent of a callable that holds no gradient (a
    function closing over nothing differentiable, `np.tanh`), or of a receiver that gets none."""

    def receiver_free_pullback(g):
        return (None, *pullback(g))

    return receiver_free_pullback


def _bound_parts(cotangents, count):
    cotangents = tuple(cotangents)
    return (cotangents[:count], *cotangents[count:])


def _defaulted(fn, args, kwargs) -> dict:
    """`{position: parameter}` for the parameters this call leaves to float default values."""
    if not isinstance(fn, types.FunctionType) or not fn.__defaults__:
        return {}
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    first = code.co_argcount - len(fn.__defaults__)
    return {
        position: names[position]
        for position in range(max(first, len(args)), code.co_argcount)
        if names[position] not in kwargs and _carries_gradient(fn.__defaults__[position - first])
    }


def star_vjp(wrt, fn, parts, spread, mapping, /, **named):
    """Call `fn(*parts, **mapping, **named)` with the parts at the positions `spread` unpacked,
    as `f(a, *xs, **d)` does. `wrt` holds the positions of the parts that carry gradients
    (`len(parts)` for `mapping`). The pullback returns one cotangent per part (a tuple or list
    for an unpacked part) and a dict for `mapping` (None if it is None). `named` carry none.

    >>> import numpy as np
    >>> def f(a, b, c=1.0):
    ...     return a * b * c
    >>> value, back = star_vjp((0, 1, 2), f, (2.0, [3.0]), (1,), {"c": 4.0})
    >>> value, back(1.0)
    (24.0, (12.0, [8.0], {'c': 6.0}))
    """
    vjp = runtime.vjp
    args, sizes, active = [], [], []
    for index, part in enumerate(parts):
        items = list(part) if index in spread else [part]
        active += [index in wrt] * len(items)
        args += items
        sizes.append(len(items) if index in spread else None)
    keywords = dict(mapping or {})
    constructor = isinstance(fn, type) and is_constructible(fn)
    by_position = _keywords_by_position(fn, len(args), keywords) if len(parts) in wrt and not constructor else []
    args += [keywords.pop(key) for key in by_position]
    active += [True] * len(by_position)
    arg_wrt = tuple(i for i, a in enumerate(args) if active[i] and _carries_gradient(a))
    through_kwargs = [k for k, v in keywords.items() if len(parts) in wrt and _carries_gradient(v)]
    if constructor:  # `State(h=h)`: the keywords' cotangents come from the fields they fill
        value, pullback = _constructed(fn, args, {**keywords, **named})
    elif through_kwargs:  # `def f(**kw)`: differentiate with respect to the dict `kw` too
        value, pullback = _kwargs_vjp(fn, arg_wrt, args, keywords, named, through_kwargs)
    else:
        value, pullback = vjp(arg_wrt, fn, *args, **keywords, **named)

    def star_pullback(g):
        cotangents = list(pullback(g)) + [None] * len(args)
        out, position = [], 0
        for part, size in zip(parts, sizes):
            if size is None:
                out.append(cotangents[position])
                position += 1
            else:
                items = cotangents[position : position + size]
                if is_struct(part):  # `f(*model)`: the items go back through its `__getitem__`
                    out.append(unpack_bar(items, part))
                else:
                    out.append(list(items) if type(part) is list else tuple(items))
                position += size
        if mapping is None:
            return (*out, None)
        mapping_bar = {key: zeros_like(v) for key, v in mapping.items()}
        for offset, key in enumerate(by_position):
            mapping_bar[key] = cotangents[position + offset]
        if through_kwargs:
            kwargs_bar = cotangents[len(args)] or {}
            mapping_bar.update({key: kwargs_bar.get(key, mapping_bar[key]) for key in through_kwargs})
        return (*out, mapping_bar)

    return value, star_pullback


def _constructed(cls, args, keywords):
    """`construct`, its pullback returning the arguments' cotangents, then the keywords' dict."""
    value, pullback = construct(cls, args, keywords)

    def constructed_pullback(g):
        arg_bars, keyword_bars = pullback(g)
        return (*arg_bars, keyword_bars)

    return value, constructed_pullback


def _kwargs_vjp(fn, wrt, args, keywords, named, keys):
    """`fn(*args, **keywords)` differentiated also with respect to its `**kwargs` parameter,
    whose cotangent (a dict) its pullback returns after the arguments'."""
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    if marked(function, "__adjoint_checkpoint_of__", None) is not None:
        raise RuleError(
            f"the differentiable values passed as {', '.join(f'`{k}=`' for k in keys)} cannot receive gradients "
            f"through the checkpointed `{getattr(fn, '__name__', fn)}`: pass them by position (keyword-only "
            "parameters carry no gradients yet: make them ordinary parameters)"
        )
    if not (isinstance(function, types.FunctionType) and function.__code__.co_flags & inspect.CO_VARKEYWORDS):
        raise RuleError(
            f"the differentiable values passed as {', '.join(f'`{k}=`' for k in keys)} cannot receive "
            f"gradients through `{getattr(fn, '__name__', fn)}`: keyword-only parameters carry no "
            "gradients yet; make them ordinary parameters"
        )
    bound = (fn.__self__,) if isinstance(fn, types.MethodType) else ()
    forward = runtime._transform_hook(function, tuple(i + len(bound) for i in wrt) + ("**",), (*bound, *args))
    value, pullback = forward(*bound, *args, **keywords, **named)
    count = positional_count(function, len(bound) + len(args))

    def kwargs_pullback(g):
        cotangents = tuple(pullback(g))
        return (*cotangents[len(bound) : len(bound) + len(args)], cotangents[count])

    return value, kwargs_pullback


def positional_count(function, passed: int) -> int:
    """How many positional cotangents the generated pullback of `function` returns when it is
    called with `passed` positional arguments: one per parameter, and per extra `*args` item.

    >>> positional_count(lambda y, k=2: y ** k, 1), positional_count(lambda *xs: sum(xs), 3)
    (2, 3)
    """
    code = function.__code__
    if code.co_flags & inspect.CO_VARARGS:
        return max(passed, code.co_argcount)
    return code.co_argcount


def _keywords_by_position(fn, count, keywords) -> list:
    """The positional parameters of `fn` after the first `count`, up to the last one `keywords`
    name, in order: those named are passed by position (so they can carry gradients), those
    skipped are filled in `keywords` with their defaults. For a primitive with a rule, those its
    rule and it both take by position (`Rule.movable_keywords`); empty for other callables."""
    target = fn.__func__ if isinstance(fn, types.MethodType) else fn
    target = marked(target, "__adjoint_checkpoint_of__", target)  # its parameters are the function's
    rule = registry.lookup(fn)
    if rule is not None:
        moved = rule.movable_keywords(count, list(keywords), keywords)
        for name in moved:
            keywords.setdefault(name, rule.signature.parameters[name].default)
        return moved
    if not isinstance(target, types.FunctionType):
        return []
    code = target.__code__
    skip = 1 if isinstance(fn, types.MethodType) else 0
    names = code.co_varnames[count + skip : code.co_argcount]
    named = [i for i, name in enumerate(names) if name in keywords]
    if not named:
        return []
    defaults = dict(zip(code.co_varnames[code.co_argcount - len(target.__defaults__ or ()) : code.co_argcount],
                        target.__defaults__ or ()))
    moved = list(names[: named[-1] + 1])
    for name in moved:
        if name not in keywords:
            if name not in defaults:
                return []  # a required parameter is missing: let the call fail as Python's would
            keywords[name] = defaults[name]
    return moved


def _carries_gradient(value, seen=()) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_carries_gradient(v, seen) for v in value)
    if isinstance(value, dict):
        return any(_carries_gradient(v, seen) for v in value.values())
    if is_struct(value):
        return id(value) not in seen and any(_carries_gradient(v, (*seen, id(value))) for v in fields_of(value).values())
    return is_differentiable(value) or _closes_over_floats(value, seen)


def captured_names(fn) -> list:
    """The names `fn` closes over whose values carry gradients (see `closure_vjp`).

    >>> def scaled(w):
    ...     return lambda x: x * w
    >>> captured_names(scaled(2.0))
    ['w']
    """
    return _captured_names(fn)


def _captured_names(fn, seen=()) -> list:
    """The names `fn` closes over whose values carry gradients (floats, or functions closing
    over floats; `seen` stops at functions that reach themselves, as recursive ones do)."""
    if not isinstance(fn, types.FunctionType) or not fn.__closure__ or fn in seen:
        return []
    names = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if contents is fn or _carries_gradient(contents, (*seen, fn)):
            names.append(name)
    return names


def _cell(fn, name):
    return fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents


def _closes_over_floats(value, seen=()) -> bool:
    return isinstance(value, types.FunctionType) and bool(
        _captured_names(value, seen) or any(is_differentiable(d) for d in value.__defaults__ or ())
    )


def unconcat(g, a, b):
    """The cotangents of `a` and `b` in `a + b` on tuples or lists, from the result's `g`.

    >>> unconcat((1.0, 2.0, 3.0), (0.0,), (0.0, 0.0))
    ((1.0,), (2.0, 3.0))
    """
    if g is None:
        return None, None
    return type(a)(g[: len(a)]), type(b)(g[len(a) :])


class unbound:  # noqa: N801  (reads as a call in generated code: `y = adj.unbound("y")`)
    """The value of a name that Python would say is not bound yet: a name first assigned in a
    loop or in one arm of a branch, on a path that did not assign it. Any use raises Python's
    `UnboundLocalError`, as reading the name would have.

    >>> y = unbound("y")
    >>> y + 1.0
    Traceback (most recent call last):
    ...
    UnboundLocalError: cannot access local variable 'y' where it is not associated with a value
    """

    __slots__ = ("name",)
    dtype = None  # not a float: it gets no cotangent (`is_differentiable` asks)

    def __init__(self, name):
        self.name = name

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(
            f"cannot access local variable '{self.name}' where it is not associated with a value"
        )

    __getattr__ = __getitem__ = __call__ = __iter__ = __len__ = __bool__ = __float__ = __int__ = _fail
    __index__ = __array__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __mod__ = __rmod__ = __floordiv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = __str__ = __format__ = _fail

    def __repr__(self):
        return f"adj.unbound({self.name!r})"


def check_unshared(updated, others, name, other_names, where):
    """Refuse, at run time, an update that values read out of the same array would see in plain
    Python (views: rows, slices); scalar items share no memory and pass.

    >>> state = np.zeros(2)
    >>> check_unshared(state, (state[0],), "state", ("x",), "f.py:3")
    """
    if not isinstance(updated, np.ndarray):
        return
    for other, other_name in zip(others, other_names):
        if isinstance(other, np.ndarray) and np.may_share_memory(updated, other):
            raise RuleError(
                f"{where}: this update of `{name}` would show through `{other_name}`, a view of it read "
                f"afterwards, and adjoint updates a copy: copy the view (`{other_name} = ...copy()`) or "
                f"update `{name}` after the last use of `{other_name}`"
            )


from .. import registry, runtime  # noqa: E402  (registry imports this package; this package, this module)
