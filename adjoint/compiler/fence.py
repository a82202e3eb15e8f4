"""Fence: reject the syntax adjoint does not differentiate, every instance at once.

Assumes: a `FunctionDef` from `source`.
Guarantees: after `transform`, the function uses only syntax the later passes handle: any
statement or expression except those listed in `_UNSUPPORTED` (so `if`, `for`, `while`,
`break`, `continue` and `return` anywhere, `with`, `try`/`finally` without `except`, nested
`def` and `lambda`); assignment targets are names, tuples or lists of them (one starred), and
items (`y[i] = v`); no `return`, `break` or `continue` inside `with`. Anything else
is a located problem in `ctx.problems`, reported with all others by `ctx.check()`.

Before:  try: y = f(x) except ValueError: y = x     After: TransformError naming line, column and `try`.
"""

from __future__ import annotations

import gast

from . import syntax
from .context import Context
from .syntax import unparse

# Node kind -> what to tell the user.
_UNSUPPORTED = {
    gast.AsyncFor: "`async for` is not supported",
    gast.AsyncWith: "`async with` is not supported",
    gast.Delete: "`del` is not supported",
    gast.Global: "`global` is not supported in differentiated code",
    gast.Nonlocal: "`nonlocal` is not supported in differentiated code",
    gast.Import: "imports inside a differentiated function are not supported",
    gast.ImportFrom: "imports inside a differentiated function are not supported",
    gast.ClassDef: "class definitions inside a differentiated function are not supported",
    gast.AsyncFunctionDef: "async functions are not supported",
    gast.SetComp: "set comprehensions are not supported",
    gast.Yield: "generators (`yield`) are not supported",
    gast.YieldFrom: "generators (`yield from`) are not supported",
    gast.Await: "`await` is not supported",
    gast.NamedExpr: "assignment expressions (`:=`) are not supported",
}
if hasattr(gast, "Match"):
    _UNSUPPORTED[gast.Match] = "`match` statements are not supported yet"

_HINT = "rewrite it without this construct, or move it into a function with an @adjoint.rrule"


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Record a problem for every unsupported construct in `node`; return `node` unchanged."""
    _check_signature(node, ctx)
    before = len(ctx.problems)
    for child in ctx.source.nodes if node is ctx.source.node else syntax.walk(node):  # (walked once, see `source`)
        if type(child) in _CHECKED:
            _check_node(child, ctx)
    if len(ctx.problems) > before:  # told again statement by statement: the order they are reported in
        del ctx.problems[before:]
        for stmt in node.body:
            for child in syntax.walk(stmt):
                _check_node(child, ctx)
    return node


# what `_check_node` looks at (it passes any other node)
_CHECKED = frozenset(_UNSUPPORTED) | {
    gast.Try, gast.With, gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For, gast.comprehension,
}


def _check_signature(node, ctx):
    if isinstance(node, gast.AsyncFunctionDef):
        ctx.problem(node, "async functions are not supported")


def _check_node(child, ctx):
    message = _UNSUPPORTED.get(type(child))
    if message is not None:
        ctx.problem(child, message, _HINT)
    elif isinstance(child, gast.Try) and (child.handlers or child.orelse):
        ctx.problem(child, "`try` with `except` or `else` is not supported", _HINT + "; `try`/`finally` is")
    elif isinstance(child, gast.With):
        _check_exits(child, ctx)  # (`control` checks jumps out of `try`)
    elif isinstance(child, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        targets = child.targets if isinstance(child, gast.Assign) else [child.target]
        for target in targets:
            _check_target(target, ctx, augmented=not isinstance(child, gast.Assign))
    elif isinstance(child, (gast.For, gast.comprehension)):
        _check_target(child.target, ctx, augmented=False)


def _check_exits(block, ctx):
    kind = "with"  # (`control` refuses jumps out of `try`)
    for child in syntax.walk(block):
        if isinstance(child, (gast.Return, gast.Break, gast.Continue)) and not _in_nested(block, child):
            word = type(child).__name__.lower()
            ctx.problem(child, f"`{word}` inside `{kind}` is not supported", f"move the `{word}` after the `{kind}` block")


def _in_nested(block, target) -> bool:
    """Whether `target` is inside a loop or function nested in `block` (where it is its own)."""
    for child in syntax.walk(block):
        if child is not block and isinstance(child, (gast.For, gast.While, gast.FunctionDef, gast.Lambda)):
            if any(n is target for n in syntax.walk(child)):
                return not isinstance(target, gast.Return) or isinstance(child, (gast.FunctionDef, gast.Lambda))
    return False


def _check_target(target, ctx, augmented):
    if isinstance(target, gast.Name):
        return
    if isinstance(target, (gast.Tuple, gast.List)) and not augmented:
        starred = [e for e in target.elts if isinstance(e, gast.Starred)]
        for element in target.elts:
            _check_target(element.value if isinstance(element, gast.Starred) else element, ctx, False)
        if len(starred) > 1:
            ctx.problem(target, "two starred targets in one assignment", "unpack in two steps")
        return
    if isinstance(target, gast.Subscript):
        return
    ctx.problem(
        target,
        f"assigning to an attribute (`{_short(target)}`) is not supported yet",
        "build a new object instead of updating one in place",
    )


def _short(node) -> str:
    return unparse(node)
