"""What a module written by `adjoint.export` calls at run time: its entry points, and the
functions of yours it differentiates, each carrying its own exported forward function.

An exported module holds generated code only: nothing here reads source or transforms
anything. While an entry point runs, a call that would need the compiler (a Python function
reached only at run time, such as a method of an object of yours) is served from the forward
functions exported modules registered for it (`serve`), or refused, never transformed, so an
exported module never parses code behind your back; other threads, and adjoint used
directly, are not affected.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np

from .. import runtime
from ..errors import AdjointError
from . import gradient_mode

__all__ = ["pullback", "grad", "value_and_grad", "differentiated", "serve", "run_time_key"]

_standalone = threading.local()  # `depth > 0` while this thread runs an exported entry point


def pullback(forward, name, wrt, args, kwargs):
    """`(value, back)` of the exported `forward` at `args`, as `adjoint.pullback` returns them:
    `back(cotangent)` returns one gradient per positional argument (None outside the positions
    `wrt`, and for arguments that carry none), never sharing memory with the arguments or
    `cotangent`.

    >>> def square_forward(x):
    ...     return x * x, lambda g: (2 * x * g,)
    >>> value, back = pullback(square_forward, "square", (0,), (3.0,), {})
    >>> value, back(1.0)
    (9.0, (6.0,))
    """
    _check_count(name, wrt, args)
    with _RUNNING:
        value, generated_pullback = forward(*args, **kwargs)
    return value, lambda cotangent: tuple(_gradients(args, value, generated_pullback, cotangent, wrt, name))


def value_and_grad(forward, name, wrt, args, kwargs):
    """`(value, gradient)` of scalar-valued `forward` at `args`: one gradient for an int
    `wrt`, a tuple of them for a tuple; a non-scalar value is refused as `adjoint.grad`
    refuses it.

    >>> def square_forward(x):
    ...     return x * x, lambda g: (2 * x * g,)
    >>> value_and_grad(square_forward, "square", 0, (3.0,), {})
    (9.0, 6.0)
    """
    positions = (wrt,) if isinstance(wrt, int) else wrt
    _check_count(name, positions, args)
    with _RUNNING:
        value, generated_pullback = forward(*args, **kwargs)
    gradients = _gradients(args, value, generated_pullback, arguments.unit(value, name), positions, name)
    return value, _selected(gradients, wrt)


def grad(forward, name, wrt, args, kwargs, fused=None, floats=()):
    """The gradient `value_and_grad` returns, alone. With `fused`, the gradient function (the
    forward function and pullback fused, specialised on Python floats at the positions
    `floats`), a call with floats and float arrays there, its Python floats at `floats`,
    runs that instead, as `adjoint.grad` does.

    >>> def square_forward(x):
    ...     return x * x, lambda g: (2 * x * g,)
    >>> grad(square_forward, "square", (0,), (3.0,), {})
    (6.0,)
    >>> grad(square_forward, "square", 0, (3.0,), {}, fused=lambda x: (2 * x,), floats=(0,))
    6.0
    """
    if fused is not None:
        positions = _ascending.get(wrt)
        if positions is None:
            positions = _ascending[wrt] = tuple(sorted(set((wrt,) if isinstance(wrt, int) else wrt)))
        if len(args) > positions[-1] and _plain_floats(args, positions) == floats:
            recursive = _recursive.get(fused)
            if recursive is None:
                recursive = _recursive[fused] = forwards.may_recurse(fused)
            _enter(recursive)
            try:
                cotangents = fused(*args, **kwargs)
            except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
                _leave(recursive)
                tracebacks.annotate_handled()
                raise
            _leave(recursive)
            gradients = _unshared(args, structure.plain_gradients(args, cotangents, positions, None))
            if wrt == positions:
                return gradients
            return gradients[0] if isinstance(wrt, int) else _selected(dict(zip(positions, gradients)), wrt)
    return value_and_grad(forward, name, wrt, args, kwargs)[1]


_recursive: dict = {}  # fused gradient -> whether it may call back into differentiated functions


_ascending: dict = {}  # `wrt` -> its positions, ascending, once each


def _plain_floats(args, positions):
    """The positions among `positions` (ascending) of the Python floats in `args`, or None if an
    argument there is neither a float nor a real float array."""
    floats = ()
    for i in positions:
        arg = args[i]
        kind = type(arg)
        if kind is float:
            floats += (i,)
        elif kind is not np.ndarray or arg.dtype.kind != "f":
            return None
    return floats


def _selected(gradients, wrt):
    """The gradients `wrt` asks for, from one per positional argument."""
    if isinstance(wrt, int):
        return gradients[wrt]
    if len(set(wrt)) == len(wrt):  # (distinct gradients share no memory: see `_gradients`)
        return tuple(gradients[i] for i in wrt)
    return arguments.select(gradients, wrt)  # `wrt=(0, 0)`: two arrays, not one shared


class differentiated:
    """A function of yours as an exported module calls it: plain calls run the exported
    forward function (its value alone), and differentiated ones take its pullback, as a
    derivative made by adjoint carries its own rule (`__adjoint_rrule__`).

    >>> def cube_forward(x):
    ...     return x ** 3, lambda g: (3 * x ** 2 * g,)
    >>> cube = differentiated("cube", cube_forward)
    >>> value, back = runtime.vjp((0,), cube, 2.0)
    >>> cube(2.0), value, back(1.0)
    (8.0, 8.0, (12.0,))
    """

    def __init__(self, name, forward):
        self.__name__ = self.__qualname__ = name
        self.forward = forward

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)[0]

    def __adjoint_rrule__(self, *args, closure=False, **kwargs):
        if closure:  # (exported code reaches these through `adj.vjp` only, which never asks)
            raise AdjointError(f"`{self.__name__}` was exported as a function, not a closure")
        value, generated_pullback = self.forward(*args, **kwargs)
        count = len(args)

        def exported_pullback(g):
            return tuple(generated_pullback(g))[:count]  # (parameters left to their defaults: none)

        return value, exported_pullback

    def __repr__(self):
        return f"<exported {self.__name__}>"


def _gradients(args, value, generated_pullback, cotangent, positions, name) -> list:
    """One gradient per positional argument for the output cotangent `cotangent`, as `adjoint`'s
    own entry points hand them back (projected to each argument's kind, a model's mirrored),
    None outside `positions`; none shares memory with another, an argument, or `cotangent`."""
    with _RUNNING:
        cotangents = registry.padded(generated_pullback(arguments.complete(value, cotangent)), len(args))
    if _plain(args, positions):  # floats and float arrays: the common case, kept cheap
        return _plain_gradients(args, cotangents, positions, cotangent)
    # fields a class declares frozen get None, as `adjoint.grad` gives them (their cotangents,
    # which the general code computes, are dropped)
    freezings = trainable.freezings(args, positions, positions, None)
    gradients = [
        None if i not in positions or not arguments.carries_gradient(args[i], i, name)
        else arguments.project(args[i], cotangents[i]) if runtime.is_differentiable(args[i])
        else structure.structure(args[i], cotangents[i], frozenset(freezings[i].paths) if i in freezings else ())
        for i in range(len(args))
    ]
    return list(structure.unshared(gradients, (cotangent, args)))  # (`args`: copies of what shares theirs)


def _plain_gradients(args, cotangents, positions, cotangent) -> list:
    """`_gradients` where the arguments at `positions` are floats and float arrays."""
    gradients = [None] * len(args)
    for i, gradient in zip(positions, _unshared(args, structure.plain_gradients(args, cotangents, positions, cotangent))):
        gradients[i] = gradient
    return gradients


def _unshared(args, gradients: tuple) -> tuple:
    """`gradients`, with a copy of each array sharing memory with an argument."""
    roots = None
    for gradient in gradients:
        if type(gradient) is np.ndarray:
            if roots is None:  # (the arrays owning the arguments' memory, found once)
                roots = {id(arg if arg.base is None else _root(arg)) for arg in args if type(arg) is np.ndarray}
            if id(gradient if gradient.base is None else _root(gradient)) in roots:
                return tuple(
                    g.copy() if type(g) is np.ndarray and id(g if g.base is None else _root(g)) in roots else g
                    for g in gradients
                )
    return gradients


def _plain(args, positions) -> bool:
    """Whether `positions` ascend and every argument there is a float or a real float array."""
    return all(a < b for a, b in zip(positions, positions[1:])) and _plain_floats(args, positions) is not None


def _root(array):
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _check_count(name, positions, args):
    if len(args) <= max(positions, default=-1):
        raise AdjointError(
            f"`{name}` was exported with respect to argument {max(positions)}, "
            f"but was called with {len(args)} positional arguments"
        )


# ---- functions reached only at run time, served from exported code -------------------------------

_served: dict = {}  # `run_time_key` -> exported forward function, from every exported module imported


def serve(table: dict) -> None:
    """Register the forward functions an exported module holds for the functions of yours its
    code reaches only at run time (a layer's `__call__`, a method), keyed by `run_time_key`:
    while an entry point runs, the runtime takes them instead of transforming.

    >>> def double(x):
    ...     return 2.0 * x
    >>> def double_forward(x):
    ...     return 2.0 * x, lambda g: (2.0 * g,)
    >>> serve({run_time_key(double, (0,), (1.5,)): double_forward})
    >>> double_forward.__adjoint_arity__
    1
    """
    for key, forward in table.items():
        forward.__adjoint_arity__ = key[0].__code__.co_argcount  # (as the compiler's own carry it)
        _served[key] = forward


def run_time_key(fn, wrt, args) -> tuple:
    """What makes the runtime's transform of `fn` for a call with `args` differentiated at
    `wrt` the one it is: the function, the positions, the frozen fields of the objects among
    `args` and which of them are Python floats (see `forwards.transform_for_runtime`).

    >>> run_time_key(len, (0, 1), (np.ones(2), 2.0))
    (<built-in function len>, (0, 1), (), (1,))
    """
    wrt = tuple(wrt)
    return fn, wrt, trainable.call_spec(args, wrt), forwards.python_floats(wrt, args)


# ---- no transform while an entry point runs ------------------------------------------------------

class _running:
    """A differentiated call (as `adjoint.grad` makes one), during which the runtime's way
    into the compiler refuses instead of transforming."""

    __slots__ = ()

    def __enter__(self):
        _enter(True)

    def __exit__(self, kind, exc, traceback):
        _leave(True)
        if exc is not None:  # a note naming the line of yours the exported line came from
            tracebacks.annotate(exc)


def _enter(recursive):
    if not getattr(runtime._transform_hook, "__adjoint_standalone__", False):
        _guard_installed()
    flags = _standalone.__dict__  # this thread's
    flags["depth"] = flags.get("depth", 0) + 1
    gradient_mode.enter(recursive)


def _leave(recursive):
    gradient_mode.leave(recursive)
    _standalone.__dict__["depth"] -= 1


def _guard_installed():
    """Wrap the runtime's transform hook (once; again if something installed another since)."""
    hook = runtime._transform_hook
    if getattr(hook, "__adjoint_standalone__", False):
        return
    runtime.install_transformer(_guarded(hook))


def _guarded(hook):
    def refusing_transform(fn, wrt, args):
        if getattr(_standalone, "depth", 0) > 0:
            served = _served.get(run_time_key(fn, wrt, args))
            if served is not None:
                return served
            raise AdjointError(
                f"{_exported_line()}exported code called `{getattr(fn, '__qualname__', fn)}`, which adjoint "
                "would have to transform at run time, and an exported module never transforms anything: "
                "call a function of yours by its plain name (`helper(x)`, which `adjoint.export` exports "
                "with its own code), export with example arguments that make this call (`adjoint.export(f, "
                "path, wrt, args=...)`), register a rule for it, or differentiate through adjoint directly"
            )
        if hook is None:
            raise AdjointError(f"no compiler installed to differentiate {fn!r}")
        return hook(fn, wrt, args)

    refusing_transform.__adjoint_standalone__ = True
    return refusing_transform


def _exported_line() -> str:
    """`"model_grad.py:18 (models.py:9: h = layer.apply(x)): "` for the innermost line of generated
    code on the stack (as `tracebacks.site` reads it), or ""."""
    frame = sys._getframe(2)
    while frame is not None:
        found = tracebacks.site(frame.f_code.co_filename, frame.f_lineno)
        if found is not None:
            user = f"{os.path.basename(found.user_file)}:{found.user_line}: {found.user_text}"
            return f"{os.path.basename(found.generated)}:{found.generated_line} ({user}): "
        frame = frame.f_back
    return ""


_RUNNING = _running()

# (imported last: each imports this package, and is loaded before this module is)
from .. import arguments, forwards, registry, structure, tracebacks, trainable  # noqa: E402
