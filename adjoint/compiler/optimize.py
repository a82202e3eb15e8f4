"""Optimize: remove pullback work whose result nothing reads, and dead join copies.

Assumes: the output of `reverse`.
Guarantees: every assignment in the pullback outside its loops defines a name read later
(inlined rules may compute intermediates for cotangents that activity skipped; loop bodies,
which read their own names again, are kept whole); the copies `ssa` made where control flow
joins (`PHI`) are gone from the forward function when nothing reads them. Other forward
statements are left alone: they are the user's code and may have effects.

Before:  t_scale = 2 * t_bar; x_bar = t_bar          After:  x_bar = t_bar
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Drop dead assignments from the pullback closure nested in `node`, and dead copies that
    `ssa` made where control flow joins."""
    pullback_name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == pullback_name)
    reads = set()
    pullback.body = _without_dead_assignments(pullback.body, set(), reads)
    _drop_dead_copies(node, (pullback, reads))
    return node


def _without_dead_assignments(body, live: set, reads: set | None = None) -> list:
    """`body` without assignments to names nothing reads later (`live`: read after `body`);
    what the statements kept read is added to `reads`."""
    kept = []
    for stmt in reversed(body):
        names = None
        if isinstance(stmt, gast.Assign):
            stored = syntax.stored_names(stmt.targets[0])
            if not stored & live:
                continue
            live -= stored
        elif syntax.bodies(stmt) and not isinstance(stmt, (gast.For, gast.While)):
            # (a loop reads its own names again in the next iteration: loop bodies are kept whole)
            nested_reads = set()
            for nested in syntax.bodies(stmt):
                nested[:] = _without_dead_assignments(nested, set(live), nested_reads)
            if type(stmt) is gast.If:  # (what its statements kept read is known: not walked again)
                names = syntax.load_names(stmt.test) | nested_reads
        if names is None:
            names = syntax.load_names(stmt)  # (a compound statement's nested statements' reads too)
        live |= names
        if reads is not None:
            reads |= names
        kept.append(stmt)
    return kept[::-1]


def drop_dead_copies(node: gast.FunctionDef, ctx: Context = None) -> gast.FunctionDef:
    """Drop the copies `ssa` made where control flow joins that nothing reads (forward mode's
    optimize pass)."""
    _drop_dead_copies(node)
    return node


def _drop_dead_copies(node, known=None) -> None:
    """`known`: a function nested in `node` and the names it reads, which need no reading again."""
    while True:
        copies = [s for s in syntax.statements(node.body) if anno.get(s, anno.PHI)]
        if not copies:
            return  # (no need to read the whole tree)
        if known is not None:  # (the first time round: nothing was dropped yet)
            nested, reads = known
            reads = reads.union(syntax.load_names(node.args), *(syntax.load_names(s) for s in node.body if s is not nested))
            known = None
        else:
            reads = syntax.load_names(node)
        dead = [s for s in copies if not syntax.stored_names(s) & reads]
        if not dead:
            return
        dead_ids = {id(s) for s in dead}
        for stmt in syntax.statements(node.body):
            for index, body in enumerate(syntax.bodies(stmt)):
                body[:] = [s for s in body if id(s) not in dead_ids] or ([gast.Pass()] if index == 0 else [])
        node.body = [s for s in node.body if id(s) not in dead_ids]
