"""Whether code is running as part of a differentiated call, per thread; room for the
recursion of differentiated code; and the helper generated pullbacks call for a gradient hook.

Generated code never asks: the compiler writes `adjoint.within_gradient()` as `True` into
the code it generates. The flag here answers for code that runs as it is during a
differentiated call: a rule's body, a non-differentiable function, a function called only with
constants.
"""

from __future__ import annotations

import copy
import sys
import threading

import numpy as np

from .cotangents import RuleError

__all__ = [
    "within_gradient", "differentiating", "enter", "leave", "differentiated_call", "recursion_headroom", "hooked",
]

_state = threading.local()


def within_gradient() -> bool:
    """`True` while the calling thread runs code as part of a differentiated call
    (`adjoint.grad`, `pullback`, `jvp`, ... and their pullbacks), `False` otherwise.

    >>> within_gradient()
    False
    >>> with differentiating():
    ...     within_gradient()
    True
    """
    return getattr(_state, "depth", 0) > 0


class differentiating:
    """A context in which `within_gradient()` is true for this thread (nestable)."""

    __slots__ = ()

    def __enter__(self):
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc):
        _state.depth -= 1


def enter(recursive=True) -> None:
    """Start a differentiated call on this thread: `within_gradient()` true, and room for
    recursion (see `recursion_headroom`) unless the call is not `recursive` (its generated
    code calls no differentiated Python function). What `differentiated_call` does, for the
    API's common path, which calls `leave()` in a `finally` instead (cheaper than a `with`)."""
    if recursive:
        _more_room()
    flags = _state.__dict__  # this thread's: one lookup of the thread-local, not two
    flags["depth"] = flags.get("depth", 0) + 1


def leave(recursive=True) -> None:
    """End what `enter(recursive)` started."""
    _state.__dict__["depth"] -= 1
    if recursive:
        _less_room()


class differentiated_call:
    """`enter()` and `leave()` as a context.

    >>> with differentiated_call():
    ...     within_gradient()
    True
    """

    __slots__ = ()

    def __enter__(self):
        enter()

    def __exit__(self, *exc):
        leave()


class recursion_headroom:
    """Room for recursion as deep as plain Python allows: a differentiated recursive call takes
    about three frames (`vjp`, the forward function, its pullback) where Python takes one.
    Nestable: only the outermost raises the limit, and the last to end restores it.

    >>> limit = sys.getrecursionlimit()
    >>> with recursion_headroom():
    ...     sys.getrecursionlimit() == 3 * limit
    True
    >>> sys.getrecursionlimit() == limit
    True
    """

    __slots__ = ()

    def __enter__(self):
        _more_room()

    def __exit__(self, *exc):
        _less_room()


def _more_room() -> None:
    global _raised, _limit
    with _room_lock:  # threads share the limit: only the first in raises it
        if not _raised:
            _limit = sys.getrecursionlimit()
            sys.setrecursionlimit(3 * _limit)
        _raised += 1


def _less_room() -> None:
    global _raised
    with _room_lock:  # and only the last out restores it
        _raised -= 1
        if not _raised:
            sys.setrecursionlimit(_limit)


_room_lock = threading.Lock()
_raised = 0  # how many differentiated calls are running, in any thread
_limit = 0  # the limit the outermost found


def hooked(fn, cotangent, value):
    """The cotangent a gradient hook `fn` hands on for `value` (`adjoint.hook`): what `fn`
    returns, or if it returns None the cotangent it was given, which it may have changed in
    place. `fn` gets its own copy, complete (zeros where nothing flowed, every field of a model).

    >>> hooked(lambda g: 2 * g, np.ones(2), np.zeros(2))
    array([2., 2.])
    """
    if cotangent is None:
        return None
    from ..arguments import complete  # noqa: PLC0415  (it imports the runtime)

    given = copy.deepcopy(complete(value, cotangent))  # the same arrays may flow to other values
    replaced = fn(given)
    if replaced is None:
        return given
    problem = _unlike(replaced, given)
    if problem:
        raise RuleError(
            f"the gradient hook {getattr(fn, '__name__', fn)} returned a cotangent {problem}: return one "
            "shaped like the cotangent it was given, or None to keep it"
        )
    return replaced


def _unlike(replaced, given, where="") -> str | None:
    """How `replaced` differs in structure or shape from `given`, or None."""
    if isinstance(given, (tuple, list)):
        if not isinstance(replaced, (tuple, list)) or len(replaced) != len(given):
            return f"that is not a {type(given).__name__} of {len(given)}{where}"
        return next((p for i, (r, g) in enumerate(zip(replaced, given)) if (p := _unlike(r, g, f"{where}[{i}]"))), None)
    if isinstance(given, dict):
        if not isinstance(replaced, dict) or replaced.keys() != given.keys():
            return f"without the keys {sorted(given)}{where}"
        return next((p for k in given if (p := _unlike(replaced[k], given[k], f"{where}[{k!r}]"))), None)
    if given is None or not hasattr(given, "shape") and not isinstance(given, (float, complex, int)):
        return None  # a model's `Tangent`: its fields are the hook's to set
    if np.shape(replaced) != np.shape(given):
        return f"of shape {np.shape(replaced)} for one of shape {np.shape(given)}{' at ' + where if where else ''}"
    return None
