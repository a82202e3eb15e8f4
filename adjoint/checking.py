"""`adjoint.check`: what every call in a function resolves to, before anything runs.

The compiler's own passes read the function as the transform does, up to `reverse`: each call
is classified by `resolve` exactly as the transform classifies it, `activity` tells whether a
gradient flows through it, and whatever a pass refuses is kept as a located `Problem` instead of
being raised. The calls are listed at the user's call sites (line and column in the source, one
entry per site however often the passes copied it). A call that resolves to a Python function of
the user's is read the same way, once per function (as if all its parameters carried a
gradient), its calls listed under it. Nothing is called.

Before:  def f(x): return np.sum(np.unwrap(x))
After:   CheckReport: `np.sum` rule (numpy.sum), `np.unwrap` missing (numpy.unwrap) at f's line,
         with the fix: register one with @adjoint.rrule(np.unwrap), or mark it @adjoint.non_differentiable
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import sys
import types

import gast
import numpy as np

from . import forwards, runtime
from .check_report import _KINDS, DYNAMIC, MISSING, CallEntry, CheckReport
from .compiler import activity, fence, pipeline, resolve, syntax
from .compiler import annotations as anno
from .compiler.calls import missing_problem
from .compiler.context import Context
from .compiler.source import get_source
from .compiler.updates import _is_append, is_add_at
from .errors import AdjointError, Problem, TransformError
from .runtime.marks import marked

__all__ = ["check", "CheckReport", "CallEntry"]

class _Stdout:
    """`check`'s default `file`: `sys.stdout` as it is when `check` prints (tests redirect it)."""

    def __repr__(self):
        return "sys.stdout"


STDOUT = _Stdout()


def check(f, wrt=None, *, file=STDOUT) -> CheckReport:
    """Resolve every call in `f`, and in the functions of yours it reaches, without running
    anything: each is a rule, a user function (read in turn), non-differentiable, missing (no
    rule, and not code adjoint can read), or dynamic (what it calls is known only at run time).

    `wrt` (an int or tuple of ints, by default every positional parameter) are the parameters
    whose gradients are wanted: a missing rule on a call no gradient reaches is allowed, and said
    so. Whatever else the transform would refuse (syntax, a call made for its effect, ...) is in
    `report.problems`, located, and nothing is raised for it. The report is printed to `file`
    (stdout by default; `file=None` prints nothing) and returned: `report.ok`,
    `report.missing`, `report.entries` (`CallEntry`s), `report.problems`, `str(report)`.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.sum(np.unwrap(np.tanh(x)))
    >>> report = adjoint.check(f)  # doctest: +ELLIPSIS
    adjoint.check(f): not differentiable as written
    <BLANKLINE>
    f  (...)
      ...  np.sum     numpy.sum     rule
      ...  np.unwrap  numpy.unwrap  missing
      ...  np.tanh    numpy.tanh    rule
    <BLANKLINE>
    2 rules, 1 missing
    <BLANKLINE>
    missing rules:
      ...: `np.unwrap`: register one with @adjoint.rrule(np.unwrap), or mark it @adjoint.non_differentiable
    >>> report.ok, [entry.call for entry in report.missing]
    (False, ['np.unwrap'])
    """
    fn, wrt = _function_of(f, wrt)
    functions, sizes, entries, problems = [], [], [], []
    todo, seen = [(fn, wrt)], {fn}
    while todo:
        current, positions = todo.pop(0)
        found, reached, trouble = _calls(current, positions)
        code = current.__code__
        functions.append((current.__qualname__, f"{code.co_filename}:{code.co_firstlineno}"))
        entries += found
        sizes.append(len(found))
        problems += trouble
        for callee in reached:
            if callee not in seen:
                seen.add(callee)
                todo.append((callee, tuple(range(callee.__code__.co_argcount))))  # as if all carried one
    report = CheckReport(fn.__qualname__, entries, problems, functions, sizes)
    if file is not None:
        print(report.format(), file=sys.stdout if file is STDOUT else file)
    return report


def _function_of(f, wrt):
    """The Python function whose code `check` reads for `f`, and the positions of its parameters
    to differentiate (a bound method's or a callable object's: shifted past the receiver)."""
    f = marked(f, "__adjoint_checkpoint_of__", f)
    differentiated = marked(f, "__adjoint_gradient_of__", None)  # `adjoint.grad(g)`: (g, its positions)
    if differentiated is not None:
        f, wrt = differentiated[0], differentiated[1] if wrt is None else wrt
    shift = 0
    if isinstance(f, types.MethodType):
        f, shift = f.__func__, 1
    elif not isinstance(f, types.FunctionType) and isinstance(getattr(type(f), "__call__", None), types.FunctionType):
        f, shift = type(f).__call__, 1
    forwards.require_python_function(f)
    if wrt is None:
        return f, tuple(range(shift, f.__code__.co_argcount))
    positions = (wrt,) if isinstance(wrt, int) else wrt
    if not (isinstance(positions, tuple) and all(isinstance(i, int) and i >= 0 for i in positions)):
        raise AdjointError(f"wrt must be a non-negative int or a tuple of them, not {wrt!r}")
    count = f.__code__.co_argcount - shift
    if f.__code__.co_flags & inspect.CO_VARARGS == 0 and any(i >= count for i in positions):
        raise AdjointError(f"wrt names argument {max(positions)}, but `{f.__qualname__}` has {count} parameters")
    return f, tuple(i + shift for i in positions)


@dataclasses.dataclass
class _Site:
    """A call as the user wrote it, copied before the passes rewrite the tree."""

    call: gast.Call
    text: str


def _key(node):
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _calls(fn, wrt):
    """`fn`'s call entries, the Python functions they reach, and the problems found on the way."""
    try:
        source = get_source(fn)
    except AdjointError as error:
        code = fn.__code__
        return [], [], [Problem(code.co_filename, code.co_firstlineno, 0, None, "", str(error))]
    ctx = Context(fn, source, tuple(wrt))
    sites = [
        _Site(copy.deepcopy(node), syntax.unparse(node.func).strip())
        for stmt in source.node.body for node in syntax.walk(stmt)
        if type(node) is gast.Call and getattr(node, "lineno", None) is not None
    ]
    bound = {n.id for n in source.nodes if type(n) is gast.Name and type(n.ctx) in (gast.Store, gast.Param)}
    bound |= {n.name for n in source.nodes if type(n) is gast.FunctionDef and n is not source.node}
    resolved, carrying = _lowered(source.node, ctx)
    local_names = bound | ctx.local_names
    entries, reached, told = [], [], set()
    for site in sorted(sites, key=lambda s: _key(s.call)):  # (the user's sites: however often the passes copied one)
        callee, targets = resolved.get(_key(site.call), (None, None))
        if callee is None:
            callee = _resolve_site(site.call, ctx, local_names)
        callee = _now(callee, ctx, local_names)
        active = None if targets is None or carrying is None else bool(targets & carrying)
        entries.append(_entry(fn, source, site, callee, active, local_names))
        reached += _reached(callee)
        if callee.kind == resolve.MISSING:  # the transform's problem for it, which the entry tells
            told.add((site.call.lineno, site.call.col_offset, missing_problem(callee)[0]))
    return entries, reached, [p for p in ctx.problems if (p.line, p.col, p.message) not in told]


def _lowered(node, ctx):
    """Run the passes over `node` as the transform does, up to `reverse` (which finds the last
    of what it refuses): `{site key: (Callee, targets)}` for the calls statements make, and the
    names that carry a gradient to the result (None if not known: `fence` refused the function,
    and the passes do not read what it refuses)."""
    node = fence.transform(node, ctx)
    if ctx.problems:
        return {}, None
    resolved, carrying = {}, None
    for name, transform in pipeline.PASSES:
        try:
            node = transform(node, ctx)
        except TransformError as error:  # (passes record problems; this is in case one raises them)
            ctx.problems.extend(p for p in error.problems if p not in ctx.problems)
            break
        except Exception as error:  # noqa: BLE001  (a bug of adjoint's: the report says so, and where)
            ctx.problem(ctx.source.node, f"adjoint failed reading this function, in its `{name}` pass "
                        f"({type(error).__name__}: {error})", "this is a bug in adjoint: please report it")
            break
        if name == "resolve":
            resolved = _annotated_calls(node)
        elif name == "activity":
            carrying = anno.get(node, anno.VARIED, set()) & anno.get(node, anno.USEFUL, set())
        elif name == "reverse":
            break
    return resolved, carrying


def _annotated_calls(node) -> dict:
    """The calls `resolve` annotated that come from the user's source (they kept its position),
    with the names each one's statement assigns (none for a call whose value is dropped)."""
    found = {}
    for stmt in syntax.statements(node.body):
        value = getattr(stmt, "value", None)
        if type(value) is gast.Call and getattr(value, "lineno", None) is not None:
            found[_key(value)] = (anno.get(value, anno.CALLEE), activity.targets(stmt) if type(stmt) is gast.Assign else set())
    return found


def _resolve_site(call, ctx, local_names) -> resolve.Callee:
    """How `resolve` classifies a call no statement makes after normalizing: a loop's
    `range(n)`, a call in a lambda or nested function, or an update `normalize` rewrote
    (`xs.append(v)`, `np.add.at(y, i, v)`: adjoint's own updates, which have rules)."""
    if _is_append(call, local_names):
        return resolve.classify(runtime.append, "adj.append")
    if is_add_at(call, local_names, ctx.fn):
        return resolve.classify(runtime.add_at, "adj.add_at")
    return resolve.resolve_call(call.func, ctx, local_names)


def _entry(fn, source, site, callee, active, local_names) -> CallEntry:
    kind, resolved, note, hint = _describe(callee, site, source, fn, local_names)
    line = site.call.lineno
    return CallEntry(
        fn.__qualname__, source.filename, line, site.call.col_offset, source.line(line), site.text, resolved,
        kind, note, hint, active,
    )


def _now(callee, ctx, local_names) -> resolve.Callee:
    """`callee`, with the object it refers to now if that is left to run time but is not a local
    value's (a closure variable's function, a global model's method): what `check` can read."""
    if callee.kind != resolve.DYNAMIC or callee.obj is not None or callee.text.split(".")[0] in local_names:
        return callee
    obj = resolve.lookup_dotted(callee.text, ctx)
    return callee if obj is resolve.UNBOUND else dataclasses.replace(callee, obj=obj)


def _describe(callee, site, source, fn, local_names) -> tuple[str, str, str, str]:
    """`(kind, resolved, note, hint)` for a call that resolved to `callee`."""
    kind = _KINDS.get(callee.kind, DYNAMIC)
    if callee.kind == resolve.DYNAMIC:
        func = site.call.func  # a method of a local value, or of one computed in place (`np.tanh(h).sum()`)
        if callee.obj is None and isinstance(func, gast.Attribute) and (callee.method or syntax.dotted(func) is None):
            return _method(func.attr)
        resolved = "known at run time" if callee.obj is None else _qualified(callee.obj, callee.text)
        return kind, resolved, _dynamic_reason(site.call.func, source, fn, local_names), ""
    resolved = _qualified(callee.obj, callee.text)
    if callee.text in ("adj.append", "adj.add_at"):
        return kind, resolved, "an update in place, which adjoint rewrites", ""
    if callee.kind == resolve.MISSING:
        return kind, resolved, "", missing_problem(callee)[1]
    if callee.kind == resolve.RULE and callee.rule is not None and not _is_adjoints(callee.rule.rrule):
        rule = callee.rule.rrule
        return kind, resolved, f"your rule {rule.__module__}.{rule.__qualname__}", ""
    return kind, resolved, "", ""


def _method(attr) -> tuple[str, str, str, str]:
    """A method called on a value known at run time: an array's has a rule (or not)."""
    descriptor = getattr(np.ndarray, attr, None)
    if descriptor is None:
        return DYNAMIC, "known at run time", "a method of a value known at run time", ""
    text = f"np.ndarray.{attr}"
    callee = resolve.classify(descriptor, text)
    note = "array method, if the receiver is an array"
    if callee.kind == resolve.MISSING:
        return MISSING, f"numpy.ndarray.{attr}", note, resolve.missing_hint(callee, "rrule")
    return _KINDS.get(callee.kind, DYNAMIC), f"numpy.ndarray.{attr}", note, ""


def _dynamic_reason(func, source, fn, local_names) -> str:
    """Why a callee is known only at run time, for the report."""
    root = syntax.root_name(func)
    if root is None:
        return "a computed callee"
    if root in _parameters(source.node):
        return f"the argument `{root}`"
    if root in fn.__code__.co_freevars:
        return f"the closure variable `{root}`, read at run time"
    if root in local_names:
        return f"the local value `{root}`"
    return "called through adjoint at run time"


def _parameters(node) -> set[str]:
    args = node.args
    return {p.id for p in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]}


def _qualified(obj, text: str) -> str:
    """`numpy.tanh` for `np.tanh`: the object's module and name, as far as Python tells them."""
    if obj is None:
        return text
    if isinstance(obj, np.ufunc):
        return f"numpy.{obj.__name__}"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    if name is None:  # an object with `__call__`
        return f"{type(obj).__module__}.{type(obj).__qualname__}.__call__"
    return f"{module}.{name}" if module else name


def _is_adjoints(fn) -> bool:
    """Whether a rule is one of adjoint's own (not registered by the user)."""
    module = getattr(fn, "__module__", None) or ""
    return module == "adjoint" or module.startswith("adjoint.")


def _reached(callee) -> list:
    """The Python functions of the user's a call reaches, which `check` reads in turn."""
    obj = callee.obj
    obj = marked(obj, "__adjoint_checkpoint_of__", obj) if obj is not None else None
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    elif isinstance(obj, functools.partial):
        obj = obj.func
    elif obj is not None and not isinstance(obj, (type, types.FunctionType)):
        obj = getattr(type(obj), "__call__", None)
    if callee.kind not in (resolve.PYTHON, resolve.DYNAMIC) or not isinstance(obj, types.FunctionType):
        return []
    if marked(obj, "__adjoint_rrule__", None) is not None or resolve._is_library(obj):
        return []
    return [obj]
