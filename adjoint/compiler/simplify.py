"""Simplify: the algebra a person does when writing out a derivative by hand.

Applied to rule expressions after their parameters are replaced by the call's atoms:
`g * 1 -> g`, `g * -1 -> -g`, `g * (1 / b) -> g / b`, `x ** 1 -> x`, arithmetic and comparisons
on numeric constants folded (`2 - 1 -> 1`, `2 == 0 -> False`), pure NumPy calls on constants
evaluated (`np.where(False, 1, 1) -> 1`), `--x -> x`, and `a if True else b -> a`. Nothing
here changes a value, only how it is written.

Before:  y_bar * (2 * x ** (2 - 1))      After:  y_bar * (2 * x)
"""

from __future__ import annotations

import operator

import gast
import numpy as np

from . import annotations as anno
from . import syntax

_FOLDABLE = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul, gast.Pow: operator.pow}


class Simplifier(syntax.Transformer):
    """The rewrites of the module docstring, bottom-up (a subclass may add its own)."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right = node.left, node.right
        fold = _FOLDABLE.get(type(node.op))
        if fold and _number(left) is not None and _number(right) is not None:
            return syntax.const(fold(left.value, right.value))
        if isinstance(node.op, gast.Mult):
            return _product(left, right) or _product(right, left) or node
        if isinstance(node.op, gast.Pow) and _number(right) == 1:
            return left
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        inner = node.operand
        if isinstance(node.op, gast.USub) and isinstance(inner, gast.UnaryOp) and isinstance(inner.op, gast.USub):
            return inner.operand
        if isinstance(node.op, gast.USub) and _number(inner) is not None:
            return syntax.const(-inner.value)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        if isinstance(node.test, gast.Constant):
            return node.body if node.test.value else node.orelse
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        function = anno.get(node, anno.FOLDABLE)
        if function is None or node.keywords or not all(isinstance(a, gast.Constant) for a in node.args):
            return node
        with np.errstate(all="ignore"):
            value = function.obj(*(a.value for a in node.args))
        if np.ndim(value) == 0 and np.asarray(value).dtype.kind in "biuf":
            return syntax.const(np.asarray(value).item())
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if (
            len(node.ops) == 1 and isinstance(node.ops[0], (gast.Eq, gast.NotEq))
            and _literal(node.left) and _literal(node.comparators[0])
        ):
            equal = node.left.value == node.comparators[0].value
            return syntax.const(equal if isinstance(node.ops[0], gast.Eq) else not equal)
        if (
            len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot))
            and isinstance(node.left, gast.Constant) and isinstance(node.comparators[0], gast.Constant)
        ):
            same = node.left.value is node.comparators[0].value
            return syntax.const(same if isinstance(node.ops[0], gast.Is) else not same)
        return node


def _literal(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) in (int, float, str, bool)


def _number(node):
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _product(factor, other):
    """`other * factor` written more simply, when `factor` allows it; else None."""
    if _number(factor) == 1:
        return other
    if _number(factor) == -1:
        return syntax.unary(gast.USub, other)
    if isinstance(factor, gast.BinOp) and isinstance(factor.op, gast.Div) and _number(factor.left) == 1:
        return syntax.binop(other, gast.Div, factor.right)
    return None


def simplify(node):
    """`node` with the rewrites of the module docstring applied, bottom-up.

    >>> syntax.unparse(simplify(syntax.parse("g * (2 * x ** (2 - 1))").body[0].value))
    'g * (2 * x)'
    """
    return Simplifier().visit(node)
