"""Activity: which values carry gradient from the requested inputs to the output.

Assumes: a normalized, SSA, resolved function.
Guarantees: the function carries `VARIED`, the names whose values depend differentiably on
the inputs in `ctx.wrt` (parameter positions; strings name closure variables, and "**" the
`**kwargs` parameter; positions past the named parameters are `*args`), and `USEFUL`, the
names whose values reach the returned value along differentiable paths; both are fixed points
over loops. A statement needs an adjoint only if its target is in both. Compiling for
implicit parameters (`ctx.implicit`), what a call of a Python function returns is varied
whatever its arguments; a read that `frozen` marked is a constant. A nested `def` or
lambda varies with what it closes over and its default values; a loop's items vary with the
sequence it walks (not `range` counters or `enumerate` positions). Comparisons, `//`, `not`,
`~`, f-strings, sets, non-differentiable calls and constants vary with nothing.

Before:  n = len(x); y = x * n; return y      After: VARIED {x, y}; USEFUL {y, x, n}
"""

from __future__ import annotations

import types

import gast

from . import annotations as anno
from . import kinds, resolve
from . import syntax
from .context import Context


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Annotate `node` with its varied and useful names."""
    args = node.args
    params = [a.id for a in args.posonlyargs + args.args]
    varied = {params[i] for i in ctx.wrt if isinstance(i, int) and i < len(params)}
    varied |= {name for name in ctx.wrt if isinstance(name, str) and name != "**"}  # closure variables
    if "**" in ctx.wrt and args.kwarg is not None:
        varied.add(args.kwarg.id)
    if args.vararg is not None and any(isinstance(i, int) and i >= len(params) for i in ctx.wrt):
        varied.add(args.vararg.id)
    # each statement's (defined names, differentiable reads), found once for both fixed points
    forward = ctx.mode == "tangent"
    flows = [(stmt, defined_names(stmt), differentiable_reads(stmt, forward)) for stmt in syntax.statements(node.body)]
    while True:  # loops carry values backwards: iterate to a fixed point
        before = len(varied)
        for stmt, defined, reads in flows:
            if reads & varied or ctx.implicit and _calls_python(stmt):
                varied |= defined
        if len(varied) == before:
            break
    useful = set()
    while True:
        before = len(useful)
        for stmt, defined, reads in reversed(flows):
            if isinstance(stmt, gast.Return):
                useful |= syntax.load_names(stmt.value)
            elif defined & useful:
                useful |= reads
        if len(useful) == before:
            break
    anno.set_(node, anno.VARIED, varied)
    anno.set_(node, anno.USEFUL, useful)
    return node


def defined_names(stmt) -> set[str]:
    """Names a statement defines whose values may carry gradients (a loop: its targets)."""
    if isinstance(stmt, gast.Assign):
        return targets(stmt)
    if isinstance(stmt, gast.For):
        return _item_names(stmt.target, stmt.iter)
    if isinstance(stmt, gast.FunctionDef):
        return {stmt.name}
    return set()


def differentiable_reads(stmt, forward=False) -> set[str]:
    """Names whose gradients a statement's defined names depend on (`forward`: their tangents,
    in forward mode)."""
    if anno.get(stmt, anno.FROZEN):
        return set()  # `t = m.encoder`, a frozen field: a constant
    if isinstance(stmt, gast.Assign):
        return differentiable_operands(stmt.value, forward) - anno.get(stmt, anno.CANCELLED, frozenset())
    if isinstance(stmt, gast.For):
        return syntax.load_names(stmt.iter) - {"range", "enumerate", "zip", "reversed"}
    if isinstance(stmt, gast.FunctionDef):
        return syntax.free_names(stmt) | _default_names(stmt)  # a closure carries what it captures
    return set()


def targets(stmt: gast.Assign) -> set[str]:
    target = stmt.targets[0]
    if type(target) is gast.Name and getattr(target, "annotation", None) is None:
        return {target.id}  # (most targets: no walk)
    return {n.id for n in syntax.walk(target) if isinstance(n, gast.Name)}


def differentiable_operands(value, forward=False) -> set[str]:
    """Names read by `value` through which a derivative can flow; in `forward` mode, of a call
    whose forward rule is linear in some operands, those operands only (`unbroadcast(g, x)`
    reads only `x`'s shape)."""
    if isinstance(value, (gast.Compare, gast.JoinedStr, gast.Constant, gast.Set)):
        return set()
    if isinstance(value, gast.Lambda):
        return syntax.free_names(value) | _default_names(value)
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.FloorDiv):
        return set()
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.Not, gast.Invert)):
        return set()
    callee = anno.get(value, anno.CALLEE)
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        return set()
    if isinstance(value, gast.Subscript):
        return syntax.load_names(value.value)  # indices carry no gradient
    if anno.get(value, anno.FROZEN):  # `m.encoder(x)`, a frozen field called: only the arguments
        return set().union(*(syntax.load_names(a) for a in value.args + [k.value for k in value.keywords]))
    if forward and isinstance(value, gast.Call) and callee is not None and not callee.method:
        operands = _linear_operands(callee, value)
        if operands is not None:
            return operands
    if isinstance(value, gast.Call) and callee is not None and (callee.method or isinstance(value.func, gast.Name)):
        return syntax.load_names(value)  # the receiver, or a local callable (`m = x.mean; m()`), too
    if isinstance(value, gast.Call):
        return set().union(*(syntax.load_names(a) for a in value.args + [k.value for k in value.keywords]))
    return syntax.load_names(value)


def _linear_operands(callee, call) -> set[str] | None:
    """The names read by the positional operands (and any keywords) of a call whose forward
    rule declares it linear or multilinear in them (None for other calls, and calls with
    starred arguments)."""
    from .. import frules  # noqa: PLC0415  (the rules import the compiler's callers)

    if callee.kind not in (resolve.RULE, resolve.PYTHON) or any(isinstance(a, gast.Starred) for a in call.args):
        return None
    try:
        rule = frules.lookup(callee.obj)
    except TypeError:  # an unhashable callee has no rule
        return None
    if rule is None or rule.kind not in (frules.LINEAR, frules.MULTILINEAR):
        return None
    operands = [call.args[i] for i in rule.operands if i < len(call.args)]
    return set().union(*(syntax.load_names(a) for a in operands + [k.value for k in call.keywords]))


def _calls_python(stmt) -> bool:
    """A call of a user's function, which may read parameters of its own (implicit mode)."""
    value = getattr(stmt, "value", None)
    callee = anno.get(value, anno.CALLEE) if isinstance(value, gast.Call) else None
    if callee is not None and callee.kind == resolve.RULE and callee.rule.rrule is not callee.rule.definition:
        return isinstance(callee.obj, types.FunctionType)  # a function of yours with your rule: it checks
    return callee is not None and callee.kind in (resolve.PYTHON, resolve.DYNAMIC) and not anno.get(value, anno.FROZEN)


def _default_names(function) -> set[str]:
    args = function.args
    return {d.id for d in args.defaults + args.kw_defaults if isinstance(d, gast.Name)}


def _item_names(target, iterable) -> set[str]:
    """The loop targets bound to items of what the loop walks (not `range` counters or
    `enumerate` positions, which are ints)."""
    if isinstance(iterable, gast.Call) and isinstance(iterable.func, gast.Name):
        kind = iterable.func.id
        if kind == "range":
            return set()
        if kind == "enumerate" and isinstance(target, gast.Tuple) and len(target.elts) == 2:
            return _item_names(target.elts[1], iterable.args[0])
        if kind == "zip" and isinstance(target, gast.Tuple) and len(target.elts) == len(iterable.args):
            return set().union(*(_item_names(t, a) for t, a in zip(target.elts, iterable.args)))
        if kind == "reversed" and iterable.args:
            return _item_names(target, iterable.args[0])
    return syntax.stored_names(target)


_NUMBERS = "certain_numbers"  # annotation: a function -> (its statements, parameters, `certain_numbers`)


def certain_numbers(node: gast.FunctionDef, ctx: Context) -> tuple[set[str], set[str]]:
    """The names of function `node` that certainly hold numbers or arrays, with and without the
    items read out of containers (`kinds.certain_numbers`; one set twice where nothing is read
    out of one): found once for `inplace` and `reverse`, which runs next on the same
    statements (kept on `node`; found again if its statements or numeric parameters changed).

    >>> from adjoint.compiler import pipeline
    >>> def f(x, d):
    ...     return x * 2.0 + d[0]
    >>> node, ctx = pipeline.lower(f, (0, 1), until="activity")
    >>> [sorted(found) for found in certain_numbers(node, ctx)]
    [['d', 'f', 'f_item', 'f_mul', 'x'], ['d', 'f', 'f_mul', 'x']]
    """
    statements = tuple(syntax.statements(node.body))
    numeric = ctx.numeric_parameters([a.id for a in node.args.posonlyargs + node.args.args])
    kept = anno.get(node, _NUMBERS)
    if kept is not None and kept[0] == statements and kept[1] == numeric:
        return kept[2]
    if any(isinstance(getattr(s, "value", None), gast.Subscript) for s in statements):
        found = kinds.certain_numbers_with_and_without_items(node.body, numeric)
    else:
        numbers = kinds.certain_numbers(node.body, numeric)
        found = (numbers, numbers)
    anno.set_(node, _NUMBERS, (statements, numeric, found))
    return found
