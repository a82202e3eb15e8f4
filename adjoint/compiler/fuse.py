"""Fuse: a gradient as one generated function, the pullback's statements inlined after the
forward function's, so that forward mode over a gradient (a Hessian-vector product) transforms
and calls one function rather than a forward function and, on every call, a new pullback closure.

Assumes: the output of the last pass (`array_methods`): a forward function whose body defines
its pullback `def f_pullback(f_bar): ...` and ends `return (value, f_pullback)`.
Guarantees: `def f_gradient(<the forward's parameters>)`: the forward's statements without the
pullback's definition and the return, then the seed `f_bar = arguments.unit(value, 'f')`
(`arguments.unit`: 1 shaped like the scalar value, or the error `grad` gives for any other
value), then the pullback's statements, whose return gives the cotangents. Or None, when
inlining could change what a name means (below): the caller keeps the forward function. With
`release` (the function `grad` runs, not one forward mode reads: it does not read `del`), the
values the pullback does not read are let go of after the seed, as the forward function's
closure would not have kept them.

Why inlining is faithful: the pullback's own names (its parameter and what it assigns) are read
by it only after it assigns them (Python raises `UnboundLocalError` otherwise), and every other
name it reads is the forward's, final by the time the pullback runs; run after the forward's
statements in one scope, it reads the same values. What would break that is refused: `global`
or `nonlocal` anywhere, a `return` before the pullback's last statement (or one in the forward
before its own), a `yield`, and a function the forward defines (a nested `def`, a lambda) that
reads a name the pullback rebinds: the fused code would show it the pullback's value.
Nothing becomes dead by fusing (the forward's statements are the user's, and `optimize` has
already dropped the pullback's dead ones), so no pass runs after this one.

Before:  def f_forward(x):                     After:  def f_gradient(x):
             f = np.sin(x)                                 f = np.sin(x)
             def f_pullback(f_bar):                        f_bar = arguments.unit(f, 'f')
                 x_bar = f_bar * np.cos(x)                 x_bar = f_bar * np.cos(x)
                 return (x_bar,)                           return (x_bar,)
             return (f, f_pullback)
"""

from __future__ import annotations

import collections
import sys

import gast

from .. import arguments
from . import annotations as anno
from . import array_methods
from . import syntax
from .context import Context

_SCOPE_CHANGES = (gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom, gast.Await)
_MADE_IN_SCOPE = (gast.Lambda, gast.ClassDef, gast.AsyncFunctionDef)


def transform(node: gast.FunctionDef, ctx: Context, release: bool = False) -> gast.FunctionDef | None:
    """The forward function `node` and its pullback as one gradient function, or None where
    inlining the pullback could change what it computes (see the module's docstring). With
    `release`, the values the forward function's closure would not have kept are let go of
    once the seed is made (`del`), so that the pullback runs with the memory it ran with.

    >>> from adjoint.compiler import pipeline
    >>> def f(x):
    ...     return x * x
    >>> node, ctx = pipeline.lower(f, (0,))
    >>> print(syntax.unparse(transform(node, ctx)))
    def f_gradient(x):
        f = x * x
        f_bar = arguments.unit(f, 'f')
        x_bar = f_bar * x
        x_bar += f_bar * x
        return (x_bar,)
    """
    *forward, result = node.body
    if not (isinstance(result, gast.Return) and isinstance(result.value, gast.Tuple) and len(result.value.elts) == 2):
        return None
    value, closure = result.value.elts
    pullback = next(
        (s for s in forward if isinstance(s, gast.FunctionDef) and isinstance(closure, gast.Name) and s.name == closure.id),
        None,
    )
    forward = [s for s in forward if s is not pullback]
    if pullback is None:
        return None
    kinds, read_by_pullback = _kinds_and_reads(node, pullback)
    if not _inlinable(kinds, forward, pullback):
        return None
    if _hold_shifts_constant(forward, pullback.body, ctx):
        read_by_pullback = syntax.load_names(gast.Module(body=pullback.body, type_ignores=[]))  # (rewritten)
    *backward, cotangents = pullback.body
    seed_name = pullback.args.args[0].id
    # reached through its module: forward mode resolves a module's function when it transforms
    # this code again (a free name that is not a module could differ between closures), and
    # knows it is non-differentiable, so the seed and what it scales carry no tangent
    unit = syntax.attr(ctx.reach("arguments", arguments), "unit")
    seed = syntax.assign(seed_name, syntax.call(unit, [value, syntax.const(ctx.function_name)]))
    fname = "lambda" if ctx.source.name == "<lambda>" else ctx.source.name.strip("_") or "function"
    seed = anno.copy_origin(result, seed)
    # (the function and its pullback: no other function is made inside, whose free names `_unread` would keep)
    makes_functions = kinds[gast.FunctionDef] != 2 or any(kinds[kind] for kind in _MADE_IN_SCOPE)
    read = read_by_pullback | syntax.load_names(seed)
    released = _unread(forward, [seed] + backward + [cotangents], node.args, makes_functions, read) if release else []
    body = forward + [seed] + released + backward + [cotangents]
    fused = syntax.function(ctx.namer.new(f"{fname}_gradient"), node.args, body)
    gast.copy_location(fused, node)
    return fused


def _kinds_and_reads(node, pullback) -> tuple[collections.Counter, set]:
    """How many nodes of each class `node` holds, and the names its `pullback`'s statements
    read: from one walk of each node."""
    statements = set(map(id, pullback.body))
    around = [c for c in syntax.child_nodes(node) if c is not pullback] + [
        c for c in syntax.child_nodes(pullback) if id(c) not in statements]
    inside = syntax.walk(gast.Module(body=pullback.body, type_ignores=[]))
    kinds = collections.Counter(map(type, inside))
    kinds.update(map(type, syntax.walk(gast.Module(body=around, type_ignores=[]))))
    kinds[gast.FunctionDef] += 2  # (the function and its pullback; the two modules are not counted)
    kinds[gast.Module] -= 2
    return kinds, {n.id for n in inside if type(n) is gast.Name and type(n.ctx) is gast.Load}


def _unread(forward: list, rest: list, args, makes_functions: bool = True, read: set | None = None) -> list:
    """`[del a, b]` for the names `forward` binds at its top level (so certainly bound) that
    neither `rest` nor a function made anywhere reads: what the forward function's closure
    would not have kept (a closure's free name stays, as `del` would unbind its cell). Without
    `makes_functions`, no function or lambda is made in `forward` or `rest`; `read`: the names
    `rest` reads, if known.

    >>> tree = gast.parse("a = x * 2\\nb = a + 1\\nc = b * a\\ny = c.sum()\\nb_bar = 1.0")
    >>> print(syntax.unparse(_unread(tree.body[:4], tree.body[4:], None)[0]))
    del a, b, c, y
    """
    read = set(syntax.load_names(gast.Module(body=rest, type_ignores=[])) if read is None else read)
    for made in syntax.walk(gast.Module(body=forward + rest, type_ignores=[])) if makes_functions else ():
        if isinstance(made, (gast.FunctionDef, gast.Lambda)):
            read |= syntax.free_names(made)
    bound = {}  # (a dict: the names in the order they are first bound)
    for stmt in forward:
        if isinstance(stmt, gast.Assign):
            bound.update(dict.fromkeys(syntax.stored_names(stmt)))
    params = {a.id for a in syntax.walk(args) if isinstance(a, gast.Name)} if args is not None else set()
    dead = [n for n in bound if n not in read and n not in params]
    if not dead:
        return []
    return [gast.Delete(targets=[gast.Name(id=n, ctx=gast.Del(), annotation=None, type_comment=None) for n in dead])]


def _inlinable(kinds: collections.Counter, forward: list, pullback: gast.FunctionDef) -> bool:
    """Whether `pullback`'s statements mean the same run after `forward`'s in one scope (`kinds`:
    how many nodes of each class the whole function holds)."""
    args = pullback.args
    if args.posonlyargs or args.kwonlyargs or args.vararg or args.kwarg or args.defaults or len(args.args) != 1:
        return False
    if pullback.decorator_list or not pullback.body or not isinstance(pullback.body[-1], gast.Return):
        return False
    if any(kinds[kind] for kind in _SCOPE_CHANGES):
        return False
    if kinds[gast.Return] == 2 and not any(kinds[kind] for kind in _MADE_IN_SCOPE) and kinds[gast.FunctionDef] == 2:
        return True  # (the returns: the forward's and the pullback's last; the functions: the forward and its pullback)
    inner = syntax.walk_local(gast.Module(body=pullback.body[:-1], type_ignores=[]))
    outer = syntax.walk_local(gast.Module(body=forward, type_ignores=[]))
    if any(isinstance(n, gast.Return) for n in inner + outer):
        return False
    rebound = {args.args[0].id}.union(*(syntax.stored_names(s) for s in pullback.body))
    made_by_forward = [n for n in outer if isinstance(n, (gast.FunctionDef, gast.Lambda, gast.ClassDef))]
    return not any(syntax.free_names(f) & rebound if not isinstance(f, gast.ClassDef) else syntax.load_names(f) & rebound
                   for f in made_by_forward)


def _hold_shifts_constant(forward: list, backward: list, ctx: Context) -> bool:
    """Take the max (or min) that shifts a log-sum-exp of its operand held constant
    (`m = np.max(adjoint.stop_gradient(z), ...)`) where `m` is read only by the two statements
    in which it cancels (`shifts` marked them): the gradient, forward and pullback alike, then
    reads `m` only through `exp(z - m) / sum(exp(z - m))` and `log(...) + m`, which no constant
    shift along the summed axes changes, so `m`'s derivative is zero, and forward mode over this
    function skips the search for the chosen entries that a max's tangent costs. (Transformed
    again, the function is read from its text, where `shifts` no longer sees the pattern: the
    pullback reads its intermediates too.) Whether it may have rewritten a statement."""
    cancelling = collections.defaultdict(list)
    for stmt in syntax.statements(forward):
        for shift in anno.get(stmt, anno.CANCELLED, ()):
            cancelling[shift].append(stmt)
    if not cancelling:
        return False
    nodes = syntax.walk(gast.Module(body=forward + backward, type_ignores=[]))  # one walk: the reads, the arrays
    reads = collections.Counter(n.id for n in nodes if type(n) is gast.Name and type(n.ctx) is gast.Load)
    definitions = collections.defaultdict(list)
    for stmt in syntax.statements(forward + backward):
        for name in syntax.stored_names(stmt) if not syntax.bodies(stmt) else ():
            definitions[name].append(stmt)
    arrays = array_methods.names_binding_arrays(nodes)
    for shift, statements in cancelling.items():
        cancelled_reads = sum(1 for s in statements for n in syntax.walk(s) if isinstance(n, gast.Name) and n.id == shift
                              and isinstance(n.ctx, gast.Load))
        defined = definitions.get(shift, [])
        call = getattr(defined[0], "value", None) if len(defined) == 1 else None
        if reads[shift] != cancelled_reads or not isinstance(call, gast.Call):
            continue
        held = syntax.attr(ctx.reach("adjoint", sys.modules[__name__.partition(".")[0]]), "stop_gradient")
        if getattr(anno.get(call, anno.CALLEE), "method", False) and isinstance(call.func, gast.Attribute):
            call.func.value = syntax.call(held, [call.func.value])  # `z.max(axis=1, keepdims=True)`
        elif call.args:
            method = array_methods.extremum_method(call, arrays)
            if method:  # `stop_gradient(z).max(axis=1, keepdims=True)`: no `np.max` dispatch
                call.func = gast.Attribute(value=syntax.call(held, [call.args.pop(0)]), attr=method, ctx=gast.Load())
            else:
                call.args[0] = syntax.call(held, [call.args[0]])
    return True
