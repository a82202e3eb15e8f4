"""Signatures: the parameters of the functions rules call, with the defaults a call may leave
out, so that `inline` drops keywords a call passes at their defaults (`np.sum(x, axis=None)`
reads as `np.sum(x)`) and binds what a call leaves to its callee.

>>> import numpy as np
>>> dict(keyword_defaults(np.sum))["keepdims"] is NO_DEFAULT, dict(keyword_defaults(np.clip))["a"] is NO_DEFAULT
(True, True)
"""

from __future__ import annotations

import ast
import functools
import inspect
import types

NO_DEFAULT = object()  # a parameter without a default, or with one that is not a plain literal


def keyword_defaults(callee):
    """The callee's parameters, in order, with their defaults (`NO_DEFAULT` if none)."""
    try:
        return _hashable_keyword_defaults(callee)
    except TypeError:  # an unhashable callee
        return _signature_defaults(callee)


@functools.lru_cache(maxsize=1024)
def _hashable_keyword_defaults(callee) -> tuple[tuple[str, object], ...]:
    """`keyword_defaults`, remembered: rules call the same NumPy functions, and reading a
    builtin's signature parses its text each time."""
    return tuple(_signature_defaults(callee))


def _signature_defaults(callee) -> list[tuple[str, object]]:
    written = _text_signature_defaults(callee)
    if written is not None:
        return written
    try:
        parameters = inspect.signature(callee).parameters.values()
    except (TypeError, ValueError):
        return []
    return [
        (p.name, p.default if p.default is not inspect.Parameter.empty and _is_simple(p.default) else NO_DEFAULT)
        for p in parameters
    ]



def _text_signature_defaults(callee) -> list[tuple[str, object]] | None:
    """`_signature_defaults` of a builtin (`np.concatenate`) read from its `__text_signature__`
    with `ast`, as `inspect.signature` reads it, but without tokenizing it (the tokenizer's
    patterns cost more to compile, once per process, than planning a rule); None where the text
    is not plain Python (`$self`) or a default is not a literal: `inspect` reads those."""
    try:  # the function `inspect.signature` reads the text of: NumPy's dispatcher wraps it
        function = inspect.unwrap(callee, stop=lambda f: hasattr(f, "__signature__"))
    except ValueError:
        return None
    if not isinstance(function, types.BuiltinFunctionType) or hasattr(function, "__signature__"):
        return None
    text = function.__text_signature__
    if not isinstance(text, str) or "$" in text:
        return None
    try:
        args = ast.parse(f"def _{text}: pass").body[0].args
        positional = args.posonlyargs + args.args
        first_default = len(positional) - len(args.defaults)
        found = [
            (a.arg, ast.literal_eval(args.defaults[i - first_default]) if i >= first_default else NO_DEFAULT)
            for i, a in enumerate(positional)
        ]
        found += [(args.vararg.arg, NO_DEFAULT)] if args.vararg else []
        found += [
            (a.arg, NO_DEFAULT if d is None else ast.literal_eval(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)
        ]
        found += [(args.kwarg.arg, NO_DEFAULT)] if args.kwarg else []
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None
    return [(name, value if value is NO_DEFAULT or _is_simple(value) else NO_DEFAULT) for name, value in found]


def _is_simple(value) -> bool:
    return value is None or type(value) in (bool, int, float, str)
