"""SSA: give every rebinding of a name a new name, so each name is assigned in one place.

Assumes: a normalized function (see `normalize`).
Guarantees:
- no parameter is assigned, and each name is assigned by one statement, except the names
  where control flow joins, which are assigned by copies marked `PHI`:
  - after a branch, a name assigned in either arm gets one name for both (`y_1` below);
  - a name a loop assigns and reads across iterations or after it is carried in its own name
    `p`: `p = <value before>` before the loop (`PHI` "entry"), `p = <new value>` at the end
    of the body (before a trailing `if flag: break`, "back"), and the code after the loop
    reads a copy `e = p` ("exit"), so names assigned inside a loop are read only inside it
    ("reads across iterations": what the next iteration reads before assigning it);
- a name Python would call unbound on some path (first assigned in a loop, or in one arm) is
  `adj.unbound("name")` on that path, so copies never fail where Python would not;
- the loop carries `LOOP`: `{p: (name before the loop or None, e)}`;
- reads refer to the binding live at that point, also inside nested functions and lambdas
  (their defaults too); a nested function that may run after a name it reads is assigned
  again (Python's late binding) is refused;
- `ctx.user_names` maps each new name to the user's, for messages.
The pullback can then capture any forward value by name, and a loop's values per iteration.

Before:  y = x                     After:  y = x
         if c:                             if c:
             y = y * 2                         y_1 = y * 2
                                           else:
                                               y_1 = y
         return y                          return y_1
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rename rebound names in `node`'s body (see the module docstring)."""
    args = node.args
    params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.id for a in (args.vararg, args.kwarg) if a}
    _check_late_binding(node.body, ctx)
    node.body = _SSA(ctx, params).block(node.body, {p: p for p in params}, set())
    return node


def _check_late_binding(body, ctx) -> None:
    """Refuse a nested function that may run after a name it reads was assigned again: Python
    would show it the new value (late binding), the renamed code the old one. Allowed: calling
    it by its name before any such assignment (in a loop, when the loop re-creates it first)."""
    order = list(_in_order(body, []))
    if not any(_nested_function(stmt)[0] is not None for stmt, _ in order):
        return  # (no function to check: no need to index the assignments)
    assigned = {}
    for index, (stmt, _) in enumerate(order):
        for name in syntax.stored_names(stmt) if not syntax.bodies(stmt) else _header_stores(stmt):
            assigned.setdefault(name, []).append(index)
    for index, (stmt, loops) in enumerate(order):
        function, name = _nested_function(stmt)
        if function is None:
            continue
        captured = syntax.free_names(function) & set(assigned)
        for use, (user, user_loops) in enumerate(order):
            reads = _loads(user) if not syntax.bodies(user) else syntax.load_names(_header(user))
            if use == index or name not in reads:
                continue
            called = _calls_by_name(user, name)
            stale = sorted(c for c in captured if any(
                index < a < use or (not called and (a > index or any(_within(order, loop, a) for loop in loops)))
                or any(_within(order, loop, a) and not _within(order, loop, index) for loop in user_loops)
                or (use < index and any(_within(order, loop, a) for loop in loops))
                for a in assigned[c]
            ))
            if stale:
                shown = ctx.user_name(stale[0])
                ctx.problem(
                    function, f"this function reads `{shown}`, which is assigned again while the function "
                    "may still be called: Python would show it the new value",
                    f"pass `{shown}` as an argument, or bind its current value with a default (`{shown}={shown}`)",
                )
                break


def _calls_by_name(stmt, name) -> bool:
    """Whether `stmt` uses `name` only as the function it calls."""
    value = getattr(stmt, "value", None)
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id == name):
        return False
    return name not in set().union(*(syntax.load_names(a) for a in value.args + [k.value for k in value.keywords]))


def _within(order, loop, index) -> bool:
    start = next(i for i, (s, _) in enumerate(order) if s is loop)
    return start <= index < start + len(list(syntax.statements([loop])))


def _in_order(body, loops):
    for stmt in body:
        yield stmt, loops
        for nested in syntax.bodies(stmt):
            yield from _in_order(nested, loops + [stmt] if isinstance(stmt, (gast.For, gast.While)) else loops)


def _header(stmt):
    return stmt.iter if isinstance(stmt, gast.For) else getattr(stmt, "test", syntax.const(None))


def _header_stores(stmt) -> set:
    return syntax.stored_names(stmt.target) if isinstance(stmt, gast.For) else set()


def _nested_function(stmt):
    """`(function node, the name it is bound to)` for `def f` or `f = lambda ...`."""
    if isinstance(stmt, gast.FunctionDef):
        return stmt, stmt.name
    if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Lambda) and isinstance(stmt.targets[0], gast.Name):
        return stmt.value, stmt.targets[0].id
    return None, None


class _SSA:
    def __init__(self, ctx, params):
        self.ctx = ctx
        self.defined = set(params)
        self._loads: dict[int, tuple] = {}  # id(statement) -> (statement, `_loads` of it)

    def loads(self, stmt) -> set:
        """`_loads(stmt)`, read once: a statement is asked again (by the blocks and loops around
        it) only before it is renamed, which is when it is reached."""
        found = self._loads.get(id(stmt))
        if found is None or found[0] is not stmt:
            found = self._loads[id(stmt)] = (stmt, _loads(stmt))
        return found[1]

    def fresh(self, name: str) -> str:
        if name in self.defined:
            renamed = self.ctx.namer.new(name)
            self.ctx.user_names[renamed] = name
            name = renamed
        self.defined.add(name)
        return name

    def block(self, stmts, current: dict, later: set) -> list:
        """`stmts` renamed; `later` holds the names read after them (then read the new names)."""
        out = []
        reads_after = _reads_after(stmts, later, self.loads)
        for index, stmt in enumerate(stmts):
            out.extend(self.statement(stmt, current, reads_after.get(index, later)))
        return out

    def statement(self, stmt, current, later) -> list:
        if isinstance(stmt, gast.If) and not syntax.is_break_check(stmt):
            return self._branch(stmt, current, later)
        if isinstance(stmt, (gast.For, gast.While)):
            return self._loop(stmt, current, later)
        if isinstance(stmt, gast.With):
            for item in stmt.items:
                _Rename(current).visit(item.context_expr)
            stmt.body = self.block(stmt.body, current, later)
            return [stmt]
        if isinstance(stmt, gast.Try):
            stmt.body = self.block(stmt.body, current, later | _loads_in(stmt.finalbody, self.loads))
            stmt.finalbody = self.block(stmt.finalbody, current, later)
            return [stmt]
        _Rename(current).visit(stmt)
        self._define(stmt, current)
        return [stmt]

    def _define(self, stmt, current):
        if isinstance(stmt, gast.FunctionDef):
            renamed = self.fresh(stmt.name)
            current[stmt.name] = renamed
            stmt.name = renamed
            return
        if not isinstance(stmt, gast.Assign):
            return
        stores = {}
        for target in syntax.stored_names(stmt.targets[0]):
            stores[target] = self.fresh(target)
        _Rename(stores, stores=True).visit(stmt.targets[0])
        current.update(stores)

    # ---- branches ---------------------------------------------------------------------------

    def _branch(self, stmt, current, later) -> list:
        _Rename(current).visit(stmt.test)
        before = dict(current)
        arms = []
        for body in (stmt.body, stmt.orelse):
            arm_current = dict(current)
            arms.append((self.block(body, arm_current, later), arm_current))
        (stmt.body, in_body), (stmt.orelse, in_orelse) = arms
        for name in sorted(set(in_body) | set(in_orelse)):
            values = (in_body.get(name), in_orelse.get(name))
            if values[0] == values[1]:
                current[name] = values[0]
                continue
            if name not in later:
                current.pop(name, None)  # nothing reads it after the branch
                continue
            own = [v for v in values if v is not None and v not in before.values()]
            joined = own[0] if own else self.fresh(name)  # a name one arm defined serves both
            for arm, value in zip((stmt.body, stmt.orelse), values):
                if value == joined:
                    continue
                if value is None:  # unbound on this path: reading it later must fail as in Python
                    arm.append(_phi(joined, None, "join", stmt, self.ctx))
                elif value not in before.values():  # defined in this arm: define the joined name instead
                    _rename_everywhere(arm, value, joined)
                else:
                    arm.append(_phi(joined, value, "join", stmt))
            current[name] = joined
        return [stmt]

    # ---- loops ------------------------------------------------------------------------------

    def _loop(self, loop, current, later) -> list:
        targets = syntax.stored_names(loop.target) if isinstance(loop, gast.For) else set()
        exposed = _exposed(loop.body, set(targets), self.loads)
        # what the next iteration reads before assigning it (computed before any renaming)
        again = exposed | syntax.load_names(_header(loop))
        if isinstance(loop, gast.For):
            _Rename(current).visit(loop.iter)
        assigned = targets.union(*(syntax.stored_names(s) for s in loop.body))
        if isinstance(loop, gast.While):
            exposed |= syntax.load_names(loop.test)
        carried = sorted(assigned & (exposed | later))
        before, phis, entry = [], {}, {}
        for name in carried:
            phi = self.fresh(name)
            phis[name] = phi
            if name in current:
                entry[phi] = current[name]
                before.append(_phi(phi, current[name], "entry", loop))
            else:  # first assigned in the loop: unbound until then
                before.append(_phi(phi, None, "entry", loop, self.ctx, name))
        body_current = {**current, **phis}
        if isinstance(loop, gast.While):
            _Rename(body_current).visit(loop.test)
        else:
            stores = {t: self.fresh(t) for t in syntax.stored_names(loop.target)}
            _Rename(stores, stores=True).visit(loop.target)
            body_current.update(stores)
        body = self.block(loop.body, body_current, later | again)
        back = [_phi(phi, body_current[name], "back", loop) for name, phi in phis.items() if body_current[name] != phi]
        at = len(body) - 1 if body and syntax.is_break_check(body[-1]) else len(body)
        loop.body = body[:at] + back + body[at:]
        after, record = [], {}
        for name, phi in phis.items():
            exit_name = self.fresh(name)
            after.append(_phi(exit_name, phi, "exit", loop))
            record[phi] = (entry.get(phi), exit_name)
            current[name] = exit_name
        anno.set_(loop, anno.LOOP, record)
        return before + [loop] + after


def _reads_after(stmts, later: set, loads) -> dict:
    """`{index: the names read after stmts[index], or later}` for the statements that ask (the
    ones with bodies: a simple statement renames what it reads, whatever is read after it),
    from the statements as they are before any is renamed."""
    asking = {index for index, stmt in enumerate(stmts) if type(stmt) in _WITH_BODIES}
    found, reads = {}, set(later)
    for index in range(len(stmts) - 1, min(asking) - 1, -1) if asking else ():
        if index in asking:
            found[index] = set(reads)
        reads |= _loads_in(stmts[index], loads)
    return found


_WITH_BODIES = (gast.If, gast.For, gast.While, gast.With, gast.Try)


def _phi(target: str, source, kind: str, origin, ctx=None, name=None) -> gast.Assign:
    """`target = source`, or `target = adj.unbound("name")` when `source` is None."""
    if source is None:
        value = syntax.call(f"{ctx.runtime_alias}.unbound", [syntax.const(name or target)])
    else:
        value = syntax.name(source)
    copy = syntax.assign(target, value)
    anno.set_(copy, anno.PHI, kind)
    return anno.copy_origin(origin, copy)


def _rename_everywhere(body, old: str, new: str) -> None:
    """Rename `old` to `new` in `body`, loop annotations included."""
    _Rename({old: new}, stores=None).visit_body(body)
    for stmt in syntax.statements(body):
        record = anno.get(stmt, anno.LOOP)
        if record:
            renamed = {}
            for phi, (entry, exit_name) in record.items():
                renamed[new if phi == old else phi] = (new if entry == old else entry, new if exit_name == old else exit_name)
            anno.set_(stmt, anno.LOOP, renamed)


def _loads_in(node, loads) -> set:
    """Every name read in `node` (a statement or a body), nested functions' free names included
    (`loads`: `_loads` of a statement, as `_SSA.loads` remembers it)."""
    names = set()
    for stmt in node if isinstance(node, list) else [node]:
        for child in syntax.statements([stmt]):
            names |= loads(child) if not syntax.bodies(child) else syntax.load_names(
                child.iter if isinstance(child, gast.For) else getattr(child, "test", syntax.const(None)))
            if isinstance(child, gast.With):
                names |= set().union(*(syntax.load_names(i.context_expr) for i in child.items))
    return names


def _exposed(body, assigned: set, loads) -> set:
    """Names `body` may read before assigning them (`assigned` holds those already assigned)."""
    exposed = set()
    for stmt in body:
        if isinstance(stmt, gast.If) and not syntax.is_break_check(stmt):
            exposed |= syntax.load_names(stmt.test) - assigned
            arms = [set(assigned) for _ in range(2)]
            exposed |= _exposed(stmt.body, arms[0], loads) | _exposed(stmt.orelse, arms[1], loads)
            assigned |= arms[0] & arms[1]
        elif isinstance(stmt, (gast.For, gast.While)):
            header = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= syntax.load_names(header) - assigned
            inner = set(assigned) | (syntax.stored_names(stmt.target) if isinstance(stmt, gast.For) else set())
            exposed |= _exposed(stmt.body, inner, loads)
        elif isinstance(stmt, (gast.With, gast.Try)):
            for body_ in syntax.bodies(stmt):
                exposed |= _exposed(body_, assigned, loads)
        else:
            exposed |= loads(stmt) - assigned
            assigned |= syntax.stored_names(stmt)
    return exposed


def _loads(stmt) -> set:
    if not isinstance(stmt, gast.FunctionDef):
        return syntax.scope_reads(stmt)
    names = syntax.free_names(stmt)  # and, read as if in this scope, the loads of its own body
    for child in syntax.walk_local(stmt):
        if isinstance(child, gast.Name) and isinstance(child.ctx, gast.Load):
            names.add(child.id)
        elif isinstance(child, (gast.FunctionDef, gast.Lambda)) and child is not stmt:
            names |= syntax.free_names(child)
    return names


_SCOPES = (gast.FunctionDef, gast.Lambda)


class _Rename(syntax.Transformer):
    """Rename loads (`stores=False`), stores (`True`) or both (`None`) by `mapping`. Inside a
    nested function or lambda, only the names it reads from the enclosing function."""

    def __init__(self, mapping, stores=False):
        self.mapping, self.stores = mapping, stores

    def visit(self, node):
        """Rename in place: nothing is replaced, so where no function or lambda is nested (whose
        names are its own), the names of a plain walk, quicker than a transformer's."""
        names = syntax.name_nodes(node)
        if names is None:
            return super().visit(node)
        for name in names:
            self.visit_Name(name)
        return node

    def visit_body(self, body):
        for stmt in body:
            self.visit(stmt)

    def visit_Name(self, node):
        is_load = isinstance(node.ctx, gast.Load)
        wanted = self.stores is None or is_load != self.stores
        if wanted and node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node

    def visit_FunctionDef(self, node):
        for default in syntax.default_values(node) + node.decorator_list:
            self.visit(default)
        if self.stores is None and node.name in self.mapping:
            node.name = self.mapping[node.name]
        self._visit_nested(node, node.body)
        return node

    def visit_Lambda(self, node):
        for default in syntax.default_values(node):
            self.visit(default)
        node.body = self._visit_nested(node, [node.body])[0]
        return node

    def _visit_nested(self, function, body):
        free = syntax.free_names(function)
        inner = _Rename({k: v for k, v in self.mapping.items() if k in free}, stores=False)
        if self.stores is not True:
            for stmt in body:
                inner.visit(stmt)
        return body
