"""In-place: refuse updates that adjoint's non-mutating code would not reproduce.

Assumes: a normalized, SSA, resolved function with activity annotations.
adjoint never updates an array in place: `x += d` is `x = x + d`, `y[i] = v` is
`y = adj.setitem(y, i, v)` and `xs.append(v)` is `xs = adj.append(xs, v)` (see `normalize`).
That matches Python unless another name sees the update. Guarantees: reports a problem for
- such an update when another name that may share the memory (a copy, a view, a container
  holding it, the sequence a loop walks, what a call may have returned; see `aliases`) is read
  afterwards, or when the value came from a call that may return an array held elsewhere
  (`shared_updates` tells); an update of a parameter is allowed (the caller's array is left as
  it was) and recorded in `ctx.updated_parameters` (refused when such a function is called from
  differentiated code, or passed one array twice);
- a call writing into an `out=` array when differentiable values are involved;
- a call made for its effect (its result unused) that is passed a differentiable value, unless
  it is a function of yours that updates none of its arguments;
- any update (`out=`, a mutating method such as `.sort()`, a method of an object kept across
  loop iterations, a helper of yours or a non-differentiable function of yours that may update
  its arguments) of an array after a differentiated operation read it (in a loop, any read in
  the loop comes before): the pullback would read the updated array;
- a call that may update a module-level array the pullback reads, and a helper that updates
  an array in place whose result the pullback reads.

Before:  y = x[0:2]; y += 1.0       After: TransformError at `y += 1.0`
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Callable

import gast
import numpy as np

from . import activity, aliases, effects, resolve, shared_updates, syntax
from . import annotations as anno
from .context import Context


@dataclasses.dataclass
class _Facts:
    """What the checks need to know about the whole function."""

    varied: set[str]
    useful: set[str]
    loaded: set[str]  # every name the function reads
    params: set[str]
    loops: list  # the `for` loops, any depth
    first_read: dict[str, int]  # name -> first statement reading it with gradient
    reads: dict[str, list]  # name -> the statements reading it
    chains: list  # per statement, the [first, last] statements of the loops around it
    arms: list  # per statement, {id of an `if` around it: 0 for its body, 1 for its `else`}
    statements: list  # the simple statements, in order
    immutable: set[str]  # names certainly holding numbers, bools or strings (loop counters)
    numbers: set[str]  # names certainly holding numbers or arrays (`kinds.certain_numbers`)
    # whether a name read is bound to a module (`np` is not updated by `np.random.shuffle`):
    # asked of the receivers of methods only, each once
    is_module: Callable[[str], bool]

    @functools.cached_property
    def aliases(self) -> aliases.Aliases:
        """Which names may share arrays: asked only about an update (most functions make none)."""
        return aliases.analyse(self.statements, self.loops, self.numbers)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Report in-place updates and effect-only calls that cannot be differentiated faithfully."""
    varied, useful = anno.get(node, anno.VARIED), anno.get(node, anno.USEFUL)
    body, chains, arms = _simple_statements(node.body)
    compound = [s for s in syntax.statements(node.body) if syntax.bodies(s)]
    loops = [s for s in compound if isinstance(s, gast.For)]
    numbers = activity.certain_numbers(node, ctx)[0]
    loads = [syntax.load_names(stmt) for stmt in body]  # each simple statement's reads
    facts = _Facts(
        varied, useful, _loaded(node, compound, loads),
        params={a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs},
        loops=loops,
        first_read=_first_differentiated_read(body, varied, useful, chains, loads),
        reads=_reads(loads),
        chains=chains,
        arms=arms,
        statements=body,
        immutable=_immutable(node.body, body),
        numbers=numbers,
        is_module=functools.cache(
            lambda name: name == ctx.runtime_alias or isinstance(ctx.lookup_global(name), types.ModuleType)),
    )

    for index, stmt in enumerate(body):
        problem = _problem(stmt, index, facts, ctx)
        if problem:
            ctx.problem(*problem)
    return node


def _simple_statements(body):
    """The statements that are not compound, in order, and for each the `[first, last]`
    indices of the loops around it, outermost first."""
    flat, chains, arms = [], [], []

    def walk(stmts, chain, path):
        for stmt in stmts:
            if isinstance(stmt, (gast.For, gast.While)):
                span = [len(flat), len(flat)]
                walk(stmt.body + stmt.orelse, chain + [span], path)
                span[1] = len(flat) - 1
            elif isinstance(stmt, gast.If):
                walk(stmt.body, chain, path + ((id(stmt), 0),))
                walk(stmt.orelse, chain, path + ((id(stmt), 1),))
            elif syntax.bodies(stmt):
                for nested in syntax.bodies(stmt):
                    walk(nested, chain, path)
            else:
                chains.append(chain)
                arms.append(dict(path))
                flat.append(stmt)

    walk(body, [], ())
    return flat, chains, arms


def _loaded(node, compound, loads) -> set[str]:
    """`syntax.load_names(node)` from the reads of its simple statements (`loads`), which are
    known: what is read outside them (its parameters' defaults, the headers of the compound
    statements `compound`) is walked alone."""
    outside = []  # its parameters, decorators, annotation
    for field in node._fields:
        value = getattr(node, field, None)
        if field != "body":
            outside += value if type(value) is list else [value]
    loaded = set().union(*loads, *(syntax.load_names(n) for n in outside if isinstance(n, gast.AST)))
    for stmt in compound:
        kind = type(stmt)
        if kind is gast.For:
            loaded |= syntax.load_names(stmt.target) | syntax.load_names(stmt.iter)
        elif kind is gast.If or kind is gast.While:
            loaded |= syntax.load_names(stmt.test)
        else:  # (`with`, `try`: all of it)
            loaded |= syntax.load_names(stmt)
    return loaded


def _problem(stmt, index, facts: _Facts, ctx):
    """`(node, message, hint)` if `stmt` cannot be differentiated faithfully, else None."""
    value = getattr(stmt, "value", None)
    for updated in sorted(_updated_by(stmt, facts, index)) if ctx.mode == "reverse" else ():  # named as the user wrote it
        if any(facts.first_read.get(n, index) < index for n in _reached_through(updated, facts)):
            shown = ctx.user_name(updated)
            return (value, f"this updates `{shown}` after a differentiated operation used it, so the "
                    "pullback would see the updated values", _after_use_hint(value, shown))
    callee = anno.get(value, anno.CALLEE) if isinstance(value, gast.Call) else None
    if callee is not None and ctx.mode == "reverse" and isinstance(stmt, gast.Assign) and any(n in facts.first_read for n in _stored(stmt)) and (
        effects.updates_its_arguments(callee)
    ):
        return (value, f"`{callee.text}` updates an array in place (an argument, or one it reaches another way), "
                "and the pullback reads what it returns: a later call could change it",
                f"make `{callee.text}` return a new array instead of updating one")
    update = anno.get(stmt, anno.IN_PLACE)
    if update is not None:
        return shared_updates.problem(stmt, update, stmt.value.left.id, facts, index, ctx)
    if (
        isinstance(value, gast.Call) and aliases.is_container_update(value) and anno.get(value, anno.MADE_UPDATE)
        and isinstance(value.args[0], gast.Name)
    ):
        return shared_updates.problem(stmt, None, value.args[0].id, facts, index, ctx)
    if isinstance(value, gast.Call) and _writes_out(value, facts.varied):
        return (value, "this call writes into an array through `out=`, which adjoint cannot differentiate",
                "assign the result to a name instead")
    if isinstance(value, gast.Call) and _only_for_effect(stmt, facts.loaded) and _passes_varied(value, facts.varied) and (
        not effects.leaves_its_arguments(anno.get(value, anno.CALLEE))
    ):
        return (value, "this call is made for its effect on a differentiable value, which adjoint cannot "
                "differentiate", _effect_hint(value))
    if ctx.mode == "reverse" and isinstance(value, gast.Call) and _only_for_effect(stmt, facts.loaded) and effects.may_update_globals(value):
        read = sorted(g for g in _global_arrays(facts.statements, ctx) if facts.first_read.get(g, index) < index)
        if read:
            return (value, f"this call may update the module-level array the pullback reads as `{read[0]}`",
                    "mark the function @adjoint.non_differentiable if it changes no array, or call it before")
    return None


def _global_arrays(body, ctx) -> set[str]:
    """The locals holding a module-level array the forward pass read."""
    return {
        s.targets[0].id for s in body
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Name) and s.value.id not in ctx.local_names
        and isinstance(ctx.lookup_global(s.value.id), np.ndarray)
    }


def _first_differentiated_read(body, varied, useful, chains, loads) -> dict[str, int]:
    """For each name an adjoint may read, the first statement that reads it with gradient (in a
    loop, the loop's first statement: the next iteration reads it again after any update).
    `loads`: each statement's reads."""
    first = {}
    for index, stmt in enumerate(body):
        if isinstance(stmt, gast.Assign) and set(_stored(stmt)) & varied & useful:
            start = chains[index][0][0] - 0.5 if chains[index] else index  # before the loop's updates
            plain = all(type(t) is gast.Name and getattr(t, "annotation", None) is None for t in stmt.targets)
            for name in loads[index] if plain else syntax.load_names(stmt.value):  # (a plain target reads nothing)
                first[name] = min(first.get(name, start), start)
    return first


def _reads(loads) -> dict:
    reads: dict = {}
    for index, names in enumerate(loads):
        for name in names:
            reads.setdefault(name, []).append(index)
    return reads


def _updated_by(stmt, facts: _Facts, index=None) -> set[str]:
    """Names whose arrays `stmt` (at `index`) may update in place."""
    value = getattr(stmt, "value", None)
    if not isinstance(value, gast.Call):
        return set()
    callee = anno.get(value, anno.CALLEE)
    updated = set().union(*(syntax.load_names(o) for o in _outputs(value, callee)))
    receiver = syntax.root_name(value.func) if isinstance(value.func, gast.Attribute) else None
    method_name = (syntax.dotted(value.func) or "").rsplit(".", 1)[-1]
    effect_only = _only_for_effect(stmt, facts.loaded)
    if receiver and not facts.is_module(receiver) and (
        effect_only or method_name in effects.MUTATING_METHODS or _updates_its_object(receiver, method_name, index, facts)
    ):
        updated.add(receiver)  # `w.fill(0)`, `buffer.sort()`, `model.step()` (an object may update itself)
    pure = callee is not None and (callee.kind == resolve.NON_DIFFERENTIABLE or aliases.returns_new_array(callee))
    # the names it is given, also inside a list, tuple or dict it is given (`f([y])`, `f(*ys)`)
    arguments = set().union(*(syntax.load_names(a) for a in value.args + [k.value for k in value.keywords]))
    if effect_only and not pure and not effects.leaves_its_arguments(callee) or effects.user_non_differentiable(callee) or (
        effects.updates_its_arguments(callee)
    ):
        updated |= arguments
    return updated - facts.immutable


def _updates_its_object(receiver, method, index, facts) -> bool:
    """An object's own method may update it (`buffer = o.refill()`): in a loop that does not make
    `o` anew, a later iteration would update what an earlier one returned. (Asked last: it
    reads the aliases, which most functions never need.)"""
    return (
        receiver not in facts.numbers and effects.sounds_like_an_update(method) and index is not None
        and _invariant_in_a_loop(receiver, index, facts)
    )


def _invariant_in_a_loop(name, index, facts) -> bool:
    """Whether statement `index` is in a loop that neither binds nor assigns `name`."""
    if name in facts.aliases.loop_items:
        return False
    definitions = [i for i, s in enumerate(facts.statements) if s in facts.aliases.definitions.get(name, [])]
    return any(not any(first <= d <= last for d in definitions) for first, last in facts.chains[index])


def _reached_through(name, facts) -> set[str]:
    """The names whose arrays an update through `name` may reach: its aliases, and for a
    container (`[y]` given to a function), what any container holds."""
    known = facts.aliases
    reached = set(known.classes.get(name, {name}))
    if reached & known.holders:
        for item in known.contained:
            reached |= known.classes.get(item, {item})
    return reached


def _after_use_hint(value, shown) -> str:
    hint = f"update a copy instead, or update `{shown}` before it is used"
    method = value.func.attr if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) else ""
    if effects.sounds_like_an_update(method) and method not in effects.MUTATING_METHODS:
        hint += f" (adjoint takes a method named `{method}` to update its object: if it does not, rename it)"
    callee = anno.get(value, anno.CALLEE) if isinstance(value, gast.Call) else None
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        hint += (f" (`{callee.text}` is declared non-differentiable, and its code is not visibly free of updates "
                 "of its arguments: adjoint takes it to update them)")
    return hint


def _effect_hint(call) -> str:
    if isinstance(call.func, gast.Attribute) and call.func.attr == "at":
        return ("adjoint differentiates `np.add.at(out, i, v)` into a local array name: "
                "`out = np.zeros(n); np.add.at(out, i, v)`")
    if isinstance(call.func, gast.Attribute) and call.func.attr == "shuffle":  # `rng.shuffle(y)`
        return "draw the positions and index with them instead: `x = x[rng.permutation(len(x))]`"
    if isinstance(call.func, gast.Attribute) and call.func.attr in effects.MUTATING_METHODS:
        method = call.func.attr
        return f"`.{method}` updates its receiver in place: build a new value instead (`xs = xs + [...]`)"
    return "use its result, or mark the function @adjoint.non_differentiable"


def _outputs(call, callee) -> list:
    """The arrays a call writes its result into: `out=`, or a ufunc's extra positional arguments."""
    outputs = [k.value for k in call.keywords if k.arg == "out"]
    ufunc = getattr(callee, "obj", None)
    if isinstance(ufunc, np.ufunc):
        outputs += call.args[ufunc.nin :]
    return outputs


def _stored(stmt):
    return [n.id for n in syntax.walk(stmt.targets[0]) if isinstance(n, gast.Name)]


def _writes_out(call, varied) -> bool:
    outputs = _outputs(call, anno.get(call, anno.CALLEE))
    return bool(outputs) and bool(syntax.load_names(call) & varied)


def _only_for_effect(stmt, loaded) -> bool:
    if isinstance(stmt, gast.Expr):
        return True
    return isinstance(stmt, gast.Assign) and not set(_stored(stmt)) & loaded


def _passes_varied(call, varied) -> bool:
    callee = anno.get(call, anno.CALLEE)
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        return False
    if callee is not None and callee.kind == resolve.RULE:
        return False  # a primitive with a rule computes a value (a view, maybe) that is simply unused
    return bool(syntax.load_names(call) & varied)


def _immutable(tree, body) -> set[str]:
    """Names that certainly hold an int or a string: `range` loop counters, `enumerate`
    positions and constants. No call can update them."""
    names = set()
    for stmt in syntax.statements(tree):
        if isinstance(stmt, gast.For) and isinstance(stmt.iter, gast.Call) and isinstance(stmt.iter.func, gast.Name):
            if stmt.iter.func.id == "range":
                names |= syntax.stored_names(stmt.target)
            elif stmt.iter.func.id == "enumerate" and isinstance(stmt.target, gast.Tuple):
                names |= syntax.stored_names(stmt.target.elts[0])
    for stmt in body:
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Constant):
            names.add(stmt.targets[0].id)
    return names


def sharing_check(stmt, names, ctx: Context):
    """`adj.check_unshared(y, (a, b), ...)`, to run before an update of `y` that `a` and `b`, read
    out of `y` earlier, would see in plain Python if they were views (`SHARING_CHECK`); the
    transforms put it before the statement."""
    value = stmt.value
    updated = value.args[0] if isinstance(value, gast.Call) else value.left
    where = f"{ctx.source.filename}:{anno.get(stmt, anno.ORIGIN)}"
    shown = [ctx.user_name(n) for n in names]
    check = syntax.call(f"{ctx.runtime_alias}.check_unshared", [
        updated, syntax.tuple_([syntax.name(n) for n in names]),
        syntax.const(ctx.user_name(updated.id)), syntax.const(tuple(shown)), syntax.const(where),
    ])
    return anno.copy_origin(stmt, syntax.expression_statement(check))
