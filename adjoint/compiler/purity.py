"""Purity: whether a function of yours visibly reads its arguments only.

A function that runs as it is inside differentiated code (one declared non-differentiable, or
one called for its effect, a log) must not update an array the pullback will read. Its
transform records the updates it writes as assignments, but not those made through `out=`,
`np.copyto`, a method or another function: so it counts as reading only when nothing in it
could write, judged conservatively from its source. Anything it cannot read is taken to write.
"Visibly": what your own objects' methods do when it formats or adds them is not seen.

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

from . import source, syntax

# Methods that return a new value and leave their receiver; those marked take `out` after one
# positional argument, so they may be given at most one.
_READING_METHODS = {
    "copy", "astype", "reshape", "ravel", "flatten", "item", "tolist", "transpose", "squeeze", "nonzero", "conj",
    "argsort", "get", "keys", "values", "items", "format", "join", "startswith", "endswith", "lower", "upper",
    "strip", "split", "replace", "count", "index",
}
_METHODS_WITH_OUT = {"mean", "sum", "max", "min", "std", "var", "prod", "argmax", "argmin", "cumsum", "cumprod",
                     "round", "any", "all", "dot"}
_BUILTINS = {
    "len", "float", "int", "bool", "str", "repr", "print", "abs", "min", "max", "sum", "round", "range", "enumerate",
    "zip", "isinstance", "list", "tuple", "dict", "set", "frozenset", "any", "all", "sorted", "reversed", "format",
    "hash", "id", "type", "divmod", "pow", "complex", "hasattr", "getattr", "next", "iter", "slice",
}
# NumPy functions that write into what they are given, or call what they are given
_NUMPY_WRITERS = {
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "shuffle", "apply_along_axis",
    "apply_over_axes", "vectorize", "frompyfunc", "piecewise", "fix_invalid",
}
_CONTAINERS = (dict, list, tuple, str, np.ndarray)


def reads_only(fn) -> bool:
    """Whether `fn`, a Python function, visibly updates none of the values it is given: it
    calls only NumPy, `math`, logging and a few builtins (no `out`, by keyword or position),
    reads methods of its values that return new ones, and stores only into its own names.

    >>> import numpy as np
    >>> def positive_share(logits):
    ...     return float(np.mean(logits > 0))
    >>> def clip_(y):
    ...     np.clip(y, -1, 1, out=y)
    >>> reads_only(positive_share), reads_only(clip_)
    (True, False)
    """
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__wrapped__"):
        return False  # a decorated function's source is not the code that runs
    try:
        node = syntax.parse(textwrap.dedent("".join(source.definition_lines(fn)))).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return False
    if not isinstance(node, gast.FunctionDef):
        return False
    node.decorator_list = []  # `fn` is what they returned, and its code is this `def`
    local = {n.id for n in syntax.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    local |= set(fn.__code__.co_freevars)
    namespace = {k: v for k, v in {**vars(builtins), **fn.__globals__}.items() if k not in local}
    called = {id(n.func) for n in syntax.walk(node) if isinstance(n, gast.Call)}
    arrays, containers = _fresh(node, namespace, fn.__code__)
    allowed = _writes_into_fresh(node, arrays, containers)
    return all(id(n) in allowed or _reads(n, namespace, local, id(n) in called) for n in syntax.walk(node))


def _fresh(function, namespace, code) -> tuple[set, set]:
    """Its own names bound only to new arrays of numbers (`cm = np.zeros((k, k))`) and to new
    empty or constant lists, dicts and sets (`counts = {}`): what it may write into. None in a
    function with scopes of its own or `match` statements (names bound without a `Name` node)."""
    scopes = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda, gast.ListComp, gast.SetComp,
              gast.DictComp, gast.GeneratorExp) + ((gast.Match,) if hasattr(gast, "Match") else ())
    if any(isinstance(n, scopes) for n in syntax.walk(function) if n is not function):
        return set(), set()
    plain_locals = set(code.co_varnames) - set(code.co_cellvars) - set(code.co_freevars)
    bindings: dict = {}
    for n in syntax.walk(function):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            bindings.setdefault(n.id, [])
    for n in syntax.walk(function):
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            bindings[n.targets[0].id].append(n.value)
    alone = _assigned_alone(function)
    for n in syntax.walk(function):  # any other binding (a loop, an unpacking, a parameter) is not fresh
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and id(n) not in alone:
            bindings[n.id].append(None)
    bindings = {name: values for name, values in bindings.items() if name in plain_locals}
    arrays = {name for name, values in bindings.items() if values and all(_new_array(v, namespace) for v in values)}
    containers = {name for name, values in bindings.items() if values and all(_new_container(v) for v in values)}
    return arrays, containers


def _assigned_alone(function) -> set[int]:
    """The ids of the names `function` assigns alone (`n = ...`, `n += ...`), found in one walk."""
    alone = set()
    for n in syntax.walk(function):
        if isinstance(n, gast.Assign) and len(n.targets) == 1:
            alone.add(id(n.targets[0]))
        elif isinstance(n, gast.AugAssign):
            alone.add(id(n.target))
    return alone


_NEW_ARRAYS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "eye", "arange"}


def _new_array(value, namespace) -> bool:
    if isinstance(value, gast.Constant):
        return True
    if not isinstance(value, gast.Call):
        return False
    callee = syntax.evaluate_dotted(value.func, namespace)
    return getattr(callee, "__name__", "") in _NEW_ARRAYS and getattr(np, callee.__name__, None) is callee


def _new_container(value) -> bool:
    if isinstance(value, (gast.List, gast.Set, gast.Tuple)):
        return all(isinstance(e, gast.Constant) for e in value.elts)
    if isinstance(value, gast.Dict):
        return all(isinstance(e, gast.Constant) for e in value.keys + value.values)
    return isinstance(value, gast.Constant) or (
        isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id in ("dict", "list", "set")
        and not value.args and not value.keywords
    )


def _writes_into_fresh(function, arrays, containers) -> set:
    """The nodes that write only into its own fresh values: `cm[t, p] += 1` into a new array of
    numbers, `counts[k] = v` and `seen.append(v)` into a new container, `n += 1`."""
    allowed = set()
    for n in syntax.walk(function):
        if isinstance(n, gast.AugAssign):
            target = n.target
            if isinstance(target, gast.Name) and target.id in arrays | containers:
                allowed.add(id(n))
            elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and target.value.id in arrays:
                allowed |= {id(n), id(target)}  # an item of a new array of numbers is a number
        elif isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) and isinstance(n.value, gast.Name):
            if n.value.id in arrays | containers:
                allowed.add(id(n))
        elif isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name):
            if n.func.value.id in containers and n.func.attr in ("append", "extend", "add", "update", "setdefault", "pop"):
                allowed.add(id(n))
    return allowed


def _reads(node, namespace, local, is_called) -> bool:
    if isinstance(node, (gast.AugAssign, gast.Delete, gast.Import, gast.ImportFrom, gast.Global, gast.Nonlocal)):
        return False
    if isinstance(node, (gast.Subscript, gast.Attribute)) and isinstance(node.ctx, (gast.Store, gast.Del)):
        return False
    if isinstance(node, gast.Call):
        hidden = any(isinstance(a, gast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)
        copy = [k.value for k in node.keywords if k.arg == "copy"]  # `np.nan_to_num(y, copy=False)` writes
        in_place = any(not (isinstance(c, gast.Constant) and c.value is True) for c in copy)
        given_a_function = any(k.arg == "key" for k in node.keywords)  # `sorted(xs, key=f)` calls `f`
        return not (hidden or in_place or given_a_function or any(k.arg == "out" for k in node.keywords)) and (
            _reading_call(node, namespace, local)
        )
    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and not is_called:
        value = namespace.get(node.id)  # a function passed as a value (`map(np.copyto, ...)`)
        return node.id in local or not callable(value) or isinstance(value, type) or _reading_function(value, node.id)
    if isinstance(node, gast.Attribute) and isinstance(node.ctx, gast.Load) and not is_called:
        value = syntax.evaluate_dotted(node, namespace)
        if value is not None:  # `np.copyto` passed as a value
            return not callable(value) or isinstance(value, (type, types.ModuleType)) or _reading_function(value, node.attr)
        return not _sounds_like_writing(node.attr)  # `y.fill` passed as a value writes; `y.shape` reads
    return True


def _reading_call(call, namespace, local) -> bool:
    func = call.func
    root = syntax.root_name(func)
    if isinstance(func, gast.Attribute) and (root in local or root is None):  # a method of a value of its own
        if func.attr in _READING_METHODS:
            return True
        return func.attr in _METHODS_WITH_OUT and len(call.args) <= 1
    owner = syntax.evaluate_dotted(func.value, namespace) if isinstance(func, gast.Attribute) else None
    if isinstance(owner, logging.Logger):
        return True
    if isinstance(owner, _CONTAINERS) and not isinstance(owner, type):  # `CONFIG.get("verbose")` on a global
        return func.attr in _READING_METHODS or func.attr in _METHODS_WITH_OUT and len(call.args) <= 1
    if root in local:
        return False  # a function it was given, or made
    callee = syntax.evaluate_dotted(func, namespace)
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
    return _reading_function(callee, name) and not _out_by_position(callee, call)


def _reading_function(callee, name) -> bool:
    """A function that returns new values: NumPy's (not its writers), `math`'s, logging's and a
    few builtins."""
    if callee is None or isinstance(callee, np.vectorize):
        return False
    if isinstance(callee, np.ufunc):
        return getattr(np, callee.__name__, None) is callee  # NumPy's own, not one made of your code
    if isinstance(callee, type) and issubclass(callee, BaseException):
        return True  # `raise ValueError(...)`
    module = getattr(callee, "__module__", None) or ""
    if module == "builtins":
        return name in _BUILTINS and getattr(callee, "__name__", "") in _BUILTINS
    top = module.split(".")[0]
    if top == "numpy":
        return getattr(callee, "__name__", name) not in _NUMPY_WRITERS and not module.startswith("numpy.random")
    return top in ("math", "logging", "time")


def _out_by_position(callee, call) -> bool:
    """Whether the call passes an output array by position (`np.multiply(y, 0, y)`)."""
    if isinstance(callee, np.ufunc):
        return len(call.args) > callee.nin
    try:
        parameters = list(inspect.signature(callee).parameters)
    except (TypeError, ValueError):
        return len(call.args) > 2
    return "out" in parameters and len(call.args) > parameters.index("out")


def _sounds_like_writing(attr) -> bool:
    from .effects import MUTATING_METHODS, sounds_like_an_update  # noqa: PLC0415  (effects imports this module)

    return attr in MUTATING_METHODS or sounds_like_an_update(attr) or attr.startswith("__i") or attr in (
        "put", "resize", "itemset", "setfield", "partition", "__setitem__", "setflags", "byteswap",
    )
