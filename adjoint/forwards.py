"""Generated forward functions for the API and for calls made from generated code.

`forward(f, wrt, frozen)` gets the compiled forward function (wrapped for implicit parameters
while `adjoint.gradient(f, ps)` runs), and `PlainCalls` finds it quickly for the common call;
`transform_for_runtime` is what `runtime.vjp` calls to differentiate your functions from inside
generated code; `recursion_headroom` (from `runtime.gradient_mode`) makes room for
differentiated recursion.
"""

from __future__ import annotations

import types
import weakref

import numpy as np

from . import arguments, implicit, registry, runtime, structure, trainable, tree
from .arguments import name_of
from .compiler import pipeline, resolve
from .errors import AdjointError, TransformError
from .runtime import gradient_mode
from .runtime.gradient_mode import recursion_headroom  # noqa: F401  (where `derivatives` finds it)
from .runtime.marks import marked
from .runtime.remembered import ByIdentity
from .tracebacks import annotate_handled


def forward(f, wrt, frozen=(), args=()):
    """The generated forward function of `f` for the parameter positions `wrt` and the frozen
    paths `frozen`, specialised on which of the arguments `args` there are Python floats; while
    an implicit gradient runs (`adjoint.params`), also with respect to the globals, closure
    variables and default values of `f` that hold parameters (`args`, the positional arguments
    of the call, tell which defaults it uses)."""
    try:
        collector = implicit.collector()
        if collector is None:
            return pipeline.forward_function(f, wrt, frozen, floats=python_floats(wrt, args))
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


def python_floats(wrt, args) -> tuple:
    """The positions in `wrt` whose arguments in `args` are Python floats.

    >>> python_floats((0, 1, 2), (0.5, np.ones(2), 2.0))
    (0, 2)
    """
    floats, count = (), len(args)
    for i in wrt:  # (asked on every call from generated code: a loop, not a generator)
        if type(i) is int and i < count and type(args[i]) is float:
            floats += (i,)
    return floats


class PlainCalls:
    """The plain calls of a Python function `f` differentiated at `positions` (ascending), found
    and run with a few identity checks per call: those whose arguments there are floats and
    real float arrays (so each carries a gradient, and nothing is frozen), made while no
    implicit gradient runs, of an `f` without a rule that updates no argument in place. What
    the general path (`api._pullback`) would check besides is checked again when `f`, its
    code, a name its code resolved, or the registered rules change. Every call is given `f`:
    held here, it would keep itself alive in `plain_calls`'s cache."""

    __slots__ = ("positions", "count", "found", "found_fused", "unfused")

    def __init__(self, positions):
        self.positions = tuple(positions)
        self.count = self.positions[-1] + 1 if self.positions else 0  # the arguments a call needs
        # (`registry.version`, code, positions of Python floats, binding check, defaults, generated,
        # whether it may recurse) when `generated` was found: one tuple, replaced whole, so that
        # threads read it whole; `found` for the forward function, `found_fused` for the fused
        # gradient (`pipeline.gradient_function`)
        self.found = self.found_fused = (-1, None, None, None, None, None, True)
        self.unfused = None  # the code of `f` whose pullback cannot be inlined

    def forward(self, f, args):
        """The generated forward function for the call `f(*args)`, or None if the call is
        not plain (the general path takes it, and refuses what it must)."""
        return self._generated(f, args, False)

    def _generated(self, f, args, fused):
        """The forward function (or with `fused` the fused gradient, or False where `f`'s
        pullback cannot be inlined) for the call `f(*args)`, or None if it is not plain."""
        if len(args) < self.count:
            return None
        floats = self._floats(args)
        if floats is None:
            return None
        if implicit.collector() is not None:
            return None
        version, code, specialised, bound, defaults, generated, _ = self.found_fused if fused else self.found
        if (
            version == registry.version and code is f.__code__ and specialised == floats
            and defaults is f.__defaults__ and generated.__kwdefaults__ is f.__kwdefaults__ and bound()
        ):
            return generated
        if fused and self.unfused is f.__code__:
            return False
        return self._found(f, floats, args, fused)

    def _floats(self, args):
        """The positions among `positions` of the Python floats in `args`, or None if an
        argument there is neither a float nor a real float array."""
        floats = ()
        for i in self.positions:
            arg = args[i]
            kind = type(arg)
            if kind is _NDARRAY:
                dtype = arg.dtype
                if dtype is not _FLOAT64 and dtype.kind != "f":
                    return None
            elif kind is float:
                floats += (i,)
            else:
                return None
        return floats

    def gradients(self, f, args, kwargs, has_aux=False):
        """`(value, gradients)` of the call `f(*args, **kwargs)` of scalar-valued `f` (with
        `has_aux`, `value` is `(loss, aux)`), the gradients those of the arguments at
        `positions`; or None if the call is not plain. The forward pass and the pullback run
        as one differentiated call."""
        forward = self.forward(f, args)
        if forward is None:
            return None
        recursive = self.found[6]
        gradient_mode.enter(recursive)
        try:
            value, pullback = forward(*args, **kwargs) if kwargs else forward(*args)
            if has_aux:
                seed = (arguments.unit(arguments.loss_of(value, f), f), None)
                cotangents = pullback(arguments.complete(value, seed))
            else:
                seed = arguments.unit(value, f)
                cotangents = pullback(seed)
        except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
            gradient_mode.leave(recursive)
            annotate_handled()
            raise
        gradient_mode.leave(recursive)
        return value, structure.plain_gradients(args, cotangents, self.positions, seed)

    def gradient(self, f, args, kwargs):
        """The gradients of the call `f(*args, **kwargs)` of scalar-valued `f` at `positions`
        (what `gradients` gives, without the value), or None if the call is not plain. Where
        `f`'s pullback can be inlined (`pipeline.gradient_function`), one generated function
        computes them, and no pullback closure is made."""
        fused = self._generated(f, args, True)
        if not fused:
            done = None if fused is None else self.gradients(f, args, kwargs)
            return None if done is None else done[1]
        recursive = self.found_fused[6]
        gradient_mode.enter(recursive)
        try:
            cotangents = fused(*args, **kwargs) if kwargs else fused(*args)
        except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
            gradient_mode.leave(recursive)
            annotate_handled()
            raise
        gradient_mode.leave(recursive)
        return structure.plain_gradients(args, cotangents, self.positions, None)

    def _found(self, f, floats, args, fused):
        """Look `f` up again: whether it has a rule, and its forward function (or fused
        gradient) for arguments with Python floats at `floats` (compiled again if a name it
        resolved was rebound)."""
        version = registry.version
        if registry.lookup(f) is not None or marked(f, "__adjoint_rrule__") is not None:  # a rule, or a derivative
            return None
        if fused:
            try:
                generated = pipeline.gradient_function(f, self.positions, floats, release=True)
            except TransformError:  # the forward function's path refuses it, saying more (`forward`)
                generated = None
            if generated is None:
                self.unfused = f.__code__
                return False
        else:
            generated = forward(f, self.positions, args=args)  # specialised on the floats among `args`
        if generated.__adjoint_updates__:  # the general path checks the arguments' memory
            return None
        found = (
            version, generated.__adjoint_code__, floats, generated.__adjoint_bound__, f.__defaults__, generated,
            may_recurse(generated),
        )
        if fused:
            self.found_fused = found
        else:
            self.found = found
        return generated


def may_recurse(generated) -> bool:
    """Whether generated code may call back into differentiated Python functions (`adj.vjp`
    and its siblings), each call taking more frames than Python would: only then does a call
    of it need room for deeper recursion (see `gradient_mode.recursion_headroom`)."""
    code, nested = generated.__code__, []
    while True:
        if any(name.endswith(("vjp", "jvp")) or name in _DIFFERENTIATED_CALLS for name in code.co_names):
            return True
        nested.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        if not nested:
            return False
        code = nested.pop()


# the runtime's ways of calling a Python function differentiated, besides `*vjp` and `*jvp`
_DIFFERENTIATED_CALLS = frozenset({"method_function", "vjp_program", "vjp_forward", "calling", "checkpoint"})
_NDARRAY, _FLOAT64 = np.ndarray, np.dtype(np.float64)
_plain_calls: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()


def plain_calls(f, positions) -> PlainCalls:
    """The `PlainCalls` of `f` at `positions`, made once per function object (for
    `adjoint.pullback(f, ...)`, given `f` on every call; a gradient keeps its own)."""
    per_function = _plain_calls.get(f)
    if per_function is None:
        per_function = _plain_calls[f] = {}
    calls = per_function.get(positions)
    if calls is None:
        calls = per_function[positions] = PlainCalls(positions)
    return calls


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
    The frozen fields of the objects among `args` specialise it (see `trainable.call_spec`).

    While no implicit gradient runs, what it found for `fn` is kept per positions, frozen
    fields and Python floats, and found again with the checks `pipeline.forward_function`
    makes (the code of `fn`, its defaults, the names it resolved, the registered rules): the
    frozen fields are still worked out on every call, so a class whose `__trainable__` changes,
    or a freezing that starts, finds other code."""
    collector = implicit.collector()
    if collector is None:
        wrt = wrt if type(wrt) is tuple else tuple(wrt)
        key = (wrt, trainable.call_spec(args, wrt), python_floats(wrt, args))
        entry = _runtime_forwards.entries.get(id(fn))  # (`_runtime_forwards.get(fn)`, without its call)
        generated = entry[1].get(key) if entry is not None and entry[0]() is fn else None
        if (
            generated is not None and generated.__adjoint_code__ is fn.__code__ and generated.__adjoint_bound__()
            and generated.__defaults__ is fn.__defaults__ and generated.__kwdefaults__ is fn.__kwdefaults__
        ):
            return generated
    require_python_function(fn)
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
    if collector is None:
        known = _runtime_forwards.get(fn)
        if known is None:
            _runtime_forwards[fn] = known = {}
        known[key] = generated
    return generated


# function -> {(wrt, frozen fields, Python floats): its forward function}, while no implicit
# gradient runs (a function dropped with the function, as `pipeline.forward_function` keeps them)
_runtime_forwards = ByIdentity()


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
