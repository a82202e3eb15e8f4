"""Cotangent names: `x_bar` for `x`, and which are nonzero at each point of the pullback.

Used by `reverse`, `calls` and `loops` while they write the pullback backwards: a cotangent is
"live" once something has been added to it; the first contribution assigns it, later ones add
to it (`+` for numbers and arrays, `adj.add` for tuples, lists and dicts, which `+` would
concatenate); a definition consumes its name's cotangent.

Before: contributions 2 * y_bar, then z_bar to x      After:  x_bar = 2 * y_bar
                                                              x_bar = x_bar + z_bar
"""

from __future__ import annotations

import gast

from . import syntax
from .context import Context


class Cotangents:
    """Names of cotangents, and which are known to be nonzero at each point of the pullback."""

    def __init__(self, ctx: Context, numeric: set[str]):
        self.ctx = ctx
        self.names: dict[str, str] = {}
        self.live: set[str] = set()
        self.reached: set[str] = set()  # every name something was added to (`loops` resets it per loop)
        self.numeric = numeric  # values known to be numbers or arrays: their cotangents add with `+`

    def name(self, var: str) -> str:
        if var not in self.names:
            self.names[var] = self.ctx.namer.new(f"{var}_bar")
        return self.names[var]

    def load(self, var: str):
        return syntax.name(self.name(var))

    def zeros(self, var: str, like: str | None = None) -> gast.Assign:
        """`x_bar = adj.zeros_like(x)` (shaped like `like` if given): a cotangent made nonzero."""
        return syntax.assign(self.name(var), self.zeros_of(like or var))

    def zeros_of(self, var: str):
        return syntax.call(f"{self.ctx.runtime_alias}.zeros_like", [syntax.name(var)])

    def accumulate(self, var: str, expr) -> gast.Assign:
        bar = self.name(var)
        self.reached.add(var)
        if var not in self.live:
            self.live.add(var)
            return syntax.assign(bar, expr)
        if var in self.numeric:
            if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub):  # `x_bar - g`, not `x_bar + -g`
                return syntax.assign(bar, syntax.binop(syntax.name(bar), gast.Sub, expr.operand))
            return syntax.assign(bar, syntax.binop(syntax.name(bar), gast.Add, expr))
        # A tuple's cotangent is a tuple, which `+` would concatenate.
        return syntax.assign(bar, syntax.call(f"{self.ctx.runtime_alias}.add", [syntax.name(bar), expr]))
