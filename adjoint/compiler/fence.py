"""Fence: reject the syntax adjoint does not differentiate, every instance at once.

Assumes: a `FunctionDef` from `source`.
Guarantees: after `transform`, the body holds only straight-line code: assignments to names
(plain, tuple-unpacking, annotated, augmented), expression statements, `assert`, `pass`, and
one `return` as the last statement; no nested functions, lambdas, comprehensions or
conditional expressions; no starred arguments. Anything else is a located problem in
`ctx.problems`, reported with all others by `ctx.check()`.

Before:  for i in range(3): x = x * 2     After: TransformError naming line, column and loop.
"""

from __future__ import annotations

import gast

from .context import Context
from .syntax import unparse

# Node kind -> what to tell the user.
_UNSUPPORTED = {
    gast.If: "`if` statements are not supported yet",
    gast.For: "`for` loops are not supported yet",
    gast.AsyncFor: "`async for` is not supported",
    gast.While: "`while` loops are not supported yet",
    gast.Try: "`try` statements are not supported",
    gast.With: "`with` statements are not supported yet",
    gast.AsyncWith: "`async with` is not supported",
    gast.Raise: "`raise` is not supported in differentiated code",
    gast.Delete: "`del` is not supported",
    gast.Global: "`global` is not supported",
    gast.Nonlocal: "`nonlocal` is not supported",
    gast.Import: "imports inside a differentiated function are not supported",
    gast.ImportFrom: "imports inside a differentiated function are not supported",
    gast.ClassDef: "class definitions inside a differentiated function are not supported",
    gast.FunctionDef: "nested functions are not supported yet",
    gast.AsyncFunctionDef: "async functions are not supported",
    gast.Lambda: "lambdas inside a differentiated function are not supported yet",
    gast.IfExp: "conditional expressions are not supported yet",
    gast.BoolOp: "`and` / `or` are not supported yet",
    gast.ListComp: "list comprehensions are not supported yet",
    gast.SetComp: "set comprehensions are not supported",
    gast.DictComp: "dict comprehensions are not supported yet",
    gast.GeneratorExp: "generator expressions are not supported yet",
    gast.Yield: "generators (`yield`) are not supported",
    gast.YieldFrom: "generators (`yield from`) are not supported",
    gast.Await: "`await` is not supported",
    gast.NamedExpr: "assignment expressions (`:=`) are not supported",
    gast.Starred: "starred expressions (`*args`) are not supported yet",
    gast.Dict: "dict displays are not supported yet",
    gast.Set: "set displays are not supported",
}

_HINT = "rewrite it as straight-line code, or move it into a function with an @adjoint.rrule"


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Record a problem for every unsupported construct in `node`; return `node` unchanged."""
    _check_signature(node, ctx)
    body = node.body
    for index, stmt in enumerate(body):
        if isinstance(stmt, gast.Return) and index != len(body) - 1:
            ctx.problem(stmt, "a `return` before the end of the function is not supported yet", _HINT)
        for child in gast.walk(stmt):
            _check_node(child, ctx)
    return node


def _check_signature(node, ctx):
    if isinstance(node, gast.AsyncFunctionDef):
        ctx.problem(node, "async functions are not supported")
    if node.args.vararg is not None:
        ctx.problem(
            node.args.vararg,
            f"a `*{node.args.vararg.id}` parameter is not supported yet",
            "name the positional parameters",
        )


def _check_node(child, ctx):
    message = _UNSUPPORTED.get(type(child))
    if message is not None:
        ctx.problem(child, message, _HINT)
    elif isinstance(child, gast.Call) and any(k.arg is None for k in child.keywords):
        ctx.problem(child, "`**kwargs` in a call is not supported yet", "pass the keywords by name")
    elif isinstance(child, (gast.Assign, gast.AugAssign, gast.AnnAssign)):
        targets = child.targets if isinstance(child, gast.Assign) else [child.target]
        for target in targets:
            _check_target(target, ctx)


def _check_target(target, ctx):
    if isinstance(target, gast.Name):
        return
    if isinstance(target, (gast.Tuple, gast.List)):
        for element in target.elts:
            _check_target(element, ctx)
        return
    kind = "an attribute" if isinstance(target, gast.Attribute) else "an item"
    ctx.problem(
        target,
        f"assigning to {kind} (`{_short(target)}`) is not supported yet",
        "build a new value instead of updating one in place",
    )


def _short(node) -> str:
    return unparse(node)
