"""Optimize: remove pullback work whose result nothing reads.

Assumes: the output of `reverse`.
Guarantees: every assignment in the pullback defines a name read later (inlined rules may
compute intermediates for cotangents that activity skipped). The forward statements are left
alone: they are the user's code and may have effects.

Before:  t_scale = 2 * t_bar; x_bar = t_bar          After:  x_bar = t_bar
"""

from __future__ import annotations

import gast

from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Drop dead assignments from the pullback closure nested in `node`."""
    for stmt in node.body:
        if isinstance(stmt, gast.FunctionDef):
            stmt.body = _without_dead_assignments(stmt.body)
    return node


def _without_dead_assignments(body):
    live: set[str] = set()
    kept = []
    for stmt in reversed(body):
        if isinstance(stmt, gast.Assign):
            stored = {n.id for n in gast.walk(stmt.targets[0]) if isinstance(n, gast.Name)}
            if not stored & live:
                continue
            live -= stored
        live |= syntax.load_names(stmt)
        kept.append(stmt)
    return kept[::-1]
