"""Emit: the generated function as readable source, with comments mapping it to the user's lines.

Assumes: a function whose statements carry `ORIGIN` annotations.
Guarantees: valid Python source; before each run of statements from one user line, in every
body (nested functions, branches and loops too), a comment `# line N: <that line of the user's
source>`. The comments come from the annotations, so they stay right whatever earlier passes
removed or reordered; a copy `ssa` made where control flow joins gets none of its own.
"""

from __future__ import annotations

import os

import gast

from . import annotations as anno
from . import syntax
from .context import Context


def to_source(node: gast.FunctionDef, ctx: Context, title: str = "forward function and pullback") -> str:
    """`node` as source text, commented with the user's lines."""
    _comment_bodies(node, ctx)
    filename = os.path.basename(ctx.source.filename)
    where = f"`{ctx.function_name}` ({filename}:{ctx.source.node.lineno})"
    return f"# adjoint: {title} of {printable(where)}\n" + syntax.unparse(node) + "\n"


def printable(text: str) -> str:
    """`text` safe inside a one-line comment: no line breaks or other control characters."""
    if text.isprintable():  # (as nearly every line is: no character is looked at alone)
        return text
    return "".join(c if c.isprintable() else "?" for c in text)


def _comment_bodies(function, ctx):
    function.body = _commented(function.body, ctx)


def _commented(body, ctx, previous=None):
    """`body` with its comments, and the bodies nested in it commented (each walked once)."""
    out = []
    for stmt in body:
        origin = anno.get(stmt, anno.ORIGIN)
        # a copy where control flow joins belongs to the statement before it, not to its origin
        if origin is not None and origin != previous and not isinstance(stmt, gast.FunctionDef) and not anno.get(stmt, anno.PHI):
            out.append(syntax.comment(f"line {origin}: {_user_line(ctx, origin)}"))
            previous = origin
        out.append(stmt)
        if isinstance(stmt, gast.FunctionDef):  # (a function is a statement: none hides in an expression)
            _comment_bodies(stmt, ctx)
        else:
            for nested in syntax.bodies(stmt):
                nested[:] = _commented(nested, ctx, origin)
    return out


def _user_line(ctx, lineno) -> str:
    text = printable(ctx.source.line(lineno).strip())
    return text if len(text) <= 72 else text[:69] + "..."
