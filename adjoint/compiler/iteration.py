"""Iteration: `for` and `while` loops in the shapes the pullback follows.

A mixin of `normalize._Normalizer`. A `for` loop keeps its header when it walks `range`,
`enumerate`, `zip` or `reversed` of atoms (the pullback reads their structure to route an
item's cotangent to its sequence), and walks an atom otherwise; a tuple target that unpacks
an item is bound to one name and unpacked at the start of the body. `while test:` becomes
`running = test; while running: ...; running = test`, so its test is an atom (not evaluated
again after a `break`). A loop that updates the sequence it walks is refused: Python would
walk the updated items, adjoint's copy would not.

Before:  for k, v in pairs:                After:  for k_v in pairs:
             s = s + v                                 k, v = k_v
                                                       s = s + v
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax


class Iteration:
    """Loops, for `normalize._Normalizer`."""

    def _for(self, stmt):
        walked = _walked_names(stmt.iter)
        position = _enumerate_position(stmt)
        for child in (n for s in stmt.body for n in syntax.walk(s)):
            updated = _updated_container(child)
            if updated in walked and not _writes_at(child, position):
                self.ctx.problem(
                    child, f"this updates `{updated}`, which the loop walks: Python would walk the updated "
                    "items, adjoint's copy would not", f"walk a copy (`for ... in list({updated})`) or index by position",
                )
        iterable = self._iterable(stmt.iter)
        target, unpacked = self._loop_target(stmt.target, iterable)
        body = self.nested(lambda: [self._assign([t], _value(n)) for t, n in unpacked])
        body += self.block(stmt.body)
        self.origin = stmt
        self._emit(gast.For(target=target, iter=iterable, body=body, orelse=[], type_comment=None))

    def _loop_target(self, target, iterable):
        """The loop's target with each tuple that unpacks an item replaced by a name, and the
        `(tuple, name)` pairs to unpack at the start of the body (`for k, v in pairs` reads
        `k, v = item`), so every item a loop binds is one value the pullback can route."""
        kind = iterable.func.id if isinstance(iterable, gast.Call) else None
        if kind in ("zip", "enumerate") and isinstance(target, gast.Name):
            # `for v in zip(a, b)`: bind each part, then `v = (a_item, b_item)`
            count = len(iterable.args) if kind == "zip" else 2
            parts = [syntax.store(self.ctx.namer.new(f"{target.id}_{i}")) for i in range(count)]
            packed = syntax.tuple_([syntax.name(p.id) for p in parts])
            inner, unpacked = self._loop_target(syntax.tuple_(parts, syntax.STORE), iterable)
            return inner, unpacked + [(target, packed)]
        if kind == "enumerate" and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            inner, unpacked = self._loop_target(target.elts[1], iterable.args[0])
            return syntax.tuple_([target.elts[0], inner], syntax.STORE), unpacked
        if kind == "zip" and isinstance(target, gast.Tuple) and len(target.elts) == len(iterable.args):
            parts = [self._loop_target(t, a) for t, a in zip(target.elts, iterable.args)]
            return syntax.tuple_([p[0] for p in parts], syntax.STORE), [u for p in parts for u in p[1]]
        if kind == "reversed":
            return self._loop_target(target, iterable.args[0])
        if isinstance(target, (gast.Tuple, gast.List)) and kind != "range":
            item = self.ctx.namer.new("_".join(syntax.target_names(target)))
            return syntax.store(item), [(target, item)]
        return target, []

    def _iterable(self, expr):
        """`range(n)`, `enumerate(xs)`, `zip(a, b)`, `reversed(xs)` kept as calls of atoms (the
        pullback reads their structure), anything else an atom."""
        if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and expr.func.id == "enumerate" and (
            [k.arg for k in expr.keywords] == ["start"] and len(expr.args) == 1
        ):
            expr = syntax.call(expr.func, expr.args + [expr.keywords[0].value])  # `enumerate(xs, start=1)`
        if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and not expr.keywords:
            builtin = _ITERATORS.get(expr.func.id)
            if builtin is not None and expr.func.id not in self.local_names and self.ctx.lookup_global(expr.func.id) is builtin:
                args = [self._iterable(a) if expr.func.id != "range" else self.atom(a, "stop") for a in expr.args]
                return syntax.call(expr.func.id, args)
        return self.atom(expr, "items")

    def _while(self, stmt):
        """`while test: body` as `c = test; while c: body; c = test`, so the test is an atom."""
        if isinstance(stmt.test, gast.Constant):
            body = self.block(stmt.body)
            self.origin = stmt
            self._emit(gast.While(test=stmt.test, body=body, orelse=[]))
            return
        flag = self.ctx.namer.new("running")
        recompute = self.nested(lambda: self._emit(syntax.assign(flag, self.rhs(stmt.test, flag))))
        self.out.extend(recompute)
        body = self.block(stmt.body)
        self.origin = stmt
        again = syntax.copy_node(recompute)
        if body and syntax.is_break_check(body[-1]):  # the test is not evaluated after a `break`
            guard = gast.If(test=syntax.unary(gast.Not, body[-1].test), body=again, orelse=[])
            body[-1:-1] = [anno.copy_origin(stmt, guard)]
        else:
            body.extend(again)
        self.origin = stmt
        self._emit(gast.While(test=syntax.name(flag), body=body, orelse=[]))



_ITERATORS = {"range": range, "enumerate": enumerate, "zip": zip, "reversed": reversed}


def _value(item):
    """What an unpacked loop target is assigned: a name, or a tuple of names."""
    return item if isinstance(item, gast.AST) else syntax.name(item)


def _enumerate_position(loop):
    """`i` in `for i, v in enumerate(y)`, or None."""
    iterable, target = loop.iter, loop.target
    if isinstance(iterable, gast.Call) and getattr(iterable.func, "id", None) == "enumerate" and len(iterable.args) == 1:
        if isinstance(target, gast.Tuple) and isinstance(target.elts[0], gast.Name):
            return target.elts[0].id
    return None


def _writes_at(node, position) -> bool:
    """`y[i] = ...` where `i` is the loop's own position: the item the loop has just walked."""
    targets = node.targets if isinstance(node, gast.Assign) else [getattr(node, "target", None)]
    return position is not None and any(
        isinstance(t, gast.Subscript) and isinstance(t.slice, gast.Name) and t.slice.id == position for t in targets
    )


def _walked_names(iterable) -> set:
    """The names whose items a loop header walks: `xs` in `zip(xs, ys)` or `enumerate(xs)`."""
    if isinstance(iterable, gast.Name):
        return {iterable.id}
    if isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name) and iterable.func.id in _ITERATORS:
        return set().union(*(_walked_names(a) for a in iterable.args))
    return set()



def _updated_container(node):
    """The name a statement updates in place: `y[i] = v`, `y[i] += v`, `y.append(v)`."""
    targets = node.targets if isinstance(node, gast.Assign) else [node.target] if isinstance(node, gast.AugAssign) else []
    for target in targets:
        if isinstance(target, gast.Subscript):
            return syntax.target_root(target)
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and isinstance(node.func.value, gast.Name):
        if node.func.attr in ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"):
            return node.func.value.id
    return None


