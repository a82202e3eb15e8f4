"""Purity: whether a function of yours visibly reads its arguments only.

A function that runs as it is inside differentiated code (one declared non-differentiable, or
one called for its effect, a log) must not update an array the pullback will read. Its
transform records the updates it writes as assignments, but not those made through `out=`,
`np.copyto`, a method or another function: so it counts as reading only when nothing in it
could write, judged conservatively from its source. Anything it cannot read is taken to write.

Before:  def accuracy(logits, labels):                        reads only
             return float(np.mean(np.argmax(logits, 1) == labels))
         def clip_(y):                                          may write (`out=`)
             np.clip(y, -1, 1, out=y)
"""

from __future__ import annotations

import builtins
import inspect
import logging
import textwrap
import types

import gast
import numpy as np

from . import syntax

# Methods that return a new value and leave their receiver (arrays' and strings' among them).
_READING_METHODS = {
    "mean", "sum", "max", "min", "std", "var", "prod", "argmax", "argmin", "argsort", "copy", "astype",
    "reshape", "ravel", "flatten", "item", "tolist", "dot", "round", "any", "all", "cumsum", "cumprod",
    "transpose", "squeeze", "nonzero", "conj", "get", "keys", "values", "items", "format", "join",
    "startswith", "endswith", "lower", "upper", "strip", "split", "replace", "count", "index",
}
_WRITING_FUNCTIONS = {"copyto", "put", "place", "putmask", "fill_diagonal", "shuffle", "setitem", "delitem"}
_READING_MODULES = {"numpy", "math", "builtins", "logging", "time"}


def reads_only(fn) -> bool:
    """Whether `fn`, a Python function, visibly updates none of the values it is given.

    >>> import numpy as np
    >>> def positive_share(logits):
    ...     return float(np.mean(logits > 0))
    >>> def clip_(y):
    ...     np.clip(y, -1, 1, out=y)
    >>> reads_only(positive_share), reads_only(clip_)
    (True, False)
    """
    try:
        node = syntax.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    namespace = {**vars(builtins), **fn.__globals__}
    return all(_reads(n, namespace) for n in gast.walk(node))


def _reads(node, namespace) -> bool:
    if isinstance(node, (gast.AugAssign, gast.Delete)):
        return False
    if isinstance(node, (gast.Subscript, gast.Attribute)) and isinstance(node.ctx, (gast.Store, gast.Del)):
        return False
    if not isinstance(node, gast.Call):
        return True
    if any(k.arg == "out" for k in node.keywords):
        return False
    func = node.func
    if isinstance(func, gast.Attribute):
        owner = syntax.evaluate_dotted(func.value, namespace)
        if isinstance(owner, types.ModuleType):
            reading = owner.__name__.split(".")[0] in _READING_MODULES and func.attr not in _WRITING_FUNCTIONS
            return reading and not _writes_positionally(getattr(owner, func.attr, None), node)
        return func.attr in _READING_METHODS or isinstance(owner, logging.Logger)
    callee = syntax.evaluate_dotted(func, namespace)
    module = getattr(callee, "__module__", None) or ("numpy" if isinstance(callee, np.ufunc) else "")
    reading = module.split(".")[0] in _READING_MODULES and getattr(callee, "__name__", "") not in _WRITING_FUNCTIONS
    return callable(callee) and reading and not _writes_positionally(callee, node)


def _writes_positionally(callee, call) -> bool:
    """A ufunc given its output array by position (`np.multiply(y, 0, y)`)."""
    return isinstance(callee, np.ufunc) and len(call.args) > callee.nin
