"""Products: a matrix product's cotangent reaches its helpers unsummed, so the pullback no
longer reads the product itself.

Assumes: the output of `reverse`.
Guarantees: where the forward function computes `p = a @ b` (or `np.matmul(a, b)`, `p` defined
there once) and the pullback sums a cotangent down to it, `p_bar = adj.unbroadcast(g, p)`, and
`p_bar` is read only as the cotangent of `adj.matmul_lhs_bar(p_bar, a, b)` or
`adj.matmul_rhs_bar(p_bar, a, b)` (which sum a `g` broadcast beyond `a @ b`'s shape down
themselves), the unbroadcast goes: `g` is passed to them directly (or `p_bar = g` stays, where
`g` is no name or is rebound before they read it). The pullback then reads `p` only where
something else needs it; a loop's tape drops what its pullback no longer reads
(`loops.drop_unread`), which in a recurrent loop is the products of every step.

Before:  h_matmul_bar = adj.unbroadcast(h_add_bar, h_matmul)
         W_bar = W_bar + adj.matmul_lhs_bar(h_matmul_bar, W, h)
After:   W_bar = W_bar + adj.matmul_lhs_bar(h_add_bar, W, h)
"""

from __future__ import annotations

import operator

import gast
import numpy as np

from . import annotations as anno
from . import loops, syntax
from .context import Context

_MATMUL = (operator.matmul, np.matmul, getattr(np.linalg, "matmul", np.matmul))
_HELPERS = ("matmul_lhs_bar", "matmul_rhs_bar")


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Pass matrix products' cotangents to their helpers unsummed, in the pullback nested in
    `node` (see the module docstring).

    >>> from adjoint.compiler import pipeline
    >>> def f(W, h, c):
    ...     return np.sum(W @ h + c)
    >>> node, ctx = pipeline.lower(f, (0, 1, 2), until="products")
    >>> pullback = syntax.unparse(node.body[-2])
    >>> "unbroadcast(f_add_bar, f_matmul)" in pullback, "matmul_lhs_bar(f_add_bar, W, h)" in pullback
    (False, True)
    """
    pullback_name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == pullback_name)
    products = _products(node)
    if products:
        helpers = tuple(f"{ctx.runtime_alias}.{h}" for h in _HELPERS)
        bodies = [pullback.body] + [b for s in syntax.statements(pullback.body) for b in syntax.bodies(s)]
        index = _Index(pullback, helpers)
        absorbed = False
        for body in bodies:
            absorbed |= _absorb(body, index, products, ctx.runtime_alias)
        if absorbed:  # (else each tape holds just what `reverse` found the pullback reads)
            loops.drop_unread(node, pullback, index.read_names())
    return node


def _products(node) -> dict:
    """`{p: (a, b)}` for each name the forward function (outside nested functions) defines once,
    as `a @ b` of two names."""
    found = {}
    for stmt in syntax.statements(node.body):  # (nested functions' statements are not entered)
        if type(stmt) is gast.Assign and isinstance(stmt.targets[0], gast.Name):
            operands = _operands(stmt.value)
            if operands is not None:
                found[stmt.targets[0].id] = operands
    if not found:
        return found  # (no need to read the whole function)
    stores = _stores(node)
    return {p: operands for p, operands in found.items() if stores.get(p) == 1}


def _stores(function) -> dict[str, int]:
    """How many times `function` binds each name, outside the functions and lambdas nested in it
    (the pullback is one), whose names are their own: each statement's names are read by the
    faster `syntax.name_nodes`, unless it is or holds one (then by `syntax.walk_local`)."""
    stores: dict[str, int] = {}
    for stmt in function.body:
        names = syntax.name_nodes(stmt) if type(stmt) is not gast.FunctionDef else None
        if names is None:
            names = [n for n in syntax.walk_local(gast.Module(body=[stmt], type_ignores=[])) if type(n) is gast.Name]
        for name in names:
            if type(name.ctx) is gast.Store:
                stores[name.id] = stores.get(name.id, 0) + 1
    return stores


def _operands(value):
    """`(a, b)` for `a @ b` (or `np.matmul(a, b)`) of two names, else None."""
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
        parts = [value.left, value.right]
    elif isinstance(value, gast.Call) and getattr(anno.get(value, anno.CALLEE), "obj", None) in _MATMUL:
        parts = value.args if len(value.args) == 2 and not value.keywords else []
    else:
        return None
    return tuple(p.id for p in parts) if len(parts) == 2 and all(isinstance(p, gast.Name) for p in parts) else None


def _absorb(body, names, products, alias) -> bool:
    """Rewrite the unbroadcasts of products in the statements of `body` (one statement list);
    `names`: the pullback's `_Index`. Whether it rewrote any."""
    index, absorbed = 0, False
    while index < len(body):
        stmt = body[index]
        summed = _summed_product(stmt, products, alias)
        if summed is not None:
            bar = stmt.targets[0].id
            uses = names.uses(bar, products[summed.args[1].id])
            if uses is not None:
                names.forget(summed.func)
                names.forget(summed.args[1])  # (what is left is `g`, read as it was)
                stmt.value = summed.args[0]  # `p_bar = g` (no other name's uses changed)
                absorbed = True
                if _propagate(body, index, uses - _count(summed, bar), names):
                    continue  # (the statement is gone: the next one is at `index`)
        index += 1
    return absorbed


def _summed_product(stmt, products, alias):
    """The `adj.unbroadcast(g, p)` call `stmt` assigns to a name, `p` a product; else None."""
    value = getattr(stmt, "value", None)
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and isinstance(value, gast.Call)):
        return None
    if syntax.dotted(value.func) != f"{alias}.unbroadcast" or len(value.args) != 2 or value.keywords:
        return None
    summed = value.args[1]
    return value if isinstance(summed, gast.Name) and summed.id in products else None


class _Index:
    """What the pullback does with each name, found in one walk (again after a rewrite): how
    many times it names it, where it reads it, and which reads are the cotangent of a matrix
    product helper, with the helper's operands."""

    def __init__(self, pullback, helpers):
        self.pullback, self.helpers, self.named = pullback, helpers, None

    def rename(self, node, name) -> None:
        """`node`, a read of a name, now reads `name`."""
        if self.named is not None:
            self._forget(node)
            node.id = name
            self.named[name] = self.named.get(name, 0) + 1
            self.reads.setdefault(name, []).append(id(node))
        else:
            node.id = name

    def forget(self, node) -> None:
        """`node` is gone from the pullback."""
        if self.named is not None:
            for current in syntax.walk(node):
                if type(current) is gast.Name:
                    self._forget(current)

    def _forget(self, node) -> None:
        self.named[node.id] -= 1
        if isinstance(node.ctx, gast.Load):
            self.reads[node.id].remove(id(node))

    def read_names(self) -> set[str]:
        """The names the pullback reads (`syntax.load_names` of it), once `uses` was asked."""
        return {name for name, reads in self.reads.items() if reads}

    def uses(self, bar, operands):
        """How many times the pullback names `bar` (assigned or read), if every read of it is
        the cotangent of a matrix product helper of the product of `operands`; else None."""
        if self.named is None:
            self._walk()
        helped = self.helped
        reads = self.reads.get(bar, ())
        return self.named.get(bar, 0) if all(helped.get(read) == operands for read in reads) else None

    def _walk(self) -> None:
        self.named, self.reads, self.helped = {}, {}, {}
        for current in syntax.walk(self.pullback):
            kind = type(current)
            if kind is gast.Name:
                self.named[current.id] = self.named.get(current.id, 0) + 1
                if isinstance(current.ctx, gast.Load):
                    self.reads.setdefault(current.id, []).append(id(current))
            elif kind is gast.Call and len(current.args) == 3 and not current.keywords:
                if syntax.dotted(current.func) in self.helpers and all(isinstance(a, gast.Name) for a in current.args):
                    self.helped[id(current.args[0])] = (current.args[1].id, current.args[2].id)


def _propagate(body, index, uses, names) -> bool:
    """Replace the reads of `p_bar` by `g` for `body[index]`, `p_bar = g` (two names), and drop it
    (keeping `names`, the pullback's `_Index`, up to date),
    where that changes nothing: `p_bar` is assigned there only and read only by later simple
    statements of `body`, before any of them rebinds `g`. Whether it did."""
    stmt = body[index]
    bar, passed = stmt.targets[0].id, stmt.value
    if not isinstance(passed, gast.Name) or passed.id == bar:
        return False
    readers, reads_there = [], 0
    for j in range(index + 1, len(body)):
        if reads_there >= uses - 1:
            break  # every other naming of `bar` in the pullback is found: no later statement reads it
        if bar in syntax.load_names(body[j]):
            readers.append(j)
            reads_there += _count(body[j], bar)
    if uses != 1 + reads_there:  # assigned once, and read nowhere else
        return False
    if not readers or any(syntax.bodies(body[j]) or not isinstance(body[j], (gast.Assign, gast.Expr)) for j in readers):
        return False
    if any(passed.id in syntax.stored_names(body[j]) for j in range(index + 1, readers[-1])):
        return False  # (the last reader may rebind `g`: an assignment reads before it binds)
    for j in readers:
        for current in syntax.walk(body[j]):
            if type(current) is gast.Name and current.id == bar and isinstance(current.ctx, gast.Load):
                names.rename(current, passed.id)
    names.forget(body[index])
    del body[index]
    return True


def _count(node, name) -> int:
    return sum(1 for n in syntax.walk(node) if isinstance(n, gast.Name) and n.id == name)
