"""Kinds: which names certainly hold numbers or arrays, and which hold tuples or lists.

Read by `reverse` and `calls`:
- `sequence_names`: displays (tuples, lists, dicts), appends and concatenations; their
  cotangents add with `adj.add`, since `+` would concatenate, and `t + u` on them is
  differentiated as concatenation;
- `numeric_names`: names taken to hold numbers or arrays (a heuristic, for readable `+`);
- `certain_numbers`: names that certainly do (differentiated parameters and what arithmetic
  and NumPy make of them); an elementwise rule's operand outside this set is checked at run
  time by `adj.unbroadcast`, which refuses a tuple instead of computing wrong math on it.

Before:  t = (x, y); z = x * 2.0      After: sequence_names -> {t}; numeric_names -> {z, x}
"""

from __future__ import annotations

import gast
import numpy as np

from .. import runtime, steering
from . import annotations as anno
from . import syntax


def sequence_names(body) -> set[str]:
    """Names certainly holding tuples or lists: displays, and `+`/`*` results involving them."""
    sequences = set()
    for stmt in syntax.statements(body):
        value = getattr(stmt, "value", None)
        if not isinstance(stmt, gast.Assign) or isinstance(stmt.targets[0], gast.Tuple):
            continue
        if isinstance(value, (gast.Tuple, gast.List, gast.Dict)) and not syntax.is_atom(value):
            sequences.add(stmt.targets[0].id)
        elif _is_runtime_call(value, "append"):
            sequences.add(stmt.targets[0].id)
        elif isinstance(value, gast.BinOp) and any(is_sequence(o, sequences) for o in (value.left, value.right)):
            sequences.add(stmt.targets[0].id)
        elif isinstance(value, gast.Name) and value.id in sequences:
            sequences.add(stmt.targets[0].id)  # `s = t`
        elif isinstance(value, gast.Subscript) and isinstance(value.slice, gast.Slice) and is_sequence(value.value, sequences):
            sequences.add(stmt.targets[0].id)  # `s = t[0:2]`
    return sequences


def is_sequence(operand, sequences) -> bool:
    return isinstance(operand, (gast.Tuple, gast.List)) or (isinstance(operand, gast.Name) and operand.id in sequences)


def numeric_names(body, active: set[str]) -> set[str]:
    """Names taken to hold numbers or arrays: results of arithmetic and of elementwise rules, and
    their operands in differentiated statements. A known sequence is excluded by the caller, and
    arithmetic that reaches a tuple anyway is refused at run time by `adj.unbroadcast`."""
    numeric = set()
    for stmt in syntax.statements(body):
        value = getattr(stmt, "value", None)
        if not isinstance(stmt, gast.Assign) or isinstance(stmt.targets[0], gast.Tuple):
            continue
        if stmt.targets[0].id not in active:
            continue
        callee = anno.get(value, anno.CALLEE)
        elementwise = callee is not None and callee.rule is not None and callee.rule.partials is not None
        if isinstance(value, (gast.BinOp, gast.UnaryOp)) or (isinstance(value, gast.Call) and elementwise):
            numeric.add(stmt.targets[0].id)
            numeric |= syntax.load_names(value) - {syntax.root_name(getattr(value, "func", None))}
    return numeric


def _is_runtime_call(value, name) -> bool:
    return isinstance(value, gast.Call) and getattr(anno.get(value, anno.CALLEE), "obj", None) is getattr(runtime, name, None)


def certain_numbers(body, params: set[str], items: bool = True) -> set[str]:
    """Names certainly holding numbers or arrays, never tuples or lists: the differentiated
    parameters (the API accepts only floats and arrays for them), and results of arithmetic
    with, NumPy functions of, and items of such names. Anything else (what a user function
    returned, an item of a list) may be a sequence, on which an elementwise rule's math would
    be wrong. Loops make definitions circular: start from every name and drop the doubtful.
    With `items` False, an item read out of anything is doubtful too (an int read out of a
    dict holding parameters is a number without a tangent)."""
    return _settled(_definitions(body), params, items)


def certain_numbers_with_and_without_items(body, params: set[str]) -> tuple[set[str], set[str]]:
    """`certain_numbers(body, params)` and `certain_numbers(body, params, items=False)`, from
    one reading of `body`.

    >>> import gast
    >>> body = gast.parse("y = x * 2\\nz = d[0]").body
    >>> [sorted(found) for found in certain_numbers_with_and_without_items(body, {"x", "d"})]
    [['d', 'x', 'y', 'z'], ['d', 'x', 'y']]
    """
    index = _definitions(body)
    with_items = _settled(index, params, True)
    # without items, fewer names hold numbers: starting from those found with them, only the
    # names reading an item, and then what reads the names dropped, need a second look
    reading_items = [name for name, values in index[0].items() if any(_reads_an_item(v) for v in values)]
    return with_items, _settled(index, params, False, with_items, reading_items)


def _definitions(body) -> tuple[dict, dict]:
    """Each name's assigned values, and the names whose definitions read a name."""
    definitions: dict = {}
    for stmt in syntax.statements(body):
        if type(stmt) is gast.Assign and type(stmt.targets[0]) is gast.Name:
            definitions.setdefault(stmt.targets[0].id, []).append(stmt.value)
    readers: dict[str, set] = {}  # the names whose definitions read a name
    for name, values in definitions.items():
        for value in values:
            for read in syntax.load_names(value):
                readers.setdefault(read, set()).add(name)
    return definitions, readers


def _settled(index, params, items, start=None, doubtful=None) -> set[str]:
    """The names certainly holding numbers: the largest set, within `start` (by default every
    name), whose definitions make numbers of its names; `doubtful`: the names in `start` that
    may not (by default all)."""
    definitions, readers = index
    certain = set(params) | set(definitions) if start is None else set(start)
    # a name doubted makes doubtful only the names read from it: look at those again, not at all
    todo = list(definitions) if doubtful is None else list(doubtful)
    while todo:
        name = todo.pop()
        if name in certain and not all(_makes_number(v, certain, items) for v in definitions[name]):
            certain.discard(name)
            todo.extend(readers.get(name, ()))
    return certain


_GENERATED_NUMBERS: dict[str, frozenset] = {}  # generated file -> the primal names `reverse` knew as numbers


def remember_numbers(filename: str, names) -> None:
    """Record, for the generated code in `filename`, the names of the forward function that
    certainly hold numbers or arrays: its pullback reads them as free names, which forward
    mode over the pullback (a second derivative) may then differentiate inline."""
    _GENERATED_NUMBERS[filename] = frozenset(names)


def generated_numbers(fn) -> frozenset:
    """The names recorded by `remember_numbers` for the file `fn`'s code was compiled from
    (empty for a function of yours).

    >>> def f(x):
    ...     return x
    >>> generated_numbers(f)
    frozenset()
    """
    return _GENERATED_NUMBERS.get(getattr(getattr(fn, "__code__", None), "co_filename", None), frozenset())


def _makes_number(value, certain, items=True) -> bool:
    if isinstance(value, gast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, gast.Name):
        return value.id in certain
    if isinstance(value, gast.BinOp):  # an array or a float with a tuple: an array, or an error
        return any(_makes_number(o, certain, items) and not _is_int_constant(o) for o in (value.left, value.right))
    if isinstance(value, gast.UnaryOp):
        return _makes_number(value.operand, certain, items)
    if isinstance(value, gast.Subscript):
        return items and _makes_number(value.value, certain, items)
    callee = anno.get(value, anno.CALLEE)
    obj = getattr(callee, "obj", None)
    if id(obj) in _ARRAY_MAKER_IDS:  # (by identity: the makers live as long as this module)
        return True
    if obj is runtime.setitem:  # `y[i] = v` into an array gives an array
        return _makes_number(value.args[0], certain, items)
    shaped_by = _COTANGENT_OF.get(id(obj))
    if shaped_by is not None and shaped_by[0] is obj:  # a pullback's `adj.unbroadcast(g, x)`: like `x`
        return len(value.args) > shaped_by[1] and _makes_number(value.args[shaped_by[1]], certain, items)
    if (obj is steering.hook or obj is steering.stop_gradient) and value.args:  # the value itself
        return _makes_number(value.args[0], certain, items)
    if getattr(callee, "method", False) and isinstance(value.func, gast.Attribute):  # `u0.copy()`
        return value.func.attr in _ARRAY_METHODS and _makes_number(value.func.value, certain, items)
    module = getattr(obj, "__module__", None) or type(obj).__module__ or ""
    return isinstance(value, gast.Call) and callee is not None and callee.rule is not None and (
        module.split(".")[0] in ("numpy", "math") or callee.rule.partials is not None
    )


# Runtime helpers of generated pullbacks whose result is a number or an array when the
# argument at the given position (the value whose cotangent it is) is one.
_COTANGENT_OF = {id(helper): (helper, position) for helper, position in (
    (runtime.unbroadcast, 1), (runtime.unreduce, 1), (runtime.unreduce_chosen, 1), (runtime.zeros_like, 0),
    (runtime.matmul_lhs_bar, 1), (runtime.matmul_rhs_bar, 2), (runtime.add_chosen, 2),
)}

_ARRAY_METHODS = {
    "copy", "astype", "sum", "mean", "max", "min", "prod", "std", "var", "dot", "clip", "round",
    "cumsum", "cumprod", "flatten", "ravel", "reshape", "transpose", "squeeze", "T",
}
_ARRAY_MAKERS = (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
                 np.full_like, np.eye, np.identity, np.arange, np.linspace, np.logspace)
_ARRAY_MAKER_IDS = frozenset(map(id, _ARRAY_MAKERS))


def _reads_an_item(value) -> bool:
    """Whether `_makes_number` may look at an item read (`d[0]`) in `value`: where `items` matters."""
    kind = type(value)
    if kind is gast.Subscript:
        return True
    if kind is gast.BinOp:
        return _reads_an_item(value.left) or _reads_an_item(value.right)
    if kind is gast.UnaryOp:
        return _reads_an_item(value.operand)
    if kind is gast.Call:  # (its arguments, and a method's receiver)
        return any(_reads_an_item(a) for a in value.args) or (
            type(value.func) is gast.Attribute and _reads_an_item(value.func.value))
    return False


def _is_int_constant(node) -> bool:
    return isinstance(node, gast.Constant) and isinstance(node.value, int)
