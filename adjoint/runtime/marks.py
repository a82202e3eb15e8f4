"""The marks adjoint leaves on the functions it makes (`adjoint.grad(f)`, `adjoint.checkpoint(f)`):
their rules, and what they were made from, as `__adjoint_*__` attributes.

`functools.wraps` copies a function's attributes onto its wrapper, so a decorator of yours around
such a function would carry its marks without meaning them: a mark is read only from the object
adjoint put it on, not from a wrapper that copied it.
"""

from __future__ import annotations

import types

__all__ = ["marked"]


def marked(fn, name: str, default=None):
    """`fn`'s mark `name`, or `default` if it has none or copied it from the function it wraps.

    >>> import functools
    >>> def f(): pass
    >>> f.__adjoint_rrule__ = "rule"
    >>> wrapper = functools.wraps(f)(lambda: 2 * f())
    >>> marked(f, "__adjoint_rrule__"), marked(wrapper, "__adjoint_rrule__")
    ('rule', None)
    """
    value = getattr(fn, name, default)
    if value is default:  # unmarked: what almost every call asks about
        return value
    copied = value is not default and value is getattr(getattr(fn, "__wrapped__", None), name, _NONE)
    # a Python wrapper's code is what it means; a compiled one (`functools.lru_cache`) only calls
    python = isinstance(fn, types.FunctionType) or isinstance(getattr(type(fn), "__call__", None), types.FunctionType)
    return default if copied and python else value


_NONE = object()
