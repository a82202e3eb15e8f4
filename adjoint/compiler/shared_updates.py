"""Shared updates: whether an in-place update would show through another name, for `inplace`.

adjoint never updates an array in place: `x += d` is `x = x + d`, `y[i] = v` is
`y = adj.setitem(y, i, v)` and `xs.append(v)` is `xs = adj.append(xs, v)` (see `normalize`).
Guarantees: `problem` reports such an update when another name that may share the memory (a
copy, a view, a container holding it, the sequence a loop walks, what a call may have returned;
see `aliases`) is read afterwards, or when the value came from a call that may return an array
held elsewhere, with a hint that says what to write instead. An update of a parameter is
allowed (the caller's array is left as it was) and recorded in `ctx.updated_parameters`; one
that only items read out of the array before could see is allowed and checked at run time
(`SHARING_CHECK`).

Before:  y = x[0:2]; y += 1.0       After: a problem at `y += 1.0`
"""

from __future__ import annotations

import gast

from . import aliases, syntax
from . import annotations as anno


def problem(stmt, update, updated, facts, index, ctx):
    """A problem if updating `updated` (by `+=`, `y[i] = v` or `.append`) would show, in plain
    Python, through another name that is read later and that adjoint's rebinding leaves as it
    was: a copy, a view, a container holding it, or the sequence a loop walks. `update`: the
    `AugAssign` a `+=` was (`IN_PLACE`), None for an item assignment or an append; `facts`:
    what `inplace` knows of the whole function (its simple statements, their reads, the loops
    and branches around each, its aliases); `index`: the statement's place among them.

    >>> from adjoint.compiler import pipeline
    >>> from adjoint.errors import TransformError
    >>> def f(x):
    ...     y = x[0:2]
    ...     y += 1.0
    ...     return np.sum(x)
    >>> try:
    ...     pipeline.lower(f, (0,), until="inplace")
    ... except TransformError as error:
    ...     print(error.problems[0].message.partition(", but ")[2])
    `y` may also be reached through another name or view (`x[0:2]`), and adjoint updates a copy
    """
    where = update if update is not None else stmt
    what = f"`{update.target.id} {syntax.symbol(update.op)}= ...`" if update is not None else "this update"
    name = update.target.id if update is not None else ctx.user_name(updated)
    known = facts.aliases
    origins = known.origins(updated)
    roots = known.roots(updated)
    if origins and all(isinstance(d.value, gast.Tuple) for d in origins):
        return None  # a tuple: `t += (v,)` always makes a new one, in Python too
    if _holds_a_literal(updated, known):
        return None  # a number: `s = t = 0.0; s += x` rebinds `s` in Python too
    item_reads = [d for d in origins if anno.get(d, anno.ITEM_READ)]
    others = known.sharing(updated)
    for d in item_reads:
        if d.value.value.id in known.holders:  # `lst[0][0] = v` may update what another name holds
            others |= known.contained | set().union(*(known.sharing(n) for n in known.contained))
    made_here = [d for d in origins if update is not None and isinstance(d.value, gast.Name)
                 and d not in item_reads and aliases.made_here(d.value.id, known, facts.reads)]
    for d in made_here:  # a copy of a new array: the update shows only through what shares it
        others |= {d.value.id} | known.sharing(d.value.id)
    seen_later = sorted(n for n in others if _read_after(n, index, facts))
    views = [d for d in origins if isinstance(d.value, (gast.Name, gast.Subscript, gast.Attribute)) and d not in item_reads
             and d not in made_here and not (isinstance(d.value, gast.Name) and _holds_a_literal(d.value.id, known))]
    if roots & known.loop_items:
        reason = f"`{name}` is an item of the sequence the loop walks"
    elif views:
        seen = views[0].value
        shown = ctx.user_name(seen.id) if isinstance(seen, gast.Name) else syntax.unparse(seen)  # `a`, not `a_3`
        reason = f"`{name}` may also be reached through another name or view (`{shown}`)"
    elif not all(aliases.is_fresh(d) or d in item_reads or d not in views and isinstance(d.value, gast.Name)
                 for d in origins):
        reason = f"`{name}` comes from a call that may return an array held elsewhere (adjoint cannot tell)"
    elif seen_later and not _checkable_at_run_time(stmt, seen_later, index, facts):
        reason = f"`{name}` may also be reached through another name or view (`{ctx.user_name(seen_later[0])}`, read afterwards)"
    else:
        if roots & facts.params and not origins:
            ctx.updated_parameters |= {(r, getattr(where, "lineno", None)) for r in roots & facts.params}
        return None
    if roots & known.loop_items or views:
        # rebinding the name would leave the array it views unchanged: a different program
        hint = "update the array it is part of (`X[i] /= ...`), or copy first if that is not the intent"
    elif update is not None:
        sign = syntax.symbol(update.op)
        hint = f"write `{name} = {name} {sign} ...` to make the new value explicit"
    else:
        hint = f"copy it first (`{name} = {name}.copy()`) to make the new value explicit"
    return (where, f"{what} would change `{name}` in place, but {reason}, and adjoint updates a copy", hint)


def _checkable_at_run_time(stmt, names, index, facts) -> bool:
    """Whether the only names that could see an update are items read out of an array before
    it (`x, y = state[0], state[1]`): a scalar item shares no memory, a row would. Then the
    update is allowed and `reverse` checks, at run time, that they share no memory with it
    (`SHARING_CHECK`)."""
    known = facts.aliases
    for name in names:
        origins = known.origins(name)
        if not origins or not all(isinstance(d.value, gast.Subscript) for d in origins):
            return False
        if not any(i < index for i, s in enumerate(facts.statements) if s in origins):
            return False  # defined after the update: not there to check
    anno.set_(stmt, anno.SHARING_CHECK, tuple(names))
    return True


def _holds_a_literal(name, known, seen=None) -> bool:
    """Whether every value `name` can hold is a number literal, through plain copies."""
    seen = set() if seen is None else seen
    if name in seen:
        return True
    seen.add(name)
    definitions = known.definitions.get(name, [])
    return bool(definitions) and all(
        isinstance(d.value, gast.Constant) and isinstance(d.value.value, (int, float))
        or isinstance(d.value, gast.Name) and _holds_a_literal(d.value.id, known, seen)
        for d in definitions
    )


def _read_after(name, update, facts) -> bool:
    """Whether the value bound to `name` may be read after statement `update` runs: later in
    order, or earlier in a loop around both that does not bind `name` anew each time."""
    definitions = [i for i, s in enumerate(facts.statements) if s in facts.aliases.definitions.get(name, [])
                   and not anno.get(s, anno.PHI)]
    for read in facts.reads.get(name, []):
        # the other arm of a branch never runs in the same pass as the update (a loop may run it
        # next time: checked below)
        other_arm = any(facts.arms[update].get(branch, arm) != arm for branch, arm in facts.arms[read].items())
        if read > update and not other_arm:
            return True
        for first, last in facts.chains[read]:
            if first <= update <= last and not any(first <= d <= last for d in definitions):
                return True
    return False
