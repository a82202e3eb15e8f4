"""Forward rules of the calls generated pullback code makes: `adj.vjp`, `adj.closure_vjp` and
`adj.method_vjp`, so a Hessian-vector product can go through your functions, closures, methods
and rules called from differentiated code (forward-over-reverse).

Each rule finds what the call runs (a rule's `rrule`, or the generated forward function of
your function) and takes the JVP of `adj.vjp_program` over it: the forward function's value
and pullback, and their tangents. A pullback's tangent is what its closure's tangent is: a dict
of the tangents of the values it closes over, so calling the pullback later is a JVP of the
pullback's own generated code. The cotangent layouts are linear.
"""

import functools
import inspect
import types

import numpy as np

from .. import frules, registry, runtime
from .. import runtime as adj
from ..runtime import calls as runtime_calls
from ..frules import frule, linear
from ..runtime.marks import marked

linear(adj.filled_cotangents, adj.closure_cotangents, adj.prefixed_cotangents, adj.dropped_cotangents, adj.kept_cotangents)
registry.non_differentiable(adj.calling)  # it makes a function


@frule(adj.vjp)
def vjp_frule(primals, tangents, **kwargs):
    # `fn` may close over values that vary here though the reverse code held it constant (a
    # closure a gradient's function calls): its tangent, `dfn`, comes along
    (wrt, fn, *args), (_, dfn, *dargs) = primals, tangents
    fn = _checkpointed(fn)  # no memory to save in a JVP: the function itself
    return _program_jvp(*_plan(wrt, fn, tuple(args), tuple(dargs), dfn), kwargs, dfn)


@frule(adj.closure_vjp)
def closure_vjp_frule(primals, tangents, **kwargs):
    (wrt, fn, *args), (_, dfn, *dargs) = primals, tangents
    fn = _checkpointed(fn)
    args, dargs = tuple(args), tuple(dargs)
    arg_wrt = tuple(i - 1 for i in wrt if i > 0)
    if 0 not in wrt or not (isinstance(fn, types.FunctionType) and runtime_calls.captured_names(fn)):
        forward, args, dargs, reshape, layout = _plan(arg_wrt, fn, args, dargs, dfn)
        if reshape not in (None, adj.filled_cotangents):
            _refuse(fn)
        return _program_jvp(forward, args, dargs, adj.prefixed_cotangents, layout, kwargs, dfn)
    if not isinstance(fn, types.FunctionType) or marked(fn, "__adjoint_rrule__", None) is not None:
        _refuse(fn)
    defaulted = runtime_calls._defaulted(fn, args, kwargs)
    if defaulted:
        names = ", ".join(f"`{name}`" for name in defaulted.values())
        raise adj.RuleError(
            f"adjoint cannot take a second derivative through `{fn.__name__}`, a nested function left to its "
            f"float default values ({names}) yet: pass them explicitly in the call"
        )
    captured = runtime_calls.captured_names(fn)
    if any(runtime_calls._cell(fn, name) is fn for name in captured):
        _refuse(fn, "a recursive closure")
    forward = runtime._transform_hook(fn, tuple(sorted(set(arg_wrt))) + tuple(captured), args)
    layout = (runtime_calls.positional_count(fn, len(args)), tuple(captured))
    program = (forward, args, kwargs, adj.closure_cotangents, layout)
    return adj.jvp(adj.vjp_program, program, (dfn or None, dargs, None, None, None))


@frule(adj.method_vjp)
def method_vjp_frule(primals, tangents, **kwargs):
    (wrt, receiver, name, *args), (_, dreceiver, _, *dargs) = primals, tangents
    everything, dall = (receiver, *args), (dreceiver, *dargs)
    if isinstance(receiver, (np.ndarray, np.generic)):
        rule = registry.lookup(getattr(receiver, name))
        if rule is not None:
            return _program_jvp(rule.rrule, everything, dall, adj.filled_cotangents, (everything, wrt), kwargs)
    attribute = _checkpointed(getattr(type(receiver), name, None))
    if isinstance(attribute, types.FunctionType) and name not in getattr(receiver, "__dict__", ()):
        forward = runtime._transform_hook(_with_its_rule(attribute, len(everything)), wrt, everything)
        return _program_jvp(forward, everything, dall, None, None, kwargs)
    _refuse(getattr(receiver, name, receiver), f"the method `{type(receiver).__name__}.{name}`")


def _checkpointed(fn):
    """The function an `adjoint.checkpoint` wraps (a method's, bound to its receiver), or `fn`."""
    function = fn.__func__ if isinstance(fn, types.MethodType) else fn
    while marked(function, "__adjoint_checkpoint_of__", None) is not None:
        function = function.__adjoint_checkpoint_of__
    if isinstance(fn, types.MethodType):
        return fn if function is fn.__func__ else types.MethodType(function, fn.__self__)
    return function


def _plan(wrt, fn, args, dargs, dfn=None):
    """`(forward, args, dargs, reshape, layout)` for `adj.vjp(wrt, fn, *args)`: what it runs,
    and how its cotangents are laid out (`reshape` None: as they are). `dfn`, the tangent of
    `fn` (a closure's), is followed only into a Python function's own code."""
    if marked(fn, "__adjoint_rrule__", None) is not None:
        raise adj.RuleError(
            "a gradient called inside a function whose gradient is differentiated again is a third "
            "derivative, which adjoint does not compute yet"
        )
    if isinstance(fn, type):
        _refuse(fn)
    rule = registry.lookup(fn) if not isinstance(fn, types.MethodType) else None
    if rule is not None and rule.partials is not None and 1 <= len(args) <= 3:
        # an elementwise rule is generic code: a function calling it has the partials written in
        call = adj.calling(fn, len(args))
        return runtime._transform_hook(call, wrt, args), args, dargs, adj.filled_cotangents, (args, wrt)
    if rule is not None:
        return rule.rrule, args, dargs, adj.filled_cotangents, (args, wrt)
    if dfn and not isinstance(fn, types.FunctionType):
        _refuse(fn, "a method, partial or callable object holding values that vary")
    if isinstance(fn, (types.MethodType, functools.partial)):
        function, bound, keywords = runtime._unwrapped(fn)
        if keywords:
            _refuse(fn, "a partial with keywords")
        shifted = tuple(i + len(bound) for i in wrt)
        forward = runtime._transform_hook(_with_its_rule(function, len(bound + args)), shifted, bound + args)
        return forward, bound + args, (None,) * len(bound) + dargs, adj.dropped_cotangents, len(bound)
    if not isinstance(fn, types.FunctionType):
        _refuse(fn)
    forward = runtime._transform_hook(fn, wrt, args)
    if forward.__adjoint_arity__ != len(args):
        if fn.__code__.co_flags & inspect.CO_VARARGS:
            _refuse(fn, "a function taking *args")
        return forward, args, dargs, adj.kept_cotangents, len(args)  # parameters left to their defaults
    return forward, args, dargs, None, None


def _with_its_rule(function, count):
    """`function`, or if it has a rule of yours, a function calling it (whose code calls the rule)."""
    if registry.lookup(function) is None and frules.lookup(function) is None:
        return function
    return adj.calling(function, count)


def _program_jvp(forward, args, dargs, reshape, layout, kwargs, dforward=None):
    """The JVP of `forward(*args)` and its pullback; `dforward`: the tangents of what the
    function `forward` was generated from closes over (the generated code shares its cells)."""
    if reshape is None:
        return adj.closure_jvp(forward, dforward, args, dargs, **kwargs)
    return adj.jvp(adj.vjp_program, (forward, args, kwargs, reshape, layout), (dforward or None, dargs, None, None, None))


def _refuse(fn, what=None):
    name = what or f"`{getattr(fn, '__qualname__', None) or type(fn).__name__}`"
    raise adj.RuleError(
        f"adjoint cannot take a second derivative through {name} called from differentiated code yet: "
        "call a plain function of the arrays instead"
    )
