"""gast trees as Python source: the standard library's unparser, reading gast nodes directly.

`ast.unparse` dispatches on a node's class name and reads its fields by name, which gast's
nodes share with `ast`'s; converting a generated function to `ast` first (`stdlib_ast.to_ast`)
only to print it cost as much as printing it. What this unparser does differently is only where
the standard one asks for `ast`'s classes or fields by identity: a docstring, an `elif`, a
subscript's tuple, `3 .real`, a type comment (which gast's assignments do not carry), a negative
constant (written `-2.0`, as the folded `(-2.0) ** 0.5` needs), and the rare nodes gast writes
otherwise (parameters, `except ... as e`, f-strings, `match`), which are converted and printed
as `ast`. The text is the one `ast.unparse(stdlib_ast.to_ast(node))` gives (tested so); on a
Python whose unparser this was not written against, that is what runs.
"""

from __future__ import annotations

import ast
import sys

import gast

from . import stdlib_ast

_Unparser = getattr(ast, "_Unparser", None)
_READS_GAST = _Unparser is not None and sys.version_info[:2] == (3, 11)  # (the unparser it was written against)

_FUNCTIONS = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Module,
              ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_EXPR, _CONSTANT, _IF, _TUPLE, _NAME = (gast.Expr, ast.Expr), (gast.Constant, ast.Constant), (gast.If, ast.If), (
    gast.Tuple, ast.Tuple), (gast.Name, ast.Name)


def unparse(node) -> str:
    """Python source for a gast node.

    >>> unparse(gast.parse("if a:\\n    x = y[1, -2]\\nelif b:\\n    pass").body[0])
    'if a:\\n    x = y[1, -2]\\nelif b:\\n    pass'
    """
    if not _READS_GAST:
        return ast.unparse(stdlib_ast.to_ast(node))
    return _GastUnparser().visit(node)


if _READS_GAST:
    _Precedence = ast._Precedence
    _ATOM, _TUPLE_PRECEDENCE, _TEST = _Precedence.ATOM, _Precedence.TUPLE, _Precedence.TEST
    # an operator's class -> how it is written, its precedence, and its operands' (as `visit_BinOp` finds them)
    _BINARY = {}
    for _symbol_of in (gast, ast):
        for _name, _symbol in _Unparser.binop.items():
            _precedence = _Unparser.binop_precedence[_symbol]
            _BINARY[getattr(_symbol_of, _name)] = (f" {_symbol} ", _precedence) + (
                (_precedence.next(), _precedence) if _symbol in _Unparser.binop_rassoc else (_precedence, _precedence.next())
            )

    class _GastUnparser(_Unparser):
        """`ast._Unparser` for trees of gast nodes (and the `ast` nodes converted from the few it
        prints as `ast`). The methods it runs for most nodes are written again without what
        costs as much as the text they write: finding the method by the class's name, context
        managers for brackets, reading the precedences' enum."""

        def traverse(self, node):
            if isinstance(node, list):
                for item in node:
                    self.traverse(item)
            else:
                visitor = _VISITORS.get(type(node)) or _visitor(type(node))
                visitor(self, node)

        def fill(self, text=""):
            if self._source:
                self._source.append("\n")
            self._source.append("    " * self._indent + text)

        def visit_Name(self, node):
            self._source.append(node.id)

        def visit_Assign(self, node):
            self.fill()
            for target in node.targets:
                self._precedences[target] = _TUPLE_PRECEDENCE
                self.traverse(target)
                self._source.append(" = ")
            self.traverse(node.value)
            if type_comment := self.get_type_comment(node):
                self._source.append(type_comment)

        def visit_BinOp(self, node):
            symbol, precedence, left, right = _BINARY[type(node.op)]
            parenthesised = self._precedences.get(node, _TEST) > precedence
            if parenthesised:
                self._source.append("(")
            self._precedences[node.left] = left
            self.traverse(node.left)
            self._source.append(symbol)
            self._precedences[node.right] = right
            self.traverse(node.right)
            if parenthesised:
                self._source.append(")")

        def visit_Call(self, node):
            self._precedences[node.func] = _ATOM
            self.traverse(node.func)
            self._source.append("(")
            comma = False
            for argument in node.args + node.keywords:
                if comma:
                    self._source.append(", ")
                comma = True
                self.traverse(argument)
            self._source.append(")")

        def get_raw_docstring(self, node):
            if not isinstance(node, _FUNCTIONS) or not node.body:
                return None
            first = node.body[0]
            if isinstance(first, _EXPR) and isinstance(first.value, _CONSTANT) and isinstance(first.value.value, str):
                return first.value
            return None

        def get_type_comment(self, node):
            ignored = self._type_ignores.get(getattr(node, "lineno", 0)) if self._type_ignores else None
            comment = ignored or (None if isinstance(node, gast.Assign) else getattr(node, "type_comment", None))
            return None if comment is None else f" # type: {comment}"

        def visit_If(self, node):
            self.fill("if ")
            self.traverse(node.test)
            with self.block():
                self.traverse(node.body)
            while node.orelse and len(node.orelse) == 1 and isinstance(node.orelse[0], _IF):  # `elif`
                node = node.orelse[0]
                self.fill("elif ")
                self.traverse(node.test)
                with self.block():
                    self.traverse(node.body)
            if node.orelse:
                self.fill("else")
                with self.block():
                    self.traverse(node.orelse)

        def visit_Subscript(self, node):
            self._precedences[node.value] = _ATOM
            self.traverse(node.value)
            self._source.append("[")
            if isinstance(node.slice, _TUPLE) and node.slice.elts:  # `a[i, j]`, not `a[(i, j)]`
                self.items_view(self.traverse, node.slice.elts)
            else:
                self.traverse(node.slice)
            self._source.append("]")

        def visit_Attribute(self, node):
            self._precedences[node.value] = _ATOM
            self.traverse(node.value)
            value = node.value
            if isinstance(value, _CONSTANT) and isinstance(value.value, int) and not stdlib_ast.negative(value.value):
                self.write(" ")  # `3 .real`
            self.write(".")
            self.write(node.attr)

        def visit_Constant(self, node):
            if stdlib_ast.negative(node.value):  # as `stdlib_ast` converts it: `-2.0`, parenthesised where needed
                negated = ast.UnaryOp(op=ast.USub(), operand=ast.Constant(value=-node.value))
                if node in self._precedences:
                    self._precedences[negated] = self._precedences[node]
                self.visit_UnaryOp(negated)
            else:
                super().visit_Constant(node)

        def visit_AnnAssign(self, node):
            self.fill()
            with self.delimit_if("(", ")", not node.simple and isinstance(node.target, _NAME)):
                self.traverse(node.target)
            self.write(": ")
            self.traverse(node.annotation)
            if node.value:
                self.write(" = ")
                self.traverse(node.value)

        def visit_arguments(self, node):
            super().visit_arguments(stdlib_ast.to_ast(node))  # (parameters are `Name`s in gast)

        def visit_ExceptHandler(self, node):
            if isinstance(node, gast.ExceptHandler):
                name = node.name.id if node.name is not None else None
                node = ast.ExceptHandler(type=node.type, name=name, body=node.body)
            super().visit_ExceptHandler(node)

        def visit_JoinedStr(self, node):
            super().visit_JoinedStr(stdlib_ast.to_ast(node))

        def visit_Match(self, node):
            super().visit_Match(stdlib_ast.to_ast(node))

    _VISITORS: dict[type, object] = {}

    def _visitor(kind):
        """`_GastUnparser`'s method for nodes of class `kind`, looked up once."""
        found = _VISITORS[kind] = getattr(_GastUnparser, "visit_" + kind.__name__, _GastUnparser.generic_visit)
        return found
