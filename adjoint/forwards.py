"""Generated forward functions for the API and for calls made from generated code.

`forward(f, wrt, frozen)` gets the compiled forward function (wrapped for implicit parameters
while `adjoint.gradient(f, ps)` runs); `transform_for_runtime` is what `runtime.vjp` calls to
differentiate your functions from inside generated code; `recursion_headroom` makes room for
differentiated recursion.
"""

from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

from . import implicit, runtime, trainable, tree
from .arguments import name_of
from .compiler import pipeline, resolve
from .errors import AdjointError, TransformError


@contextlib.contextmanager
def recursion_headroom():
    """Room for recursion as deep as plain Python allows: a differentiated recursive call takes
    about three frames (`vjp`, the forward function, its pullback) where Python takes one."""
    global _raised
    limit = sys.getrecursionlimit()
    if not _raised:
        sys.setrecursionlimit(3 * limit)
    _raised += 1
    try:
        yield
    finally:
        _raised -= 1
        if not _raised:
            sys.setrecursionlimit(limit)


_raised = 0  # how many differentiated calls are running (only the outermost raises the limit)


def forward(f, wrt, frozen=(), args=()):
    """The generated forward function of `f` for the parameter positions `wrt` and the frozen
    paths `frozen`; while an implicit gradient runs (`adjoint.params`), also with respect to
    the globals, closure variables and default values of `f` that hold parameters (`args`, the
    positional arguments of the call, tell which defaults it uses)."""
    try:
        collector = implicit.collector()
        if collector is None:
            return pipeline.forward_function(f, wrt, frozen)
        names = implicit.implicit_names(f, wrt, collector)
        defaulted = tuple(p for p in implicit.defaulted_positions(f, args, collector) if p not in wrt)
        positions = tuple(sorted({i for i in wrt if isinstance(i, int)} | set(defaulted)))
        forward = pipeline.forward_function(
            f, positions + tuple(i for i in wrt if not isinstance(i, int)) + names, frozen, implicit=True
        )
        return implicit.collected(forward, f, names, defaulted, collector) if names or defaulted else forward
    except TransformError as error:
        if not hasattr(f, "__wrapped__"):
            raise
        context = (
            f"`{f.__qualname__}` is a wrapper made by a decorator (it has `__wrapped__`), and these "
            "problems are in the wrapper's code. Differentiate the undecorated function, "
            f"`{f.__qualname__}.__wrapped__`, or apply the decorator outside adjoint."
        )
        raise TransformError(error.function_name, error.problems, context) from None


def require_python_function(f):
    """Refuse, with what to do, something that is neither a rule's primitive nor Python code."""
    if not isinstance(f, types.FunctionType):
        name = getattr(f, "__qualname__", None) or type(f).__name__
        hint = resolve.random_draw_hint(f)
        raise AdjointError(
            f"adjoint cannot differentiate `{name}` ({type(f).__name__}): it has no rule and is "
            "not a Python function. " + (f"As a random draw: {hint}." if hint else
            "Differentiate a Python function that calls it, or register a rule for it with @adjoint.rrule.")
        )


def transform_for_runtime(fn, wrt, args=()):
    """The forward function of `fn` for `runtime.vjp`, which has already unwrapped bound methods,
    callable objects and partials: `fn` is their function, called with the receiver first.
    The frozen fields of the objects among `args` specialise it (see `trainable.call_spec`)."""
    require_python_function(fn)
    collector = implicit.collector()
    keep = collector.holds_parameter if collector is not None else None  # `params(layer.gamma)` asks for it
    generated = forward(fn, tuple(wrt), trainable.call_spec(args, wrt, keep), args)
    if generated.__adjoint_updates__:
        parameter, line = generated.__adjoint_updates__[0]
        raise AdjointError(
            f"{name_of(fn)} updates its argument `{parameter}` in place (line {line} of "
            f"{fn.__code__.co_filename}). Called from differentiated code, adjoint would leave the "
            f"caller's value unchanged, unlike Python. Return the new value instead "
            f"(`{parameter} = {parameter} + ...`, or `{parameter} = {parameter}.copy()` first)."
        )
    return generated


def refuse_shared_updated_arguments(f, forward, args) -> None:
    """A function that updates a parameter in place may not be passed that array twice (also
    inside a container or model argument): in Python the other place would see the update, in
    adjoint's copy it would not."""
    if not forward.__adjoint_updates__:
        return
    names = f.__code__.co_varnames[: f.__code__.co_argcount]
    for parameter, line in forward.__adjoint_updates__:
        if parameter not in names or names.index(parameter) >= len(args):
            continue
        position = names.index(parameter)
        updated = args[position]
        if not isinstance(updated, np.ndarray):
            continue
        for index, other in enumerate(args):
            if index != position and any(
                isinstance(leaf, np.ndarray) and np.may_share_memory(updated, leaf) for leaf in _arrays_in(other)
            ):
                raise AdjointError(
                    f"{name_of(f)} updates its argument `{parameter}` in place (line {line}), and argument "
                    f"{index} shares its memory: Python would show the update through both, adjoint "
                    f"updates a copy. Pass a copy, or write `{parameter} = {parameter} + ...`."
                )


def _arrays_in(value) -> list:
    return [value] if isinstance(value, np.ndarray) else tree.tree_leaves(value)


runtime.install_transformer(transform_for_runtime)


def tangent_for_runtime(fn, wrt, outermost=False, args=()):
    """The JVP function of `fn` for `runtime.jvp` (see `pipeline.jvp_function`). Only the
    outermost function (`adjoint.jvp`'s) may update its arguments in place."""
    require_python_function(fn)
    containers = tuple(i for i in wrt if isinstance(i, int) and i < len(args) and not runtime.is_differentiable(args[i]))
    generated = pipeline.jvp_function(fn, tuple(wrt), containers)
    generated.__adjoint_updates__ = updates = generated.__adjoint_compiled__.updated_parameters
    if updates and outermost:
        refuse_shared_updated_arguments(fn, generated, args)
    elif updates:
        parameter, line = updates[0]
        raise AdjointError(
            f"{name_of(fn)} updates its argument `{parameter}` in place (line {line} of "
            f"{fn.__code__.co_filename}). Called from differentiated code, adjoint would leave the "
            f"caller's value unchanged, unlike Python. Return the new value instead."
        )
    return generated


runtime.install_tangent_transformer(tangent_for_runtime)
