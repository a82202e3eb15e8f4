"""Capture: the pullback uses the module-level values the forward pass used.

Assumes: a pullback body from `reverse`, reading some free names of the user's function.
Guarantees: every global or closure value the pullback reads (a name such as `SCALE`, or an
attribute of a module such as `cfg.scale` or `np.pi`) becomes a parameter of the pullback with
that value as its default, taken when the pullback is created at the end of the forward pass.
So `back()` sees the values the forward pass saw even if they are rebound in between. Modules
themselves and called functions (`np.cos(x)`) are left as they are: rebinding those is caught
by the pipeline's binding check on the next call.

Before:  def f_pullback(f_bar): x_bar = f_bar * SCALE * cfg.scale
After:   def f_pullback(f_bar, SCALE=SCALE, cfg_scale=cfg.scale): x_bar = f_bar * SCALE * cfg_scale
"""

from __future__ import annotations

import types

import gast

from . import syntax
from .context import Context


def transform(body: list, forward: list, seed: str, ctx: Context):
    """`(body, names, defaults)`: the pullback body reading captured names, and the extra
    parameters (after the seed) with their default expressions."""
    defined = ctx.local_names | {seed, ctx.runtime_alias} | set(ctx.injected) | _stored(forward) | _stored(body)
    replacer = _Attributes(ctx, defined)
    body = [replacer.visit(stmt) for stmt in body]
    captured = dict(replacer.captured)
    for name in sorted(set().union(*(syntax.load_names(s) for s in body)) - defined - set(captured)):
        if _is_free(name, ctx) and not isinstance(ctx.lookup_global(name), types.ModuleType):
            captured[name] = syntax.name(name)
    names = sorted(captured)
    return body, names, [captured[n] for n in names]


def _stored(statements) -> set[str]:
    return {
        n.id for s in statements for n in gast.walk(s)
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
    }


def _is_free(name, ctx) -> bool:
    return name in ctx.fn.__globals__ or ctx.is_free_variable(name)


class _Attributes(gast.NodeTransformer):
    """Replace module-attribute values (not callees) with captured names."""

    def __init__(self, ctx, defined):
        self.ctx, self.defined = ctx, defined
        self.captured: dict[str, object] = {}
        self.names: dict[str, str] = {}

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        for keyword in node.keywords:
            keyword.value = self.visit(keyword.value)
        return node  # the callee stays live

    def visit_Attribute(self, node):
        text, root = syntax.dotted(node), syntax.root_name(node)
        if text is None or root in self.defined or not _is_free(root, self.ctx):
            return self.generic_visit(node)
        if text not in self.names:
            self.names[text] = self.ctx.namer.new(text.replace(".", "_"))
            self.captured[self.names[text]] = syntax.copy_node(node)
        return syntax.name(self.names[text])
