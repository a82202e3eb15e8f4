"""Whether code is running as part of a differentiated call, per thread, and the helper
generated pullbacks call for a gradient hook.

Generated code never asks: the compiler writes `adjoint.within_gradient()` as `True` into
the code it generates. The flag here answers for code that runs as it is during a
differentiated call: a rule's body, a non-differentiable function, a function called only with
constants.
"""

from __future__ import annotations

import threading

import numpy as np

from .cotangents import RuleError, zeros_like

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
    returns, or the cotangent itself if `fn` returns None. `fn` gets a copy, which it may
    change in place.

    >>> hooked(lambda g: 2 * g, np.ones(2), np.zeros(2))
    array([2., 2.])
    """
    if cotangent is None:
        return None
    replaced = fn(_copied(_filled(cotangent, value)))
    if replaced is None:
        return cotangent
    if isinstance(value, (np.ndarray, np.generic, float, complex)) and np.shape(replaced) != np.shape(value):
        raise RuleError(
            f"the gradient hook {getattr(fn, '__name__', fn)} returned a cotangent of shape "
            f"{np.shape(replaced)} for a value of shape {np.shape(value)}: return one shaped like the "
            "cotangent it was given, or None to keep it"
        )
    return replaced


def _filled(cotangent, value):
    """`cotangent` with zeros for the items of a tuple or list that nothing flowed into."""
    if type(value) in (tuple, list) and isinstance(cotangent, (tuple, list)):
        return type(value)(zeros_like(v) if c is None else _filled(c, v) for c, v in zip(cotangent, value))
    return cotangent


def _copied(cotangent):
    """A copy of the arrays in `cotangent`: the same array may be flowing to other values."""
    if isinstance(cotangent, np.ndarray):
        return cotangent.copy()
    if type(cotangent) in (tuple, list):
        return type(cotangent)(_copied(c) for c in cotangent)
    if type(cotangent) is dict:
        return {k: _copied(c) for k, c in cotangent.items()}
    return cotangent
