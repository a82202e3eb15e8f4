"""Effects: which calls may update the arrays they are given or reach, for `inplace`.

A call of your own function is asked of its transform (`pipeline.lower(fn, (), until="inplace")`
records the parameters it updates in place), unless its bytecode holds nothing the transform
could find updating (most helpers, such as a `sigmoid` whose gradient lowers it in full later);
a method of an object is judged by its name (`o.step()`, `o.update(...)` update;
`model.forward(x)` reads); a function you declared non-differentiable, whose code adjoint does
not read, may update its arguments.
"""

from __future__ import annotations

import dataclasses
import dis
import types

import numpy as np

from .. import registry
from ..errors import AdjointError, TransformError
from ..runtime.marks import marked
from . import annotations as anno
from . import loader, purity, resolve


MUTATING_METHODS = {
    "sort", "fill", "put", "resize", "partition", "itemset", "setflags", "append", "extend",
    "insert", "pop", "remove", "clear", "update", "setdefault", "popitem", "reverse",
}


def sounds_like_an_update(method: str) -> bool:
    """A method of an object that, by its name, changes the object (`o.step()`, `o.update(...)`,
    `o.set_weights(...)`); `model.forward(x)` and `layer.apply(x)` are taken to read it only."""
    return method in MUTATING_METHODS or method in _UPDATING_NAMES or method.startswith(_UPDATING_PREFIXES)


_UPDATING_NAMES = {"step", "update", "reset", "refill", "push", "add", "set", "fill", "load", "zero_grad"}


_UPDATING_PREFIXES = ("set_", "update_", "reset_", "refill", "push_", "add_", "fill_", "load_", "write")


def user_non_differentiable(callee) -> bool:
    """A function the user declared non-differentiable that may update its arguments: any but one
    whose code visibly reads them only (`purity`: a metric or a log reading a value the pullback
    needs is fine)."""
    if callee is None or callee.kind != resolve.NON_DIFFERENTIABLE:
        return False
    module = getattr(callee.obj, "__module__", None) or type(callee.obj).__module__  # ufuncs of older NumPy have none
    made_of_yours = isinstance(callee.obj, np.vectorize) or isinstance(callee.obj, np.ufunc) and (
        getattr(np, callee.obj.__name__, None) is not callee.obj  # `np.frompyfunc(f, ...)`
    )
    if module.split(".")[0] in {"numpy", "math", "builtins", "adjoint", "logging", "random", "time"} and not made_of_yours:
        return False
    return not (isinstance(callee.obj, types.FunctionType) and purity.reads_only(callee.obj))


def leaves_its_arguments(callee) -> bool:
    """A function of yours (or one `adjoint.checkpoint` wraps) that visibly updates none of its
    arguments (`purity`): calling it for its effect (a print, a log) runs it plainly."""
    if callee is None or callee.kind not in (resolve.PYTHON, resolve.DYNAMIC) or callee.obj is None:
        return False
    function = callee.obj if callee.kind == resolve.PYTHON else marked(callee.obj, "__adjoint_checkpoint_of__")
    return isinstance(function, types.FunctionType) and purity.reads_only(function)


def updates_its_arguments(callee):
    """A function of yours that, transformed, updates a parameter in place (`out[:] = ...`); True
    also when it cannot be transformed because of an update, None when it cannot be told."""
    if callee is None or callee.kind != resolve.PYTHON:
        return None
    from . import pipeline  # noqa: PLC0415  (the pipeline runs this pass)

    code = callee.obj.__code__
    if code in _CHECKING:
        return False  # a recursive call: its own check is under way
    _CHECKING.add(code)
    try:
        return _updates_a_parameter(callee.obj, pipeline)
    except TransformError as error:
        # refused for an update it makes (of a global, through a view): it may update ours too
        return True if any("in place" in p.message or "updates `" in p.message for p in error.problems) else None
    except AdjointError:
        return None  # it cannot be transformed: called plainly, as before
    finally:
        _CHECKING.discard(code)


_CHECKING: set = set()  # the code objects whose in-place updates are being checked


def _updates_a_parameter(fn, pipeline) -> bool:
    """Whether `fn`'s transform finds it updating a parameter in place: the passes up to
    `inplace`, which tells, run once per code (again when a name they resolved was rebound, or
    a rule registered); the passes after it, and compiling, add nothing to the answer."""
    if marked(fn, "__adjoint_rrule__", None) is not None:
        raise AdjointError(f"`{fn.__qualname__}` was made by adjoint")  # (as `pipeline.compile_function`)
    code = fn.__code__
    if not _may_update(code):
        return False  # (asked of its bytecode: lowering it costs as much as its gradient's passes)
    known = _updating.get(id(code))
    if known is None or known[0] is not code or not loader.still_valid(known[2], fn):
        _, ctx = pipeline.lower(fn, (), until="inplace")
        resolved = _Resolved(tuple(ctx.bindings), registry.version)
        known = _updating[id(code)] = (code, bool(ctx.updated_parameters), resolved)
    return known[1]


def _may_update(code) -> bool:
    """Whether `code` (with the code nested in it) holds what the transform up to `inplace` can
    find updating an array in place: an augmented assignment, a store into an item or attribute,
    or a call of a method named as what `normalize` rewrites into updates (`xs.append(v)`,
    `np.add.at(y, i, v)`). Without any, the passes report no update and no refusal for one
    (their other checks need a differentiated value, and `effects` asks with none).

    >>> def sigmoid(a):
    ...     return 1.0 / (1.0 + np.exp(-a))
    >>> def scale_(y):
    ...     y *= 2.0
    >>> _may_update(sigmoid.__code__), _may_update(scale_.__code__)
    (False, True)
    """
    if not _UPDATING_METHODS.isdisjoint(code.co_names):
        return True
    instructions = code.co_code  # (an operation and its argument, two bytes each; caches are operation 0)
    for at in range(0, len(instructions), 2):
        operation = instructions[at]
        if operation in _STORES or operation == _BINARY_OP and instructions[at + 1] in _AUGMENTED:
            return True
    return any(_may_update(c) for c in code.co_consts if isinstance(c, types.CodeType))


_STORES = {dis.opmap[name] for name in ("STORE_SUBSCR", "STORE_SLICE", "STORE_ATTR", "DELETE_SUBSCR", "DELETE_ATTR")
           if name in dis.opmap}  # (`STORE_SLICE` since Python 3.12)
_BINARY_OP = dis.opmap["BINARY_OP"]
# the arguments of `BINARY_OP` that make it `+=`, `*=`, ... (any, should `dis` not tell: then lowered)
_AUGMENTED = {arg for arg, (_, symbol) in enumerate(getattr(dis, "_nb_ops", ())) if symbol.endswith("=")} or range(256)
_UPDATING_METHODS = {"append", "at"}


@dataclasses.dataclass
class _Resolved:
    """What `loader.still_valid` checks of a transform: the names it resolved, the rules' version."""

    bindings: tuple
    rules_version: int


_updating: dict[int, tuple] = {}  # id(code) -> (code, whether it updates a parameter, `_Resolved`)


def may_update_globals(call) -> bool:
    """A call of your own Python code (which may update a module-level array), declared
    non-differentiable too unless it visibly reads only."""
    callee = anno.get(call, anno.CALLEE)
    return callee is not None and (
        callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and not callee.method or user_non_differentiable(callee)
    )
