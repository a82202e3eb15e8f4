"""Normalize: every statement one simple shape (A-normal form), temporaries named readably.

Assumes: the output of `control` (one final `return`, no `continue`, `break` only as a loop's
trailing `if flag: break`).
Guarantees, for the function body after `transform`:
- each simple statement is one of `name = rhs`, `a, b = name` (unpacking into names),
  `call(...)` (an expression statement), `assert`/`raise` (left as written), a nested `def`
  (its defaults made atoms), or `return atom`, the last statement;
- compound statements are `if atom:`, `for target in ITER:` (ITER an atom, or `range`,
  `enumerate`, `zip`, `reversed` of atoms; see `iteration`), `while atom:` / `while True:`,
  `with` and `try`/`finally`, with normalized bodies;
- `rhs` is an atom, or one operation on atoms: a binary or unary operation, a comparison, a
  call (`*atom` and `**atom` arguments too), an attribute read, a subscript (its index made of
  atoms and slices of atoms), a tuple, list, set or dict display, a lambda, or an f-string;
  a call's callee is a dotted name (`np.linalg.inv`, `f`, `x.sum`), a method of a global
  model is called on the model as a receiver (`model = MODEL; model.loss(x)`), `super()` is
  `super(__class__, self)` and `getattr(x, "W")` is `x.W`;
- conditional expressions, `and`/`or`, comprehensions and starred displays are statements
  (see `lowering`); item assignments and appends are `adj.setitem`/`adj.append` (see
  `updates`);
- an atom is a name, a constant, or a constant of a library module (`np.pi`); a global or
  closure variable holding data (`SCALE`) is first read into a local (`scale = SCALE`), so the
  pullback uses the value the forward pass read;
- every statement carries the `ORIGIN` of the user statement it came from.
Refused here (located problems): a generator expression not consumed at once, a loop that
updates what it walks, `**` in a dict display, chained assignment to a tuple, assignment into
an attribute's item.

Before:  h = np.tanh(x @ W + b)
After:   h_matmul = x @ W
         h_add = h_matmul + b
         h = np.tanh(h_add)
"""

from __future__ import annotations

import builtins
import types

import gast

from .. import registry
from ..runtime import structs
from . import annotations as anno
from . import syntax
from .iteration import Iteration
from .lowering import Lowering
from .unpacking import Unpacking, _is_swap
from .updates import ItemUpdates, _is_append, is_add_at
from .context import Context
from .naming import OPERATOR_TAGS



def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Rewrite `node`'s body into A-normal form (see the module docstring); `ctx.local_names`
    become the names the function assigns before it (the later passes read them)."""
    local_names = ctx.local_names = assigned_names(node)
    positional = node.args.posonlyargs + node.args.args
    method_of_a_class = positional and "__class__" in ctx.fn.__code__.co_freevars
    normalizer = _Normalizer(ctx, local_names, positional[0].id if method_of_a_class else None)
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


class _Normalizer(Lowering, Iteration, ItemUpdates, Unpacking):
    def __init__(self, ctx: Context, local_names: set[str], first_parameter: str | None = None):
        self.ctx = ctx
        self.local_names = local_names
        self.out: list = []
        self.origin = None
        self._first_parameter = first_parameter  # a method's `self`, which `super()` reads

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
            self._store_item(first, self.atom(value, syntax.target_root(first)))
        elif _is_parallel(first, value):
            for target, element in zip(first.elts, value.elts):
                self._assign([target], element)
        elif _is_swap(first, value):
            self._swap(first, value)
        else:
            self._unpack(first, self.atom(value, "_".join(syntax.target_names(first))))
        for other in others:
            source = first.id if isinstance(first, gast.Name) else None
            if source is None:
                self.ctx.problem(other, "chained assignment to a tuple is not supported yet")
            elif isinstance(other, gast.Name):
                self._emit(syntax.assign(other.id, syntax.name(source)))
            else:
                self._assign([other], syntax.name(source))

    def _expression_statement(self, stmt):
        value = stmt.value
        if isinstance(value, gast.Constant) or syntax.is_atom(value):
            return  # docstrings and bare names do nothing
        if is_add_at(value, self.local_names, self.ctx.fn):
            array = value.args[0].id
            parts = [syntax.name(array)] + [self.atom(a, array) for a in value.args[1:]]
            update = syntax.call(f"{self.ctx.runtime_alias}.add_at", parts)
            anno.set_(update, anno.MADE_UPDATE, True)
            self._emit(syntax.assign(array, update))
            return
        if _is_append(value, self.local_names):
            lst = value.func.value.id
            element = self.atom(value.args[0], lst)
            update = syntax.call(f"{self.ctx.runtime_alias}.append", [syntax.name(lst), element])
            anno.set_(update, anno.MADE_UPDATE, True)
            self._emit(syntax.assign(lst, update))
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
                temp = self.ctx.namer.new("_".join(syntax.target_names(target)) + "_context")
                bound.append((target, temp))
                target = syntax.store(temp)
            items.append(gast.withitem(context_expr=item.context_expr, optional_vars=target))
        body = self.nested(lambda: [self._assign([t], syntax.name(n)) for t, n in bound])
        body += self.block(stmt.body)
        self.origin = stmt
        self._emit(gast.With(items=items, body=body, type_comment=None))

    def _emit(self, stmt):
        anno.copy_origin(self.origin, stmt)
        if not hasattr(stmt, "lineno") and hasattr(self.origin, "lineno"):
            syntax.copy_location(stmt, self.origin)
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
            self.ctx.user_names[self.out[-1].targets[0].id] = folded.id
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
            syntax.copy_location(new, expr)  # problems point at the user's expression
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

    def _call(self, expr, hint):
        func = expr.func
        if self._is_constant_getattr(expr):  # `getattr(self, "W")` is `self.W`
            return syntax.attr(self.atom(expr.args[0], hint), expr.args[1].value)
        if isinstance(func, gast.Name) and func.id == "super" and not expr.args and self._first_parameter:
            # `super()` reads the method's class and its first parameter: say so, as Python does
            expr = syntax.call("super", [syntax.name("__class__"), syntax.name(self._first_parameter)])
        root = syntax.root_name(func)
        local_chain = root in self.local_names and not isinstance(getattr(func, "value", None), gast.Name)
        if isinstance(func, gast.Attribute) and (syntax.dotted(func) is None or local_chain or self._is_model(func)):
            func = syntax.attr(self.atom(func.value, hint), func.attr)  # `(a - b).mean()` stays a method call
        elif syntax.dotted(func) is None:
            func = self.atom(func, hint + "_fn")
        args = [gast.Starred(value=self.atom(a.value, hint), ctx=gast.Load()) if isinstance(a, gast.Starred)
                else self._comprehension(a, hint) if isinstance(a, gast.GeneratorExp) and self._consumes(expr)
                else self.atom(a, hint) for a in expr.args]
        keywords = [gast.keyword(arg=k.arg, value=self.atom(k.value, hint)) for k in expr.keywords]
        return syntax.call(func, args, keywords)

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

    def _is_constant_getattr(self, expr) -> bool:
        args = expr.args
        return (
            isinstance(expr.func, gast.Name) and expr.func.id == "getattr" and "getattr" not in self.local_names
            and self.ctx.lookup_global("getattr") is builtins.getattr and len(args) == 2 and not expr.keywords
            and isinstance(args[1], gast.Constant) and isinstance(args[1].value, str) and args[1].value.isidentifier()
        )

    def _is_model(self, func) -> bool:
        """`func` is a method of a global or closure variable holding an object or container of
        the user's (`model.loss`, `model.encoder.forward`), called on it as a receiver so a
        gradient can flow into it; unless the method is registered (`_log.info`, marked
        non-differentiable)."""
        name = syntax.root_name(func)
        if name is None or name in self.local_names or not is_object_of_user(self.ctx.lookup_global(name, _UNBOUND)):
            return False
        method = self.ctx.lookup_global(name)
        for attribute in syntax.dotted(func).split(".")[1:]:
            method = getattr(method, attribute, None)
        return registry.lookup(method) is None and not registry.is_non_differentiable(method)

    def _is_global_value(self, name: str) -> bool:
        """A global or closure variable holding data (not a module, function or class)."""
        if name in self.local_names:
            return False
        value = self.ctx.lookup_global(name, _UNBOUND)
        return value is not _UNBOUND and not isinstance(value, types.ModuleType) and not callable(value)


_LIBRARIES = {"numpy", "math", "scipy", "builtins", "cmath"}


def is_object_of_user(value) -> bool:
    """An object or container that methods are called on as a receiver (not a module, class,
    function or array)."""
    return structs.is_struct(value) or isinstance(value, (dict, list, tuple))


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
        return OPERATOR_TAGS.get(type(expr.op), "op")
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


