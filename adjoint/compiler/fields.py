"""Fields: an object's cotangent is made once from the cotangents of the fields a block read.

Assumes: the output of `optimize` (each read of a field `s.f` adds `adj.field_bar(f_bar, s,
'f')` to `s_bar`, where `f_bar` is a name or None).
Guarantees: in each statement list of the pullback, two or more such additions to one `s_bar`
become one, `adj.field_bars({'f': f_bar, ...}, s)` (a field read twice adds its cotangents), at
the place of the last of them, wherever moving them there changes nothing: no statement in
between reads or binds `s_bar`, binds `s` or a cotangent moved, or is anything but a plain
assignment. The object's cotangent is then one `Tangent`, not one per field added up.

Before:  self_bar = adj.add(self_bar, adj.field_bar(call_b_bar, self, 'b'))
         call_W_bar = adj.matmul_rhs_bar(call_add_bar, x, call_W)
         self_bar = adj.add(self_bar, adj.field_bar(call_W_bar, self, 'W'))
After:   call_W_bar = adj.matmul_rhs_bar(call_add_bar, x, call_W)
         self_bar = adj.add(self_bar, adj.field_bars({'b': call_b_bar, 'W': call_W_bar}, self))
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Gather the field reads' cotangents in the pullback nested in `node`."""
    pullback_name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == pullback_name)
    _gather(pullback.body, ctx.runtime_alias)
    return node


class _Read:
    """One statement adding a field's cotangent to an object's: `bar = adj.field_bar(g, obj,
    name)` (`fresh`) or `bar = adj.add(bar, adj.field_bar(g, obj, name))`."""

    __slots__ = ("stmt", "bar", "obj", "name", "g", "fresh")

    def __init__(self, stmt, bar, obj, name, g, fresh):
        self.stmt, self.bar, self.obj, self.name, self.g, self.fresh = stmt, bar, obj, name, g, fresh


def _gather(body: list, alias: str) -> None:
    """Gather in `body` and in the statement lists nested in it, in place."""
    for stmt in body:
        for nested in syntax.bodies(stmt):
            _gather(nested, alias)
    groups: dict[str, list[_Read]] = {}  # a cotangent's name -> its reads waiting to be gathered
    replaced: dict[int, object] = {}  # position in `body` -> the statement there instead (None: dropped)
    for index, stmt in enumerate(body):
        read = _field_read(stmt, alias)
        plain = isinstance(stmt, gast.Assign)
        loads, stores = (syntax.load_names(stmt), syntax.stored_names(stmt.targets[0])) if plain else (set(), set())
        for bar in list(groups):
            if read is not None and read.bar == bar and not read.fresh:
                continue  # one more of its reads
            reads = groups[bar]
            moved = {bar} | {r.obj for _, r in reads} | {r.g for _, r in reads if r.g is not None}
            if not plain or bar in loads or moved & stores:
                _flush(groups.pop(bar), replaced, alias)
        if read is not None:
            groups.setdefault(read.bar, []).append((index, read))
    for reads in groups.values():
        _flush(reads, replaced, alias)
    for index in sorted(replaced, reverse=True):
        if replaced[index] is None:
            del body[index]
        else:
            body[index] = replaced[index]


def _flush(reads: list, replaced: dict, alias: str) -> None:
    """One statement for `reads` (two or more), at the place of the last."""
    if len(reads) < 2:
        return
    parts: dict[str, gast.expr] = {}
    for _, read in reads:
        g = syntax.name(read.g) if read.g is not None else syntax.const(None)
        earlier = parts.get(read.name)
        parts[read.name] = g if earlier is None else syntax.call(f"{alias}.add", [earlier, g])
    first, last = reads[0][1], reads[-1]
    display = gast.Dict(keys=[syntax.const(name) for name in parts], values=list(parts.values()))
    made = syntax.call(f"{alias}.field_bars", [display, syntax.name(first.obj)])
    if not first.fresh:
        made = syntax.call(f"{alias}.add", [syntax.name(first.bar), made])
    for index, _ in reads[:-1]:
        replaced[index] = None
    replaced[last[0]] = anno.copy_origin(last[1].stmt, gast.copy_location(syntax.assign(first.bar, made), last[1].stmt))


def _field_read(stmt, alias: str) -> _Read | None:
    """`stmt` as a `_Read`, or None if it is not one."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return None
    bar, value, fresh = stmt.targets[0].id, stmt.value, True
    if _is_helper(value, f"{alias}.add") and len(value.args) == 2:
        left, value, fresh = value.args[0], value.args[1], False
        if not (isinstance(left, gast.Name) and left.id == bar):
            return None
    if not (_is_helper(value, f"{alias}.field_bar") and len(value.args) == 3 and not value.keywords):
        return None
    g, obj, name = value.args
    if isinstance(g, gast.Constant) and g.value is None:
        g_name = None
    elif isinstance(g, gast.Name):
        g_name = g.id
    else:
        return None
    if not (isinstance(obj, gast.Name) and isinstance(name, gast.Constant) and type(name.value) is str):
        return None
    if bar in (obj.id, g_name):
        return None
    return _Read(stmt, bar, obj.id, name.value, g_name, fresh)


def _is_helper(node, dotted: str) -> bool:
    return isinstance(node, gast.Call) and syntax.dotted(node.func) == dotted and not node.keywords
