"""Calls in forward mode: rules stitched in as NumPy expressions or called, and Python functions,
closures and methods differentiated at run time through `adj.jvp` and its siblings.

A mixin of `tangent._Tangent`. A rule of one of the inlinable kinds (`adjoint.frules`) becomes
an expression of the call's own atoms and their tangents:

    y = np.tanh(x)        ->  dy = dx * (1 - y ** 2)          (elementwise partials)
    s = np.sum(x, axis=1) ->  ds = np.sum(dx, axis=1)         (linear)
    z = a @ b             ->  dz = da @ b + a @ db         (multilinear)

Any other rule is called, replacing the statement: `L, dL = cholesky_frule((A,), (dA,))`.
"""

from __future__ import annotations

import operator

import gast
import numpy as np

from .. import frules, registry
from . import annotations as anno
from . import inline, resolve, shapes, syntax
from .calls import _differentiable_keywords_to_positions, _keywords_to_positions, signature_of

_OPERATORS = {
    gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
    gast.Div: operator.truediv, gast.Mod: operator.mod, gast.Pow: operator.pow,
    gast.MatMult: operator.matmul, gast.USub: operator.neg, gast.UAdd: operator.pos,
}
# Elementwise primitives whose value is real for a complex input: their tangent is the real part.
_REAL_VALUED = {id(abs), id(operator.abs), id(np.absolute)}


class TangentCalls:
    """Tangents of calls, for `tangent._Tangent`."""

    def operator_rule(self, op):
        return _OPERATORS.get(type(op))

    def call(self, stmt, target, call):
        callee = anno.get(call, anno.CALLEE)
        starred = any(isinstance(a, gast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        if starred and callee.kind == resolve.RULE:
            self._starred_rule_call(stmt, target, call, callee)
            return
        if callee.kind == resolve.PYTHON and frules.lookup(callee.obj) is not None and not starred:
            # a Python function with a forward rule of its own (a runtime helper): its rule
            keywords = {k.arg: k.value for k in call.keywords}
            if any(syntax.load_names(v) & self.varied for v in keywords.values()):
                self.unsupported(stmt, call, f"the derivative cannot flow through a keyword argument of `{callee.text}`",
                                 "pass the differentiable value by position")
                return
            self.ctx.rely_on(callee.text, callee.obj)
            self.rule_call(stmt, target, callee.obj, call.args, keywords, callee.text)
            return
        if callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and call.keywords and signature_of(callee) is not None:
            _keywords_to_positions(call, signature_of(callee))
            self.ctx.rely_on(callee.text, callee.obj)
        if callee.kind == resolve.RULE and callee.rule is not None and call.keywords:
            _differentiable_keywords_to_positions(call, callee.rule, self.varied)
        varied_keywords = [k for k in call.keywords if syntax.load_names(k.value) & self.varied]
        if varied_keywords and callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and not callee.method:
            self._keywords_jvp_call(stmt, target, call, varied_keywords)
            return
        keywords = {k.arg: k.value for k in call.keywords}
        for key, value in keywords.items():
            if syntax.load_names(value) & self.varied:
                self.unsupported(
                    stmt, call, f"the derivative cannot flow through the keyword argument `{key or '**'}=`",
                    "pass the differentiable value as a positional argument if the function takes it "
                    "by position; otherwise hold it constant (a keyword argument is never differentiated)",
                )
                return
        if callee.kind == resolve.RULE:
            self.rule_call(stmt, target, callee.obj, call.args, keywords, callee.text)
        elif callee.kind == resolve.MISSING:
            self.unsupported(stmt, call, f"adjoint has no rule for `{callee.text}`", resolve.missing_hint(callee, "frule"))
        elif callee.method:
            self._method_call(stmt, target, call)
        else:
            self._jvp_call(stmt, target, call)

    # ---- rules ------------------------------------------------------------------------------

    def rule_call(self, stmt, target, primitive, args, keywords, text, attribute=None):
        keywords = {k: v for k, v in keywords.items() if k != "out"}
        rule = frules.lookup(primitive) if primitive is not None else None
        if rule is None:
            self.unsupported(stmt, stmt.value, f"adjoint has no forward rule for `{text}`",
                             f"register one with @adjoint.frule({text})")
            return
        reverse = registry.lookup(primitive)
        refusal = reverse.refusal(len(args), keywords) if reverse is not None and attribute is None else None
        if refusal:  # the rules of a primitive take the same arguments
            self.unsupported(stmt, stmt.value, f"adjoint's rule for `{text}` {refusal}",
                             "call it as the rule allows, or register fuller rules with @adjoint.rrule and @adjoint.frule")
            return
        if reverse is not None and not reverse.sequences and primitive is not operator.add and any(
            self._is_sequence(a) and self.has_tangent(a) for a in args
        ):  # `np.square([x])` squares an array, not the list's items: as reverse mode, refused
            self.unsupported(
                stmt, stmt.value, f"`{text}` with a tuple or list operand is not supported yet",
                "make the list an array first (`np.array([a, b])`), or operate on the arrays themselves",
            )
            return
        if primitive is operator.add and any(self._is_sequence(a) for a in args):
            self.code.append(stmt)  # `t + (z,)`: the tangents concatenate as the values do
            self.emit(stmt, syntax.assign(self.dot(target), syntax.binop(self.tangent_of(args[0]), gast.Add, self.tangent_of(args[1]))))
            return
        if rule.kind == frules.ELEMENTWISE and not keywords:
            expression = self._elementwise(rule, primitive, args, target)
            if expression is not None:
                self.code.append(stmt)
                self.emit(stmt, syntax.assign(self.dot(target), expression))
                return
        if rule.kind in (frules.LINEAR, frules.MULTILINEAR) and not any(self._is_sequence(a) for a in args if not self.has_tangent(a)):
            self.code.append(stmt)
            self.emit(stmt, syntax.assign(self.dot(target), self._linear(rule, stmt.value, args, attribute, target)))
            return
        name = self.ctx.inject(rule.frule, getattr(rule.frule, "__name__", "frule"))
        primals = syntax.tuple_([syntax.copy_node(a) for a in args])
        tangents = syntax.tuple_([self.tangent_of(a) if self.has_tangent(a) else syntax.const(None) for a in args])
        pair = syntax.tuple_([syntax.store(target), syntax.store(self.dot(target))], syntax.STORE)
        keyword_nodes = [gast.keyword(arg=k, value=v) for k, v in keywords.items()]
        self.emit(stmt, syntax.assign(pair, syntax.call(syntax.name(name), [primals, tangents], keyword_nodes)))

    def _starred_rule_call(self, stmt, target, call, callee):
        """`max(*xs, **options)`: the forward rule called with the starred tuples of primals and
        tangents (`(*xs,)`, `(*dxs,)`); a `**` mapping that varies is refused."""
        rule = frules.lookup(callee.obj)
        if rule is None or any(syntax.load_names(k.value) & self.varied for k in call.keywords):
            self.unsupported(stmt, call, f"forward mode cannot differentiate this starred call of `{callee.text}` yet",
                             "pass the arguments one by one")
            return
        name = self.ctx.inject(rule.frule, getattr(rule.frule, "__name__", "frule"))
        primals, tangents = self.displays(call.args)
        pair = syntax.tuple_([syntax.store(target), syntax.store(self.dot(target))], syntax.STORE)
        self.emit(stmt, syntax.assign(pair, syntax.call(syntax.name(name), [primals, tangents], call.keywords)))

    def _is_sequence(self, arg) -> bool:
        return isinstance(arg, gast.Name) and arg.id in self.sequences

    def _elementwise(self, rule, primitive, args, target):
        """`t1 * d1 + t2 * d2` over the operands with tangents, the partials `d` inlined."""
        plan = inline.plan_for(registry.lookup(primitive))
        if plan is None or len(args) != len(plan.params):
            return None
        if any(self.has_tangent(a) and a.id not in self.numbers for a in args):
            return None  # it may be a list (`+` would concatenate): the rule, called, checks
        terms = []
        for index, arg in enumerate(args):
            if not self.has_tangent(arg) or plan.results[index] is None:
                continue
            cotangent = self.ctx.namer.new("__tangent__")
            inlined = inline.instantiate(plan, list(args), {}, target, cotangent, self.ctx)
            partial = _strip_unbroadcast(inlined.results[index], self.alias)
            terms.append(syntax.substitute(partial, {cotangent: syntax.name(self.dot(arg.id))}))
        expression = terms[0]
        for term in terms[1:]:  # `da - db`, not `da + -db`
            negated = isinstance(term, gast.UnaryOp) and isinstance(term.op, gast.USub)
            expression = syntax.binop(expression, gast.Sub if negated else gast.Add, term.operand if negated else term)
        # a constant operand (data, or an array made here) may broadcast the tangent's shape:
        # only a literal number certainly does not
        broadcast = len(args) > 1 and any(not self.has_tangent(a) and not isinstance(a, gast.Constant) for a in args)
        if broadcast and self._shaped_as(target, [a for a in args if self.has_tangent(a)], primitive):
            broadcast = False  # (`z - m`, `m` a kept max of `z`: `dz` has the shape and dtype of `z - m`)
        if broadcast or id(primitive) in _REAL_VALUED or _may_widen(expression):
            expression = syntax.call(f"{self.alias}.tangent_like", [expression, syntax.name(target)])
        return expression

    def _shaped_as(self, target, moving, primitive) -> bool:
        """Whether the operands `moving` certainly have the shape and dtype of `target`, the
        result of elementwise `primitive` (see `shapes`)."""
        kind = self.shapes.get(target, shapes.OPAQUE)
        return kind != shapes.OPAQUE and shapes.preserves_dtype(primitive) and all(
            self.shapes.get(a.id, shapes.OPAQUE) == kind for a in moving
        )

    def _linear(self, rule, value, args, attribute, target):
        """The call again, on the operands' tangents (linear), or once per operand with a
        tangent, summed (multilinear). A linear call with a constant operand is cast to its value
        (`np.insert` of a float into an int array stays an int array: its tangent is zero)."""
        keyword_operands = frules.operand_keywords(rule.primitive, rule.operands) if rule.kind == frules.LINEAR else ()

        def rebuilt(replaced):
            new_args = [
                (self.tangent_of(a) if i in replaced else syntax.copy_node(a)) for i, a in enumerate(args)
            ]
            if attribute is not None:
                return syntax.attr(new_args[0], attribute)
            if isinstance(value, gast.BinOp):
                return syntax.binop(new_args[0], type(value.op), new_args[1])
            if isinstance(value, gast.UnaryOp):
                return syntax.unary(type(value.op), new_args[0])
            copy = syntax.copy_node(value)
            copy.args = new_args
            for keyword in copy.keywords:  # an operand passed by keyword is a constant
                if keyword.arg in keyword_operands:
                    keyword.value = self.zero_of(keyword.value)
            return copy

        operands = [i for i in rule.operands if i < len(args)]
        if rule.kind == frules.LINEAR:
            if all(self.has_tangent(args[i]) for i in operands) and not any(
                k.arg in keyword_operands for k in getattr(value, "keywords", ())
            ):
                return rebuilt(set(operands))
            return syntax.call(f"{self.alias}.tangent_like", [rebuilt(set(operands)), syntax.name(target)])
        terms = [rebuilt({i}) for i in operands if self.has_tangent(args[i])]
        if not terms:  # only what is no operand varies (a shape): the product does not
            return self.zero_of(syntax.name(target))
        expression = terms[0]
        for term in terms[1:]:
            expression = syntax.binop(expression, gast.Add, term)
        return expression

    # ---- Python functions, closures, methods ------------------------------------------------

    def displays(self, args):
        """The tuples of a call's arguments and of their tangents (None for a constant), starred
        parts included: `(x, *xs)` and `(dx, *dxs)`."""
        primals, tangents = [], []
        for arg in args:
            if isinstance(arg, gast.Starred):
                primals.append(gast.Starred(value=syntax.copy_node(arg.value), ctx=gast.Load()))
                if self.has_tangent(arg.value):
                    tangents.append(gast.Starred(value=self.tangent_of(arg.value), ctx=gast.Load()))
                else:  # as many Nones as it holds values
                    count = syntax.call(self.ctx.reach("len", len), [syntax.copy_node(arg.value)])
                    nones = syntax.binop(syntax.tuple_([syntax.const(None)]), gast.Mult, count)
                    tangents.append(gast.Starred(value=nones, ctx=gast.Load()))
            else:
                primals.append(syntax.copy_node(arg))
                tangents.append(self.tangent_of(arg) if self.has_tangent(arg) else syntax.const(None))
        return syntax.tuple_(primals), syntax.tuple_(tangents)

    def _jvp_call(self, stmt, target, call):
        """`y, dy = adj.jvp(f, (x, W), (dx, None))`; a local function that closes over
        varied values goes through `adj.closure_jvp`, with its own tangent."""
        args = list(call.args)
        primals, tangents = self.displays(args)
        if isinstance(call.func, gast.Name) and call.func.id in self.varied:
            helper = syntax.call(f"{self.alias}.closure_jvp", [call.func, self.tangent_of(call.func), primals, tangents], call.keywords)
        else:
            helper = syntax.call(f"{self.alias}.jvp", [call.func, primals, tangents], call.keywords)
        pair = syntax.tuple_([syntax.store(target), syntax.store(self.dot(target))], syntax.STORE)
        self.emit(stmt, syntax.assign(pair, helper))

    def _keywords_jvp_call(self, stmt, target, call, varied):
        """`f(x, a=y, **d)` with `y` or `d` varied: `adj.keywords_jvp(f, (x,), (dx,), {'a': y, **d},
        {'a': dy, **dd})`, which passes them by position or into `f`'s `**kwargs` at run time."""
        if isinstance(call.func, gast.Name) and call.func.id in self.varied:
            self.unsupported(stmt, call, "the derivative cannot flow through keyword arguments into a "
                             "function that carries derivatives itself (a model or a closure)",
                             "pass the values by position")
            return
        constant = [k for k in call.keywords if k not in varied]
        mapping = gast.Dict(keys=[None if k.arg is None else syntax.const(k.arg) for k in varied],
                            values=[syntax.copy_node(k.value) for k in varied])
        tangents_of = gast.Dict(keys=[None if k.arg is None else syntax.const(k.arg) for k in varied],
                                values=[self.tangent_of(k.value) if self.has_tangent(k.value) else syntax.const(None) for k in varied])
        primals, tangents = self.displays(call.args)
        helper = syntax.call(f"{self.alias}.keywords_jvp", [call.func, primals, tangents, mapping, tangents_of], constant)
        pair = syntax.tuple_([syntax.store(target), syntax.store(self.dot(target))], syntax.STORE)
        self.emit(stmt, syntax.assign(pair, helper))

    def _method_call(self, stmt, target, call):
        """`x.sum(axis=0)` as `adj.method_jvp(x, dx, "sum", (), (), axis=0)`: what the method
        is depends on the receiver's type, known only at run time."""
        receiver = call.func.value
        if not isinstance(receiver, gast.Name) and syntax.load_names(receiver) & self.varied:
            self.unsupported(stmt, call, "adjoint cannot follow the derivative into this method's receiver",
                             "assign the receiver to a name first")
            return
        receiver_dot = self.tangent_of(receiver) if self.has_tangent(receiver) else syntax.const(None)
        if anno.get(call, anno.FROZEN):
            receiver_dot = syntax.const(None)
        if (
            call.func.attr in _LINEAR_METHODS and isinstance(receiver, gast.Name) and receiver.id in self.numbers
            and self.has_tangent(receiver) and not anno.get(call, anno.FROZEN) and not call.args
            and all(k.arg in ("axis", "keepdims") and not (syntax.load_names(k.value) & self.varied) for k in call.keywords)
        ):  # `g.sum(axis=1)` of an array: linear, so its tangent is `dg.sum(axis=1)`
            tangent = gast.Call(func=gast.Attribute(value=receiver_dot, attr=call.func.attr, ctx=gast.Load()),
                                args=[], keywords=[syntax.copy_node(k) for k in call.keywords])
            self.emit(stmt, stmt, syntax.assign(self.dot(target), tangent))
            return
        primals, tangents = self.displays(call.args)
        helper = syntax.call(f"{self.alias}.method_jvp", [
            receiver, receiver_dot, syntax.const(call.func.attr), primals, tangents], call.keywords)
        pair = syntax.tuple_([syntax.store(target), syntax.store(self.dot(target))], syntax.STORE)
        self.emit(stmt, syntax.assign(pair, helper))


_LINEAR_METHODS = {"sum", "mean"}


def _may_widen(expression) -> bool:
    """Whether a partial may compute in float64 for float32 operands: masks and `np.where`
    (a 0-d float64 array is not a weak scalar), whose tangent `adj.tangent_like` casts back."""
    for node in gast.walk(expression):
        if isinstance(node, gast.Compare):
            return True
        if isinstance(node, gast.Call) and (syntax.dotted(node.func) or "").rsplit(".", 1)[-1] in ("where", "tie_weight"):
            return True
    return False


def _strip_unbroadcast(expr, alias):
    if isinstance(expr, gast.Call) and syntax.dotted(expr.func) == f"{alias}.unbroadcast":
        return expr.args[0]
    return expr
