"""Kinds: which names certainly hold numbers or arrays, and which hold tuples or lists.

Read by `reverse`: a numeric name's cotangents add with `+`; any other name's with `adj.add`,
since a tuple's cotangent is a tuple that `+` would concatenate. `+` or `*` on a sequence is
concatenation or repetition, not arithmetic.

Before:  t = (x, y); z = x * 2.0      After: sequence_names -> {t}; numeric_names -> {z, x}
"""

from __future__ import annotations

import gast

from .. import runtime
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
