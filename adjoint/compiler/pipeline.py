"""The compiler, start to finish: source -> fence -> within -> decorators -> control -> normalize -> ssa -> resolve ->
frozen -> activity -> inplace -> reverse -> products -> spreads -> optimize -> fields -> accumulation -> emit -> load.

`forward_function(fn, wrt, frozen)` returns the generated forward function of `fn` for the
parameter positions `wrt`, with the argument paths in `frozen` treated as constants (see
`adjoint.trainable`); the transform is cached per code object, `wrt` and `frozen`, and instantiated once per
function object (closures made in a loop share code but not cells). Set the environment
variable `ADJOINT_DEBUG=1`, or `pipeline.DEBUG = True`, to print the code after every pass.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys

from .. import runtime
from ..errors import AdjointError
from . import (
    accumulation, activity, array_methods, array_reductions, control, decorators, emit, fence, frozen, inplace, kinds, loader, normalize, optimize, resolve,
    reverse, shifts, ssa, syntax, tangent, within,
)
from . import fields, fuse, products, spreads
from .context import Context
from .source import get_source
from ..runtime.marks import marked
from ..runtime.remembered import ByIdentity

DEBUG = bool(os.environ.get("ADJOINT_DEBUG"))

# The passes after `fence`, in order; each is `transform(node, ctx) -> node`.
PASSES = (
    ("within", within.transform),
    ("decorators", decorators.transform),
    ("control", control.transform),
    ("normalize", normalize.transform),
    ("ssa", ssa.transform),
    ("resolve", resolve.transform),
    ("frozen", frozen.transform),
    ("array_reductions", array_reductions.transform),
    ("shifts", shifts.transform),
    ("activity", activity.transform),
    ("inplace", inplace.transform),
    ("reverse", reverse.transform),
    ("products", products.transform),
    ("spreads", spreads.transform),
    ("optimize", optimize.transform),
    ("fields", fields.transform),
    ("accumulation", accumulation.transform),
    ("array_methods", array_methods.transform),
)

# Forward mode (`jvp_function`) shares every pass up to `inplace`, then writes tangents instead.
TANGENT_PASSES = PASSES[: [name for name, _ in PASSES].index("reverse")] + (
    ("tangent", tangent.transform), ("optimize", optimize.drop_dead_copies), ("array_methods", array_methods.transform),
)
REVERSE, TANGENT = "reverse", "tangent"

_compiled: dict[tuple, tuple] = {}  # (id(code), wrt, frozen, implicit, mode) -> (code, Compiled)
# function -> {key: its generated function}, dropped with the function (found by identity)
_instances = ByIdentity()


def _collector_paused(transform):
    """`transform`, run with Python's cyclic garbage collector paused. A transform makes and
    drops thousands of small trees and tables; the collections they would set off walk the
    objects it keeps, and the process's older ones, over and over (about 5% of a first
    differentiation). Afterwards the collector is on again, and the one collection put off
    runs at the next allocation. Where it was off already (by the caller, or for a transform
    under way), it is left alone."""

    @functools.wraps(transform)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return transform(*args, **kwargs)
        gc.disable()
        try:
            return transform(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def lower(fn, wrt: tuple[int, ...], until: str | None = None, frozen: tuple = (), implicit: bool = False, mode=REVERSE,
          floats: tuple = ()):
    """Run the passes over `fn` up to and including `until` (all by default): `(node, ctx)`.

    >>> def f(x):
    ...     return x * x
    >>> node, ctx = lower(f, (0,), until="normalize")
    >>> print(syntax.unparse(node.body[0]))
    f = x * x
    """
    ctx = Context(fn, get_source(fn), tuple(wrt), dict(frozen), implicit, mode=mode, python_floats=tuple(floats))
    node = fence.transform(ctx.source.node, ctx)
    ctx.check()
    for name, transform in PASSES if mode == REVERSE else TANGENT_PASSES:
        node = transform(node, ctx)
        _debug(name, node)
        if name == until:
            break
    ctx.check()
    return node, ctx


@_collector_paused
def compile_function(
    fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False, mode=REVERSE, floats: tuple = (),
) -> loader.Compiled:
    """Run every pass over `fn` and compile the result (not cached); `floats`: the positions in
    `wrt` whose arguments are Python floats, which the code is specialised on."""
    if mode == REVERSE and marked(fn, "__adjoint_rrule__", None) is not None:  # its wrapper's code is not what it means
        raise AdjointError(
            f"`{fn.__qualname__}` was made by adjoint (a gradient or a checkpoint) and carries its own rules: "
            "differentiate it by calling it, not by transforming its code"
        )
    node, ctx = lower(fn, wrt, frozen=frozen, implicit=implicit, mode=mode, floats=floats)
    text = emit.to_source(node, ctx, "forward function and pullback" if mode == REVERSE else "JVP (forward mode)")
    code = fn.__code__
    compiled = loader.compile_source(
        text, ctx.function_name, code.co_freevars, ctx.runtime_alias, runtime, ctx.injected,
        code.co_argcount + (mode == TANGENT), ctx.bindings, user_filename=ctx.source.filename,
    )
    compiled.updated_parameters = tuple(sorted(getattr(ctx, "updated_parameters", ()), key=str))
    # the pullback nested in generated code (a forward function, or its JVP) reads the forward's numbers
    inherited = ctx.forward_numbers if mode == REVERSE else kinds.generated_numbers(fn)
    if inherited:
        kinds.remember_numbers(compiled.factory_code.co_filename, inherited)
    return compiled


def compiled(fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False, mode=REVERSE, floats: tuple = ()) -> loader.Compiled:
    """The cached compilation of `fn` for `wrt`, redone if a name it resolved was rebound.

    Keyed by the code object's identity: code objects compare equal across files when their
    bytecode is the same, and each file needs its own transform (its source, its names).
    """
    code = fn.__code__
    key = (id(code), wrt, frozen, implicit, mode, floats)
    entry = _compiled.get(key)
    if entry is None or entry[0] is not code or not loader.still_valid(entry[1], fn):
        entry = _compiled[key] = (code, compile_function(fn, wrt, frozen, implicit, mode, floats))
    return entry[1]


def forward_function(fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False, floats: tuple = ()):
    """The generated forward function of `fn`, bound to `fn`'s globals and cells.

    `frozen` is `((position, (path, ...)), ...)`: the paths of the arguments that are frozen.
    `implicit` compiles for implicit parameters (`adjoint.params`): every call of a Python
    function is differentiated, since the function may read parameters through its globals.
    `floats` are the positions whose arguments are Python floats: arithmetic among them
    broadcasts nothing, so their adjoints need no `adj.unbroadcast` (scalar code is
    specialised on it)."""
    per_function = _instances.get(fn)
    if per_function is None:
        per_function = _instances[fn] = {}
    generated = per_function.get((wrt, frozen, implicit, floats))
    if generated is None or generated.__adjoint_code__ is not fn.__code__ or not generated.__adjoint_bound__():
        result = compiled(fn, wrt, frozen, implicit, floats=floats)
        generated = loader.instantiate(result, fn)
        generated.__adjoint_code__ = fn.__code__
        generated.__adjoint_updates__ = result.updated_parameters  # ((parameter, line), ...)
        per_function[(wrt, frozen, implicit, floats)] = generated
    if generated.__defaults__ is not fn.__defaults__ or generated.__kwdefaults__ is not fn.__kwdefaults__:
        generated.__defaults__, generated.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__  # rebound since
    return generated


GRADIENT = "gradient"


def gradient_function(fn, wrt: tuple[int, ...], floats: tuple = (), release: bool = False):
    """`fn`'s gradient as one generated function (its forward function with the pullback
    inlined, see `fuse`), bound to `fn`'s globals and cells; None where the pullback cannot be
    inlined (then use `forward_function` and its pullback).

    Contract: called like `fn` (positionally, keywords, defaults), `gradient(*args)` returns
    what `forward_function(fn, wrt, floats=floats)(*args)[1](unit)` would: one cotangent per
    positional parameter of `fn` (None outside `wrt`), then the `*args` parameter's; it raises
    `grad`'s error where `fn` returns anything but a real scalar. `floats` as for
    `forward_function`; nothing is frozen and no implicit gradient runs (the caller checks
    that, as `forwards.PlainCalls` does). `__adjoint_bound__()` tells whether it is still valid
    for this `fn` (its code, defaults and resolved names unchanged: then it is returned again),
    `__adjoint_updates__` which parameters `fn` updates in place. Its text is in `linecache`
    like all generated code, so forward mode transforms it again (`runtime.jvp(gradient, ...)`).
    With `release`, it lets go of what the pullback does not read once the value is known
    (`del`, which forward mode does not read: for running it, as `grad` does).

    >>> def f(x, y=3.0):
    ...     return x * y
    >>> gradient_function(f, (0, 1), floats=(0,))(2.0)
    (3.0, 2.0)
    """
    per_function = _instances.get(fn)
    if per_function is None:
        per_function = _instances[fn] = {}
    key = (GRADIENT, wrt, floats, release)
    generated = per_function.get(key)
    if generated is None or generated.__adjoint_code__ is not fn.__code__ or not generated.__adjoint_bound__():
        result = _compiled_gradient(fn, wrt, floats, release)
        if result is None:
            return None
        generated = loader.instantiate(result, fn)
        generated.__adjoint_code__ = fn.__code__
        generated.__adjoint_updates__ = result.updated_parameters
        per_function[key] = generated
    if generated.__defaults__ is not fn.__defaults__ or generated.__kwdefaults__ is not fn.__kwdefaults__:
        generated.__defaults__, generated.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__  # rebound since
    return generated


@_collector_paused
def _compiled_gradient(fn, wrt: tuple[int, ...], floats: tuple, release: bool) -> loader.Compiled | None:
    """The cached compilation of `fn`'s fused gradient (None: not fusable), as `compiled`."""
    code = fn.__code__
    key = (id(code), wrt, (), False, GRADIENT, floats, release)
    entry = _compiled.get(key)
    if entry is not None and entry[0] is code and (entry[1] is None or loader.still_valid(entry[1], fn)):
        return entry[1]  # (a refusal is kept as long as the code: it follows from its shape)
    result = None
    if marked(fn, "__adjoint_rrule__", None) is None:  # (`compile_function` refuses those with why)
        node, ctx = lower(fn, wrt, floats=floats)
        node = fuse.transform(node, ctx, release)
        _debug("fuse", node)
        if node is not None:
            text = emit.to_source(node, ctx, "gradient (forward function and pullback fused)")
            result = loader.compile_source(
                text, ctx.function_name, code.co_freevars, ctx.runtime_alias, runtime, ctx.injected,
                code.co_argcount, ctx.bindings, user_filename=ctx.source.filename,
            )
            result.updated_parameters = tuple(sorted(getattr(ctx, "updated_parameters", ()), key=str))
            if ctx.forward_numbers:  # what forward mode over it may differentiate inline
                kinds.remember_numbers(result.factory_code.co_filename, ctx.forward_numbers)
    _compiled[key] = (code, result)
    return result


_unread_gradients: dict[tuple, object] = {}  # the fused gradients forward mode could not transform: key -> code


def gradient_jvp_function(fn, wrt: tuple[int, ...], floats: tuple, moved: tuple[int, ...]):
    """The JVP function of `gradient_function(fn, wrt, floats)` for tangents of the positional
    arguments at `moved` (floats or float arrays), or None where there is no fused gradient or
    `fn` updates an argument in place (the general path checks the arguments' memory):
    `jvp_fn(tangents, *args)` returns `(cotangents, their tangents)`, a Hessian-vector product.
    Found again for `fn` with one `__adjoint_bound__()` call, which checks both generated
    functions (`fn`'s code, defaults and the names either resolved); `jvp_function` of the
    gradient is the same code, checked more slowly, as for any function."""
    per_function = _instances.get(fn)
    if per_function is None:
        per_function = _instances[fn] = {}
    key = (GRADIENT, TANGENT, wrt, floats, moved)
    generated = per_function.get(key)
    if (
        generated is None or generated.__adjoint_code__ is not fn.__code__ or not generated.__adjoint_bound__()
        or generated.__defaults__ is not fn.__defaults__ or generated.__kwdefaults__ is not fn.__kwdefaults__
    ):
        if _unread_gradients.get((id(fn.__code__),) + key) is fn.__code__:
            return None
        gradient = gradient_function(fn, wrt, floats)
        if gradient is None or gradient.__adjoint_updates__:  # (`fn` updates an argument in place)
            return None
        try:
            result = compiled(gradient, moved, mode=TANGENT)
        except AdjointError:  # the general path then runs, and reports what it must
            # forward mode over the fused code may refuse what it accepts in the forward function
            # and its pullback apart (kept per code, tried once)
            _unread_gradients[(id(fn.__code__),) + key] = fn.__code__
            return None
        generated = loader.instantiate(result, gradient, checked=False)
        generated.__adjoint_bound__ = loader.binding_check((gradient.__adjoint_compiled__, fn), (result, gradient))
        generated.__adjoint_code__ = fn.__code__
        generated.__defaults__, generated.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
        per_function[key] = generated
    if _recorded is not None and generated.__adjoint_source__ not in _recorded:
        _recorded.append(generated.__adjoint_source__)
    return generated


def jvp_function(fn, wrt: tuple, containers: tuple = ()):
    """The generated JVP function of `fn` for the parameter positions (and closure variable
    names) `wrt`, bound to `fn`'s globals and cells: `jvp_fn(tangents, *args, **kwargs)`
    returns `(value, tangent)`, `tangents` holding one tangent per entry of `wrt`.
    `containers` are the positions in `wrt` whose arguments are containers or objects, not
    numbers or arrays (arithmetic on them is checked at run time)."""
    per_function = _instances.get(fn)
    if per_function is None:
        per_function = _instances[fn] = {}
    key = (TANGENT, wrt, containers)
    generated = per_function.get(key)
    if (
        generated is None or generated.__adjoint_code__ is not fn.__code__
        or not loader.still_valid(generated.__adjoint_compiled__, fn)
    ):
        result = compiled(fn, wrt, tuple((position, ()) for position in containers), mode=TANGENT)
        generated = loader.instantiate(result, fn, checked=False)  # `still_valid` checks it here
        generated.__defaults__ = fn.__defaults__
        generated.__adjoint_code__ = fn.__code__
        generated.__adjoint_compiled__ = result
        per_function[key] = generated
    if generated.__defaults__ is not fn.__defaults__:
        generated.__defaults__ = fn.__defaults__  # rebound since
    if _recorded is not None and generated.__adjoint_compiled__.text not in _recorded:
        _recorded.append(generated.__adjoint_compiled__.text)
    return generated


_recorded: list | None = None  # while `recording()`: the JVP code each call used, in order


@contextlib.contextmanager
def recording():
    """Collect the text of every JVP function used inside the block (`adjoint.source` of a
    derivative of a derivative shows them all)."""
    global _recorded
    saved, _recorded = _recorded, []
    try:
        yield _recorded
    finally:
        _recorded = saved


def _debug(name, node):
    if DEBUG:
        print(f"# ---- after {name} ----\n{syntax.unparse(node)}\n", file=sys.stderr)
