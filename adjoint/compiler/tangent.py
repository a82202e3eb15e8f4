"""Tangent: turn a function into its forward-mode (JVP) function.

Assumes: a normalized, SSA, resolved function with activity annotations (as `reverse` does).
Guarantees: returns `<f>_jvp(<f>_tangents, *f's parameters)`, which runs `f`'s statements
and, after each one whose value varies with the inputs, the statement computing its tangent
(`dx` is the tangent of `x`); it returns `(value, dvalue)`. `<f>_tangents` holds one tangent per entry of
`ctx.wrt`, in order. Branches and loops keep their shape (a loop's items get their tangents from
the sequence's tangent, by position); rules are stitched in as NumPy expressions
(`tangent_rules`) or called; calls of Python functions, closures and methods go through
`adj.jvp` and its siblings at run time (`tangent_calls`). A tangent mirrors its value: see
`adjoint.runtime.tangents`.

Before:                        After:
    def f(x, W):                   def f_jvp(f_tangents, x, W):
        y = x @ W                      dx, dW = f_tangents
        return np.sum(y)               y = x @ W
                                       dy = dx @ W + x @ dW
                                       f = np.sum(y)
                                       df = np.sum(dy)
                                       return (f, df)
"""

from __future__ import annotations

import gast

from . import annotations as anno
from . import activity, inplace, kinds, loops, resolve, shapes, syntax
from .activity import targets
from .context import Context
from .tangent_calls import TangentCalls

__all__ = ["transform"]


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """The JVP function of `node` (see the module docstring)."""
    return _Tangent(node, ctx).build()


class _Tangent(TangentCalls):
    def __init__(self, node, ctx: Context):
        self.node, self.ctx = node, ctx
        self.alias = ctx.runtime_alias
        self.varied = anno.get(node, anno.VARIED)
        self.useful = anno.get(node, anno.USEFUL)
        self.active = self.varied & self.useful
        self.cancelled = frozenset()  # the statement's names whose tangents cancel (`shifts`)
        self.sequences = kinds.sequence_names(node.body)
        params = [a.id for a in node.args.posonlyargs + node.args.args]
        # a generated pullback's free names: the forward function's values
        free = set(getattr(getattr(ctx.fn, "__code__", None), "co_freevars", ()))
        known = ctx.numeric_parameters(params) | (kinds.generated_numbers(ctx.fn) & free)
        self.numbers = kinds.certain_numbers(node.body, known)
        self.shapes = shapes.classes(node, self.numbers)  # which names share a shape and dtype
        self.names: dict[str, str] = {}

    # ---- names ------------------------------------------------------------------------------

    def dot(self, var: str) -> str:
        """The name of `var`'s tangent: `dx` for `x` (`x_dot` if the user has a `dx` of their own,
        which `dx_1` would read as a version of)."""
        if var not in self.names:
            namer = self.ctx.namer
            users = f"d{var}" in namer.taken and f"d{var}" not in namer.issued
            self.names[var] = namer.new(f"{var}_dot" if users else f"d{var}")
        return self.names[var]

    def tangent_of(self, expr):
        """The tangent of an atom: its tangent's name if it varies, else its zero tangent."""
        if isinstance(expr, gast.Name) and expr.id in self.varied and expr.id not in self.cancelled:
            return syntax.name(self.dot(expr.id))
        return self.zero_of(expr)

    def zero_of(self, expr):
        if isinstance(expr, gast.Constant) and type(expr.value) in (int, float):
            return syntax.const(type(expr.value)(0))
        if isinstance(expr, gast.Constant) and expr.value is None:  # (what `zero_tangent(None)` is)
            return syntax.const(None)
        return syntax.call(f"{self.alias}.zero_tangent", [syntax.copy_node(expr)])

    def has_tangent(self, expr) -> bool:
        return isinstance(expr, gast.Name) and expr.id in self.varied and expr.id not in self.cancelled

    # ---- the function -----------------------------------------------------------------------

    def build(self) -> gast.FunctionDef:
        *body, ret = self.node.body
        fname = "lambda" if self.ctx.source.name == "<lambda>" else self.ctx.source.name.strip("_") or "function"
        tangents_name = self.ctx.namer.new(f"{fname}_tangents")
        unpack = self._unpack_tangents(tangents_name)
        code = self.block(body)
        out = ret.value
        result = syntax.returns(syntax.tuple_([out, self._output_tangent(out)]))
        anno.copy_origin(ret, result)
        args = syntax.plain_arguments(self.node.args)
        args.posonlyargs = []
        args.args = [syntax.store_param(tangents_name)] + [syntax.store_param(a.id) for a in self.node.args.posonlyargs + self.node.args.args]
        function = syntax.function(self.ctx.namer.new(f"{fname}_jvp"), args, unpack + code + [result])
        gast.copy_location(function, self.node)
        return function

    def _output_tangent(self, out):
        if isinstance(out, gast.Name) and out.id in self.varied:
            return syntax.name(self.dot(out.id))
        return self.zero_of(out)

    def _unpack_tangents(self, tangents_name) -> list:
        """`dx, dW = f_tangents`: one tangent per entry of `wrt`."""
        args = self.node.args
        params = [a.id for a in args.posonlyargs + args.args]
        # positions, then one tuple for the `*args` positions, then closure variables and "**",
        # in `wrt`'s order: as `adj.jvp` passes them
        names = [params[e] for e in self.ctx.wrt if isinstance(e, int) and e < len(params)]
        if any(isinstance(e, int) and e >= len(params) for e in self.ctx.wrt):
            names.append(args.vararg.id)
        names += [args.kwarg.id if e == "**" else e for e in self.ctx.wrt if isinstance(e, str)]
        if not names:
            return []
        stored = [syntax.store(self.dot(n)) for n in names]
        target = stored[0] if len(stored) == 1 else syntax.tuple_(stored, syntax.STORE)
        value = syntax.subscript(syntax.name(tangents_name), 0) if len(stored) == 1 else syntax.name(tangents_name)
        return [syntax.assign(target, value)]

    def block(self, stmts) -> list:
        saved, self.code = getattr(self, "code", None), []
        for stmt in stmts:
            self.statement(stmt)
        code, self.code = self.code, saved
        return code

    def emit(self, stmt, *statements):
        """Add `statements` to the code, each marked as coming from `stmt`'s line (and, for a
        copy `ssa` made where control flow joins, as such a copy too)."""
        phi = anno.get(stmt, anno.PHI)
        for new in statements:
            self.code.append(anno.copy_origin(stmt, new))
            if phi:
                anno.set_(new, anno.PHI, phi)

    # ---- statements -------------------------------------------------------------------------

    def statement(self, stmt):
        if isinstance(stmt, gast.If) and not syntax.is_break_check(stmt):
            new = gast.If(test=stmt.test, body=self.block(stmt.body) or [gast.Pass()], orelse=self.block(stmt.orelse))
            self.emit(stmt, _located(new, stmt))
            return
        if isinstance(stmt, (gast.For, gast.While)):
            self._loop(stmt)
            return
        if isinstance(stmt, gast.With):
            for item in stmt.items:
                if syntax.load_names(item.context_expr) & self.varied:
                    self.ctx.problem(item.context_expr, "the derivative cannot flow through a context manager",
                                     "compute the differentiable value inside the `with` block instead")
            self.emit(stmt, gast.With(items=stmt.items, body=self.block(stmt.body) or [gast.Pass()], type_comment=None))
            return
        if isinstance(stmt, gast.Try):
            body, final = (self.block(b) for b in syntax.bodies(stmt)[:2])
            self.emit(stmt, gast.Try(body=body or [gast.Pass()], handlers=[], orelse=[], finalbody=final or [gast.Pass()]))
            return
        if isinstance(stmt, gast.FunctionDef):
            self.code.append(stmt)
            if stmt.name in self.active:
                self._closure(stmt, stmt.name, stmt)
            return
        if not isinstance(stmt, gast.Assign):
            self.code.append(stmt)
            return
        checked = anno.get(stmt, anno.SHARING_CHECK)
        if checked:
            self.code.append(inplace.sharing_check(stmt, checked, self.ctx))
        names = targets(stmt)
        if not names & self.active:
            self.code.append(stmt)
            return
        target = stmt.targets[0]
        self.cancelled = anno.get(stmt, anno.CANCELLED, frozenset())
        try:
            if isinstance(target, gast.Tuple):
                self._unpack(stmt, target)
            else:
                self._assignment(stmt, target.id, stmt.value)
        finally:
            self.cancelled = frozenset()

    def _unpack(self, stmt, target):
        """`a, b = t`: `da, db = dt` (a tangent mirrors its value's items)."""
        self.code.append(stmt)
        source = stmt.value
        stored = [syntax.store(self.dot(e.id)) for e in target.elts]
        if isinstance(source, gast.Name) and source.id in self.varied:
            self.emit(stmt, syntax.assign(syntax.tuple_(stored, syntax.STORE), syntax.name(self.dot(source.id))))
        else:
            for element in target.elts:
                self.emit(stmt, syntax.assign(self.dot(element.id), self.zero_of(syntax.name(element.id))))

    def _assignment(self, stmt, target, value):
        dot = self.dot(target)
        if not (activity.differentiable_operands(value, forward=True) - self.cancelled) & self.varied:
            self.code.append(stmt)  # a constant here (another arm or iteration varies it)
            self.emit(stmt, syntax.assign(dot, self.zero_of(syntax.name(target))))
        elif isinstance(value, gast.Name):
            self.code.append(stmt)
            self.emit(stmt, syntax.assign(dot, self.tangent_of(value)))
        elif isinstance(value, (gast.BinOp, gast.UnaryOp)):
            operands = [value.left, value.right] if isinstance(value, gast.BinOp) else [value.operand]
            self.rule_call(stmt, target, self.operator_rule(value.op), operands, {}, syntax.symbol(value.op))
        elif isinstance(value, gast.Call):
            self.call(stmt, target, value)
        elif isinstance(value, gast.Attribute):
            callee = anno.get(value, anno.CALLEE)
            if callee.kind == resolve.RULE:
                self.rule_call(stmt, target, callee.obj, [value.value], {}, callee.text, attribute=value.attr)
            elif callee.kind == resolve.FIELD:
                self.code.append(stmt)
                field = syntax.call(f"{self.alias}.field_tangent", [
                    syntax.copy_node(value.value), self.tangent_of(value.value), syntax.const(value.attr), syntax.name(target)])
                self.emit(stmt, syntax.assign(dot, field))
            else:
                self.unsupported(stmt, value, f"adjoint has no rule for the attribute `.{value.attr}` here")
        elif isinstance(value, gast.Subscript):
            self.code.append(stmt)
            read = gast.Subscript(value=self.tangent_of(value.value), slice=syntax.copy_node(value.slice), ctx=gast.Load())
            self.emit(stmt, syntax.assign(dot, read))
        elif isinstance(value, gast.Lambda):
            self.code.append(stmt)
            self._closure(stmt, target, value)
        elif isinstance(value, gast.Dict):
            self.code.append(stmt)
            display = gast.Dict(keys=[syntax.copy_node(k) for k in value.keys], values=[self.tangent_of(v) for v in value.values])
            self.emit(stmt, syntax.assign(dot, display))
        elif isinstance(value, (gast.Tuple, gast.List)):
            self.code.append(stmt)
            items = [self.tangent_of(e) for e in value.elts]
            display = syntax.tuple_(items) if isinstance(value, gast.Tuple) else syntax.list_(items)
            self.emit(stmt, syntax.assign(dot, display))
        else:
            self.unsupported(stmt, value, "adjoint cannot differentiate this expression")

    def _loop(self, stmt):
        """The loop as it is; each item it binds gets its tangent from the sequence's, by position."""
        reads = []
        if isinstance(stmt, gast.For):
            needed = syntax.stored_names(stmt.target) & self.active
            position = syntax.name(self.ctx.namer.new("index")) if needed else None
            sources = loops.element_sources(stmt.target, stmt.iter, position) if needed else []
            if sources is None:
                self.unsupported(stmt, stmt.iter, "adjoint cannot follow the derivative through this loop's iterable",
                                 "loop over a sequence, `range`, or `enumerate`/`zip`/`reversed` of sequences")
                sources = []
            for name, sequence, index in sources:
                if name in self.active:
                    read = gast.Subscript(value=self.tangent_of(syntax.name(sequence)), slice=index, ctx=gast.Load())
                    reads.append(anno.copy_origin(stmt, syntax.assign(self.dot(name), read)))
            sourced = {name for name, _, _ in sources}
            for name in sorted(needed - sourced):  # an item of a constant (`zip(("a", "b"), xs)`)
                reads.append(anno.copy_origin(stmt, syntax.assign(self.dot(name), self.zero_of(syntax.name(name)))))
            target, iterable = stmt.target, stmt.iter
            if reads and any(position.id in syntax.load_names(index) for _, _, index in sources):
                target = syntax.tuple_([syntax.store(position.id), target], syntax.STORE)
                iterable = syntax.call(self.ctx.reach("enumerate", enumerate), [iterable])
            new = gast.For(target=target, iter=iterable, body=reads + self.block(stmt.body), orelse=[], type_comment=None)
        else:
            new = gast.While(test=stmt.test, body=self.block(stmt.body), orelse=[])
        self.emit(stmt, _located(new, stmt))

    def _closure(self, stmt, target, function):
        """A function's tangent holds those of the values it closes over, by name."""
        captured = sorted(syntax.free_names(function) & self.varied - {target})
        for default in syntax.default_values(function):
            if isinstance(default, gast.Name) and default.id in self.varied:
                self.ctx.problem(function, "a default value cannot carry a derivative in forward mode yet",
                                 "pass the value when calling instead")
        if captured and getattr(function, "decorator_list", None):
            self.ctx.problem(function, "a decorated nested function cannot carry the derivative of what it closes over",
                             "apply the decorator outside the differentiated function, or pass the values as arguments")
        display = gast.Dict(keys=[syntax.const(c) for c in captured], values=[syntax.name(self.dot(c)) for c in captured])
        self.emit(stmt, syntax.assign(self.dot(target), display))

    def unsupported(self, stmt, node, message, hint=""):
        self.code.append(stmt)
        self.ctx.problem(node if hasattr(node, "lineno") else anno.located(stmt), message, hint)


def _located(new, stmt):
    gast.copy_location(new, stmt)
    return new
