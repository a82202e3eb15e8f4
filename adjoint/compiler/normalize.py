"""Normalize: every statement one simple shape (A-normal form), temporaries named readably.

Assumes: a fenced function (see `fence`).
Guarantees, for the function body after `transform`:
- each statement is one of
  `name = rhs`, `a, b = name` (unpacking into names), `call(...)` (an expression statement),
  `assert ...` (left as written), or `return atom`, which is the last statement;
- `rhs` is an atom, or one operation on atoms: a binary or unary operation, a comparison, a
  call, an attribute read, a subscript (its index made of atoms and slices of atoms), or a
  tuple or list display; a call's callee is a dotted name (`np.linalg.inv`, `f`, `x.sum`);
- an atom is a name, a constant, or a constant of a library module (`np.pi`); a global or
  closure variable holding data (`SCALE`, `cfg.scale`) is first read into a local
  (`scale = SCALE`), so the pullback uses the value the forward pass read;
- every statement carries the `ORIGIN` of the user statement it came from.

Before:  h = np.tanh(x @ W + b)
After:   h_matmul = x @ W
         h_add = h_matmul + b
         h = np.tanh(h_add)
"""

from __future__ import annotations

import types

import gast
import numpy as np

from . import annotations as anno
from . import syntax
from .context import Context

_OPERATOR_TAGS = {
    gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "div", gast.FloorDiv: "floordiv",
    gast.Mod: "mod", gast.Pow: "pow", gast.MatMult: "matmul", gast.USub: "neg", gast.UAdd: "pos",
    gast.Not: "not", gast.Invert: "invert", gast.LShift: "lshift", gast.RShift: "rshift",
    gast.BitAnd: "and", gast.BitOr: "or", gast.BitXor: "xor",
}


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrite `node`'s body into A-normal form (see the module docstring)."""
    local_names = assigned_names(node)
    normalizer = _Normalizer(ctx, local_names)
    body = normalizer.block(node.body)
    if not body or not isinstance(body[-1], gast.Return):
        body.append(anno.copy_origin(node.body[-1], syntax.returns(syntax.const(None))))
    node.body = body
    return node


def assigned_names(node: gast.FunctionDef) -> set[str]:
    """The function's local names: parameters and every name it assigns."""
    args = node.args
    params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    names = {p.id for p in params}
    for stmt in node.body:
        names |= syntax.stored_names(stmt)
    return names


class _Normalizer:
    def __init__(self, ctx: Context, local_names: set[str]):
        self.ctx = ctx
        self.local_names = local_names
        self.out: list = []
        self.origin = None

    # ---- statements -------------------------------------------------------------------------

    def block(self, stmts) -> list:
        """Normalized statements for `stmts`, a body."""
        saved, self.out = self.out, []
        for stmt in stmts:
            self.statement(stmt)
        body, self.out = self.out, saved
        return body

    def nested(self, build) -> list:
        """The statements `build()` emits, as a separate body (an arm of a branch, a loop body)."""
        saved, self.out = self.out, []
        build()
        body, self.out = self.out, saved
        return body

    def statement(self, stmt):
        self.origin = stmt
        if isinstance(stmt, gast.Assign):
            self._assign(stmt.targets, stmt.value)
        elif isinstance(stmt, gast.AugAssign):
            self._augmented(stmt)
        elif isinstance(stmt, gast.AnnAssign):
            if stmt.value is not None:
                self._assign([stmt.target], stmt.value)
        elif isinstance(stmt, gast.Expr):
            self._expression_statement(stmt)
        elif isinstance(stmt, gast.Return):
            self._return(stmt)
        elif isinstance(stmt, gast.If):
            test = self.atom(stmt.test, "cond")
            body, orelse = self.block(stmt.body), self.block(stmt.orelse)
            self.origin = stmt
            self._emit(gast.If(test=test, body=body, orelse=orelse))
        elif isinstance(stmt, gast.For):
            self._for(stmt)
        elif isinstance(stmt, gast.While):
            self._while(stmt)
        elif isinstance(stmt, gast.With):
            self._with(stmt)
        elif isinstance(stmt, gast.Try):
            body, final = self.block(stmt.body), self.block(stmt.finalbody)
            self.origin = stmt
            self._emit(gast.Try(body=body, handlers=[], orelse=[], finalbody=final))
        elif not isinstance(stmt, gast.Pass):
            if isinstance(stmt, gast.FunctionDef):
                self._defaults(stmt, stmt.name)
            self._emit(stmt)  # assert, raise, nested def, `if flag: break`

    def _assign(self, targets, value):
        first, *others = targets
        if isinstance(first, gast.Name):
            self._emit(syntax.assign(first.id, self.rhs(value, first.id)))
        elif isinstance(first, gast.Subscript):
            self._store_item(first, self.atom(value, _target_hint(first)))
        elif _is_parallel(first, value):
            for target, element in zip(first.elts, value.elts):
                self._assign([target], element)
        else:
            self._unpack(first, self.atom(value, "_".join(_target_names(first))))
        for other in others:
            source = first.id if isinstance(first, gast.Name) else None
            if source is None:
                self.ctx.problem(other, "chained assignment to a tuple is not supported yet")
            elif isinstance(other, gast.Name):
                self._emit(syntax.assign(other.id, syntax.name(source)))
            else:
                self._assign([other], syntax.name(source))

    def _augmented(self, stmt):
        target = stmt.target
        if isinstance(target, gast.Name):
            value = syntax.binop(syntax.name(target.id), stmt.op, stmt.value)
            self._assign([target], value)
            anno.set_(self.out[-1], anno.IN_PLACE, stmt)
            return
        container = self._container(target.value, _target_hint(target))
        index = self._index(target.slice, _target_hint(target))
        hint = _target_hint(target)
        current = self._temp(hint + "_item", syntax.subscript(container, syntax.copy_node(index)))
        anno.set_(self.out[-1], anno.ITEM_READ, True)
        updated = self._temp(hint + "_" + _OPERATOR_TAGS.get(type(stmt.op), "op"),
                             syntax.binop(current, stmt.op, self.atom(stmt.value, hint)))
        self._set_item(container, index, updated, target)

    def _store_item(self, target, value):
        """`y[i] = v` as `y = adj.setitem(y, i, v)`: adjoint never updates arrays in place."""
        container = self._container(target.value, _target_hint(target))
        self._set_item(container, self._index(target.slice, _target_hint(target)), value, target)

    def _container(self, expr, hint):
        """The container an item assignment writes into; `y[i]` of `y[i][j] = v` is read into
        a name marked `ITEM_READ` (it is written back into `y` right after)."""
        if isinstance(expr, gast.Subscript):
            read = syntax.subscript(self.atom(expr.value, hint), self._index(expr.slice, hint))
            temp = self._temp(hint + "_item", read)
            anno.set_(self.out[-1], anno.ITEM_READ, True)
            return temp
        return self.atom(expr, hint)

    def _set_item(self, container, index, value, target):
        index = _index_value(index, self.ctx.reach("slice", slice))
        updated = syntax.call(f"{self.ctx.runtime_alias}.setitem", [container, index, value])
        if isinstance(target.value, gast.Name):
            self._emit(syntax.assign(target.value.id, updated))
        elif isinstance(target.value, gast.Subscript):  # y[i][j] = v
            temp = self._temp(_target_hint(target), updated)
            self._store_item(target.value, temp)
        else:
            self.ctx.problem(target, f"assigning into `{syntax.unparse(target.value)}` is not supported yet",
                             "assign into a local name: `y = obj.field; y[i] = v`")

    def _unpack(self, target, source):
        starred = [i for i, e in enumerate(target.elts) if isinstance(e, gast.Starred)]
        if starred:
            self._unpack_starred(target, source, starred[0])
            return
        names = []
        for index, element in enumerate(target.elts):
            later = [e.id for e in target.elts[index + 1 :] if isinstance(e, gast.Name)]
            if isinstance(element, gast.Name) and element.id in later:
                # `a, a = x` binds the last: the earlier value is discarded
                names.append(syntax.store(self.ctx.namer.new(f"{element.id}_discarded")))
            elif isinstance(element, gast.Name):
                names.append(syntax.store(element.id))
            else:
                names.append(syntax.store(self.ctx.namer.new("_".join(_target_names(element)))))
        self._emit(syntax.assign(syntax.tuple_(names, syntax.STORE), source))
        for element, placeholder in zip(target.elts, names):
            if not isinstance(element, gast.Name):
                self._assign([element], syntax.name(placeholder.id))

    def _unpack_starred(self, target, source, star):
        """`a, *rest, b = xs`: items and a slice, `rest` a list as Python makes it."""
        after = len(target.elts) - star - 1
        for index, element in enumerate(target.elts):
            if index == star:
                part = syntax.subscript(source, syntax.slice_(syntax.const(star) if star else None,
                                                              syntax.const(-after) if after else None, None))
                listed = syntax.call(self.ctx.reach("list", list), [self.atom(part, "_".join(_target_names(element)))])
                self._assign([element.value], listed)
            else:
                position = index if index < star else index - len(target.elts)
                self._assign([element], syntax.subscript(source, syntax.const(position)))

    def _expression_statement(self, stmt):
        value = stmt.value
        if isinstance(value, gast.Constant) or syntax.is_atom(value):
            return  # docstrings and bare names do nothing
        if _is_append(value, self.local_names):
            lst = value.func.value.id
            element = self.atom(value.args[0], lst)
            self._emit(syntax.assign(lst, syntax.call(f"{self.ctx.runtime_alias}.append", [syntax.name(lst), element])))
            return
        self._emit(syntax.expression_statement(self.rhs(value, _call_tag(value) or "value")))

    def _return(self, stmt):
        if stmt.value is None:
            self._emit(syntax.returns(syntax.const(None)))
            return
        hint = self.ctx.source.name if self.ctx.source.name != "<lambda>" else "out"
        self._emit(syntax.returns(self.atom(stmt.value, hint, name_whole=True)))

    def _with(self, stmt):
        """`with cm as c:` binds `c` through a new name, so later passes see `c` assigned."""
        items, bound = [], []
        for item in stmt.items:
            target = item.optional_vars
            if target is not None:
                temp = self.ctx.namer.new("_".join(_target_names(target)) + "_context")
                bound.append((target, temp))
                target = syntax.store(temp)
            items.append(gast.withitem(context_expr=item.context_expr, optional_vars=target))
        body = self.nested(lambda: [self._assign([t], syntax.name(n)) for t, n in bound])
        body += self.block(stmt.body)
        self.origin = stmt
        self._emit(gast.With(items=items, body=body, type_comment=None))

    def _for(self, stmt):
        walked = _walked_names(stmt.iter)
        for child in (n for s in stmt.body for n in gast.walk(s)):
            updated = _updated_container(child)
            if updated in walked:
                self.ctx.problem(
                    child, f"this updates `{updated}`, which the loop walks: Python would walk the updated "
                    "items, adjoint's copy would not", f"walk a copy (`for ... in list({updated})`) or index by position",
                )
        iterable = self._iterable(stmt.iter)
        target, unpacked = self._loop_target(stmt.target, iterable)
        body = self.nested(lambda: [self._assign([t], syntax.name(n)) for t, n in unpacked])
        body += self.block(stmt.body)
        self.origin = stmt
        self._emit(gast.For(target=target, iter=iterable, body=body, orelse=[], type_comment=None))

    def _loop_target(self, target, iterable):
        """The loop's target with each tuple that unpacks an item replaced by a name, and the
        `(tuple, name)` pairs to unpack at the start of the body (`for k, v in pairs` reads
        `k, v = item`), so every item a loop binds is one value the pullback can route."""
        kind = iterable.func.id if isinstance(iterable, gast.Call) else None
        if kind == "enumerate" and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            inner, unpacked = self._loop_target(target.elts[1], iterable.args[0])
            return syntax.tuple_([target.elts[0], inner], syntax.STORE), unpacked
        if kind == "zip" and isinstance(target, gast.Tuple) and len(target.elts) == len(iterable.args):
            parts = [self._loop_target(t, a) for t, a in zip(target.elts, iterable.args)]
            return syntax.tuple_([p[0] for p in parts], syntax.STORE), [u for p in parts for u in p[1]]
        if kind == "reversed":
            return self._loop_target(target, iterable.args[0])
        if isinstance(target, (gast.Tuple, gast.List)) and kind != "range":
            item = self.ctx.namer.new("_".join(_target_names(target)))
            return syntax.store(item), [(target, item)]
        return target, []

    def _iterable(self, expr):
        """`range(n)`, `enumerate(xs)`, `zip(a, b)`, `reversed(xs)` kept as calls of atoms (the
        pullback reads their structure), anything else an atom."""
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

    def _emit(self, stmt):
        anno.copy_origin(self.origin, stmt)
        if not hasattr(stmt, "lineno") and hasattr(self.origin, "lineno"):
            gast.copy_location(stmt, self.origin)
        self.out.append(stmt)

    def _temp(self, hint, rhs):
        temp = self.ctx.namer.new(hint)
        self._emit(syntax.assign(temp, rhs))
        return syntax.name(temp)

    # ---- expressions ------------------------------------------------------------------------

    def atom(self, expr, hint: str, name_whole: bool = False):
        """`expr` as an atom, emitting the statements that compute it."""
        folded = _fold_sign(expr)
        if isinstance(folded, gast.Name) and self._is_global_value(folded.id):
            # read now into a local: the pullback then uses the value this statement used
            local = folded.id.lower() if folded.id.lower() != folded.id else f"{folded.id}_value"
            self._emit(syntax.assign(self.ctx.namer.new(local), folded))
            return syntax.name(self.out[-1].targets[0].id)
        if syntax.is_atom(folded) or self._is_global_read(folded):
            return folded
        lowered = self._lowered(folded, hint)
        if lowered is not None:
            return lowered
        rhs = self.rhs(folded, hint)
        tag = _tag(folded)
        temp = self.ctx.namer.new(hint if name_whole or hint.endswith(tag) else f"{hint}_{tag}")
        self._emit(syntax.assign(temp, rhs))
        return syntax.name(temp)

    def rhs(self, expr, hint: str):
        """`expr` with atoms for operands: one operation, ready to be assigned."""
        expr = _fold_sign(expr)
        new = self._rhs(expr, hint)
        if new is not expr and hasattr(expr, "lineno"):
            gast.copy_location(new, expr)  # problems point at the user's expression
        return new

    def _rhs(self, expr, hint: str):
        lowered = self._lowered(expr, hint)
        if lowered is not None:
            return lowered
        if isinstance(expr, gast.BinOp):
            return syntax.binop(self.atom(expr.left, hint), expr.op, self.atom(expr.right, hint))
        if isinstance(expr, gast.UnaryOp):
            return syntax.unary(expr.op, self.atom(expr.operand, hint))
        if isinstance(expr, gast.Compare):
            return syntax.compare(
                self.atom(expr.left, hint), expr.ops, [self.atom(c, hint) for c in expr.comparators]
            )
        if isinstance(expr, gast.Call):
            return self._call(expr, hint)
        if isinstance(expr, gast.Attribute) and not self._is_global_read(expr):
            return syntax.attr(self.atom(expr.value, hint), expr.attr)
        if isinstance(expr, gast.Subscript):
            return syntax.subscript(self.atom(expr.value, hint), self._index(expr.slice, hint))
        if isinstance(expr, (gast.Tuple, gast.List, gast.Set)):
            if any(isinstance(e, gast.Starred) for e in expr.elts) and not isinstance(expr, gast.Set):
                return self._spread_display(expr, hint)
            elements = [self.atom(e, hint) for e in expr.elts]
            return gast.Set(elts=elements) if isinstance(expr, gast.Set) else (
                syntax.tuple_(elements) if isinstance(expr, gast.Tuple) else syntax.list_(elements))
        if isinstance(expr, gast.Dict):
            if any(k is None for k in expr.keys):
                self.ctx.problem(expr, "`**` in a dict display is not supported yet", "build the dict with `dict(a, key=value)`")
                return expr
            keys = [self.atom(k, hint + "_key") for k in expr.keys]
            return gast.Dict(keys=keys, values=[self.atom(v, hint) for v in expr.values])
        if isinstance(expr, gast.Lambda):
            self._defaults(expr, hint)
        return expr  # atoms, lambdas, f-strings, and constructs the fence reported

    def _defaults(self, function, hint):
        """A nested function's default values as atoms, computed where it is defined: the
        pullback routes their cotangents like those of the names it closes over."""
        args = function.args
        args.defaults = [self.atom(d, f"{hint}_default") for d in args.defaults]
        args.kw_defaults = [None if d is None else self.atom(d, f"{hint}_default") for d in args.kw_defaults]

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
                "consumes it at once (`sum`, `list`, `max`, `np.stack`...)",
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

        def loop(generators):
            generator, *rest = generators
            iterable = self._iterable(syntax.substitute(generator.iter, renamed))

            def body():
                def filtered(conditions):
                    if not conditions:
                        return loop(rest) if rest else innermost()
                    test = self.atom(syntax.substitute(conditions[0], renamed), result)
                    self._emit(gast.If(test=test, body=self.nested(lambda: filtered(conditions[1:])), orelse=[]))

                filtered(list(generator.ifs))

            target = syntax.substitute(generator.target, renamed)
            self._emit(gast.For(target=target, iter=iterable, body=self.nested(body), orelse=[], type_comment=None))

        loop(expr.generators)
        return syntax.name(result)

    def _call(self, expr, hint):
        func = expr.func
        local_chain = syntax.root_name(func) in self.local_names and not isinstance(getattr(func, "value", None), gast.Name)
        if isinstance(func, gast.Attribute) and (syntax.dotted(func) is None or local_chain):
            func = syntax.attr(self.atom(func.value, hint), func.attr)  # `(a - b).mean()` stays a method call
        elif syntax.dotted(func) is None:
            func = self.atom(func, hint + "_fn")
        args = [gast.Starred(value=self.atom(a.value, hint), ctx=gast.Load()) if isinstance(a, gast.Starred)
                else self._comprehension(a, hint) if isinstance(a, gast.GeneratorExp) and self._consumes(expr)
                else self.atom(a, hint) for a in expr.args]
        keywords = [gast.keyword(arg=k.arg, value=self.atom(k.value, hint)) for k in expr.keywords]
        return syntax.call(func, args, keywords)

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

    def _index(self, index, hint):
        if isinstance(index, gast.Slice):
            parts = (index.lower, index.upper, index.step)
            lower, upper, step = (None if p is None else self.atom(p, hint + "_index") for p in parts)
            return syntax.slice_(lower, upper, step)
        if isinstance(index, gast.Tuple):
            return syntax.tuple_([self._index(e, hint) for e in index.elts])
        return self.atom(index, hint + "_index")

    def _is_global_read(self, expr) -> bool:
        """`np.pi`: a constant of a library module, which generated code may read at any time.
        (An attribute of the user's objects or modules, `cfg.scale`, may change: it is read into
        a temporary.)"""
        root = syntax.root_name(expr)
        if not isinstance(expr, gast.Attribute) or root is None or root in self.local_names:
            return False
        module = self.ctx.lookup_global(root)
        return isinstance(module, types.ModuleType) and module.__name__.split(".")[0] in _LIBRARIES

    def _is_global_value(self, name: str) -> bool:
        """A global or closure variable holding data (not a module, function or class)."""
        if name in self.local_names:
            return False
        value = self.ctx.lookup_global(name, _UNBOUND)
        return value is not _UNBOUND and not isinstance(value, types.ModuleType) and not callable(value)


_LIBRARIES = {"numpy", "math", "scipy", "builtins", "cmath"}
_CONSUMERS = (sum, list, tuple, max, min, any, all, sorted, dict, set, np.stack, np.array, np.asarray,
              np.concatenate, np.hstack, np.vstack)
_ITERATORS = {"range": range, "enumerate": enumerate, "zip": zip, "reversed": reversed}


def _is_builtin_sum_of_generator(call, normalizer) -> bool:
    func = call.func
    return (
        isinstance(func, gast.Name) and func.id == "sum" and func.id not in normalizer.local_names
        and normalizer.ctx.lookup_global("sum") is sum and not call.keywords and 1 <= len(call.args) <= 2
        and isinstance(call.args[0], (gast.GeneratorExp, gast.ListComp))
    )


def _is_append(value, local_names) -> bool:
    """`lst.append(v)` on a local list (adjoint rebinds `lst` to a new list instead)."""
    return (
        isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and value.func.attr == "append"
        and isinstance(value.func.value, gast.Name) and value.func.value.id in local_names
        and len(value.args) == 1 and not value.keywords
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
            return _target_hint(target)
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and isinstance(node.func.value, gast.Name):
        if node.func.attr in ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"):
            return node.func.value.id
    return None


def _target_hint(target) -> str:
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else "item"


def _index_value(index, slice_name):
    """An index as an ordinary expression: `1:3` becomes `slice(1, 3, None)`."""
    if isinstance(index, gast.Slice):
        parts = [syntax.const(None) if p is None else p for p in (index.lower, index.upper, index.step)]
        return syntax.call(slice_name, parts)
    if isinstance(index, gast.Tuple):
        return syntax.tuple_([_index_value(e, slice_name) for e in index.elts])
    return index
_UNBOUND = object()


def _is_parallel(target, value) -> bool:
    """`a, b = f(x), g(y)`: assignable one by one, as no element reads a target."""
    names = [e.id for e in getattr(target, "elts", ()) if isinstance(e, gast.Name)]
    return (
        isinstance(value, (gast.Tuple, gast.List)) and len(names) == len(target.elts) == len(value.elts)
        and not syntax.load_names(value) & set(names)
    )


def _fold_sign(expr):
    """`-2.0` parses as a negation of `2.0`; keep it a constant (in tuples too)."""
    if isinstance(expr, gast.Tuple):
        return syntax.tuple_([_fold_sign(e) for e in expr.elts], type(expr.ctx))
    if (
        isinstance(expr, gast.UnaryOp) and isinstance(expr.op, (gast.USub, gast.UAdd))
        and isinstance(expr.operand, gast.Constant)
        and isinstance(expr.operand.value, (int, float, complex))
        and not isinstance(expr.operand.value, bool)
    ):
        value = expr.operand.value
        return syntax.const(-value if isinstance(expr.op, gast.USub) else value)
    return expr


def _tag(expr) -> str:
    if isinstance(expr, (gast.BinOp, gast.UnaryOp)):
        return _OPERATOR_TAGS.get(type(expr.op), "op")
    if isinstance(expr, gast.Call):
        return _call_tag(expr) or "call"
    if isinstance(expr, gast.Attribute):
        return expr.attr
    if isinstance(expr, gast.Subscript):
        return "item"
    if isinstance(expr, gast.Compare):
        return "cond"
    return type(expr).__name__.lower()


def _call_tag(expr):
    if isinstance(expr, gast.Call):
        text = syntax.dotted(expr.func)
        return text.rsplit(".", 1)[-1] if text else None
    return None


def _target_names(target):
    if isinstance(target, gast.Name):
        return [target.id]
    if isinstance(target, gast.Starred):
        return _target_names(target.value)
    if not isinstance(target, (gast.Tuple, gast.List)):
        return [_target_hint(target)]
    return [n for element in target.elts for n in _target_names(element)]
