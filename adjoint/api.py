"""The public API: `differentiable`, `pullback`, `grad`, `value_and_grad`, `gradient`, `source`.

Every entry point goes through `_pullback` (`model_calls.pullback`), which decides which
arguments carry gradients (floats and float arrays, and the containers and objects holding
them), gets the generated forward function for exactly those, and wraps its pullback so the
cotangents handed back match the arguments' kinds, shapes and dtypes (a model's mirror it: see
`structure`). The common call, a Python function at floats and float arrays, takes a shortcut
that does the same in fewer steps (`forwards.PlainCalls`).
"""

from __future__ import annotations

import functools
import types

from . import arguments, derivatives, forwards, gradient_rules, implicit, model_calls, registry, structure, trainable
from .compiler import pipeline
from .errors import AdjointError
from .runtime import gradient_mode
from .runtime.marks import marked
from .tracebacks import annotate_handled

__all__ = ["differentiable", "pullback", "grad", "value_and_grad", "gradient", "source", "rrule", "non_differentiable"]


def differentiable(fn):
    """Mark `fn` as differentiable; it is returned unchanged, so plain calls cost nothing extra.

    The transform happens on first differentiation and is cached per code object. Undecorated
    functions can be differentiated too; the decorator documents intent.

    >>> import numpy as np, adjoint
    >>> @adjoint.differentiable
    ... def f(x):
    ...     return np.sum(np.sin(x) ** 2)
    >>> float(f(np.zeros(3)))
    0.0
    """
    if not isinstance(fn, types.FunctionType):
        raise AdjointError(f"@adjoint.differentiable needs a Python function, not {fn!r}")
    return fn


def pullback(f, *args, **kwargs):
    """Run `f(*args, **kwargs)`; return its value and a function mapping cotangents back.

    `back(cotangent)` takes a cotangent shaped like the value (a tuple for a tuple output) and
    returns one cotangent per positional argument: same shape and dtype for float arguments,
    `None` for the others. Keyword arguments are constants.

    >>> import numpy as np, adjoint
    >>> def f(x, y):
    ...     return x * y
    >>> value, back = adjoint.pullback(f, np.array([1.0, 2.0]), 3.0)
    >>> back(np.array([1.0, 1.0]))
    (array([3., 3.]), 3.0)
    """
    positions = tuple(range(len(args)))
    forward = forwards.plain_calls(f, positions).forward(f, args) if type(f) is types.FunctionType else None
    if forward is not None:  # floats and arrays: the common case, kept cheap
        return _plain_pullback(forward, args, kwargs, positions)
    return _pullback(f, args, kwargs, positions)


def grad(f, wrt=0, freeze=None):
    """The gradient function of scalar-valued `f` with respect to positional argument(s) `wrt`.

    `wrt` is an int (one gradient) or a tuple of ints (a tuple of gradients). An argument may
    be a float, an array, or a container or object holding them (a model): its gradient then
    mirrors it (see `adjoint.tree`). `freeze` lists paths in the differentiated argument
    whose gradients are not wanted (`["layers[0].W", "encoder"]`; a dict from positions to
    such lists when `wrt` is a tuple): they get `None`, and no adjoint work is spent on them.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.sum(x ** 2)
    >>> adjoint.grad(f)(np.array([1.0, 2.0]))
    array([2., 4.])
    >>> adjoint.grad(lambda p: p["w"] * p["b"], freeze=["['b']"])({"w": 2.0, "b": 3.0})
    {'w': 3.0, 'b': None}
    """
    positions = _positions(wrt)
    plain, one, calls = _plain_calls(f, positions, freeze), isinstance(wrt, int), model_calls.ModelCalls()

    def seed(value):
        return arguments.unit(value, f)

    @functools.wraps(f, updated=())  # not `f`'s attributes: adjoint's marks on it are not this function's
    def gradient_of_f(*args, **kwargs):
        done = plain.gradient(f, args, kwargs) if plain is not None else None
        if done is not None:  # floats and arrays: the common case, kept cheap
            return done[0] if one else done
        _, cotangents = _pullback(f, args, kwargs, positions, freeze, calls=calls, seed=seed)
        return arguments.select(cotangents, wrt)

    if freeze is None:  # it can be differentiated again (see `adjoint.gradient_rules`)
        gradient_rules.attach_rules(gradient_of_f, f, wrt, positions)
    else:
        gradient_rules.refuse_differentiating(gradient_of_f, "grad with freeze=")
    return gradient_of_f


def value_and_grad(f, wrt=0, has_aux=False, freeze=None):
    """Like `grad`, but the function returns `(value, gradient)`.

    With `has_aux=True`, `f` returns `(value, aux)`: `aux` is passed through undifferentiated
    and the result is `((value, aux), gradient)`. `freeze` is as in `grad`.

    >>> import numpy as np, adjoint
    >>> def loss(w):
    ...     return np.sum(w ** 2), "extra"
    >>> (value, aux), g = adjoint.value_and_grad(loss, has_aux=True)(np.array([3.0]))
    >>> float(value), aux, g
    (9.0, 'extra', array([6.]))
    """
    positions = _positions(wrt)
    plain, one, calls = _plain_calls(f, positions, freeze), isinstance(wrt, int), model_calls.ModelCalls()

    def seed(value):
        if has_aux:
            return arguments.unit(arguments.loss_of(value, f), f), None
        return arguments.unit(value, f)

    @functools.wraps(f, updated=())  # not `f`'s attributes: adjoint's marks on it are not this function's
    def value_and_gradient_of_f(*args, **kwargs):
        done = plain.gradients(f, args, kwargs, has_aux) if plain is not None else None
        if done is not None:  # floats and arrays: the common case, kept cheap
            return done[0], done[1][0] if one else done[1]
        value, cotangents = _pullback(f, args, kwargs, positions, freeze, calls=calls, seed=seed)
        return value, arguments.select(cotangents, wrt)

    if freeze is None and not has_aux:  # it can be differentiated again (see `adjoint.gradient_rules`)
        gradient_rules.attach_value_and_grad_rules(value_and_gradient_of_f, f, wrt, positions)
    else:
        gradient_rules.refuse_differentiating(value_and_gradient_of_f, "value_and_grad with has_aux= or freeze=")
    return value_and_gradient_of_f


def gradient(f, *args, freeze=None, **kwargs):
    """The gradients of scalar-valued `f` at `args`: a tuple, one entry per positional argument.

    `freeze` is a dict from argument positions to paths frozen in them (see `grad`), or a list
    of paths in the first argument.

    `gradient(f, ps)`, with `ps = adjoint.params(...)` and `f` taking no arguments, takes the
    gradient with respect to those arrays wherever `f` reaches them (arguments, globals,
    closures) and returns an `adjoint.Grads`, a mapping from each array to its gradient, with
    the loss as `gs.value`.

    >>> import adjoint
    >>> def f(x, y):
    ...     return x * y + y
    >>> adjoint.gradient(f, 2.0, 5.0)
    (5.0, 3.0)
    """
    if len(args) == 1 and isinstance(args[0], implicit.Params):
        return _implicit_gradient(f, args[0], kwargs)
    if args and isinstance(f, types.FunctionType) and f.__code__.co_argcount == 0 and not f.__code__.co_flags & 0x04:
        raise AdjointError(
            f"{_name(f)} takes no arguments, but gradient() was given {len(args)}: for the gradient with "
            "respect to arrays it reads, pass `adjoint.params(...)`: adjoint.gradient(f, adjoint.params(W, b))"
        )
    if isinstance(freeze, (list, tuple, str)):
        freeze = {0: [freeze] if isinstance(freeze, str) else list(freeze)}
    positions = tuple(range(len(args)))
    plain = forwards.plain_calls(f, positions) if freeze is None and type(f) is types.FunctionType else None
    done = plain.gradients(f, args, kwargs) if plain is not None else None
    if done is not None:  # floats and arrays: the common case, kept cheap
        return done[1]
    value, back = _pullback(f, args, kwargs, positions, freeze)
    return back(arguments.unit(value, f))


def _implicit_gradient(f, ps, kwargs):
    with implicit.collecting(ps) as collector:
        value, back = _pullback(f, (), kwargs, (), implicit_parameters=True)
        back(arguments.unit(value, f))
    return implicit.Grads(ps, collector.sums, value)


def source(f, wrt=None, *, args=None, freeze=None, params=None, mode="vjp") -> str:
    """The generated Python source of `f`'s forward function and pullback, or with
    `mode="jvp"` of its forward-mode (JVP) function.

    `wrt` (an int or tuple of ints) picks the parameters to differentiate; by default all
    positional parameters. Given example arguments `args` (and `freeze`, as in `gradient`), the
    source is the one those arguments get: specialised on the fields their classes or
    `freeze` leave frozen. With `args`, `f` may also be a layer (`source(layer, args=(x,))`
    shows its `__call__`, the layer first) or a bound method. With `params` (from
    `adjoint.params`), the code `gradient(f, params)` runs: also differentiated with respect to
    the globals and closure variables of `f` holding them.

    With `mode="jvp"`, the JVP function `adjoint.jvp` runs. For a gradient made by
    `adjoint.grad`, the default shows the code of the function it differentiates, and
    `mode="jvp"` with example `args` every JVP function a Hessian-vector product at `args` runs
    (that of the forward function, then of its pullback).

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.sin(x)
    >>> print(adjoint.source(f))  # doctest: +ELLIPSIS
    # adjoint: forward function and pullback of `f` (...)
    def f_forward(x):
        # line ...: return np.sin(x)
        f = np.sin(x)
    <BLANKLINE>
        def f_pullback(f_bar):
            # line ...: return np.sin(x)
            x_bar = f_bar * np.cos(x)
            return (x_bar,)
        return (f, f_pullback)
    <BLANKLINE>
    """
    if mode not in ("vjp", "jvp"):
        raise AdjointError(f'source mode must be "vjp" or "jvp", not {mode!r}')
    f = marked(f, "__adjoint_checkpoint_of__", f)  # the code its pullback runs again
    if mode == "jvp" or marked(f, "__adjoint_gradient_of__") is not None:
        if freeze is not None or params is not None:
            raise AdjointError("freeze= and params= apply to reverse mode only")
        if marked(f, "__adjoint_gradient_of__") is None:
            _require_python_function(f)
        count = len(args) if args is not None else getattr(getattr(f, "__code__", None), "co_argcount", 0)
        positions = tuple(range(count)) if wrt is None else _positions(wrt)
        if args is None and any(i >= count for i in positions) and hasattr(f, "__code__"):
            raise AdjointError(f"wrt names argument {max(positions)}, but {_name(f)} has {count} parameters")
        return derivatives.derivative_source(f, positions, args, mode)
    if args is not None and not isinstance(f, types.FunctionType):  # a layer, or a bound method
        call = getattr(type(f), "__call__", None)
        if isinstance(f, types.MethodType):
            f, args = f.__func__, (f.__self__, *args)
        elif isinstance(call, types.FunctionType):
            f, args = call, (f, *args)
        wrt = None if wrt is None else tuple(i + 1 for i in _positions(wrt))
    _require_python_function(f)
    if isinstance(freeze, (list, tuple, str)):  # paths in the first argument, as `gradient` takes them
        freeze = {0: [freeze] if isinstance(freeze, str) else list(freeze)}
    if wrt is None:
        positions = tuple(range(f.__code__.co_argcount))
    else:
        positions = _positions(wrt)
        if f.__code__.co_flags & 0x04 == 0 and any(i >= f.__code__.co_argcount for i in positions):
            raise AdjointError(f"wrt names argument {max(positions)}, but {_name(f)} has {f.__code__.co_argcount} parameters")
    spec = ()
    if args is not None:
        positions = tuple(i for i in positions if i < len(args) and arguments.carries_gradient(args[i], i, f))
        freezings = trainable.freezings(args, positions, positions, freeze)
        spec = trainable.frozen_spec(freezings)
    if params is None:
        floats = forwards.python_floats(positions, args) if args is not None else ()  # as the call runs it
        return pipeline.compiled(f, positions, spec, floats=floats).text
    with implicit.collecting(params) as collector:
        held = implicit.implicit_names(f, positions, collector)
        return pipeline.compiled(f, positions + held, spec, implicit=True).text


def non_differentiable(*fns):
    """Declare that calls to `fns` produce values that carry no gradient: they run as they are
    inside differentiated code, and no adjoint work is spent on their results (a decorator, or a
    call returning the first). A function of yours declared so must not update its arguments.
    A bound method declares its class's function; a function with a rule is refused (hold its
    result with `adjoint.stop_gradient` instead).

    >>> import numpy as np, adjoint
    >>> @adjoint.non_differentiable
    ... def bucket(x):
    ...     return float(np.floor(x * 10))
    >>> float(adjoint.grad(lambda x: x * bucket(x))(0.25))  # bucket(x) = 2.0, held constant
    2.0
    """
    return registry.non_differentiable(*fns, checked=True)


def rrule(*primitives, sequences=False):
    """Register a reverse rule for `primitives` (a decorator): see `adjoint.registry`.

    The rule is called with the primitive's arguments, keyword arguments included, and
    returns `(value, pullback)`; `pullback(cotangent)` returns one cotangent per positional
    argument (`None` where an argument has none, which adjoint reads as zeros). With
    `sequences=True`, operands may be lists or tuples of arrays (`my_concat([a, b])`), and
    the pullback returns such an operand's cotangent as the same kind of sequence.

    >>> import numpy as np, adjoint
    >>> def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> @adjoint.rrule(softplus)
    ... def softplus_rrule(x):
    ...     def softplus_pullback(g):
    ...         return (g / (1 + np.exp(-x)),)
    ...     return softplus(x), softplus_pullback
    >>> float(adjoint.grad(softplus)(0.0))
    0.5
    """
    return registry.rrule(*primitives, checked=True, sequences=sequences)


def _plain_calls(f, positions, freeze):
    """What finds `f`'s forward function for the plain calls of a gradient of it (see
    `forwards.PlainCalls`), or None where no call is plain."""
    ascending = all(a < b for a, b in zip(positions, positions[1:]))  # `wrt=(0, 0)`: copies, the general path
    if freeze is None and ascending and type(f) is types.FunctionType:
        return forwards.PlainCalls(positions)
    return None


def _plain_pullback(forward, args, kwargs, positions):
    """`_pullback` for a plain call (see `forwards.PlainCalls`): the same value and `back`."""
    gradient_mode.enter()  # not a `with`: cheaper, on every call
    try:
        value, generated_pullback = forward(*args, **kwargs)
    except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
        gradient_mode.leave()
        annotate_handled()
        raise
    gradient_mode.leave()

    def back(cotangent):
        gradient_mode.enter()
        try:
            cotangents = generated_pullback(arguments.complete(value, cotangent))
        except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
            gradient_mode.leave()
            annotate_handled()
            raise
        gradient_mode.leave()
        return structure.plain_gradients(args, cotangents, positions, cotangent)

    return value, back


def _positions(wrt):
    positions = (wrt,) if isinstance(wrt, int) else wrt
    if isinstance(positions, tuple) and all(isinstance(i, int) and i >= 0 for i in positions):
        return positions
    raise AdjointError(f"wrt must be a non-negative int or a tuple of them, not {wrt!r}")


_name = arguments.name_of
_pullback = model_calls.pullback  # every entry point's path for a call that is not plain
_require_python_function = forwards.require_python_function
