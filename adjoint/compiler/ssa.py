"""SSA: give every rebinding of a name a new name, so each name is assigned exactly once.

Assumes: a normalized function (see `normalize`).
Guarantees: no name is assigned twice, and no parameter is assigned; reads refer to the
binding live at that point. The pullback can then capture any forward value by name.

Before:  x = x * 2          After:  x_1 = x * 2
         y = np.sin(x)              y = np.sin(x_1)
"""

from __future__ import annotations

import gast

from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rename rebound names in `node`'s body (see the module docstring)."""
    args = node.args
    defined = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    defined |= {a.id for a in (args.vararg, args.kwarg) if a}
    current: dict[str, str] = {}
    for stmt in node.body:
        _Rename(current, loads=True).visit(stmt)
        stores = {}
        for target in _stored_names(stmt):
            if target in defined:
                stores[target] = ctx.namer.new(target)
            defined.add(stores.get(target, target))
        _Rename(stores, loads=False).visit(stmt)
        current.update(stores)
        for target in _stored_names(stmt):
            current.setdefault(target, target)
    return node


def _stored_names(stmt):
    if isinstance(stmt, gast.Assign):
        return [n.id for n in gast.walk(stmt.targets[0]) if isinstance(n, gast.Name)]
    return []


class _Rename(gast.NodeTransformer):
    def __init__(self, mapping, loads: bool):
        self.mapping, self.loads = mapping, loads

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) == self.loads and node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node
