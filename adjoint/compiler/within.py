"""Within: `adjoint.within_gradient()` is `True` in generated code, so it is written as `True`
and the branch it rules out is dropped.

Runs first, on the user's function, so that later passes never see the dropped branch (its
calls need no rule, its values no adjoint). The user's own function is untouched: called
plainly, `within_gradient()` asks the run-time flag (`adjoint.runtime.gradient_mode`).

Assumes: a `FunctionDef` from `source` that `fence` accepted.
Guarantees: no call of `within_gradient` with no arguments remains in the function's own body
(nested functions are transformed when they are themselves differentiated); an `if`, `while`
or conditional expression whose test it settles keeps only the arm that runs; the name it was
reached by is recorded, so rebinding it regenerates the code.

Before:  if adjoint.within_gradient():       After:  mask = rng.random(x.shape) > p
             mask = rng.random(x.shape) > p          x = x * mask / (1 - p)
             x = x * mask / (1 - p)
"""

from __future__ import annotations

import gast

from ..runtime.gradient_mode import within_gradient
from . import resolve, syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Write `within_gradient()` as `True` in `node`'s body and drop what that rules out."""
    if not _may_fold(ctx.source.nodes if node is ctx.source.node else [n for stmt in node.body for n in syntax.walk(stmt)]):
        return node
    args = node.args
    parameters = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    assigned = set().union(*(syntax.stored_names(stmt) for stmt in node.body))
    folder = _Folder(ctx, parameters | assigned)
    body = _nonempty(folder.visit_body(node.body))
    # a name assigned only in a dropped arm is still local to the function, as Python has it:
    # reading it raises UnboundLocalError rather than finding a global of the same name
    kept = set().union(*(syntax.stored_names(stmt) for stmt in body))
    read = set().union(*(syntax.load_names(stmt) for stmt in body))
    unbound = [
        syntax.assign(syntax.store(name), syntax.call(f"{ctx.runtime_alias}.unbound", [syntax.const(name)]))
        for name in sorted((assigned - kept - parameters) & read)
    ]
    node.body = [gast.copy_location(stmt, node.body[0]) for stmt in unbound] + body
    return node


def _may_fold(nodes) -> bool:
    """Whether `_Folder` could change anything among `nodes` (most functions have nothing it
    folds, and looking is quicker than folding): a call without arguments (`within_gradient()`
    may be one), `not` of a constant, or a test settled by a constant (`if True:`,
    `while x and False:`). (Given more than the body's nodes, it may answer yes for nothing.)"""
    for child in nodes:
        kind = type(child)
        if kind is gast.Call:
            if not child.args and not child.keywords:
                return True
        elif kind is gast.UnaryOp:
            if isinstance(child.op, gast.Not) and isinstance(child.operand, gast.Constant):
                return True
        elif kind in _TESTED and _has_constant_arm(child.test):
            return True
    return False


_TESTED = (gast.If, gast.While, gast.IfExp, gast.Assert)


def _has_constant_arm(test) -> bool:
    """A constant where `_truth` looks for one: the test itself, or an operand of its `and`/`or`."""
    if isinstance(test, gast.BoolOp):
        return any(_has_constant_arm(v) for v in test.values)
    return isinstance(test, gast.Constant)


class _Folder(syntax.Transformer):
    def __init__(self, ctx: Context, local_names: set[str]):
        self.ctx = ctx
        self.local_names = local_names

    def visit_body(self, body: list) -> list:
        result = []
        for stmt in body:
            visited = self.visit(stmt)
            result.extend(visited if isinstance(visited, list) else [visited] if visited is not None else [])
        return result

    def generic_visit(self, node):
        if isinstance(node, (gast.FunctionDef, gast.Lambda)):
            return node  # its own body is transformed when it is differentiated
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                body = self.visit_body(getattr(node, field))
                setattr(node, field, _nonempty(body) if field == "body" else body)
        return super().generic_visit(node)

    def visit_Call(self, node):
        node = super().generic_visit(node)
        if node.args or node.keywords:
            return node
        text = syntax.dotted(node.func)
        if text is None or text.split(".")[0] in self.local_names:
            return node
        obj = resolve.lookup_dotted(text, self.ctx)
        if obj is not within_gradient:
            return node
        self.ctx.rely_on(text, obj)
        return gast.copy_location(syntax.const(True), node)

    def visit_UnaryOp(self, node):
        node = super().generic_visit(node)
        if isinstance(node.op, gast.Not) and isinstance(node.operand, gast.Constant):
            return gast.copy_location(syntax.const(not node.operand.value), node)
        return node

    def visit_If(self, node):
        node.test = _truth(self.visit(node.test))
        if isinstance(node.test, gast.Constant):
            return self.visit_body(node.body if node.test.value else node.orelse)
        node.body = _nonempty(self.visit_body(node.body))
        node.orelse = self.visit_body(node.orelse)
        return node

    def visit_IfExp(self, node):
        node.test = _truth(self.visit(node.test))
        if isinstance(node.test, gast.Constant):
            return self.visit(node.body if node.test.value else node.orelse)
        return super().generic_visit(node)

    def visit_While(self, node):
        node.test = _truth(self.visit(node.test))
        if isinstance(node.test, gast.Constant) and not node.test.value:
            return self.visit_body(node.orelse)
        return self.generic_visit(node)

    def visit_Assert(self, node):
        node.test = _truth(self.visit(node.test))
        if isinstance(node.test, gast.Constant) and node.test.value:
            return []
        return node


def _truth(test):
    """`test` as a condition: `a and True` is as true as `a`; `a or True` is true, once `a`
    has run (so it is kept unless it is a name or a constant)."""
    if not isinstance(test, gast.BoolOp):
        return test
    deciding = isinstance(test.op, gast.Or)  # the constant that settles the whole test
    values = []
    for value in (_truth(v) for v in test.values):
        if isinstance(value, gast.Constant) and bool(value.value) is deciding:
            if all(isinstance(v, (gast.Name, gast.Constant)) for v in values):
                return gast.copy_location(syntax.const(deciding), test)
            values.append(value)
            break  # Python never evaluates what follows
        if not isinstance(value, gast.Constant):
            values.append(value)
    if not values:
        return gast.copy_location(syntax.const(not deciding), test)
    if len(values) == 1:
        return values[0]
    test.values = values
    return test


def _nonempty(body: list) -> list:
    return body or [gast.Pass()]

