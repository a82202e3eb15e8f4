"""Forward mode over a gradient, for its plain calls: one generated function, found quickly.

A gradient `adjoint.grad(f, wrt)` differentiated in forward mode (`adjoint.jvp(grad(f), ...)`,
a Hessian-vector product) at floats and real float arrays runs the JVP of `f`'s fused gradient
(`pipeline.gradient_jvp_function`): forward, seed, pullback and all their tangents in one
function. `fused_gradient_jvp` is that for `gradient_rules._gradient_jvp`; `PlainGradientJvps`
finds it for `adjoint.jvp` with a few identity checks per call, as `forwards.PlainCalls` finds
a gradient's code, and hands back what the general path would.
"""

from __future__ import annotations

import numpy as np

from . import implicit, registry, runtime, structure
from .compiler import pipeline
from .runtime import gradient_mode
from .runtime.marks import marked


def fused_gradient_jvp(f, positions, primals, tangents):
    """`(cotangents, their tangents)` of the plain call of Python function `f` (no rule; floats
    and real float arrays at `positions` and wherever a tangent moves an argument; no implicit
    gradient), one per parameter, by one call of the JVP of `f`'s gradient compiled as one
    function (`pipeline.gradient_function`): None where the call is not plain or `f`'s pullback
    could not be fused (the general path takes it, and refuses what it must).

    >>> def f(x):
    ...     return x ** 3
    >>> fused_gradient_jvp(f, (0,), (2.0,), (1.0,))
    ((12.0,), (12.0,))
    """
    count = len(primals)
    if count > f.__code__.co_argcount or implicit.collector() is not None:
        return None  # (an argument for `*args`: its cotangents come as one tuple)
    floats = moved = ()
    for i in positions:
        if i >= count or not _plain_float(primals[i]):
            return None
        if type(primals[i]) is float:
            floats += (i,)
    for i, tangent in enumerate(tangents):
        if tangent is not None:
            if i >= count or not _plain_float(primals[i]):
                return None
            moved += (i,)
    if registry.lookup(f) is not None or marked(f, "__adjoint_rrule__") is not None:
        return None
    if not moved:  # the gradient alone (a reverse rule's value)
        gradient = pipeline.gradient_function(f, positions, floats)
        if gradient is None or gradient.__adjoint_updates__:
            return None
        with gradient_mode.recursion_headroom():
            cotangents = gradient(*primals)
        return cotangents, (None,) * len(cotangents)
    jvp_function = pipeline.gradient_jvp_function(f, positions, floats, moved)
    if jvp_function is None:
        return None
    with gradient_mode.recursion_headroom():
        return jvp_function(tuple(tangents[i] for i in moved), *primals)


_NDARRAY, _FLOAT64 = np.ndarray, np.dtype(np.float64)


def _plain_float(arg) -> bool:
    """Whether `arg` is a Python float or a real float array (what `forwards.PlainCalls` takes)."""
    kind = type(arg)
    return kind is float or kind is np.ndarray and arg.dtype.kind == "f"


class PlainGradientJvps:
    """`adjoint.jvp` of `adjoint.grad(f, wrt)` (`wrt` ascending positions, or one) at plain calls:
    floats and real float arrays where the gradient is taken and where a tangent moves an
    argument, each tangent of its argument's type, shape and dtype, no implicit gradient, an
    `f` without a rule that updates no argument. What the general path (`derivatives.jvp`)
    would check besides is checked again when `f`, its code, defaults, a name its code resolved,
    or the registered rules change."""

    __slots__ = ("f", "wrt", "positions", "count", "found")

    def __init__(self, f, wrt, positions):
        self.f, self.wrt, self.positions = f, wrt, tuple(positions)
        self.count = self.positions[-1] + 1 if self.positions else 0
        # (`registry.version`, code, float positions, moved positions, binding check, defaults,
        # the JVP function, whether it may recurse): replaced whole, so that threads read it whole
        self.found = (-1, None, None, None, None, None, None, True)

    def __call__(self, primals, tangents):
        """`(gradient, its tangent)` as `adjoint.jvp` returns them, or None if the call is not plain.

        >>> import adjoint
        >>> def f(x, y):
        ...     return x * x * y
        >>> PlainGradientJvps(f, (0, 1), (0, 1))((3.0, 2.0), (1.0, None))
        ((12.0, 9.0), (4.0, 6.0))
        """
        f, count = self.f, len(primals)
        if count < self.count or count > f.__code__.co_argcount or len(tangents) != count:
            return None
        positions, floats, moved = self.positions, (), []
        for i, tangent in enumerate(tangents):  # the arguments differentiated and those a tangent moves
            if tangent is None and i not in positions:
                continue
            primal = primals[i]
            kind = type(primal)
            if kind is _NDARRAY:
                dtype = primal.dtype
                if dtype is not _FLOAT64 and dtype.kind != "f":
                    return None
                if tangent is not None:
                    if type(tangent) is not _NDARRAY or tangent.dtype is not dtype or tangent.shape != primal.shape:
                        return None
                    moved.append(i)
            elif kind is float:
                if i in positions:
                    floats += (i,)
                if tangent is not None:
                    if type(tangent) is not float:
                        return None
                    moved.append(i)
            else:
                return None
        if not moved or implicit.collector() is not None:
            return None
        moved = tuple(moved)
        version, code, found_floats, found_moved, bound, defaults, function, recursive = self.found
        if not (
            version == registry.version and code is f.__code__ and found_floats == floats and found_moved == moved
            and defaults is f.__defaults__ and function.__kwdefaults__ is f.__kwdefaults__ and bound()
        ):
            function = self._find(floats, moved)
            if function is None:
                return None
            recursive = self.found[7]
        # the moved tangents: most often the first ones (the parameters, then data held constant)
        moving = tangents[: len(moved)] if moved[-1] == len(moved) - 1 else tuple([tangents[i] for i in moved])
        gradient_mode.enter(recursive)
        try:
            cotangents, dcotangents = function(moving, *primals)
        finally:
            gradient_mode.leave(recursive)
        return self._results(primals, cotangents, dcotangents)

    def _find(self, floats, moved):
        f, version = self.f, registry.version
        if registry.lookup(f) is not None or marked(f, "__adjoint_rrule__") is not None:
            return None
        function = pipeline.gradient_jvp_function(f, self.positions, floats, moved)
        if function is None:
            return None
        from .forwards import may_recurse  # noqa: PLC0415  (it imports the API's modules)

        self.found = (
            version, f.__code__, floats, moved, function.__adjoint_bound__, f.__defaults__, function,
            may_recurse(function),
        )
        return function

    def _results(self, primals, cotangents, dcotangents):
        """The gradients and their tangents, each of its argument's kind, none sharing memory
        with another gradient, or another tangent. A gradient has its argument's shape and
        dtype, so a tangent made like the argument (`tangent_like`) is made like its gradient."""
        positions = self.positions
        gradients = structure.plain_gradients(primals, cotangents, positions, None)
        if len(dcotangents) < len(primals):
            dcotangents = tuple(dcotangents) + (None,) * (len(primals) - len(dcotangents))
        tangents = structure.plain_gradients(primals, dcotangents, positions, None, runtime.tangent_like)
        if type(self.wrt) is int:
            return gradients[0], tangents[0]
        return gradients, tangents
