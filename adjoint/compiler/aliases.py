"""Aliases: which names of a normalized function may refer to the same memory.

Read by `inplace`, which refuses updates that adjoint's non-mutating code would not reproduce.
Two names alias when one is a copy (`b = a`), a view (`v = y[1:3]`, `t = y.T`), an item the
loop walks (`for row in y`), or the result of a call that may return its argument. A name put
into a container (`[a]`, `lst.append(a)`, `d[k] = a`) is "contained": updating it in place
would show through the container. The copies `ssa` makes where control flow joins move
values and alias nothing.

Before:  b = a; c = b[0:2]; lst = [c]      After: classes {a, b, c}; contained {c}
"""

from __future__ import annotations

import dataclasses

import gast
import numpy as np

from .. import runtime
from . import annotations as anno
from . import resolve, syntax

# NumPy primitives whose result may share memory with their first argument.
_VIEWS = {id(f) for f in (np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.swapaxes,
                          np.moveaxis, np.broadcast_to, np.asarray, np.asanyarray, np.diagonal,
                          np.real, np.imag, np.ndarray.T, np.ndarray.real, np.ndarray.imag, np.atleast_1d,
                          np.atleast_2d, np.atleast_3d, np.flip, np.fliplr, np.flipud, np.rot90, np.split,
                          np.array_split, np.hsplit, np.vsplit, np.dsplit, np.rollaxis,
                          np.real_if_close, np.diff)}  # the last two may return their input itself
_FRESH_MODULES = {"numpy", "math", "builtins", "operator", "_operator"}
# Built-ins that return one of their arguments, or a new container holding their items.
_SHARING = {id(f) for f in (max, min, list, tuple, sorted, dict, iter, next, reversed)}


@dataclasses.dataclass
class Aliases:
    definitions: dict  # name -> the statements assigning it
    classes: dict  # name -> every name that may refer to the same memory
    contained: set  # names put into a container
    holders: set  # containers holding such names (or versions of them)
    loop_items: set  # names a loop binds to the items of what it walks

    def origins(self, name, seen=None) -> list:
        """The statements that made `name`'s value, through the copies `ssa` made at joins (a
        parameter, or a loop's item, has none)."""
        seen = set() if seen is None else seen
        if name in seen:
            return []
        seen.add(name)
        found = []
        for definition in self.definitions.get(name, []):
            if anno.get(definition, anno.PHI) and isinstance(definition.value, gast.Name):
                found += self.origins(definition.value.id, seen)
            elif not anno.get(definition, anno.PHI):
                found.append(definition)
        return found

    def roots(self, name, seen=None) -> set:
        """The names without definitions (parameters, loop items) `name`'s value may come from
        through join copies."""
        seen = set() if seen is None else seen
        if name in seen:
            return set()
        seen.add(name)
        definitions = self.definitions.get(name, [])
        if not definitions:
            return {name}
        found = set()
        for definition in definitions:
            if anno.get(definition, anno.PHI) and isinstance(definition.value, gast.Name):
                found |= self.roots(definition.value.id, seen)
        return found

    def sharing(self, name) -> set:
        """The other names whose values may share memory with `name`'s: its aliases, the
        containers holding it (and what was read out of them), and the later versions `ssa`
        copies of all of these (but not `name`'s own versions, which see the update anyway)."""
        own = {name} | self.roots(name)
        found, todo = set(own), list(own)
        while todo:
            current = todo.pop()
            linked = set(self.classes.get(current, {current}))
            if current in self.contained:
                linked |= self.holders  # an item updated in place shows through its containers
            for other in linked - found:
                found.add(other)
                todo.append(other)
        others = found - own
        return others | set().union(*(self.versions(n) for n in others))

    def versions(self, name) -> set:
        """The names `ssa`'s copies make of `name` later (after a join, after a loop)."""
        found, todo = set(), [name]
        while todo:
            current = todo.pop()
            for target, definitions in self.definitions.items():
                if target not in found and any(
                    anno.get(d, anno.PHI) and isinstance(d.value, gast.Name) and d.value.id == current
                    for d in definitions
                ):
                    found.add(target)
                    todo.append(target)
        return found


def analyse(statements, loops, arrays=frozenset()) -> Aliases:
    """`statements`: the function's simple statements; `loops`: its `for` loops; `arrays`: names
    certainly holding numbers or arrays (assigning into an array copies the value in)."""
    definitions: dict = {}
    classes: dict = {}
    contained = set()
    holders = set()  # (those holding what they were given; then, below, their versions)
    copies = []  # (name, the name it copies or the container it updates)
    for stmt in statements:
        if not isinstance(stmt, gast.Assign):
            continue
        targets = syntax.stored_names(stmt.targets[0])
        for target in targets:
            definitions.setdefault(target, []).append(stmt)
        value = stmt.value
        update = isinstance(value, gast.Call) and is_container_update(value)
        into_array = update and isinstance(value.args[0], gast.Name) and value.args[0].id in arrays
        stored = stored_into(stmt)
        if not into_array:
            contained |= stored
        if isinstance(stmt.targets[0], gast.Name):
            if stored and not into_array:
                holders.add(stmt.targets[0].id)
            source = value.id if isinstance(value, gast.Name) else (
                value.args[0].id if update and isinstance(value.args[0], gast.Name) else None)
            if source is not None:
                copies.append((stmt.targets[0].id, source))
        copies_a_number = isinstance(value, gast.Name) and all(  # `s = t = 0.0`: numbers are immutable
            isinstance(d.value, gast.Constant) and isinstance(d.value.value, (int, float))
            for d in definitions.get(value.id, [None]) if d is not None
        ) and value.id in definitions
        group = targets | (set() if copies_a_number else aliased_by(stmt))
        if len(group) > 1:
            merged = set().union(*(classes.get(n, {n}) for n in group))
            for name in merged:
                classes[name] = merged
    loop_items = set().union(*(syntax.stored_names(loop.target) for loop in loops))
    for loop in loops:  # an item of an array the loop walks is a view of it
        walked = {n.id for n in syntax.walk(loop.iter) if isinstance(n, gast.Name)}
        group = walked | syntax.stored_names(loop.target)
        merged = set().union(*(classes.get(n, {n}) for n in group))
        for name in merged:
            classes[name] = merged
    while True:  # a version of a holder holds what it held
        before = len(holders)
        holders.update([name for name, source in copies if source in holders])
        if len(holders) == before:
            break
    return Aliases(definitions, classes, contained, holders, loop_items)


def aliased_by(stmt) -> set[str]:
    """Names whose memory the target of `stmt` may share (copy, view, call result)."""
    value = getattr(stmt, "value", None)
    if anno.get(stmt, anno.PHI) or anno.get(stmt, anno.ITEM_READ):
        return set()
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.Subscript, gast.Attribute)) and isinstance(value.value, gast.Name):
        callee = anno.get(value, anno.CALLEE)
        queried = callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE  # x.shape
        return set() if queried else {value.value.id}
    if isinstance(value, gast.Call) and _fresh_method(value) and not _no_copy(value):
        return set()
    if isinstance(value, gast.Call) and (not returns_new_array(anno.get(value, anno.CALLEE)) or _no_copy(value)):
        receiver = syntax.root_name(value.func) if getattr(anno.get(value, anno.CALLEE), "method", False) else None
        names = {a.id for a in value.args + [k.value for k in value.keywords] if isinstance(a, gast.Name)}
        return names | ({receiver} if receiver else set())  # `w = o.step()` may return what `o` holds
    return set()


def _fresh_method(call) -> bool:
    """`x.copy()`: a method of a local value known to return a new array."""
    callee = anno.get(call, anno.CALLEE)
    return bool(getattr(callee, "method", False)) and isinstance(call.func, gast.Attribute) and (
        call.func.attr in _FRESH_METHODS
    )


_FRESH_METHODS = {
    "copy", "astype", "sum", "mean", "max", "min", "prod", "std", "var", "dot", "clip", "round",
    "cumsum", "cumprod", "flatten", "tolist", "argmax", "argmin", "argsort", "any", "all",
}


def stored_into(stmt) -> set[str]:
    """Names `stmt` puts into a container: display items, appended or assigned items."""
    value = getattr(stmt, "value", None)
    if isinstance(value, (gast.Tuple, gast.List, gast.Set)):
        return {e.id for e in value.elts if isinstance(e, gast.Name)}
    if isinstance(value, gast.Dict):
        return {e.id for e in value.values if isinstance(e, gast.Name)}
    if isinstance(value, gast.Call) and is_container_update(value) and isinstance(value.args[-1], gast.Name):
        return {value.args[-1].id}
    return set()


def is_container_update(call) -> bool:
    """`adj.setitem(y, i, v)`, `adj.append(xs, v)` or `adj.add_at(y, i, v)`, which `normalize`
    makes of updates."""
    obj = getattr(anno.get(call, anno.CALLEE), "obj", None)
    return obj is runtime.setitem or obj is runtime.append or obj is runtime.add_at


def made_here(name, known: Aliases, reads: dict, seen=None) -> bool:
    """Whether every value `name` can hold is a new array this function made (`a = b * c`),
    through plain copies and `adj.unbroadcast` of a value read nowhere else (which returns it,
    or a new sum): updating a copy of it shows only through the names sharing it, which the
    caller checks are not read afterwards. This is what a pullback's `x_bar += g` updates.
    `reads`: the statements reading each name."""
    seen = set() if seen is None else seen
    if name in seen:
        return True
    seen.add(name)
    definitions = known.definitions.get(name, [])
    for d in definitions:
        value = d.value
        if isinstance(value, gast.Name):
            if not made_here(value.id, known, reads, seen):
                return False
        elif isinstance(value, gast.Call) and getattr(anno.get(value, anno.CALLEE), "obj", None) is runtime.unbroadcast:
            passed = value.args[0] if value.args else None
            if not (isinstance(passed, gast.Name) and len(reads.get(passed.id, [])) == 1 and made_here(passed.id, known, reads, seen)):
                return False
        elif not is_fresh(d):
            return False
    return bool(definitions)


def is_fresh(definition) -> bool:
    """Whether the statement defining a name makes a new array no other name refers to."""
    if definition is None or isinstance(definition.targets[0], gast.Tuple):
        return False
    value = definition.value
    if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant, gast.List, gast.Dict)):
        return True
    return isinstance(value, gast.Call) and not _no_copy(value) and (
        returns_new_array(anno.get(value, anno.CALLEE)) or _fresh_method(value)
    )


def _no_copy(call) -> bool:
    """`np.array(y, copy=False)`, `y.astype(t, copy=False)`: may return `y` itself."""
    return any(k.arg == "copy" and not (isinstance(k.value, gast.Constant) and k.value.value is True)
               for k in call.keywords)


def returns_new_array(callee) -> bool:
    """A NumPy or built-in primitive known not to return a view of its input."""
    if callee is None or callee.kind not in (resolve.RULE, resolve.NON_DIFFERENTIABLE):
        return False
    module = getattr(callee.obj, "__module__", None) or type(callee.obj).__module__ or ""
    if module == "adjoint.runtime":
        return True  # `adj.setitem` and `adj.append` build new containers
    return module.split(".")[0] in _FRESH_MODULES and id(callee.obj) not in _VIEWS and id(callee.obj) not in _SHARING
