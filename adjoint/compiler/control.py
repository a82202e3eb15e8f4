"""Control: remove unstructured control flow (early `return`, `continue`, `break`, loop `else`).

Runs on the user's function before `normalize`, so later passes see only structured code.

Assumes: a `FunctionDef` from `source` that `fence` accepted.
Guarantees, for the function body after `transform` (nested `def`, `lambda` and `class` bodies
are left alone: their returns are theirs):
1. `return` appears once, as the last statement: `return NAME` or `return None`. A returned
   value goes to a result variable named after the function (`out` for a lambda).
2. No `continue` remains.
3. `break` appears only as `if FLAG: break` (FLAG a name), the last statement of its loop's body.
4. Loops have no `else:` clause; it becomes `if not broke: ...` after the loop (or plain
   statements after a loop without `break`).
5. Everything else is as the user wrote it, except an `if` whose first arm becomes empty, which
   is written `if not test:` with the other arm.
6. New statements carry the `ORIGIN` and source location of the user statement they replace.

When an `if` arm always leaves (ends in a jump, or in an `if` whose arms all do), the statements
after the `if` move into the other arm: the common cases need no flag. Otherwise a flag, named
by `ctx.namer`, records the jump, and what follows runs under `if not FLAG:`. `returned` (one per
function, `False` at the top) is set by a `return` inside a loop or not last; `broke` (one per
loop with a `break`, `False` just before it) by its `break` and by any `return` inside it (a loop
left only by `return` tests `returned`); `skip` (per loop, `False` at the top of every
iteration) by a `continue` that is not last. Statements after a jump are dropped (never run).
Refused (a located problem, left as written): a jump out of a `try` (`finally` not modelled).

Before:  if x > 0:             After:  if x > 0:
             return x                      f = x
         return -x                     else:
                                           f = -x
                                       return f

Before:  for v in xs:          After:  returned = False
             if v < 0:                 for v in xs:
                 return v                  if v < 0:
             total += v                        returned = True
         return total                          f = v
                                           else:
                                               total += v
                                           if returned:
                                               break
                                       if not returned:
                                           f = total
                                       return f
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import syntax
from .context import Context

_JUMPS = (gast.Return, gast.Break, gast.Continue)
_LOOPS = (gast.For, gast.AsyncFor, gast.While)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrite `node`'s body to structured control flow (see the module docstring)."""
    for child in syntax.all_statements(node.body):  # names the new flags must not shadow (all bound by statements)
        if isinstance(child, _SCOPES[:3]):
            ctx.namer.reserve(child.name)
        elif isinstance(child, (gast.Import, gast.ImportFrom)):
            for alias in child.names:
                ctx.namer.reserve((alias.asname or alias.name).split(".")[0])
        elif isinstance(child, (gast.Global, gast.Nonlocal)):
            for name in child.names:
                ctx.namer.reserve(name)
    node.body = _reachable(node.body)
    _return_after_try(node, ctx)
    _Lowering(ctx).function(node)
    return node


def _return_after_try(node, ctx) -> None:
    """`try: ...; return v finally: ...` as `try: ...; f = v finally: ...` then `return f`:
    the value is computed before the `finally` block runs, as in Python."""
    last = node.body[-1] if node.body else None
    if not (isinstance(last, gast.Try) and not last.handlers and not last.orelse and last.body):
        return
    ret = last.body[-1]
    jumps = (gast.Return, gast.Break, gast.Continue)
    others = [n for s in last.body[:-1] + last.finalbody for n in syntax.walk(s) if isinstance(n, jumps)]
    if not isinstance(ret, gast.Return) or ret.value is None or others:
        return
    result = ctx.namer.new(ctx.source.name if ctx.source.name != "<lambda>" else "out")
    value = syntax.copy_location(syntax.assign(result, ret.value), ret)
    last.body[-1] = anno.copy_origin(ret, value)
    node.body.append(anno.copy_origin(ret, syntax.copy_location(syntax.returns(syntax.name(result)), ret)))


class _Loop:
    """A loop being lowered: `exit` is set when it must be left (a name, or None if it is
    never left early); `skip` is set by a `continue` that is not last (created when needed)."""

    def __init__(self, exit_flag):
        self.exit = exit_flag
        self.skip = None


class _Lowering:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.loops: list[_Loop] = []
        self.result = None  # the result variable; None when every return returns None
        self.returned = None  # the `returned` flag, once needed
        self.returned_origin = None

    def function(self, node):
        body = list(node.body)
        returns = list(_returns(body))
        last = body[-1] if body and isinstance(body[-1], gast.Return) else None
        if returns == [last] and (_is_none(last.value) or isinstance(last.value, gast.Name)):
            # The common straight-line case: keep the user's `return y` as it is.
            body = self.block(body[:-1], tail=True) + [_at(last, syntax.returns(last.value or syntax.const(None)))]
        else:
            if any(not _is_none(r.value) for r in returns):
                name = self.ctx.source.name
                self.result = self.ctx.namer.new("out" if name == "<lambda>" else name)
            if last is None:  # falling off the end returns None
                last = _at(body[-1] if body else node, syntax.returns(syntax.const(None)))
                body.append(last)
            body = self.block(body, tail=True)
            value = syntax.name(self.result) if self.result else syntax.const(None)
            body.append(_at(last, syntax.returns(value)))
        if self.returned:
            docstring = isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant)
            body.insert(int(docstring), _at(self.returned_origin, _flag(self.returned, False)))
        node.body = body

    # ---- blocks ------------------------------------------------------------------------------

    def block(self, stmts, tail: bool) -> list:
        """Lower a list of statements. `tail`: nothing runs after it up to the end of the
        innermost loop body (or of the function, outside loops)."""
        out, stmts = [], list(stmts)
        while stmts:
            stmt, rest = stmts[0], stmts[1:]
            if isinstance(stmt, _JUMPS):
                return out + self.jump(stmt, tail)  # what follows a jump never runs
            if isinstance(stmt, gast.If):
                rest = _absorb(stmt, rest)
            kinds = _jumps(stmt)  # before lowering, which replaces the jumps
            if isinstance(stmt, _LOOPS):
                kinds = _jumps(stmt.body) & {"return"}  # its `else:` becomes `follow`, lowered below
                new, follow = self.loop(stmt)
                rest = follow + rest
            else:
                new = self.statement(stmt, tail and not rest)
            out += new
            if kinds and rest:
                return out + self.guard(stmt, kinds, self.block(rest, tail))
            stmts = rest
        return out

    def statement(self, stmt, tail: bool) -> list:
        """Lower the blocks inside a compound statement (not a loop)."""
        if isinstance(stmt, gast.If):
            stmt.body, stmt.orelse = self.block(stmt.body, tail), self.block(stmt.orelse, tail)
            if not stmt.body and stmt.orelse:  # `if c: continue` + rest -> `if not c: rest`
                stmt.test = _negate(stmt.test)
                stmt.body, stmt.orelse = stmt.orelse, []
        elif isinstance(stmt, (gast.With, gast.AsyncWith)):
            stmt.body = self.block(stmt.body, tail)
        elif isinstance(stmt, gast.Match):
            for case in stmt.cases:
                case.body = self.block(case.body, tail) or [_at(stmt, gast.Pass())]
        elif isinstance(stmt, (gast.Try, getattr(gast, "TryStar", gast.Try))):
            if _jumps(stmt):
                self.ctx.problem(
                    stmt, "`return`, `break` or `continue` leaving a `try` statement is not supported",
                    "set a variable inside the `try` and act on it after the statement",
                )
                return [stmt]
            for owner in [stmt] + stmt.handlers:
                owner.body = self.block(owner.body, tail=False)
            stmt.orelse, stmt.finalbody = self.block(stmt.orelse, False), self.block(stmt.finalbody, False)
        if hasattr(stmt, "body") and not stmt.body:
            stmt.body = [_at(stmt, gast.Pass())]
        return [stmt]

    # ---- loops and jumps ---------------------------------------------------------------------

    def loop(self, loop):
        """`(statements, follow)`: the lowered loop with its flag set-up, and the statements
        its `else:` becomes, to run after it in the enclosing block."""
        kinds = _jumps(loop.body)
        if not kinds - {"break"} and not loop.orelse and _ends_in_flag_break(loop.body):
            loop.body = self.block(loop.body[:-1], tail=True) + loop.body[-1:]  # already structured
            return [loop], []
        exit_flag = None
        if "break" in kinds:
            exit_flag = self.ctx.namer.new("broke")
        elif "return" in kinds:
            exit_flag = self.returned_flag(loop)
        frame = _Loop(exit_flag)
        self.loops.append(frame)
        body = self.block(loop.body, tail=True)
        self.loops.pop()
        if frame.skip:
            body.insert(0, _at(loop, _flag(frame.skip, False)))
        if exit_flag:
            body.append(_at(loop, gast.If(test=syntax.name(exit_flag), body=[gast.Break()], orelse=[])))
        loop.body = body or [_at(loop, gast.Pass())]
        follow, loop.orelse = loop.orelse, []
        if "break" not in kinds:
            return [loop], follow
        setup = _at(loop, _flag(exit_flag, False))
        if follow:
            follow = [_at(loop, gast.If(test=_negate(syntax.name(exit_flag)), body=follow, orelse=[]))]
        return [setup, loop], follow

    def jump(self, stmt, tail: bool) -> list:
        """The assignments that replace a `return`, `break` or `continue`."""
        if isinstance(stmt, gast.Continue):
            return [] if tail else [_at(stmt, _flag(self.skip_flag(), True))]
        if isinstance(stmt, gast.Break):
            return [_at(stmt, _flag(self.loops[-1].exit, True))]
        out = []
        if self.loops or not tail:
            out.append(_flag(self.returned_flag(stmt), True))
        if self.result:
            value = stmt.value if stmt.value is not None else syntax.const(None)
            out.append(syntax.assign(self.result, value))
        for flag in dict.fromkeys(frame.exit for frame in reversed(self.loops)):
            if flag != self.returned:  # leave every enclosing loop
                out.append(_flag(flag, True))
        return [_at(stmt, s) for s in out]

    def guard(self, stmt, kinds, rest) -> list:
        """`rest` under `if not FLAG:`, for the flags a jump in `stmt` may have set."""
        if not rest:
            return []
        flags = []
        if "continue" in kinds:
            flags.append(self.skip_flag())
        if self.loops and kinds & {"break", "return"}:
            flags.append(self.loops[-1].exit)
        elif "return" in kinds:
            flags.append(self.returned_flag(stmt))
        return [_at(stmt, gast.If(test=_negate(_any(flags)), body=rest, orelse=[]))]

    def skip_flag(self) -> str:
        frame = self.loops[-1]
        if frame.skip is None:
            frame.skip = self.ctx.namer.new("skip")
        return frame.skip

    def returned_flag(self, origin) -> str:
        if self.returned is None:
            self.returned, self.returned_origin = self.ctx.namer.new("returned"), origin
        return self.returned


# ---- analyses ---------------------------------------------------------------------------------


def _jumps(node) -> set[str]:
    """The kinds of jump (`return`, `break`, `continue`) that may leave `node` (a statement or
    list): a loop keeps its own `break`/`continue` but not those of its `else:`."""
    if isinstance(node, list):
        return set().union(*map(_jumps, node))
    if isinstance(node, _JUMPS):
        return {type(node).__name__.lower()}
    if isinstance(node, _LOOPS):
        return (_jumps(node.body) & {"return"}) | _jumps(node.orelse)
    if isinstance(node, _SCOPES):
        return set()
    kinds = set()
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        kinds |= _jumps(getattr(node, field, None) or [])
    return kinds


def _always(block) -> bool:
    """Whether running `block` always ends in a jump."""
    return any(
        isinstance(s, _JUMPS) or (isinstance(s, gast.If) and s.orelse and _always(s.body) and _always(s.orelse))
        for s in block
    )


def _reachable(block) -> list:
    """`block` without the statements that follow a jump (in nested blocks too), so a dead
    `break` or `return` asks for no flag."""
    out = []
    for stmt in block:
        if not isinstance(stmt, _SCOPES):
            for field in ("body", "orelse", "finalbody"):
                if getattr(stmt, field, None):
                    setattr(stmt, field, _reachable(getattr(stmt, field)))
            for owner in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
                owner.body = _reachable(owner.body)
        out.append(stmt)
        if _always([stmt]):
            break
    return out


def _absorb(stmt: gast.If, rest: list) -> list:
    """Move `rest` into the arm of `stmt` that may fall through, when the other always jumps;
    returns what still follows `stmt`."""
    body_jumps, else_jumps = _always(stmt.body), _always(stmt.orelse)
    if body_jumps and not else_jumps:
        stmt.orelse = stmt.orelse + rest
    elif else_jumps and not body_jumps:
        stmt.body = stmt.body + rest
    elif not body_jumps:
        return rest
    return []


def _ends_in_flag_break(body) -> bool:
    """`... if done: break` with no other `break`: already in the structured form."""
    last = body[-1]
    return (
        isinstance(last, gast.If) and isinstance(last.test, gast.Name) and not last.orelse
        and len(last.body) == 1 and isinstance(last.body[0], gast.Break) and not _jumps(body[:-1])
    )


def _returns(stmts):
    """The `return` statements in `stmts`, nested ones too but not those of nested functions or
    classes (a `return` is a statement: no expression holds one)."""
    for stmt in stmts:
        if isinstance(stmt, gast.Return):
            yield stmt
        elif not isinstance(stmt, _SCOPES):
            for field in ("body", "orelse", "finalbody"):
                yield from _returns(getattr(stmt, field, None) or [])
            for owner in getattr(stmt, "handlers", []) + getattr(stmt, "cases", []):
                yield from _returns(owner.body)


def _is_none(value) -> bool:
    return value is None or (isinstance(value, gast.Constant) and value.value is None)


# ---- builders ---------------------------------------------------------------------------------


def _flag(name: str, value: bool) -> gast.Assign:
    return syntax.assign(name, syntax.const(value))


def _negate(test):
    """`not test`; `not not x` is written `x` (both take `bool(x)` once)."""
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        return test.operand
    return syntax.copy_location(syntax.unary(gast.Not, test), test)


def _any(flags):
    """`broke`, or `skip or broke`."""
    names = [syntax.name(f) for f in dict.fromkeys(flags)]
    return names[0] if len(names) == 1 else gast.BoolOp(op=gast.Or(), values=names)


def _at(source, node):
    """Give the new parts of `node` the origin and location of the user's `source`."""
    for child in syntax.walk(node):
        if not hasattr(child, "lineno") and "lineno" in child._attributes:
            syntax.copy_location(child, source)
            if isinstance(child, gast.stmt):
                anno.copy_origin(source, child)
    return node
