"""Updates: item assignments and appends as new values, since adjoint never updates in place.

A mixin of `normalize._Normalizer`. `y[i] = v` becomes `y = adj.setitem(y, i, v)` (a copy
with the item replaced), `y[i] += v` reads `y[i]` into a name first, `y[i][j] = v` reads
`y[i]`, updates it, and writes it back, `xs.append(v)` on a local list becomes
`xs = adj.append(xs, v)`, and `np.add.at(y, i, v)` on a local array `y = adj.add_at(y, i, v)`. The reads made for these updates are marked `ITEM_READ` (they are
not aliases of `y`: `y` is written right after). `inplace` refuses the updates Python would
show through another name.

Before:  y[1:] += x[:2]                    After:  y_item = y[1:]
                                                   y_item_1 = x[:2]
                                                   y_add = y_item + y_item_1
                                                   y = adj.setitem(y, slice(1, None, None), y_add)
"""

from __future__ import annotations

import gast
import numpy as np

from . import annotations as anno
from . import syntax
from .context import free_name
from .naming import OPERATOR_TAGS


class ItemUpdates:
    """Item assignments, augmented item assignments and appends, for `normalize._Normalizer`."""

    def _augmented(self, stmt):
        target = stmt.target
        if isinstance(target, gast.Name):
            value = syntax.binop(syntax.name(target.id), stmt.op, stmt.value)
            self._assign([target], value)
            anno.set_(self.out[-1], anno.IN_PLACE, stmt)
            return
        container = self._container(target.value, syntax.target_root(target))
        index = self._index(target.slice, syntax.target_root(target))
        hint = syntax.target_root(target)
        current = self._temp(hint + "_item", syntax.subscript(container, syntax.copy_node(index)))
        anno.set_(self.out[-1], anno.ITEM_READ, True)
        updated = self._temp(hint + "_" + OPERATOR_TAGS.get(type(stmt.op), "op"),
                             syntax.binop(current, stmt.op, self.atom(stmt.value, hint)))
        self._set_item(container, index, updated, target)

    def _store_item(self, target, value):
        """`y[i] = v` as `y = adj.setitem(y, i, v)`: adjoint never updates arrays in place."""
        container = self._container(target.value, syntax.target_root(target))
        self._set_item(container, self._index(target.slice, syntax.target_root(target)), value, target)

    def _container(self, expr, hint):
        """The container an item assignment writes into; `y[i]` of `y[i][j] = v` is read into
        a name marked `ITEM_READ` (it is written back into `y` right after)."""
        if isinstance(expr, gast.Subscript):
            read = syntax.subscript(self.atom(expr.value, hint), self._index(expr.slice, hint))
            temp = self._temp(hint + "_item", read)
            anno.set_(self.out[-1], anno.ITEM_READ, True)
            self.ctx.user_names[temp.id] = syntax.unparse(expr)
            return temp
        return self.atom(expr, hint)

    def _set_item(self, container, index, value, target):
        index = syntax.index_expression(index, self.ctx.reach("slice", slice))
        updated = syntax.call(f"{self.ctx.runtime_alias}.setitem", [container, index, value])
        anno.set_(updated, anno.MADE_UPDATE, True)
        if isinstance(target.value, gast.Name):
            self._emit(syntax.assign(target.value.id, updated))
        elif isinstance(target.value, gast.Subscript):  # y[i][j] = v
            temp = self._temp(syntax.target_root(target), updated)
            self._store_item(target.value, temp)
        else:
            self.ctx.problem(target, f"assigning into `{syntax.unparse(target.value)}` is not supported yet",
                             "assign into a local name: `y = obj.field; y[i] = v`")



def _is_append(value, local_names) -> bool:
    """`lst.append(v)` on a local list (adjoint rebinds `lst` to a new list instead)."""
    return (
        isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "append"
        and isinstance(value.func.value, gast.Name) and value.func.value.id in local_names
        and len(value.args) == 1 and not value.keywords
    )




def is_add_at(value, local_names, fn) -> bool:
    """`np.add.at(y, i, v)` on a local array `y` (adjoint rebinds `y` to an updated copy)."""
    if not (
        isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "at"
        and len(value.args) == 3 and not value.keywords
        and isinstance(value.args[0], gast.Name) and value.args[0].id in local_names
    ):
        return False
    ufunc = value.func.value
    root = syntax.root_name(ufunc)
    path = syntax.dotted(ufunc)
    if root is None or path is None:
        return False
    obj = free_name(fn, root)
    for part in path.split(".")[1:]:
        obj = getattr(obj, part, None)
    return obj is np.add
