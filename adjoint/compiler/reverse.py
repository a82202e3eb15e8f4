"""Reverse: turn a function into its forward function and pullback closure.

Assumes: a normalized, SSA, resolved function with activity annotations.
Guarantees: returns `<f>_forward`, with `f`'s parameters, which runs `f`'s statements and
returns `(value, <f>_pullback)`. The pullback takes the output's cotangent and returns one
cotangent per positional parameter (`None` for those not in `ctx.wrt`, zeros for those the
output does not depend on), then the `*args` parameter's, spread, then one per string in
`ctx.wrt` (a closure variable's, or the `**kwargs` dict's). Each adjoint block carries the
`ORIGIN` of its statement. Cotangents that are still symbolically zero are never materialized
or added; a definition consumes its name's cotangent. Branches replay the branch taken
(cotangents live in one arm only are made zeros in the other), loops replay their tape (see
`loops`), calls go through their rules or `adj.vjp` and its siblings (see `calls`), and
`with`/`try` bodies are reversed outside the block. Statements with no way to be
differentiated, and gradients through a context manager, are reported to `ctx.problems`.

Before:                        After:
    def f(x, W):                   def f_forward(x, W):
        y = x @ W                      y = x @ W
        return np.sum(y)               f = np.sum(y)
                                       def f_pullback(f_bar):
                                           y_bar = adj.unreduce(f_bar, y)
                                           x_bar = adj.matmul_lhs_bar(y_bar, x, W)
                                           W_bar = adj.matmul_rhs_bar(y_bar, x, W)
                                           return (x_bar, W_bar)
                                       return (f, f_pullback)
"""

from __future__ import annotations

import operator

import gast

from .. import registry
from . import annotations as anno
from . import calls, inplace, kinds, loops, resolve, shapes, syntax
from . import activity
from .activity import targets
from .cotangents import Cotangents
from .context import Context

_OPERATORS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.Mod: operator.mod, gast.Pow: operator.pow,
    gast.MatMult: operator.matmul, gast.USub: operator.neg, gast.UAdd: operator.pos,
}


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """The forward function of `node` (see the module docstring)."""
    return _Reverse(node, ctx).build()


class _Reverse(calls.CallAdjoints):
    def __init__(self, node, ctx: Context):
        self.node, self.ctx = node, ctx
        self.varied = anno.get(node, anno.VARIED)
        self.useful = anno.get(node, anno.USEFUL)
        self.sequences = kinds.sequence_names(node.body)
        params = [a.id for a in node.args.posonlyargs + node.args.args]
        # for forward mode over the pullback: numbers whose tangents are never None (no items of containers)
        self.numbers, forward_numbers = activity.certain_numbers(node, ctx)
        ctx.forward_numbers = frozenset(forward_numbers)
        self.shapes = shapes.classes(node, self.numbers, [params[i] for i in ctx.python_floats if i < len(params)])
        self.cot = Cotangents(ctx, kinds.numeric_names(node.body, self.varied & self.useful) - self.sequences)
        self.forward: list = []
        self.adjoints: list = []  # (statement, function emitting its adjoint block), in order
        self.alias = ctx.runtime_alias
        self.records: list = []  # every loop's `LoopRecord`, completed once the pullback is written
        self.building: list = []  # the loops whose forward is being written, innermost last
        self.emitting: list = []  # the loops whose pullback is being written, innermost last

    def block(self, stmts):
        """The forward statements and adjoint entries of a body."""
        saved = self.forward, self.adjoints
        self.forward, self.adjoints = [], []
        for stmt in stmts:
            self.statement(stmt)
        result = self.forward, self.adjoints
        self.forward, self.adjoints = saved
        return result

    def emit_block(self, adjoints) -> list:
        """The pullback code of a body's adjoint entries, last statement first."""
        code = []
        for stmt, emit in reversed(adjoints):
            code.extend(anno.copy_origin(stmt, emit()))
        return code

    def build(self) -> gast.FunctionDef:
        *body, ret = self.node.body
        self.forward, self.adjoints = self.block(body)
        fname = "lambda" if self.ctx.source.name == "<lambda>" else self.ctx.source.name.strip("_") or "function"
        pullback_name = self.ctx.namer.new(f"{fname}_pullback")
        out = ret.value
        seed = self.cot.name(out.id) if isinstance(out, gast.Name) else self.ctx.namer.new("out_bar")
        if isinstance(out, gast.Name) and out.id in self.varied:
            self.cot.live.add(out.id)
        pullback_body = self.emit_block(self.adjoints)
        for record in self.records:
            loops.finish(self, record)
        pullback_body.append(syntax.returns(self._parameter_cotangents()))
        pullback = syntax.function(pullback_name, syntax.positional_args([seed]), pullback_body)
        anno.copy_origin(ret, pullback)
        result = syntax.returns(syntax.tuple_([out, syntax.name(pullback_name)]))
        forward = syntax.function(
            self.ctx.namer.new(f"{fname}_forward"), syntax.plain_arguments(self.node.args),
            self.forward + [pullback, anno.copy_origin(ret, result)],
        )
        gast.copy_location(forward, self.node)
        return forward

    def _parameter_cotangents(self):
        """One cotangent per positional parameter, then the `*args` parameter's spread, then
        one per string in `wrt`: a closure variable's, or the `**kwargs` dict's for "**"."""
        args = self.node.args
        params = args.posonlyargs + args.args
        entries = []
        for index, param in enumerate(params):
            entries.append(self._cotangent_or_zeros(param.id) if index in self.ctx.wrt else syntax.const(None))
        if args.vararg is not None:
            entries.append(gast.Starred(value=self._cotangent_or_zeros(args.vararg.id), ctx=gast.Load()))
        for name in self.ctx.wrt:  # closure variables, and "**" for the `**kwargs` parameter
            if isinstance(name, str):
                entries.append(self._cotangent_or_zeros(args.kwarg.id if name == "**" else name))
        return syntax.tuple_(entries)

    def _cotangent_or_zeros(self, name):
        if name in self.cot.live:
            return self.cot.load(name)
        return self.cot.zeros_of(name)

    # ---- statements -------------------------------------------------------------------------

    def statement(self, stmt):
        if isinstance(stmt, gast.If) and not syntax.is_break_check(stmt):
            self._branch(stmt)
            return
        if isinstance(stmt, (gast.For, gast.While)):
            self._loop(stmt)
            return
        if isinstance(stmt, (gast.With, gast.Try)):
            for item in getattr(stmt, "items", ()):
                if syntax.load_names(item.context_expr) & self.varied:
                    self.ctx.problem(
                        item.context_expr, "the gradient cannot flow through a context manager",
                        "compute the differentiable value inside the `with` block instead",
                    )
            parts = [self.block(body) for body in syntax.bodies(stmt)]
            if isinstance(stmt, gast.With):
                self.forward.append(gast.With(items=stmt.items, body=parts[0][0] or [gast.Pass()], type_comment=None))
            else:
                self.forward.append(gast.Try(body=parts[0][0] or [gast.Pass()], handlers=[], orelse=[],
                                             finalbody=parts[1][0] or [gast.Pass()]))
            anno.copy_origin(stmt, self.forward[-1])
            for _, adjoints in parts:  # the pullback runs outside the block
                self.adjoints.extend(adjoints)
            return
        if isinstance(stmt, gast.FunctionDef):
            self.forward.append(stmt)
            if stmt.name in self.varied and stmt.name in self.useful:
                self._closure(stmt, stmt.name, stmt)
            return
        if not isinstance(stmt, gast.Assign):
            self.forward.append(stmt)
            return
        checked = anno.get(stmt, anno.SHARING_CHECK)
        if checked:
            self.forward.append(inplace.sharing_check(stmt, checked, self.ctx))
        names = targets(stmt)
        if not (names & self.varied and names & self.useful):
            self.forward.append(stmt)
            return
        target = stmt.targets[0]
        if isinstance(target, gast.Tuple):
            self._unpack(stmt, target)
        else:
            self._assignment(stmt, target.id, stmt.value)

    def _unpack(self, stmt, target):
        self.forward.append(stmt)
        source = stmt.value.id
        elements = [e.id for e in target.elts]

        def emit():
            if not any(e in self.cot.live for e in elements):
                return []
            parts = [self.cot.load(e) if e in self.cot.live else syntax.const(None) for e in elements]
            self.cot.live.difference_update(elements)
            packed = syntax.call(f"{self.alias}.unpack_bar", [syntax.tuple_(parts), syntax.name(source)])
            return [self.cot.accumulate(source, packed)]

        self.adjoints.append((stmt, emit))
        self._may_add_to([source])

    def _assignment(self, stmt, target, value):
        if not activity.differentiable_operands(value):
            self.forward.append(stmt)  # a constant: nothing flows back, the cotangent ends here
            self._adjoint(stmt, target, [], lambda bar: ([], []))
        elif isinstance(value, gast.Name):
            self.forward.append(stmt)
            self._adjoint(stmt, target, [value], lambda bar: ([], [syntax.name(bar)]))
        elif isinstance(value, (gast.BinOp, gast.UnaryOp)):
            primitive = _OPERATORS.get(type(value.op))
            operands = [value.left, value.right] if isinstance(value, gast.BinOp) else [value.operand]
            self._rule_call(stmt, target, registry.lookup(primitive), operands, {}, syntax.symbol(value.op))
        elif isinstance(value, gast.Call):
            self._call(stmt, target, value)
        elif isinstance(value, gast.Attribute):
            callee = anno.get(value, anno.CALLEE)
            if callee.kind == resolve.RULE:
                self._rule_call(stmt, target, callee.rule, [value.value], {}, callee.text)
            elif callee.kind == resolve.FIELD:
                self.forward.append(stmt)
                field = syntax.const(value.attr)
                self._adjoint(stmt, target, [value.value], lambda bar: (
                    [], [syntax.call(f"{self.alias}.field_bar", [syntax.name(bar), value.value, field])]))
            else:
                self._unsupported(stmt, value, f"adjoint has no rule for the attribute `.{value.attr}` here")
        elif isinstance(value, gast.Subscript):
            self._subscript(stmt, target, value)
        elif isinstance(value, gast.Lambda):
            self.forward.append(stmt)
            self._closure(stmt, target, value)
        elif isinstance(value, gast.Dict):
            self.forward.append(stmt)
            entries = list(zip(value.keys, value.values))  # a dict's cotangent may lack the keys nothing reached
            self._adjoint(stmt, target, value.values, lambda bar: ([], [
                syntax.call(f"{self.alias}.item_bar", [syntax.name(bar), syntax.copy_node(k), syntax.copy_node(v)]) for k, v in entries]))
        elif isinstance(value, (gast.Tuple, gast.List)):
            self.forward.append(stmt)
            items = list(value.elts)  # a sequence's cotangent holds None for the items nothing reached
            self._adjoint(stmt, target, items, lambda bar: ([], [
                syntax.call(f"{self.alias}.item_bar", [syntax.name(bar), syntax.const(i), syntax.copy_node(e)])
                for i, e in enumerate(items)]))
        else:
            self._unsupported(stmt, value, "adjoint cannot differentiate this expression")

    # ---- control flow -----------------------------------------------------------------------

    def _branch(self, stmt):
        (body, body_adjoints), (orelse, orelse_adjoints) = self.block(stmt.body), self.block(stmt.orelse)
        forward = gast.If(test=stmt.test, body=body or [gast.Pass()], orelse=orelse)
        self.forward.append(anno.copy_origin(stmt, forward))

        def emit():
            live_before = set(self.cot.live)
            arms = []
            for adjoints in (body_adjoints, orelse_adjoints):
                self.cot.live = set(live_before)
                arms.append((self.emit_block(adjoints), self.cot.live))
            joined = arms[0][1] | arms[1][1]
            for code, live in arms:
                code.extend(self.cot.zeros(name) for name in sorted(joined - live))
            self.cot.live = joined
            if not arms[0][0] and not arms[1][0]:
                return []
            return [gast.If(test=syntax.copy_node(stmt.test), body=arms[0][0] or [gast.Pass()], orelse=arms[1][0])]

        self.adjoints.append((stmt, emit))

    def _loop(self, stmt):
        sources, counter = [], None
        if isinstance(stmt, gast.For):
            needed = syntax.stored_names(stmt.target) & self.varied & self.useful
            position = syntax.name(self.ctx.namer.new("index")) if needed else None
            sources = loops.element_sources(stmt.target, stmt.iter, position) if needed else []
            if sources is None:
                self._unsupported(
                    stmt, stmt.iter, "adjoint cannot follow the gradient through this loop's iterable",
                    "loop over a sequence, `range`, or `enumerate`/`zip`/`reversed` of sequences",
                )
                sources = []
            if any(position.id in syntax.load_names(index) for _, _, index in sources):
                counter = position.id
        record = loops.LoopRecord(None, self.forward, [], anno.get(stmt, anno.LOOP) or {}, sources, set(),
                                  parent=self.building[-1] if self.building else None)
        self.building.append(record)
        body, adjoints = self.block(stmt.body)
        self.building.pop()
        loops.forward(self, stmt, record, body, adjoints, counter)
        self.forward.append(record.loop)
        self.records.append(record)
        self.adjoints.append((stmt, lambda: loops.emit(self, record)))

    def _closure(self, stmt, target, function):
        """A function's cotangent holds those of the values it closes over, by name."""
        # a recursive function reads itself: `adj.closure_vjp` already folded those calls in
        captured = sorted(syntax.free_names(function) & self.varied - {target})
        keys = list(captured)
        args = function.args
        positional = args.posonlyargs + args.args
        for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            if isinstance(default, gast.Name) and default.id in self.varied:
                keys.append(param.id)  # a default value: its cotangent is keyed by the parameter
                captured.append(default.id)
        if captured and getattr(function, "decorator_list", None):
            self.ctx.problem(
                function, "a decorated nested function cannot carry the gradient of what it closes over",
                "apply the decorator outside the differentiated function, or pass the values as arguments",
            )
        for default in function.args.kw_defaults:
            if isinstance(default, gast.Name) and default.id in self.varied:
                self.ctx.problem(
                    function, "the default value of a keyword-only parameter cannot carry a gradient yet",
                    "make the parameter positional, or pass the value when calling",
                )
        operands = [syntax.name(c) for c in captured]

        def make(bar):
            return [], [syntax.call(f"{self.alias}.item_bar", [syntax.name(bar), syntax.const(k), syntax.name(c)])
                        for k, c in zip(keys, captured)]

        self._adjoint(stmt, target, operands, make)

    # ---- adjoints ---------------------------------------------------------------------------

    def _adjoint(self, stmt, target, operands, make):
        """Register an adjoint block for `target = op(*operands)`.

        `make(bar)`, given the name of `target`'s cotangent, returns the block's statements
        and one contribution (or None) per operand, which is added to that operand's cotangent.
        """

        def emit():
            if target not in self.cot.live:
                return []
            statements, contributions = make(self.cot.name(target))
            self.cot.live.discard(target)  # its cotangent flows into its definition only
            block = list(statements)
            cancelled = anno.get(stmt, anno.CANCELLED, frozenset())  # a log-sum-exp's shift (`shifts`)
            for operand, contribution in zip(operands, contributions):
                if contribution is None or not (isinstance(operand, gast.Name) and operand.id in self.varied):
                    continue
                if operand.id in cancelled:
                    continue
                if isinstance(contribution, gast.stmt):
                    block.append(contribution)  # added in place into a buffer
                else:
                    block.append(self.cot.accumulate(operand.id, contribution))
            return block

        self.adjoints.append((stmt, emit))
        self._may_add_to([o.id for o in operands if isinstance(o, gast.Name)])

    def _may_add_to(self, names):
        """Note that an adjoint in the loops being built may add to the cotangents of `names`
        (`loops.emit` guesses from them which cotangents its pullback loop carries)."""
        for record in self.building:
            record.operands.update(names)

    def _subscript(self, stmt, target, value):
        self.forward.append(stmt)
        index = syntax.index_expression(value.slice, self.ctx.reach("slice", slice))

        def make(bar):
            buffered = isinstance(value.value, gast.Name) and loops.buffered_contribution(
                self, value.value.id, index, syntax.name(bar))
            return [], [buffered or syntax.call(f"{self.alias}.unindex", [syntax.name(bar), value.value, index])]

        self._adjoint(stmt, target, [value.value], make)

    # ---- problems ---------------------------------------------------------------------------

    def _unsupported(self, stmt, node, message, hint=""):
        self.forward.append(stmt)
        self.ctx.problem(node if hasattr(node, "lineno") else anno.located(stmt), message, hint)
