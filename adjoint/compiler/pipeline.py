"""The compiler, start to finish: source -> fence -> control -> normalize -> ssa -> resolve ->
frozen -> activity -> inplace -> reverse -> optimize -> emit -> load.

`forward_function(fn, wrt, frozen)` returns the generated forward function of `fn` for the
parameter positions `wrt`, with the argument paths in `frozen` treated as constants (see
`adjoint.trainable`); the transform is cached per code object, `wrt` and `frozen`, and instantiated once per
function object (closures made in a loop share code but not cells). Set the environment
variable `ADJOINT_DEBUG=1`, or `pipeline.DEBUG = True`, to print the code after every pass.
"""

from __future__ import annotations

import os
import sys
import weakref

from .. import runtime
from . import activity, control, emit, fence, frozen, inplace, loader, normalize, optimize, resolve, reverse, ssa, syntax
from .context import Context
from .source import get_source

DEBUG = bool(os.environ.get("ADJOINT_DEBUG"))

# The passes after `fence`, in order; each is `transform(node, ctx) -> node`.
PASSES = (
    ("control", control.transform),
    ("normalize", normalize.transform),
    ("ssa", ssa.transform),
    ("resolve", resolve.transform),
    ("frozen", frozen.transform),
    ("activity", activity.transform),
    ("inplace", inplace.transform),
    ("reverse", reverse.transform),
    ("optimize", optimize.transform),
)

_compiled: dict[tuple, tuple] = {}  # (id(code), wrt, frozen, implicit) -> (code, Compiled)
_instances: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()


def lower(fn, wrt: tuple[int, ...], until: str | None = None, frozen: tuple = (), implicit: bool = False):
    """Run the passes over `fn` up to and including `until` (all by default): `(node, ctx)`.

    >>> def f(x):
    ...     return x * x
    >>> node, ctx = lower(f, (0,), until="normalize")
    >>> print(syntax.unparse(node.body[0]))
    f = x * x
    """
    ctx = Context(fn, get_source(fn), tuple(wrt), dict(frozen), implicit)
    node = fence.transform(ctx.source.node, ctx)
    ctx.check()
    for name, transform in PASSES:
        if name == "normalize":
            ctx.local_names = normalize.assigned_names(node)
        node = transform(node, ctx)
        _debug(name, node)
        if name == until:
            break
    ctx.check()
    return node, ctx


def compile_function(fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False) -> loader.Compiled:
    """Run every pass over `fn` and compile the result (not cached)."""
    node, ctx = lower(fn, wrt, frozen=frozen, implicit=implicit)
    text = emit.to_source(node, ctx)
    code = fn.__code__
    compiled = loader.compile_source(
        text, ctx.function_name, code.co_freevars, ctx.runtime_alias, runtime, ctx.injected,
        code.co_argcount, ctx.bindings, user_filename=ctx.source.filename,
    )
    compiled.updated_parameters = tuple(sorted(getattr(ctx, "updated_parameters", ()), key=str))
    return compiled


def compiled(fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False) -> loader.Compiled:
    """The cached compilation of `fn` for `wrt`, redone if a name it resolved was rebound.

    Keyed by the code object's identity: code objects compare equal across files when their
    bytecode is the same, and each file needs its own transform (its source, its names).
    """
    code = fn.__code__
    key = (id(code), wrt, frozen, implicit)
    entry = _compiled.get(key)
    if entry is None or entry[0] is not code or not loader.still_valid(entry[1], fn):
        entry = _compiled[key] = (code, compile_function(fn, wrt, frozen, implicit))
    return entry[1]


def forward_function(fn, wrt: tuple[int, ...], frozen: tuple = (), implicit: bool = False):
    """The generated forward function of `fn`, bound to `fn`'s globals and cells.

    `frozen` is `((position, (path, ...)), ...)`: the paths of the arguments that are frozen.
    `implicit` compiles for implicit parameters (`adjoint.params`): every call of a Python
    function is differentiated, since the function may read parameters through its globals."""
    try:
        per_function = _instances[fn]
    except KeyError:
        per_function = _instances[fn] = {}
    generated = per_function.get((wrt, frozen, implicit))
    if (
        generated is None or generated.__adjoint_code__ is not fn.__code__
        or not loader.still_valid(generated.__adjoint_compiled__, fn)
    ):
        result = compiled(fn, wrt, frozen, implicit)
        generated = loader.instantiate(result, fn)
        generated.__adjoint_code__ = fn.__code__
        generated.__adjoint_compiled__ = result
        generated.__adjoint_updates__ = result.updated_parameters  # ((parameter, line), ...)
        per_function[(wrt, frozen, implicit)] = generated
    return generated


def _debug(name, node):
    if DEBUG:
        print(f"# ---- after {name} ----\n{syntax.unparse(node)}\n", file=sys.stderr)
