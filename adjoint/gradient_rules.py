"""The rules that let a gradient be differentiated again.

A gradient made by `adjoint.grad` is an ordinary function, and carries two rules:

- forward (`__adjoint_frule__`): the JVP of its gradient program, `gradient_program` below,
  whose call of the generated forward function and pullback is transformed like any other
  code (or, at floats and float arrays, of its fused gradient: `gradient_jvps`). This is
  forward-over-reverse: one JVP over the gradient.
- reverse (`__adjoint_rrule__`): the cotangent `v` of a gradient maps back through the
  symmetric Hessian, so the pullback is again one JVP of the gradient with respect to every
  argument, in the direction `v` (the Lux recipe for a loss that holds an inner gradient).

`adjoint.grad` itself has rules that hand a closure's tangent or cotangent through, so an
inner gradient of a function that closes over differentiated values is differentiated with
respect to them too (no perturbation confusion: each derivative has its own tangents).

>>> import numpy as np, adjoint
>>> gradient = adjoint.grad(lambda x: x ** 3)
>>> float(adjoint.jvp(gradient, (2.0,), (1.0,))[1])  # d/dx 3x^2 at 2
12.0
"""

from __future__ import annotations

import functools
import types

import numpy as np

from . import arguments, forwards, gradient_jvps, registry, runtime, tree
from .errors import AdjointError
from .runtime import calls as runtime_calls
from .runtime.marks import marked


def gradient_program(forward, seed, args):
    """What a gradient computes, written as code adjoint can transform again: the generated
    forward function, then its pullback from the seed. Forward mode differentiates this."""
    value, pullback = forward(*args)
    return pullback(seed(value))


def attach_rules(gradient_function, f, wrt, positions):
    """Give `gradient_function`, which is `adjoint.grad(f, wrt)`, its forward and reverse rules."""
    gradient_function.__adjoint_gradient_of__ = (f, positions)
    if type(f) is types.FunctionType and all(a < b for a, b in zip(positions, positions[1:])):
        gradient_function.__adjoint_plain_jvps__ = gradient_jvps.PlainGradientJvps(f, wrt, positions)
    gradient_function.__adjoint_frule__ = functools.partial(_gradient_frule, f, wrt, positions)
    gradient_function.__adjoint_rrule__ = functools.partial(_gradient_rrule, f, wrt, positions)
    return gradient_function


def attach_value_and_grad_rules(function, f, wrt, positions):
    """Give `function`, which is `adjoint.value_and_grad(f, wrt)`, forward and reverse rules:
    the value's are `f`'s own (by `jvp` and the gradient), the gradient's as for `grad`."""

    def value_and_grad_frule(primals, tangents, closure=None, **kwargs):
        if closure:
            raise AdjointError("value_and_grad of a closure over varied values cannot be differentiated again yet")
        value, dvalue = runtime.jvp(f, tuple(primals), tuple(tangents))
        gradient, dgradient = _gradient_frule(f, wrt, positions, primals, tangents)
        return (value, gradient), (dvalue, dgradient)

    def value_and_grad_rrule(*args, closure=False, **kwargs):
        if closure:
            raise AdjointError("value_and_grad of a closure over varied values cannot be differentiated again yet")
        gradient, gradient_pullback = _gradient_rrule(f, wrt, positions, *args)
        value = f(*args)

        def value_and_grad_pullback(g):
            value_bar, gradient_bar = g if g is not None else (None, None)
            cotangents = list(gradient_pullback(gradient_bar)) if gradient_bar is not None else [None] * len(args)
            if value_bar is not None:  # the value's cotangent times the gradient of every argument
                everything = tuple(i for i, a in enumerate(args) if arguments.carries_gradient(a, i, f))
                full, _ = _gradient_jvp(f, everything, args, (None,) * len(args), None)
                cotangents = [runtime.add(c, None if d is None else value_bar * d) for c, d in zip(cotangents, full)]
            return tuple(cotangents)

        return (value, gradient), value_and_grad_pullback

    function.__adjoint_frule__ = value_and_grad_frule
    function.__adjoint_rrule__ = value_and_grad_rrule
    return function


def refuse_differentiating(function, what):
    """Make differentiating `function` (a derivative adjoint made) refuse, naming `what` it is."""

    def refused(*args, **kwargs):
        raise AdjointError(f"{what} cannot be differentiated again yet: use adjoint.grad without them")

    function.__adjoint_frule__ = function.__adjoint_rrule__ = refused
    return function


def _gradient_frule(f, wrt, positions, primals, tangents, closure=None, **kwargs):
    """The gradient of `f` and its JVP along `tangents` (and `closure`, the tangents of what `f`
    closes over)."""
    if kwargs:
        raise AdjointError("a gradient differentiated again takes positional arguments only")
    cotangents, dcotangents = _gradient_jvp(f, positions, primals, tangents, closure)
    return arguments.select(_structured(cotangents, primals), wrt), arguments.select(_structured(dcotangents, primals), wrt)


def _structured(cotangents, primals) -> tuple:
    """A container argument's cotangent (or its tangent) as `grad` returns it: mirroring the
    container, None for what is not a float (an int exponent)."""
    if all(type(p) is float or type(p) is np.ndarray and p.dtype.kind != "O" for p in primals):
        return tuple(cotangents)  # (the common case: nothing to mirror)
    from . import structure  # noqa: PLC0415  (it imports the API's modules)

    return tuple(
        structure.structure(p, c) if c is not None and not runtime.is_differentiable(p) and tree.tree_leaves(p) else c
        for c, p in zip(cotangents, tuple(primals) + (None,) * (len(cotangents) - len(primals)))
    )


def _gradient_jvp(f, positions, primals, tangents, closure, captured=(), bound=0):
    """The cotangents of every positional argument of `f` (None outside `positions`), then of
    the names in `captured` that `f` closes over, and the tangents of all of them, by forward
    mode over the gradient program (`closure`: the tangents of what `f` closes over)."""
    primals = tuple(primals)
    f = marked(f, "__adjoint_checkpoint_of__", f)  # no memory to save in a second derivative
    if not closure and not captured and type(f) is types.FunctionType:
        fused = gradient_jvps.fused_gradient_jvp(f, positions, primals, tangents)
        if fused is not None:
            return _per_argument(f, primals, *fused, 0)
    _refuse_models(f, primals[bound:])  # what a bound method or partial binds is constant
    function, binds, keywords = runtime._unwrapped(f)
    if binds and not keywords:  # a bound method, partial or callable object: what it binds is constant
        count = len(binds)
        cotangents, dcotangents = _gradient_jvp(
            function, tuple(i + count for i in positions), binds + primals, (None,) * count + tuple(tangents),
            closure, captured, count,
        )
        return cotangents[count:], dcotangents[count:]
    if (not hasattr(f, "__code__") or registry.lookup(f) is not None) and marked(f, "__adjoint_gradient_of__") is None:
        # `hessian(np.sin)`, or a function with your rule: called from code adjoint reads, so the rule is used
        f = runtime.calling(f, len(primals))
    if marked(f, "__adjoint_gradient_of__") is not None:
        raise AdjointError(
            f"a gradient of a gradient of {arguments.name_of(f.__adjoint_gradient_of__[0])} cannot be "
            "differentiated again: adjoint computes first and second derivatives (grad, jvp, hvp, hessian "
            "and their mixes), not a third derivative yet"
        )
    reverse_wrt = tuple(i for i in positions if i < len(primals) and arguments.carries_gradient(primals[i], i, f))
    forward = forwards.forward(f, reverse_wrt + tuple(captured), (), primals)
    seed = functools.partial(arguments.unit, f=f)
    tangents = tuple(tangents) + (None,) * (len(primals) - len(tangents))
    with forwards.recursion_headroom():
        if closure or any(t is not None for t in tangents):
            program_tangents = (closure or None, None, tangents)
            cotangents, dcotangents = runtime.jvp(gradient_program, (forward, seed, primals), program_tangents)
        else:  # the gradient alone (a reverse rule's value): no tangents to carry
            cotangents = gradient_program(forward, seed, primals)
            dcotangents = (None,) * len(tuple(cotangents))
    return _per_argument(f, primals, cotangents, dcotangents, len(captured))


def _per_argument(f, primals, cotangents, dcotangents, captured: int):
    """The cotangents a pullback of `f` gave and their tangents, one per argument in `primals`
    then one per captured name (`captured` of them), the tangents shaped as their cotangents."""
    # the pullback gives one cotangent per parameter (those left to defaults too), then the captured
    positional = runtime_calls.positional_count(f, len(primals)) if hasattr(f, "__code__") else len(primals)
    count = positional + captured
    cotangents, dcotangents = registry.padded(cotangents, count), registry.padded(dcotangents, count)
    cotangents = cotangents[: len(primals)] + cotangents[positional:]
    dcotangents = dcotangents[: len(primals)] + dcotangents[positional:]
    dcotangents = tuple(
        None if c is None else runtime.tangent_like(d, c) for c, d in zip(cotangents, dcotangents)
    )
    return cotangents, dcotangents


def _gradient_rrule(f, wrt, positions, *args, closure=False, **kwargs):
    """The gradient of `f` at `args`, and its pullback: the Hessian (symmetric) applied to the
    cotangent `v`, as one JVP of the gradient with respect to every argument along `v`. With
    `closure`, the pullback returns first the cotangents of what `f` closes over, by name (and
    of the float default values the call leaves to `f`, by parameter), as `closure_vjp` does."""
    if kwargs:
        raise AdjointError("a gradient differentiated again takes positional arguments only")
    _refuse_models(f, args)
    captured = tuple(runtime_calls.captured_names(f)) if closure else ()
    defaulted = runtime_calls._defaulted(f, args, {}) if closure else {}
    full = tuple(args)
    if defaulted:  # the defaults as arguments, so the pullback reaches them
        first = f.__code__.co_argcount - len(f.__defaults__)
        full += tuple(f.__defaults__[i - first] for i in range(len(args), max(defaulted) + 1))
    everything = tuple(i for i, a in enumerate(full) if arguments.carries_gradient(a, i, f))
    value = _gradient_frule(f, wrt, positions, args, (None,) * len(args))[0]
    selected = (wrt,) if isinstance(wrt, int) else tuple(wrt)

    def gradient_pullback(v):
        parts = (v,) if isinstance(wrt, int) else tuple(v)
        direction = [None] * len(full)
        for position, part in zip(selected, parts):
            direction[position] = runtime.tangent_or_zeros(part, args[position]) if part is not None else None
        if all(d is None for d in direction):
            cotangents = (None,) * (len(full) + len(captured))
        else:
            _, cotangents = _gradient_jvp(f, everything, full, tuple(direction), None, captured)
        if not closure:
            return tuple(cotangents)
        closure_bar = dict(zip(captured, cotangents[len(full):]))
        closure_bar.update({name: cotangents[position] for position, name in defaulted.items()})
        return (closure_bar, *cotangents[: len(args)])

    return value, gradient_pullback


def _refuse_models(f, args):
    for i, a in enumerate(args):
        if not runtime.is_differentiable(a) and tree.tree_leaves(a) and not isinstance(a, (tuple, list, dict)):
            raise AdjointError(
                f"a gradient of {arguments.name_of(f)} with respect to an object (argument {i}, "
                f"{type(a).__name__}) cannot be differentiated again yet: pass its arrays as arguments"
            )
