"""Lowering: the expressions that hide control flow, as statements `normalize` can emit.

A mixin of `normalize._Normalizer`. A conditional expression becomes an `if` assigning a new
name in both arms; `and`/`or` become nested `if`s that stop early, as Python does; a list or
dict comprehension becomes a loop filling a new container (its variables renamed, as they are
local to it); `sum(e for ...)` becomes a loop adding to a running total; a starred display
`[*a, b]` becomes `list(a) + [b]`. A generator expression is accepted only as the argument of
a call that consumes it at once (`_consumes`): Python runs generators lazily.

Before:  y = a if c > 0 else b             After:  y_cond = c > 0
                                                   if y_cond:
                                                       y_value = a
                                                   else:
                                                       y_value = b
                                                   y = y_value
"""

from __future__ import annotations

import math

import gast

from . import syntax


class Lowering:
    """Expressions lowered to statements, for `normalize._Normalizer`."""

    def _spread_display(self, expr, hint):
        """`[*a, b]` as `list(a) + [b]` (a tuple display: `tuple(a) + (b,)`)."""
        kind = list if isinstance(expr, gast.List) else tuple
        build = syntax.list_ if kind is list else syntax.tuple_
        parts, run = [], []
        for element in expr.elts:
            if isinstance(element, gast.Starred):
                if run:
                    parts.append(self._temp(hint + "_part", build(run)))
                    run = []
                converted = syntax.call(self.ctx.reach(kind.__name__, kind), [self.atom(element.value, hint)])
                parts.append(self._temp(hint + "_part", converted))
            else:
                run.append(self.atom(element, hint))
        if run:
            parts.append(self._temp(hint + "_part", build(run)))
        result = parts[0]
        for part in parts[1:-1]:
            result = self._temp(hint + "_add", syntax.binop(result, gast.Add, part))
        return syntax.binop(result, gast.Add, parts[-1]) if len(parts) > 1 else result

    def _lowered(self, expr, hint):
        """A conditional expression, `and`/`or` or a comprehension as statements (which the
        pullback can follow), its value in a new name; None for other expressions."""
        if isinstance(expr, gast.IfExp):
            test = self.atom(expr.test, hint)
            result = self.ctx.namer.new(hint if hint.endswith("_value") else f"{hint}_value")
            arms = [self.nested(lambda e=e: self._emit(syntax.assign(result, self.rhs(e, result)))) for e in (expr.body, expr.orelse)]
            self._emit(gast.If(test=test, body=arms[0], orelse=arms[1]))
            return syntax.name(result)
        if isinstance(expr, gast.BoolOp):
            return self._boolean(expr, hint)
        if isinstance(expr, gast.GeneratorExp):
            self.ctx.problem(
                expr, "a generator expression is supported only as the argument of a call that "
                "consumes it at once (`sum`, `list`, `max`, `math.fsum`...)",
                "use a list comprehension: Python runs a generator only when it is consumed",
            )
            return self._comprehension(expr, hint)
        if isinstance(expr, (gast.ListComp, gast.DictComp)):
            return self._comprehension(expr, hint)
        if isinstance(expr, gast.Call) and _is_builtin_sum_of_generator(expr, self):
            return self._comprehension(expr.args[0], hint, total=expr.args[1] if len(expr.args) > 1 else syntax.const(0))
        return None

    def _boolean(self, expr, hint):
        """`a and b` is `a` if `a` is false, else `b`: evaluated left to right, stopping early."""
        result = self.ctx.namer.new(f"{hint}_{'and' if isinstance(expr.op, gast.And) else 'or'}")
        self._emit(syntax.assign(result, self.rhs(expr.values[0], result)))
        rest = expr.values[1:]

        def chain(values):
            self._emit(syntax.assign(result, self.rhs(values[0], result)))
            if len(values) > 1:
                _continue(values[1:])

        def _continue(values):
            test = syntax.name(result)
            if isinstance(expr.op, gast.Or):
                test = self._temp(f"{result}_false", syntax.unary(gast.Not, test))
            self._emit(gast.If(test=test, body=self.nested(lambda: chain(values)), orelse=[]))

        _continue(rest)
        return syntax.name(result)

    def _comprehension(self, expr, hint, total=None):
        """`[e for x in xs if c]` as a loop appending to a new list; `sum(e for ...)` as a loop
        adding to a running total, as `sum` does; `{k: v for ...}` as a loop filling a dict."""
        result = self.ctx.namer.new(hint if total is None else f"{hint}_total")
        renamed = {}
        for generator in expr.generators:  # comprehension variables are local to it
            for target in syntax.stored_names(generator.target):
                renamed[target] = self.ctx.namer.new(target)
                self.ctx.user_names[renamed[target]] = target
        if total is not None:
            self._emit(syntax.assign(result, self.rhs(total, result)))
        else:
            self._emit(syntax.assign(result, gast.Dict(keys=[], values=[]) if isinstance(expr, gast.DictComp) else syntax.list_([])))
        alias = self.ctx.runtime_alias

        def innermost():
            if isinstance(expr, gast.DictComp):
                key = self.atom(syntax.substitute(expr.key, renamed), result + "_key")
                value = self.atom(syntax.substitute(expr.value, renamed), result)
                self._emit(syntax.assign(result, syntax.call(f"{alias}.setitem", [syntax.name(result), key, value])))
                return
            element = self.atom(syntax.substitute(expr.elt, renamed), result + "_item")
            if total is not None:
                self._emit(syntax.assign(result, syntax.binop(syntax.name(result), gast.Add, element)))
            else:
                self._emit(syntax.assign(result, syntax.call(f"{alias}.append", [syntax.name(result), element])))

        def loop(generators, bound):
            generator, *rest = generators
            # a generator's iterable sees only the variables of the generators before it
            iterable = self._iterable(syntax.substitute(generator.iter, {k: renamed[k] for k in bound}))
            target, unpacked = self._loop_target(syntax.substitute(generator.target, renamed), iterable)
            names = bound | syntax.stored_names(generator.target)

            def body():
                for element, item in unpacked:
                    self._assign([element], item if isinstance(item, gast.AST) else syntax.name(item))

                def filtered(conditions):
                    if not conditions:
                        return loop(rest, names) if rest else innermost()
                    test = self.atom(syntax.substitute(conditions[0], renamed), result)
                    self._emit(gast.If(test=test, body=self.nested(lambda: filtered(conditions[1:])), orelse=[]))

                filtered(list(generator.ifs))

            self._emit(gast.For(target=target, iter=iterable, body=self.nested(body), orelse=[], type_comment=None))

        loop(expr.generators, set())
        return syntax.name(result)

    def _consumes(self, call) -> bool:
        """Whether `call` runs through a generator argument before returning, once."""
        text = syntax.dotted(call.func)
        if text is None or syntax.root_name(call.func) in self.local_names:
            return False
        root, *parts = text.split(".")
        obj = self.ctx.lookup_global(root, _UNBOUND)
        for part in parts:
            obj = getattr(obj, part, _UNBOUND)
        return any(obj is consumer for consumer in _CONSUMERS)


_UNBOUND = object()

_CONSUMERS = (sum, list, tuple, max, min, any, all, sorted, dict, set, math.fsum, math.prod)  # NumPy wants sequences


def _is_builtin_sum_of_generator(call, normalizer) -> bool:
    func = call.func
    return (
        isinstance(func, gast.Name) and func.id == "sum" and func.id not in normalizer.local_names
        and normalizer.ctx.lookup_global("sum") is sum and not call.keywords and 1 <= len(call.args) <= 2
        and isinstance(call.args[0], (gast.GeneratorExp, gast.ListComp))
    )


