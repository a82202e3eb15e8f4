"""Whether code is running as part of a differentiated call, per thread, and the helper
generated pullbacks call for a gradient hook.

Generated code never asks: the compiler writes `adjoint.within_gradient()` as `True` into
the code it generates. The flag here answers for code that runs as it is during a
differentiated call: a rule's body, a non-differentiable function, a function called only with
constants.
"""

from __future__ import annotations

import copy
import threading

import numpy as np

from .cotangents import RuleError

__all__ = ["within_gradient", "differentiating", "hooked"]

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
