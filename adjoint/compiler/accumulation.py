"""Accumulation: a cotangent summed into an array the pullback made adds in place.

Assumes: the output of `optimize` (the pullback's dead assignments gone).
Guarantees: `x_bar = x_bar + g` (or `- g`) becomes `x_bar += g` where `x_bar` certainly holds
an array this pullback allocated (a product, a sum, a matrix product's cotangent, a zero
buffer) that nothing else was handed and no other name was ever bound to (forward mode over
this code, for a second derivative, would read `x_bar = y_bar; x_bar += g` as updating a
view); elsewhere the code is unchanged. Adding in place spares a copy of the whole cotangent, which for large
arrays costs more than the addition itself, and a max's cotangent is added into the entries it
chose only (`adj.add_chosen`). A Python or NumPy scalar `x_bar` is immutable, so `+=` on it
rebinds it exactly as `x_bar = x_bar + g` would.

Before:  W_bar = W_bar + adj.matmul_lhs_bar(h_bar, W, x)
         Z_bar = Z_bar + adj.unreduce_chosen(m_bar, Z, m, axis=1, keepdims=True)
After:   W_bar += adj.matmul_lhs_bar(h_bar, W, x)
         Z_bar = adj.add_chosen(Z_bar, m_bar, Z, m, axis=1, keepdims=True)
"""

from __future__ import annotations

import operator

import gast

from . import annotations as anno
from . import syntax
from .context import Context

# Runtime helpers that keep no reference to their arguments: (returns a fresh array, may
# return its first argument itself).
_HELPERS = {
    "unbroadcast": (False, True),
    "matmul_lhs_bar": (True, False),
    "matmul_rhs_bar": (True, False),
    "unreduce_chosen": (True, False),
    "zeros_like": (True, False),
}
_FRESH_METHODS = {"sum"}  # `g.sum(axis=1, keepdims=True)`: a new array, `g` untouched


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Add in place where the pullback nested in `node` accumulates into arrays it owns."""
    pullback_name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == pullback_name)
    _Owners(ctx.runtime_alias).block(pullback.body, set())
    return node


class _Owners:
    """Which names hold arrays the pullback made, and which share them (`tokens`: name -> an
    object standing for the array; None: not known to be the pullback's own). With `rewrite`
    False it only follows them (a loop body's first reading)."""

    def __init__(self, alias: str, rewrite: bool = True, reads: dict | None = None):
        self.alias, self.rewrite = alias, rewrite
        self.prefix = f"{alias}."  # (of the runtime helpers' names)
        # statement -> the names it reads, asked once: a loop's body is read twice per loop around it
        # (a statement `block` rewrites is a new one; the one it replaces is not asked again)
        self.reads: dict = {} if reads is None else reads
        self.tokens: dict[str, object] = {}
        # tokens, not their ids: a set keeps its tokens alive, so a token made later (by a loop's
        # dry run, or for a rebound name) never takes the id of one given away
        self.handed: set[object] = set()  # arrays given away or shared: never updated in place
        self.copied: set[object] = set()  # arrays another name was bound to: not updated by `+=`

    def block(self, body: list, live_out) -> None:
        reads_after = self.reads_after(body, live_out)
        for index, stmt in enumerate(body):
            if isinstance(stmt, gast.Assign):
                new = self.assignment(stmt, reads_after[index])
                if self.rewrite:
                    body[index] = new
            elif isinstance(stmt, (gast.For, gast.While)):
                self.loop(stmt, reads_after[index])
            elif isinstance(stmt, gast.If):
                self.branches(stmt, reads_after[index])
            else:
                self.hand_over(stmt)
                self.forget(set().union(*(syntax.stored_names(s) for s in syntax.statements([stmt]))))  # (`stmt` too)

    def assignment(self, stmt, later):
        target, value = stmt.targets[0], stmt.value
        if not isinstance(target, gast.Name):
            self.hand_over(value)
            self.hand_over(target)
            self.forget(syntax.stored_names(target))
            return stmt
        name = target.id
        if _accumulates(value, name):
            self.hand_over(value.right)
            token = self.tokens.get(name)
            if token is not None and token not in self.handed and not any(n in later for n in self.sharing(token, name)):
                if isinstance(value.op, gast.Add) and self.helper_name(value.right) == "unreduce_chosen":
                    # a max's cotangent goes to the chosen entries only: `adj.add_chosen` adds just those
                    update = gast.Assign(targets=[target], value=syntax.call(
                        f"{self.alias}.add_chosen", [syntax.name(name)] + value.right.args, value.right.keywords))
                elif token not in self.copied:
                    update = gast.AugAssign(target=target, op=value.op, value=value.right)
                else:
                    update = None  # `x_bar = y_bar; x_bar += g`: see the module docstring
                if update is not None:
                    return anno.copy_origin(stmt, gast.copy_location(update, stmt))
            self.tokens[name] = object()  # `x_bar + g` made a new array
            return stmt
        token = self.made_by(value)
        if token is not None and self.sharing(token, name):
            self.copied.add(token)
        self.tokens[name] = token
        return stmt

    def sharing(self, token, name) -> list:
        """The names but `name` that hold `token`'s array."""
        if operator.countOf(self.tokens.values(), token) < 1 + (self.tokens.get(name) is token):
            return []  # (most arrays have one name: counted in C, without the loop below)
        return [n for n, t in self.tokens.items() if t is token and n != name]

    def made_by(self, value):
        """The token of what `value` evaluates to, after handing over what it passes on."""
        if isinstance(value, gast.Name):
            return self.tokens.get(value.id)
        if isinstance(value, (gast.BinOp, gast.UnaryOp)):
            self.hand_over(value)  # its operands are read, not kept
            return object()
        helper = self.helper(value) if isinstance(value, gast.Call) else None
        if helper is not None:
            fresh, passes_first = helper
            for part in value.args[1:] if passes_first else value.args:
                self.hand_over(part)
            for keyword in value.keywords:
                self.hand_over(keyword.value)
            if passes_first and value.args:
                return self.made_by(value.args[0])  # `adj.unbroadcast(g, x)` may be `g` itself
            return object() if fresh else None
        if _fresh_method(value):
            self.hand_over(value)
            return object()
        self.hand_over(value)
        return None

    def helper(self, call):
        return _HELPERS.get(self.helper_name(call))

    def helper_name(self, node) -> str | None:
        """`unbroadcast` for a call of `adj.unbroadcast`."""
        dotted = (syntax.dotted(node.func) or "") if isinstance(node, gast.Call) else ""
        return dotted[len(self.prefix):] if dotted.startswith(self.prefix) else None

    def hand_over(self, node) -> None:
        """Names `node` passes where they may be kept or viewed (a call but the helpers above,
        a tuple, a subscript or attribute, which may be a view): their arrays are never updated
        in place from now on."""
        if node is None or isinstance(node, gast.Name):
            return  # read, not kept
        if isinstance(node, gast.Call) and (self.helper(node) is not None or _fresh_method(node)):
            receiver = [node.func.value] if _fresh_method(node) else []
            for part in receiver + node.args + [k.value for k in node.keywords]:
                self.hand_over(part)
            return
        if isinstance(node, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.BoolOp, gast.IfExp, gast.Expr)):
            for child in syntax.child_nodes(node):
                if isinstance(child, gast.expr):  # (an operator names nothing)
                    self.hand_over(child)
            return
        for child in syntax.walk(node):  # anything else keeps or views what it names
            if isinstance(child, gast.Name) and self.tokens.get(child.id) is not None:
                self.handed.add(self.tokens[child.id])

    def forget(self, names) -> None:
        for name in names:
            self.tokens[name] = None

    def loop(self, stmt, later) -> None:
        """A loop body sees its own names again in the next iteration: a name it assigns keeps
        its array across iterations only where every assignment accumulates into it, and no
        other name shares or takes that array anywhere in the body (read once without rewriting
        first, so that what a later statement does counts for the next iteration)."""
        self.hand_over(getattr(stmt, "iter", None) or getattr(stmt, "test", None))
        nested = list(syntax.statements(stmt.body))
        binds = [syntax.stored_names(s) for s in nested]  # (each statement walked once for both uses)
        assigned = set().union(*binds) | _own_targets(stmt)
        kept = assigned - _bound_otherwise(nested, binds)
        live = _ReadLater([self.loads(s) for s in stmt.body] + [_loads(stmt)], 0, later)
        self.forget(assigned - kept)
        dry = _Owners(self.alias, rewrite=False, reads=self.reads)
        dry.tokens, dry.handed, dry.copied = dict(self.tokens), set(self.handed), set(self.copied)
        dry.block(stmt.body, live)
        for name in kept:
            token = self.tokens.get(name)
            if token is not None and any(t is token and n != name for n, t in dry.tokens.items()):
                dry.handed.add(token)  # shared by another name in the body
        self.handed |= dry.handed
        self.copied |= dry.copied
        self.block(stmt.body, live)
        self.forget(assigned - kept)
        self.hand_over(gast.Module(body=stmt.orelse, type_ignores=[]))
        self.forget(set().union(*(syntax.stored_names(s) for s in syntax.statements(stmt.orelse))))

    def loads(self, stmt) -> set:
        """The names `stmt` reads (its nested statements' reads too)."""
        found = self.reads.get(stmt)
        if found is None:
            kind = type(stmt)
            if kind is gast.For or kind is gast.While or kind is gast.If:  # its header's, then its statements' (each asked again)
                found = syntax.load_names(stmt.iter) | syntax.load_names(stmt.target) if kind is gast.For else (
                    syntax.load_names(stmt.test))
                for nested in stmt.body + stmt.orelse:
                    found |= self.loads(nested)
            else:
                found = syntax.load_names(stmt)
            self.reads[stmt] = found
        return found

    def reads_after(self, body, live_out) -> list:
        """For each statement of `body`, the names read after it (in `body`, then `live_out`)."""
        reads = [self.loads(stmt) for stmt in body]  # (asked now, before `block` rewrites any)
        return [_ReadLater(reads, index + 1, live_out) for index in range(len(body))]

    def branches(self, stmt, later) -> None:
        self.hand_over(stmt.test)
        saved = dict(self.tokens)
        self.block(stmt.body, later)
        after_body = self.tokens
        self.tokens = dict(saved)
        self.block(stmt.orelse, later)
        for name in set(after_body) | set(self.tokens):
            if after_body.get(name) is not self.tokens.get(name):
                self.tokens[name] = None


class _ReadLater:
    """The names read after a statement: those of the statements `reads[start:]` read, then
    those of `later` (looked up when asked, which is seldom: copying the sets for every
    statement cost more than the whole rewrite)."""

    def __init__(self, reads: list, start: int, later):
        self.reads, self.start, self.later = reads, start, later

    def __contains__(self, name) -> bool:
        return any(name in reads for reads in self.reads[self.start:]) or name in self.later


def _accumulates(value, name) -> bool:
    return (
        isinstance(value, gast.BinOp) and isinstance(value.op, (gast.Add, gast.Sub))
        and isinstance(value.left, gast.Name) and value.left.id == name
    )


def _fresh_method(node) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr in _FRESH_METHODS


def _bound_otherwise(statements, binds) -> set:
    """The names one of `statements` (a body's, nested ones too) binds other than by
    `name = name +/- g` (every other name it assigns only accumulates); `binds`: the names each
    of them binds (`syntax.stored_names`)."""
    names = set()
    for stmt, bound in zip(statements, binds):
        bound = _own_targets(stmt) if syntax.bodies(stmt) else bound
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.left, gast.Name):
            bound = {n for n in bound if not _accumulates(stmt.value, n)}
        names |= bound
    return names


def _own_targets(stmt) -> set:
    target = getattr(stmt, "target", None)
    return syntax.stored_names(target) if target is not None else set()


def _loads(stmt) -> set:
    return syntax.load_names(getattr(stmt, "iter", None) or getattr(stmt, "test", None) or gast.Pass())
