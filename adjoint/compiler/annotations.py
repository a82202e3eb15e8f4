"""The annotations passes attach to nodes, each documented with what writes and reads it.

Annotations live in a dict on the node (`node._adjoint`), so they survive deep copies.
"""

from __future__ import annotations

import types

# The user's source line (1-based, in the user's file) a statement comes from.
# Written by `source` on every statement of the user's function and copied by every pass that
# derives statements from them; read by `emit` to write `# line N:` comments.
ORIGIN = "origin"

# How the callee of a call resolved, a `resolve.Callee`. Written by `resolve`, read by
# `activity`, `aliases`, `inplace`, `kinds`, `reverse` and `calls`.
CALLEE = "callee"

# Names whose values carry a gradient from the requested inputs (`set[str]`, on the function).
# Written by `activity`, read by `inplace` and `reverse`.
VARIED = "varied"

# Names whose values reach the returned value along differentiable paths (`set[str]`, on the
# function). Written by `activity`, read by `inplace` and `reverse`.
USEFUL = "useful"


# On a copy `a = b` that `ssa` inserted where control flow joins: "join" (end of a branch arm),
# "entry" (before a loop), "back" (end of a loop body) or "exit" (after a loop); "move" for the
# copies `normalize` makes of a swap `u, v = v, u`. Written by `ssa` and `normalize`, read by `aliases` and `inplace` (copies move values, they alias nothing), `loops` (the
# tape is appended before the "back" copies), `emit` (no comment of their own) and `optimize`
# (drops dead ones).
PHI = "phi"

# On a loop: `{carried name: (its name before the loop or None, its name after the loop)}`.
# Written by `ssa`, read by `reverse`.
LOOP = "loop"

# On a statement reading a frozen field (`t = m.encoder`), or a method call whose callee is one
# (`m.encoder(x)`): what it reads carries no gradient. Written by `frozen`, read by `activity`
# and `calls`.
FROZEN = "frozen"

# On `t = y[i]`, the read `normalize` makes for `y[i][j] = v` or `y[i] += v`: `y` is updated
# right after through `adj.setitem`, so `t` is no alias of it. Written by `normalize`, read by
# `aliases` and `inplace`.
ITEM_READ = "item_read"

# On an update (`y = adj.setitem(y, ...)`, `x = x + d` from `x += d`) that names read out of the
# same array before it could see in plain Python: those names, which `reverse` checks at run
# time share no memory with the updated array. Written by `inplace`, read by `reverse`.
SHARING_CHECK = "sharing_check"

# On `x = x + d` written by the user as `x += d`: the user's `AugAssign` statement. Written by
# `normalize`, read by `inplace`, which checks that the rewrite is faithful.
IN_PLACE = "in_place"
# On an `adj.setitem`/`adj.append`/`adj.add_at` call that `normalize` made of an update in place
# (`y[i] = v`, `xs.append(v)`, `np.add.at`), as opposed to one the source itself calls (code that
# adjoint generated, transformed again), which updates nothing in place.
MADE_UPDATE = "made_update"

# On a statement: the names whose reads there carry no derivative, because their contributions
# cancel exactly (`d = z - m` and `y = l + m` of a log-sum-exp shifted by `m`). Written by
# `shifts`, read by `activity` and `reverse`.
CANCELLED = "cancelled"

# On a call in a rule's code: the pure NumPy function it calls (a `Ref`), so `simplify` may
# evaluate the call when its arguments are constants (`np.where(2 == 0, 1, 2 - 1)` is 1).
# Written by `inline` when it reads a rule, read by `simplify`.
FOLDABLE = "foldable"


class Ref:
    """An object held by an annotation, shared (not copied) when nodes are deep-copied."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __deepcopy__(self, memo):
        return self


def get(node, key, default=None):
    return getattr(node, "_adjoint", _NONE).get(key, default)


_NONE = types.MappingProxyType({})  # the annotations of a node without any


def set_(node, key, value) -> None:
    if not hasattr(node, "_adjoint"):
        node._adjoint = {}
    node._adjoint[key] = value


def copy_origin(source, target):
    """Give `target` (a node or a list of nodes) the origin of `source`; returns `target`."""
    origin = get(source, ORIGIN)
    if origin is not None:
        for node in target if isinstance(target, list) else [target]:
            if get(node, ORIGIN) is None:
                set_(node, ORIGIN, origin)
    return target


def located(stmt):
    """Where a problem with a normalized statement is reported: the user's line it came from
    (statements `normalize` made have no position of their own)."""
    return _Position(get(stmt, ORIGIN))


class _Position:
    def __init__(self, line):
        self.lineno, self.col_offset, self.end_lineno, self.end_col_offset = line, 0, line, None
