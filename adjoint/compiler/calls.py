"""Calls in the pullback: rules inlined or called with their pullbacks, user functions, closures,
methods and starred calls differentiated at run time through `adj.vjp` and its siblings.

A mixin of `reverse._Reverse`: the methods here add forward statements and adjoint entries
to the function being reversed, as its other statement kinds do.

Before:  y = dense(x, W)               After:  y, dense_pullback = adj.vjp((0, 1), dense, x, W)
                                               (pullback) x_bar, W_bar = dense_pullback(y_bar)
"""

from __future__ import annotations

import operator
import types

import gast
import numpy as np

from . import annotations as anno
from ..runtime.marks import marked
from . import inline, resolve, shapes, syntax


class CallAdjoints:
    """Adjoints of calls, for `reverse._Reverse`."""

    def _call(self, stmt, target, call):
        callee = anno.get(call, anno.CALLEE)
        spread = any(isinstance(a, gast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        if spread:
            self._star_call(stmt, target, call, callee)
            return
        if callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and call.keywords and signature_of(callee) is not None:
            _keywords_to_positions(call, signature_of(callee))
            self.ctx.rely_on(callee.text, callee.obj)  # the call now follows its signature
        if callee.kind == resolve.RULE and callee.rule is not None and call.keywords:
            _differentiable_keywords_to_positions(call, callee.rule, self.varied)
        if callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and not callee.method and any(
            syntax.load_names(k.value) & self.varied for k in call.keywords
        ):
            self._keywords_through_mapping(stmt, target, call, callee)
            return
        keywords = {k.arg: k.value for k in call.keywords}
        for key, value in keywords.items():
            if syntax.load_names(value) & self.varied:
                self.ctx.problem(
                    call, f"the gradient cannot flow through the keyword argument `{key}=`",
                    "pass the differentiable value as a positional argument if the function takes it "
                    "by position; otherwise hold it constant (a keyword argument is never differentiated)",
                )
        if callee.kind == resolve.RULE:
            self._rule_call(stmt, target, callee.rule, call.args, keywords, callee.text)
        elif callee.kind == resolve.MISSING:
            self._missing(stmt, call, callee)
        elif callee.method:
            self._method_call(stmt, target, call, callee)
        else:
            self._vjp_call(stmt, target, call, callee)

    def _rule_call(self, stmt, target, rule, args, keywords, text):
        keywords = {k: v for k, v in keywords.items() if k != "out"}  # `effects` refuses `out=` already
        if rule is None:
            self._unsupported(stmt, stmt.value, f"adjoint has no rule for `{text}`")
            return
        if _concatenation(rule, args, self.sequences):
            self._concatenate(stmt, target, args)
            return
        if not rule.sequences and any(isinstance(a, gast.Name) and a.id in self.sequences and a.id in self.varied for a in args):
            # `t + (z,)` concatenates and `np.square([x])` squares an array: neither is the rule's math
            self._unsupported(
                stmt, stmt.value, f"`{text}` with a tuple or list operand is not supported yet",
                "make the list an array first (`np.array([a, b])`), or operate on the arrays themselves",
            )
            return
        # with implicit parameters, a rule of yours is called: it checks the parameters it reads
        users = self.ctx.implicit and rule.rrule is not rule.definition
        plan = None if users else inline.plan_for(rule)
        if plan is None:
            self._opaque_rule_call(stmt, target, rule, args, keywords, text)
            return
        try:
            inlined = inline.instantiate(plan, args, keywords, target, self.cot.name(target), self.ctx)
        except inline.BindError as error:
            self._unsupported(
                stmt, stmt.value, f"adjoint's rule for `{text}` {error}",
                "call it as the rule allows, or register a fuller rule with @adjoint.rrule",
            )
            return
        self.forward.append(stmt)
        self.forward.extend(anno.copy_origin(stmt, inlined.forward))
        results = list(inlined.results)
        if rule.partials is not None:  # an operand that may be a tuple: refused at run time
            for i, arg in enumerate(args):
                if results[i] is not None and isinstance(arg, gast.Name) and arg.id not in self.numbers and not _unbroadcasts(results[i]):
                    results[i] = syntax.call(f"{self.alias}.unbroadcast", [results[i], arg])
            results = [self._unbroadcast_as_shapes_allow(r, i, target, args, rule) for i, r in enumerate(results)]

        self._adjoint(stmt, target, args, lambda bar: (inlined.body, results))

    def _unbroadcast_as_shapes_allow(self, result, index, target, args, rule):
        """`adj.unbroadcast(e, x)` as `e` where `x` has the shape and dtype of `target` (see
        `shapes`), or as a sum over the axes a `keepdims` reduction `x` kept; as it is elsewhere."""
        if not (_unbroadcasts(result) and isinstance(args[index], gast.Name) and args[index].id in self.numbers):
            return result
        if not shapes.preserves_dtype(rule.primitive):
            return result
        cotangent, operand = result.args[0], args[index].id
        others = [a for j, a in enumerate(args) if j != index]
        if all(isinstance(a, gast.Name) and a.id == operand for a in others):
            return cotangent  # `x * x`: nothing was broadcast
        kind, made = self.shapes.get(operand, shapes.OPAQUE), self.shapes.get(target, shapes.OPAQUE)
        if kind == made and kind != shapes.OPAQUE:
            return cotangent
        if isinstance(kind, shapes.Kept) and made == shapes.Like(kind.root):
            return _summed(cotangent, kind.axes)
        return result

    def _opaque_rule_call(self, stmt, target, rule, args, keywords, text):
        refusal = None if any(isinstance(a, gast.Starred) for a in args) else rule.refusal(len(args), keywords)
        if refusal:
            self._unsupported(
                stmt, stmt.value, f"adjoint's rule for `{text}` {refusal}",
                "call it as the rule allows, or register a fuller rule with @adjoint.rrule",
            )
            return
        rule_name = self.ctx.inject(rule.rrule, getattr(rule.rrule, "__name__", "rrule"))
        call = syntax.call(syntax.name(rule_name), args, keywords)
        self._call_with_pullback(stmt, target, call, args, text, value=syntax.subscript(call, 0))

    def _vjp_call(self, stmt, target, call, callee):
        """`adj.vjp(wrt, f, *args)`; a local function that closes over differentiable values
        (`f` varied) goes through `adj.closure_vjp`, whose pullback also returns `f`'s."""
        operands = list(call.args)
        helper = "vjp"
        if isinstance(call.func, gast.Name) and call.func.id in self.varied:
            operands, helper = [call.func] + operands, "closure_vjp"
        wrt, unvaried = self._wrt_expression(operands)
        vjp_args = [wrt, call.func] + list(call.args)
        vjp = syntax.call(f"{self.alias}.{helper}", vjp_args, call.keywords)
        self._call_with_pullback(stmt, target, vjp, operands, callee.text, unvaried)

    def _method_call(self, stmt, target, call, callee):
        """`x.sum(axis=0)` as `adj.method_vjp(wrt, x, "sum", axis=0)`: what the method is
        depends on the receiver's type, known only at run time."""
        receiver = call.func.value
        if not isinstance(receiver, gast.Name) and syntax.load_names(receiver) & self.varied:
            self._unsupported(stmt, call, "adjoint cannot follow the gradient into this method's receiver",
                              "assign the receiver to a name first")
            return
        operands = [receiver] + list(call.args)
        wrt = self._positions(operands)
        if anno.get(call, anno.FROZEN):  # `m.encoder(x)` with `encoder` frozen: nothing flows into `m`
            operands[0] = syntax.const(None)
            wrt = tuple(i for i in wrt if i > 0)
        vjp_args = [syntax.const(wrt), receiver, syntax.const(call.func.attr)] + list(call.args)
        vjp = syntax.call(f"{self.alias}.method_vjp", vjp_args, call.keywords)
        self._call_with_pullback(stmt, target, vjp, operands, call.func.attr)

    def _star_call(self, stmt, target, call, callee):
        """`f(a, *xs, **d)` as `adj.star_vjp(f, (a, xs), (1,), d)`: the pullback returns one
        cotangent per part (a tuple for `xs`) and a dict for `d`."""
        if isinstance(call.func, gast.Name) and call.func.id in self.varied:
            self._unsupported(stmt, call, "a starred call of a function that closes over differentiable "
                              "values is not supported yet", "pass the arguments by position")
            return
        parts = [a.value if isinstance(a, gast.Starred) else a for a in call.args]
        spread = [i for i, a in enumerate(call.args) if isinstance(a, gast.Starred)]
        if callee.method:  # `self.forward(*args, **kwargs)`: the method's function, the receiver first
            receiver = call.func.value
            if not isinstance(receiver, gast.Name):
                self._unsupported(stmt, call, "adjoint cannot follow the gradient into this method's receiver",
                                  "assign the receiver to a name first")
                return
            function = syntax.call(f"{self.alias}.method_function", [receiver, syntax.const(call.func.attr)])
            call = syntax.call(function, call.args, call.keywords)
            parts, spread = [receiver] + parts, [i + 1 for i in spread]
        double = [k.value for k in call.keywords if k.arg is None]
        named = [k for k in call.keywords if k.arg is not None]
        if len(double) > 1 or any(syntax.load_names(k.value) & self.varied for k in named):
            self._unsupported(stmt, call, "the gradient cannot flow through these keyword arguments",
                              "pass one `**dict`, or the differentiable values by position")
            return
        mapping = double[0] if double else syntax.const(None)
        wrt = self._positions(parts + [mapping])
        vjp_args = [syntax.const(wrt), call.func, syntax.tuple_(parts), syntax.const(tuple(spread)), mapping]
        vjp = syntax.call(f"{self.alias}.star_vjp", vjp_args, named)
        self._call_with_pullback(stmt, target, vjp, parts + [mapping], callee.text)

    def _concatenate(self, stmt, target, operands):
        """`t + (z,)` on tuples or lists: each operand gets its part of the cotangent."""
        self.forward.append(stmt)
        names = []

        def make(bar):
            if not names:
                names.append(self.ctx.namer.new(f"{self.cot.name(target)}s"))
            split = syntax.call(f"{self.alias}.unconcat", [syntax.name(bar)] + list(operands))
            return [syntax.assign(names[0], split)], [syntax.subscript(syntax.name(names[0]), i) for i in range(2)]

        self._adjoint(stmt, target, operands, make)

    def _keywords_through_mapping(self, stmt, target, call, callee):
        """`f(x, a=y)` into a function taking `**kwargs`: as `f(x, **{"a": y})`, whose dict
        `adj.star_vjp` differentiates."""
        varied = [k for k in call.keywords if syntax.load_names(k.value) & self.varied]
        if isinstance(call.func, gast.Name) and call.func.id in self.varied:
            self._unsupported(
                stmt, call, f"the gradient cannot flow through the keyword argument `{varied[0].arg}=` into "
                f"`{self.ctx.user_name(call.func.id)}`, which carries gradients itself (a model or a closure)",
                f"pass `{varied[0].arg}` by position",
            )
            return
        mapping = self.ctx.namer.new(f"{callee.text.rsplit('.', 1)[-1]}_keywords")
        display = gast.Dict(keys=[syntax.const(k.arg) for k in varied], values=[k.value for k in varied])
        self.varied.add(mapping)
        self.useful.add(mapping)
        self.statement(anno.copy_origin(stmt, syntax.assign(mapping, display)))
        others = [k for k in call.keywords if k not in varied]
        spread = syntax.call(call.func, call.args, others + [gast.keyword(arg=None, value=syntax.name(mapping))])
        self._star_call(stmt, target, spread, callee)

    def _positions(self, operands) -> tuple:
        return tuple(i for i, a in enumerate(operands) if isinstance(a, gast.Name) and a.id in self.varied)

    def _wrt_expression(self, operands):
        """`wrt` for a call in a loop, and the position whose operand may still be the loop's
        starting value (or None). A value a loop carries (`x = layer(x)`) varies from its
        second iteration when it starts from a constant (the data): on the first, the call is
        not asked for its gradient, `(0, 1) if x_1 is not x else (0,)`, so a model's first
        layer spends no work on the gradient of its input."""
        wrt = self._positions(operands)
        for position, operand in enumerate(operands):
            start = self._constant_start(operand) if position in wrt else None
            if start is not None:
                test = syntax.compare(syntax.name(operand.id), [gast.IsNot()], [syntax.name(start)])
                fewer = tuple(i for i in wrt if i != position)
                return gast.IfExp(test=test, body=syntax.const(wrt), orelse=syntax.const(fewer)), position
        return syntax.const(wrt), None

    def _constant_start(self, operand):
        """The name a loop's carried `operand` starts from, if that carries no gradient."""
        if not isinstance(operand, gast.Name):
            return None
        for record in self.building:
            before = record.phis.get(operand.id, (None, None))[0]
            if before is not None and before not in self.varied:
                return before
        return None

    def _call_with_pullback(self, stmt, target, call, args, text, unvaried=None, value=None):
        """`target, pullback = call` and the pullback's call in the adjoint; with no operand that
        varies (a value varied only on another path: `if c: h = f(k)`), the plain call, or
        `value` (a rule's: its value is the one used)."""
        active = [i for i, a in enumerate(args) if isinstance(a, gast.Name) and a.id in self.varied]
        if not active and not self.ctx.implicit:
            plain = stmt if value is None else anno.copy_origin(stmt, syntax.assign(syntax.store(target), value))
            self.forward.append(plain)
            return
        pullback = self.ctx.namer.new(f"{text.rsplit('.', 1)[-1]}_pullback")
        pair = syntax.tuple_([syntax.store(target), syntax.store(pullback)], syntax.STORE)
        self.forward.append(anno.copy_origin(stmt, syntax.assign(pair, call)))
        names = []  # the cotangents' name, made once however often the block is written

        def make(bar):
            cotangents = syntax.call(syntax.name(pullback), [syntax.name(bar)])
            if not active:  # implicit parameters: the call's pullback adds to them itself
                return [syntax.expression_statement(cotangents)], [None] * len(args)
            def part(source, i):  # an operand left out of `wrt` on a loop's first iteration: None, read as zeros
                if i == unvaried:
                    return syntax.call(f"{self.alias}.item_bar", [source, syntax.const(i), syntax.copy_node(args[i])])
                return syntax.subscript(source, i)

            if len(active) == 1:  # use it in place: `x_bar = f_pullback(y_bar)[0]`
                return [], [part(cotangents, i) if i in active else None for i in range(len(args))]
            if not names:
                names.append(self.ctx.namer.new(f"{self.cot.name(target)}s"))
            bars = names[0]
            contributions = [part(syntax.name(bars), i) if i in active else None for i in range(len(args))]
            return [syntax.assign(bars, cotangents)], contributions

        self._adjoint(stmt, target, args, make)

    def _missing(self, stmt, call, callee):
        self._unsupported(stmt, call, *missing_problem(callee))


def missing_problem(callee) -> tuple[str, str]:
    """What the transform says about a call of `callee` (a `resolve.MISSING` one) whose operands
    carry a gradient, and what to do about it: `(message, hint)`.

    >>> import numpy as np
    >>> message, hint = missing_problem(resolve.classify(np.unwrap, "np.unwrap"))
    >>> message
    'adjoint has no rule for `np.unwrap` (numpy.unwrap)'
    >>> hint
    'register one with @adjoint.rrule(np.unwrap), or mark it @adjoint.non_differentiable'
    """
    if isinstance(callee.obj, type):
        return (
            f"creating a `{callee.text}` object from differentiable values is not supported yet: "
            "gradients cannot flow through an object's attributes",
            "create the object outside the differentiated function, or compute with the arrays directly",
        )
    return f"adjoint has no rule for `{callee.text}` ({_describe(callee.obj)})", resolve.missing_hint(callee, "rrule")


def signature_of(callee):
    """The Python function whose parameters a call of `callee` binds: its own, or for a
    checkpointed function (`adjoint.checkpoint`), the one it wraps; None if not known here."""
    if callee.kind == resolve.PYTHON:
        return callee.obj
    wrapped = marked(callee.obj, "__adjoint_checkpoint_of__") if callee.obj is not None else None
    return wrapped if isinstance(wrapped, types.FunctionType) else None


def _keywords_to_positions(call, fn):
    """`dense(x, W=W1)` as `dense(x, W1)`, so the gradient can flow to `W1` (keywords never
    carry gradients). Only parameters that can be passed by position, in order, are moved."""
    keywords = {k.arg: k for k in call.keywords}
    code = fn.__code__
    for name in code.co_varnames[len(call.args) : code.co_argcount]:
        if name not in keywords or len(call.args) < code.co_posonlyargcount:
            break
        call.args.append(keywords.pop(name).value)
    call.keywords = list(keywords.values())


def _differentiable_keywords_to_positions(call, rule, varied):
    """`np.average(a, weights=w)` as `np.average(a, None, w)` when `w` carries a gradient, since
    rules differentiate positional arguments only (see `Rule.movable_keywords`)."""
    keywords = {k.arg: k for k in call.keywords}
    wanted = [name for name, k in keywords.items() if syntax.load_names(k.value) & varied]
    moved = rule.movable_keywords(len(call.args), wanted, keywords) if wanted else []
    for name in moved:
        given = keywords.pop(name, None)
        call.args.append(given.value if given is not None else syntax.const(rule.signature.parameters[name].default))
    call.keywords = list(keywords.values())


def _describe(obj) -> str:
    if isinstance(obj, np.ufunc):  # every ufunc says it is numpy's, scipy's included
        return f"the ufunc `{obj.__name__}`"
    module = getattr(obj, "__module__", None) or type(obj).__module__
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{module}.{name}" if name else repr(obj)



def _summed(cotangent, axes):
    """`cotangent.sum(axis=axes, keepdims=True)`, negated after summing for `-g` (a smaller array)."""
    negated = isinstance(cotangent, gast.UnaryOp) and isinstance(cotangent.op, gast.USub)
    operand = cotangent.operand if negated else cotangent
    axis = syntax.const(axes[0]) if len(axes) == 1 else syntax.tuple_([syntax.const(a) for a in axes])
    keywords = [gast.keyword(arg="axis", value=axis), gast.keyword(arg="keepdims", value=syntax.const(True))]
    total = gast.Call(func=gast.Attribute(value=operand, attr="sum", ctx=gast.Load()), args=[], keywords=keywords)
    return gast.UnaryOp(op=gast.USub(), operand=total) if negated else total


def _unbroadcasts(expr) -> bool:
    return isinstance(expr, gast.Call) and (syntax.dotted(expr.func) or "").endswith(".unbroadcast")


def _concatenation(rule, args, sequences) -> bool:
    return (
        rule is not None and rule.primitive is operator.add
        and any(isinstance(a, gast.Name) and a.id in sequences for a in args)
    )


