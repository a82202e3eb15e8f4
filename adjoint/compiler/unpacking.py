"""Unpacking: assignments to several names, as the statements `normalize` emits.

A mixin of `normalize._Normalizer`. `a, b = t` stays one unpacking statement (nested targets
get names of their own, a repeated target keeps its last value); `a, *rest, b = xs` reads
items and a slice, `rest` a list as Python makes it; a swap `u, v = v, u` reads every value
before binding any name, through copies marked as moves (they alias nothing).

Before:  u, v = v, u               After:  u_new = v
                                           v_new = u
                                           u = u_new
                                           v = v_new
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax


class Unpacking:
    """Unpacking assignments, for `normalize._Normalizer`."""

    def _swap(self, target, value):
        """`u, v = v, u`: every value is read before any name is bound, through copies that move
        values (marked like `ssa`'s joins: they alias nothing)."""
        moved = []
        for element, item in zip(target.elts, value.elts):
            source = self.atom(item, element.id)
            temp = self.ctx.namer.new(f"{element.id}_new")
            self._emit(anno.copy_origin(self.origin, _move(temp, source)))
            moved.append(temp)
        for element, temp in zip(target.elts, moved):
            self._emit(_move(element.id, syntax.name(temp)))

    def _unpack(self, target, source):
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, gast.Starred)]
        if starred:
            self._unpack_starred(target, source, starred[0])
            return
        names = []
        for index, element in enumerate(target.elts):
            later = [e.id for e in target.elts[index + 1 :] if isinstance(e, gast.Name)]
            if isinstance(element, gast.Name) and element.id in later:
                # `a, a = x` binds the last: the earlier value is discarded
                names.append(syntax.store(self.ctx.namer.new(f"{element.id}_discarded")))
            elif isinstance(element, gast.Name):
                names.append(syntax.store(element.id))
            else:
                names.append(syntax.store(self.ctx.namer.new("_".join(syntax.target_names(element)))))
        self._emit(syntax.assign(syntax.tuple_(names, syntax.STORE), source))
        for element, placeholder in zip(target.elts, names):
            if not isinstance(element, gast.Name):
                self._assign([element], syntax.name(placeholder.id))

    def _unpack_starred(self, target, source, star):
        """`a, *rest, b = xs`: items and a slice, `rest` a list as Python makes it."""
        after = len(target.elts) - star - 1
        for index, element in enumerate(target.elts):
            if index == star:
                part = syntax.subscript(source, syntax.slice_(syntax.const(star) if star else None,
                                                              syntax.const(-after) if after else None, None))
                listed = syntax.call(self.ctx.reach("list", list), [self.atom(part, "_".join(syntax.target_names(element)))])
                self._assign([element.value], listed)
            else:
                position = index if index < star else index - len(target.elts)
                self._assign([element], syntax.subscript(source, syntax.const(position)))


def _is_swap(target, value) -> bool:
    """`u, v = v, u`: names assigned from a display of the same length that reads them."""
    return (
        isinstance(target, (gast.Tuple, gast.List)) and isinstance(value, (gast.Tuple, gast.List))
        and len(target.elts) == len(value.elts) and all(isinstance(e, gast.Name) for e in target.elts)
        and len({e.id for e in target.elts}) == len(target.elts)
    )


def _move(target: str, source) -> gast.Assign:
    copy = syntax.assign(target, source)
    anno.set_(copy, anno.PHI, "move")
    return copy
