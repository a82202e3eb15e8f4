"""Inline: stitch a rule's math into generated code instead of calling the rule.

Rules stay ordinary, runnable Python functions; this module reads their source and, when
it has one of two shapes, copies their math into the generated pullback:

- elementwise partials (`registry.elementwise`): `def d_tanh(ans, x): return 1 - ans ** 2`
  becomes `x_bar = h_bar * (1 - h ** 2)`, with `adj.unbroadcast(..., x)` for several inputs;
- full rules whose forward is assignments to names, and whose pullback is assignments to names
  and one final `return` of a tuple:

      def sum_rrule(a, axis=None, dtype=None, keepdims=False):
          def sum_pullback(g):
              return (adj.unreduce(g, a, axis=axis, keepdims=keepdims),)
          return np.sum(a, axis=axis, dtype=dtype, keepdims=keepdims), sum_pullback

  becomes `x_bar = adj.unreduce(s_bar, x, axis=1)` for `s = np.sum(x, axis=1)`.

The user's own statement computes the value, so a rule is inlined only when its value is the
primitive's: adjoint's own rules promise it, and a user's rule (`adjoint.rrule`) must show it,
its value being literally the primitive called on the rule's own parameters (`return
softplus(x), softplus_pullback`). A user's rule that computes its value otherwise (a stable
log-sum-exp overriding a naive one) is called, so that its value is the one used.

Rule parameters become the call's atoms, rule locals get names derived from the call's
target, and the rule's globals become names generated code can reach. Keyword arguments
equal to a helper's default are dropped, and `g * 1`-style products simplified, so the
result reads as written by hand. A rule of any other shape is called as it is (see `calls`).
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
import operator
import textwrap
import weakref

import gast
import numpy as np

from .. import runtime
from . import annotations as anno
from . import signatures, source, syntax, user_rules
from .context import Context, free_name
from .simplify import Simplifier

_DEFAULTS = "call_defaults"  # annotation: a rule's call -> {keyword: default} of its callee


class BindError(Exception):
    """A call's arguments do not fit the rule's parameters."""


@dataclasses.dataclass
class Plan:
    """A rule's definition, taken apart for inlining."""

    params: list[str]
    defaults: dict[str, object]  # parameter -> default constant
    pre: list  # forward statements the pullback needs, besides the value
    value_name: str | None  # the rule's local name for its value
    cotangent: str  # the pullback's parameter
    body: list  # pullback statements before its final return
    results: list  # one expression (or None) per positional input
    local_names: set[str]
    global_objects: dict[str, object]  # the rule's free names, as they were when planned
    source: object = None  # the function the plan was read from (its namespace is live)
    elementwise: bool = False  # every input broadcasts against every other
    keyword_only: list[str] = dataclasses.field(default_factory=list)
    runtime_alias: str | None = None  # a name the plan's own code uses for adjoint's runtime
    # the constants a call site binds -> (pre, body, results) with them filled in and simplified,
    # the rule's names still in place (see `_filled`)
    filled: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass
class Inlined:
    """A rule instantiated at one call site."""

    forward: list  # statements to run after the user's statement
    body: list  # pullback statements, given the cotangent name
    results: list  # per positional argument of the call: an expression, or None


# rule -> its Plan, or None; a rule registered again is a new rule, planned afresh, and one no
# longer registered anywhere is forgotten with its plan
_plans: "weakref.WeakKeyDictionary[object, Plan | None]" = weakref.WeakKeyDictionary()


def plan_for(rule) -> Plan | None:
    """The inlining plan of a registered rule, or None if it is not in an inlinable shape.

    Plans are cached per rule, and read again when a free name of the rule has been rebound.

    >>> from adjoint import registry
    >>> plan_for(registry.lookup(np.tanh)) is plan_for(registry.lookup(np.tanh))
    True
    """
    plan = _plans.get(rule, _UNPLANNED)
    if plan is _UNPLANNED or (plan is not None and not _still_current(plan)):
        try:
            if rule.partials is not None:
                plan = _plan_partials(rule.partials)
            else:
                users = rule.rrule is not rule.definition  # registered `checked`: a user's rule
                plan = _plan_rule(rule.definition, primitive=rule.primitive if users else None)
        except (_NotInlinable, OSError, TypeError):
            plan = None
        _plans[rule] = plan
    return plan


_UNPLANNED = object()


def _still_current(plan) -> bool:
    return all(free_name(plan.source, name) is obj for name, obj in plan.global_objects.items())


class _NotInlinable(Exception):
    pass


def _definition(fn) -> gast.FunctionDef:
    node = syntax.parse(_dedented_source(fn)).body[0]
    if not isinstance(node, gast.FunctionDef):
        raise _NotInlinable
    node.decorator_list = []
    return node


def _dedented_source(fn) -> str:
    """The `def` of `fn`, without its decorators: what a plan reads (a decorator, as the
    `@elementwise(np.tanh)` of a three-line rule, would be parsed only to be dropped)."""
    lines = source.definition_lines(fn)
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))), 0)
    return textwrap.dedent("".join(lines[start:]))


def _plan_partials(partials) -> Plan:
    node = _definition(partials)
    names = [a.id for a in node.args.args]
    if node.args.vararg or node.args.kwarg or len(node.body) != 1 or len(names) < 2:
        raise _NotInlinable
    (ret,) = node.body
    if not isinstance(ret, gast.Return):
        raise _NotInlinable
    ans, inputs = names[0], names[1:]
    nodes = syntax.walk(node)
    taken = {n.id for n in nodes if type(n) is gast.Name}
    cotangent = _unused("g", taken)
    alias = _unused("adj", taken)
    if len(inputs) == 1:
        results = [_times(cotangent, ret.value)]
    else:
        if not isinstance(ret.value, gast.Tuple) or len(ret.value.elts) != len(inputs):
            raise _NotInlinable
        results = [
            None if _is_none(e) else syntax.call(f"{alias}.unbroadcast", [_times(cotangent, e), syntax.name(x)])
            for e, x in zip(ret.value.elts, inputs)
        ]
    return Plan(
        inputs, _defaults(node, inputs), [], ans, cotangent, [], results, set(names) | {cotangent},
        _globals_of(partials, nodes, set(names)), partials, elementwise=True, runtime_alias=alias,
    )


def _plan_rule(rule_fn, primitive=None) -> Plan:
    """Plan a full rule. A user's rule, given with the `primitive` it is registered for, must
    compute its value as that primitive does (see `user_rules`) and must not return
    `None` where it is not written literally, since inlined code cannot turn a runtime `None`
    into zeros. Adjoint's own rules (no `primitive`) compute their primitives' values."""
    node = _definition(rule_fn)
    args = node.args
    if args.vararg or args.kwarg or args.posonlyargs or len(node.body) < 2:
        raise _NotInlinable  # (a rule that returns a lambda as its pullback is called)
    *pre, pullback, ret = node.body
    if not (isinstance(pullback, gast.FunctionDef) and isinstance(ret, gast.Return)):
        raise _NotInlinable
    if not all(_assigns_one_name(s) for s in pre):
        raise _NotInlinable
    value, returned_pullback = _pair(ret.value)
    if syntax.dotted(returned_pullback) != pullback.name or len(pullback.args.args) != 1:
        raise _NotInlinable
    *body, final = pullback.body
    if not isinstance(final, gast.Return) or not all(_assigns_one_name(s) for s in body):
        raise _NotInlinable
    params = [a.id for a in args.args + args.kwonlyargs]
    assigned = {s.targets[0].id: s.value for s in pre + body}
    if set(assigned) & set(params) or len(assigned) != len(pre) + len(body):
        raise _NotInlinable  # a parameter or local is rebound
    results = final.value.elts if isinstance(final.value, gast.Tuple) else [final.value]
    results = [None if _is_none(assigned.get(syntax.dotted(r), r)) else r for r in results]
    value_name = value.id if isinstance(value, gast.Name) else None
    pre = [s for s in pre if s.targets[0].id != value_name]
    local_names = set(params) | {pullback.name, pullback.args.args[0].id} | set(assigned)
    global_objects = _globals_of(rule_fn, syntax.walk(node), local_names)
    if primitive is not None and not user_rules.inlinable(
        rule_fn, primitive, assigned.get(value_name, value), pullback, results, assigned, global_objects
    ):
        raise _NotInlinable
    return Plan(
        [a.id for a in args.args], _defaults(node, params), pre, value_name,
        pullback.args.args[0].id, body, results, local_names, global_objects, rule_fn,
        keyword_only=[a.id for a in args.kwonlyargs],
    )


def _pair(value):
    if not (isinstance(value, gast.Tuple) and len(value.elts) == 2):
        raise _NotInlinable
    return value.elts


def _assigns_one_name(stmt) -> bool:
    return (
        isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], gast.Name)
        and not any(isinstance(n, (gast.Lambda, gast.NamedExpr, gast.Yield)) for n in syntax.walk(stmt))
    )


def _defaults(node, params) -> dict[str, object]:
    args = node.args
    positional = args.args[len(args.args) - len(args.defaults):] if args.defaults else []
    pairs = list(zip(positional, args.defaults)) + [
        (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None
    ]
    defaults = {}
    for param, default in pairs:
        defaults[param.id] = _literal(default)
    return defaults


def _literal(node):
    """The value of a default written as a literal: a constant, `-1`, or a tuple of them (`(-2, -1)`)."""
    if type(node) is gast.Constant and (node.value is None or type(node.value) in (bool, int, float, str)):
        return node.value
    if type(node) is gast.UnaryOp and type(node.op) in _SIGNS and type(node.operand) is gast.Constant:
        if type(node.operand.value) in (int, float):  # (not `-True`, which Python reads as -1)
            return _SIGNS[type(node.op)](node.operand.value)
    if type(node) is gast.Tuple:
        return tuple(_literal(e) for e in node.elts)
    raise _NotInlinable


_SIGNS = {gast.USub: operator.neg, gast.UAdd: operator.pos}


def _globals_of(fn, nodes, local_names) -> dict[str, object]:
    """What each free name of the rule refers to; annotate its calls with their defaults.
    `nodes`: every node of the rule's definition (`syntax.walk`'s)."""
    cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    namespace = collections.ChainMap(cells, fn.__globals__, vars(builtins))  # (Python's order, nothing copied)
    found = {}
    for name in {n.id for n in nodes if type(n) is gast.Name and type(n.ctx) is gast.Load} - local_names:
        if name not in namespace:
            raise _NotInlinable
        found[name] = free_name(fn, name)
    for call in (n for n in nodes if type(n) is gast.Call):
        callee = syntax.evaluate_dotted(call.func, namespace)
        anno.set_(call, _DEFAULTS, signatures.keyword_defaults(callee))
        if isinstance(callee, np.ufunc) or callee is np.where:
            anno.set_(call, anno.FOLDABLE, anno.Ref(callee))
    return found


def _times(cotangent, expr):
    return syntax.binop(syntax.name(cotangent), gast.Mult, expr)


def _is_none(expr) -> bool:
    return isinstance(expr, gast.Constant) and expr.value is None


def _unused(base, taken) -> str:
    while base in taken:
        base += "_"
    return base


# ---- instantiation at a call site --------------------------------------------------------------

def instantiate(plan: Plan, args: list, keywords: dict, target: str, cotangent: str, ctx: Context) -> Inlined:
    """The rule's forward and pullback for `target = primitive(*args, **keywords)`, with
    `cotangent` the name of `target`'s cotangent. Every rule name is replaced in one pass, so
    user names that equal rule names (a variable called `g`) cannot be captured."""
    mapping = _bind(plan, args, keywords)
    if plan.value_name:
        mapping[plan.value_name] = target
    mapping[plan.cotangent] = cotangent
    for local in sorted(plan.local_names - set(mapping)):
        mapping[local] = ctx.namer.new(f"{target}_{local}")
    if plan.runtime_alias:
        mapping[plan.runtime_alias] = ctx.runtime_alias
    for global_name, obj in plan.global_objects.items():
        mapping[global_name] = ctx.reach(global_name, obj)  # (a name the rule only reads)
        if plan.source is not None and obj is not runtime:
            ctx.rely_on(global_name, obj, owner=plan.source)  # rebinding it in the rule's module

    template = _template(plan, mapping)
    if template is None:  # (filled in as it is written)
        forward, body, results = _fill(plan, mapping)
    else:
        names = {rule_name: _plain(value) for rule_name, value in mapping.items() if type(value) is not gast.Constant}
        pre, body, results = template
        forward = [syntax.substitute(s, names) for s in pre]
        body = [syntax.substitute(s, names) for s in body]
        results = [None if r is None else syntax.substitute(r, names) for r in results[: len(args)]]
    results = results[: len(args)] + [None] * (len(args) - len(results))
    if plan.elementwise:
        results = [_without_needless_unbroadcast(r, i, args, ctx) for i, r in enumerate(results)]
    return Inlined(forward, body, results)


def _template(plan: Plan, mapping: dict) -> tuple[list, list, list] | None:
    """The plan's code with the constants `mapping` binds filled in and simplified (`_Fill`),
    its other names still the rule's, for a call site that binds the rule's names to names and
    constants: what simplifying does depends on the constants only, so it is done once per plan
    and constants, and each call site copies it with its names. None where the site binds an
    expression, or a constant that carries a position or annotations of its own."""
    constants = []
    for rule_name, value in mapping.items():
        if type(value) is gast.Constant and value.__dict__.keys() <= _PLAIN_CONSTANT:
            constants.append((rule_name, value))
        elif not (isinstance(value, str) or type(value) is gast.Name):
            return None
    key = tuple(sorted((rule_name, type(c.value), repr(c.value), c.kind) for rule_name, c in constants))
    found = plan.filled.get(key)
    if found is None:
        found = plan.filled[key] = _fill(plan, dict(constants))
    return found


_PLAIN_CONSTANT = {"value", "kind"}  # (a constant's fields: no position, no annotations)
_PLAIN_NAME = {"id", "ctx", "annotation", "type_comment"}


def _plain(value):
    """A name an argument passes, as its identifier where it is nothing more (a rule's parameter
    is only read, so the two substitute alike, the identifier without copying a node)."""
    if type(value) is gast.Name and value.annotation is None and value.__dict__.keys() <= _PLAIN_NAME:
        return value.id
    return value


def _fill(plan: Plan, mapping: dict) -> tuple[list, list, list]:
    def fill(node):
        return _Fill().visit(syntax.substitute(node, mapping))

    return [fill(s) for s in plan.pre], [fill(s) for s in plan.body], [None if r is None else fill(r) for r in plan.results]


def _without_needless_unbroadcast(result, index, args, ctx):
    """In an elementwise operation, `adj.unbroadcast(e, x)` is `e` when every other operand is
    a Python number constant: nothing broadcast `x`."""
    others = args[:index] + args[index + 1 :]
    if (
        all(type(a) is gast.Constant and type(a.value) in (int, float) for a in others)
        and isinstance(result, gast.Call) and syntax.dotted(result.func) == f"{ctx.runtime_alias}.unbroadcast"
    ):
        return result.args[0]
    return result


def _bind(plan, args, keywords) -> dict:
    if len(args) > len(plan.params):
        count = len(plan.params)
        raise BindError(f"takes at most {count} positional argument{'s' if count != 1 else ''}")
    mapping = dict(zip(plan.params, args))
    for key, value in keywords.items():
        if key in mapping:
            raise BindError(f"got `{key}` twice")
        if key not in plan.defaults and key not in plan.params and key not in plan.keyword_only:
            raise BindError(f"does not support the keyword argument `{key}=`")
        mapping[key] = value
    for param in plan.params + plan.keyword_only + list(plan.defaults):
        if param not in mapping:
            if param not in plan.defaults:
                raise BindError(f"needs the argument `{param}`")
            mapping[param] = syntax.const(plan.defaults[param])
    return mapping


class _Fill(Simplifier):
    """A rule's code at a call site: simplified (see `simplify`), and without the arguments
    that repeat the callee's default (`np.sum(g, axis=None)` is `np.sum(g)`)."""

    def visit_Call(self, node):
        node = super().visit_Call(node)
        return _without_defaults(node) if isinstance(node, gast.Call) else node


def _without_defaults(call):
    parameters = anno.get(call, _DEFAULTS) or []
    defaults = dict(parameters)
    call.keywords = [k for k in call.keywords if not _is_default(k.value, defaults.get(k.arg, signatures.NO_DEFAULT))]
    while call.args and len(call.args) <= len(parameters) and not call.keywords:
        if not _is_default(call.args[-1], parameters[len(call.args) - 1][1]):
            break
        call.args.pop()
    return call


def _is_default(value, default) -> bool:
    return (
        default is not signatures.NO_DEFAULT and isinstance(value, gast.Constant)
        and type(value.value) is type(default) and value.value == default
    )
