"""Calls of pullbacks, written so forward mode can read them: what `vjp` and its siblings do,
as small programs, for forward-over-reverse (Hessian-vector products) through generated code
that calls your functions, methods, closures and rules.

`vjp_program(forward, args, kwargs, reshape, layout)` runs a forward function and returns its
value and a pullback whose cotangents `reshape` lays out as the caller expects (padded with
zeros, split into a closure's and the arguments'...). Each `reshape` is linear in the
cotangents, with a forward rule saying so (`adjoint.rules.calls`), so a JVP of the program is a
JVP of the generated code and of its pullback.
"""

from __future__ import annotations

import types

__all__ = [
    "vjp_program", "filled_cotangents", "closure_cotangents", "prefixed_cotangents", "dropped_cotangents",
    "kept_cotangents", "calling",
]


def vjp_program(forward, args, kwargs, reshape, layout):
    """`forward(*args, **kwargs)`, with its pullback's cotangents laid out by `reshape`.

    >>> def forward(x):
    ...     return 2 * x, lambda g: (2 * g,)
    >>> value, pullback = vjp_program(forward, (3.0,), {}, prefixed_cotangents, None)
    >>> value, pullback(1.0)
    (6.0, (None, 2.0))
    """
    value, pullback = forward(*args, **kwargs)

    def reshaped_pullback(g):
        return reshape(pullback(g), layout)

    return value, reshaped_pullback


def filled_cotangents(cotangents, layout):
    """A rule's cotangents as `vjp` returns them: one per argument, zeros (not None) for those
    in `wrt`; `layout` is `(args, wrt)`.

    >>> filled_cotangents((1.0,), ((2.0, 3.0, 4), (0, 1)))
    (1.0, 0.0, None)
    """
    from . import zeros_for_none  # noqa: PLC0415  (the package imports this module)

    args, wrt = layout
    return zeros_for_none(lambda _: cotangents, args, wrt)(None)


def closure_cotangents(cotangents, layout):
    """A closure's forward function's cotangents (its arguments', then the names it closes
    over) as `closure_vjp` returns them: the closure's dict first; `layout` is `(count, names)`.

    >>> closure_cotangents((1.0, 2.0, 3.0), (1, ("w", "b")))
    ({'w': 2.0, 'b': 3.0}, 1.0)
    """
    count, names = layout
    cotangents = tuple(cotangents)
    return (dict(zip(names, cotangents[count:])), *cotangents[:count])


def prefixed_cotangents(cotangents, layout):
    """The cotangents with a None in front (a function that carries none itself); a rule's
    filled first (`layout`: `(args, wrt)`, as for `filled_cotangents`), or as they are (None).

    >>> prefixed_cotangents((1.0,), None)
    (None, 1.0)
    """
    return (None, *(cotangents if layout is None else filled_cotangents(cotangents, layout)))


def kept_cotangents(cotangents, layout):
    """The first `layout` cotangents (those of the arguments a call passed: the parameters it
    left to their defaults have theirs after them).

    >>> kept_cotangents((1.0, 2.0, 3.0), 2)
    (1.0, 2.0)
    """
    return tuple(cotangents)[:layout]


def dropped_cotangents(cotangents, layout):
    """The cotangents without the first `layout` (those of a method's receiver or a partial's
    bound arguments, held constant).

    >>> dropped_cotangents((1.0, 2.0, 3.0), 1)
    (2.0, 3.0)
    """
    return tuple(cotangents)[layout:]


def calling(primitive, count):
    """A Python function calling `primitive` with `count` positional arguments (one to three),
    with `primitive` as a global of its own, so generated code for it has the primitive's rule
    written in, which forward mode reads (a second derivative of `np.sin` itself, or through an
    elementwise rule reached at run time).

    >>> import numpy as np
    >>> float(calling(np.add, 2)(1.0, 2.0))
    3.0
    """
    key = (id(primitive), count)
    entry = _callers.get(key)
    if entry is None or entry[0] is not primitive:
        template = {1: _call_1, 2: _call_2, 3: _call_3}.get(count)
        if template is None:
            from .cotangents import RuleError  # noqa: PLC0415

            raise RuleError(f"wrap {getattr(primitive, '__name__', primitive)} in a function of yours to differentiate it twice")
        namespace = {**template.__globals__, "primitive": primitive}
        entry = _callers[key] = (primitive, types.FunctionType(template.__code__, namespace, template.__name__))
    return entry[1]


_callers: dict = {}


def _call_1(a):
    return primitive(a)  # noqa: F821  (`primitive`: a global of each function `calling` makes)


def _call_2(a, b):
    return primitive(a, b)  # noqa: F821


def _call_3(a, b, c):
    return primitive(a, b, c)  # noqa: F821
