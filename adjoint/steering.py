"""Steering differentiation from inside your code: `within_gradient`, `stop_gradient`, `hook`
and `checkpoint`.

Each is an ordinary function in an ordinary call, and has rules (`adjoint.rules.steering`) that
say what it means to a derivative: `within_gradient()` is written as `True` into generated
code, `stop_gradient` carries no derivative, a hook is the identity whose pullback calls your
function, and a checkpointed function keeps only its inputs and runs again in the pullback.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from . import arguments, runtime, tree
from .errors import AdjointError
from .random_states import moved, random_states, restore_random_states, state_of
from .runtime.gradient_mode import within_gradient
from .runtime.marks import marked

__all__ = ["within_gradient", "stop_gradient", "hook", "checkpoint"]


def stop_gradient(x):
    """`x` itself, as a constant: no cotangent flows back through it, and its tangent is zero.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return x * adjoint.stop_gradient(x)
    >>> float(adjoint.grad(f)(3.0))  # d/dx [x * c] at c = x = 3
    3.0
    """
    return x


def hook(x, fn):
    """`x` itself; in the pullback, `fn` receives the cotangent flowing to `x` and returns the
    one to hand on (None: the same). For clipping, logging (`hook(x, print)`) or a breakpoint
    in the backward pass (`hook(x, lambda g: breakpoint())`, with `g` in the debugger's frame).
    `fn` gets its own copy of the cotangent, which it may change in place: for a list of arrays
    a list of them (zeros where nothing flowed), for a model a `Tangent` of the fields that
    received one. Forward mode passes tangents through untouched; under a second derivative a
    hook is refused.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     y = adjoint.hook(x, lambda g: np.clip(g, -1.0, 1.0))
    ...     return np.sum(5.0 * y)
    >>> adjoint.grad(f)(np.zeros(2))
    array([1., 1.])
    """
    return x


def checkpoint(fn=None, *, preserve_rng_state=True):
    """`fn` for gradient checkpointing: called in differentiated code, the forward pass keeps
    only the arguments (not the intermediate values its pullback would need), and the pullback
    runs `fn`'s forward again before going back through it. Gradients are the same; memory
    holds one checkpointed call's intermediates at a time. Works as a decorator; a plain call
    is `fn`'s.

    Random draws are replayed in the second run: from generators among the arguments (NumPy's
    and `random.Random`s, in containers and objects too), and with `preserve_rng_state` (the
    default: about 0.3 ms per call, to look) from NumPy's global generator and Python's `random`
    when the first run drew from them. Replaying a global generator rewinds it for a moment,
    which other threads drawing from it at that time would see: give each thread a generator
    of its own. Anything else `fn` reads (a module-level name rebound since) is read again, and
    its side effects happen twice. A second run that gives a different value is refused. `fn`
    is a function: an object holding floats (a layer) is refused, since its gradients would be
    lost behind the checkpoint; decorate its method instead.
    Forward mode and Hessian-vector products differentiate `fn` directly.
    `@adjoint.checkpoint(preserve_rng_state=False)` decorates too.

    >>> import numpy as np, adjoint
    >>> @adjoint.checkpoint
    ... def block(h, W):
    ...     return np.tanh(W @ h)
    >>> def loss(W, h):
    ...     for _ in range(3):
    ...         h = block(h, W)
    ...     return np.sum(h ** 2)
    >>> def unrolled(W, h):
    ...     for _ in range(3):
    ...         h = np.tanh(W @ h)
    ...     return np.sum(h ** 2)
    >>> W, h = np.eye(2) * 0.5, np.ones(2)
    >>> bool(np.array_equal(adjoint.grad(loss)(W, h), adjoint.grad(unrolled)(W, h)))
    True
    """
    if fn is None:
        return functools.partial(checkpoint, preserve_rng_state=preserve_rng_state)
    if not callable(fn):
        raise AdjointError(f"adjoint.checkpoint needs a function, not {fn!r}")
    fn = marked(fn, "__adjoint_checkpoint_of__", fn)  # checkpointed twice is checkpointed once
    if tree.tree_leaves(list(_bound_parts(fn))):
        raise AdjointError(
            f"adjoint.checkpoint of {_described(fn)}, which holds float values: their gradients would be lost "
            "behind the checkpoint. Checkpoint a function of them instead (`adjoint.checkpoint(lambda h, W: ...)`), "
            "or decorate the class's method (`@adjoint.checkpoint` on `def __call__`)"
        )

    def checkpointed(*args, **kwargs):
        return fn(*args, **kwargs)

    functools.update_wrapper(checkpointed, fn, updated=())  # `__wrapped__` too: `fn`'s signature binds keywords
    checkpointed.__adjoint_checkpoint_of__ = fn
    replayed = functools.partial(random_states, globally=preserve_rng_state)
    checkpointed.__adjoint_rrule__ = functools.partial(_checkpoint_rrule, fn, replayed)
    checkpointed.__adjoint_vjp__ = functools.partial(_checkpoint_vjp, fn, replayed)  # told which arguments: less work
    checkpointed.__adjoint_frule__ = functools.partial(_checkpoint_frule, fn)
    return checkpointed


def _checkpoint_rrule(fn, replayed, *args, closure=False, **kwargs):
    wrt = tuple(i for i, a in enumerate(args) if arguments.carries_gradient(a, i, fn))
    return _checkpoint_vjp(fn, replayed, wrt, closure, args, kwargs)


def _checkpoint_vjp(fn, replayed, wrt, closure, args, kwargs):
    """`(value, pullback)` of a checkpointed call of `fn` whose arguments at `wrt` (and, with
    `closure`, whose captured values) get cotangents, as `adj.vjp` and `adj.closure_vjp` give."""

    def run():
        if closure:
            return runtime.closure_vjp((0, *(i + 1 for i in wrt)), fn, *args, **kwargs)
        return runtime.vjp(wrt, fn, *args, **kwargs)

    function, bound, _ = runtime._unwrapped(fn)
    if isinstance(function, types.FunctionType) and marked(function, "__adjoint_rrule__") is None:
        # refused before it runs (an update of its arguments...)
        runtime._transform_hook(function, tuple(i + len(bound) for i in wrt), (*bound, *args))
    holders = (*_bound_parts(fn), *args, *kwargs.values())
    before = replayed(holders, {})
    value = fn(*args, **kwargs)  # run as it is: nothing kept for a pullback
    draws = moved(before, replayed(holders, {}))  # the generators it drew from, as they were

    def checkpoint_pullback(g):
        now = [(generator, state_of(generator)) for generator, _ in draws]
        restore_random_states(draws)
        try:
            again, pullback = run()
        finally:
            restore_random_states(now)
        _check_same(fn, value, again)
        return pullback(g)

    return value, checkpoint_pullback


def _checkpoint_frule(fn, primals, tangents, closure=None, **kwargs):
    return runtime.closure_jvp(fn, closure, primals, tangents, **kwargs)


def _bound_parts(fn) -> tuple:
    """What a callable carries besides its code: a bound method's receiver, a partial's
    arguments, a callable object itself."""
    if isinstance(fn, types.MethodType):
        return (fn.__self__,)
    if isinstance(fn, functools.partial):
        return (*fn.args, *fn.keywords.values())
    if not isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        return (fn,)
    return ()


def _described(fn) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    return f"`{name}`" + (f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else "")


def _same(a, b) -> bool:
    """Equal, or within rounding (a parallel BLAS may sum in another order)."""
    if np.shape(a) != np.shape(b):
        return False
    return np.array_equal(a, b) or np.allclose(a, b, rtol=1e-7, atol=0.0, equal_nan=True)


def _check_same(fn, value, again) -> None:
    first, second = tree.tree_leaves(value), tree.tree_leaves(again)
    if len(first) == len(second) and all(_same(a, b) for a, b in zip(first, second)):
        return
    raise AdjointError(
        f"the checkpointed function {_described(fn)} gave a different value when it ran again for its "
        "gradient, so its gradient would be wrong. It may draw from a generator it reaches neither through its "
        "arguments nor as NumPy's or Python's global one (with preserve_rng_state=True), draw from a global "
        "generator another thread also draws from, or read a global or other state that changed since the "
        "forward pass. Pass the generator or the state as an argument, or do not checkpoint it."
    )
