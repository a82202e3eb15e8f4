"""One name generator per function: readable names derived from the user's, never clashing.

Conventions in generated code: `x_bar` is the cotangent of `x`; `<f>_pullback` is a pullback
closure; `<f>_forward` is the transformed function; temporaries are named after the value they
feed and the operation (`h_matmul` in `h = np.tanh(x @ W)`); a rebound name gets a suffix
(`h`, then `h_1`); `adj` is the alias of adjoint's runtime helpers.
"""

from __future__ import annotations

import builtins
import keyword

import gast


class Namer:
    """Hands out names unused in the function and among the names it was seeded with."""

    def __init__(self, taken=()):
        self.taken = set(taken) | set(dir(builtins)) | set(keyword.kwlist)
        self.issued: set[str] = set()  # names this generator handed out

    def new(self, base: str) -> str:
        base = _clean(base)
        candidate, n = base, 0
        while candidate in self.taken:
            n += 1
            candidate = f"{base}_{n}"
        self.taken.add(candidate)
        self.issued.add(candidate)
        return candidate

    def reserve(self, identifier: str) -> None:
        self.taken.add(identifier)


def _clean(base: str) -> str:
    if base.isascii() and base.isidentifier() and base[0] != "_" and base[-1] != "_":
        return base  # (most are: tested at C speed)
    if not base.replace("_", "").isalnum():  # (most are clean already: not looked at character by character)
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
    text = base.strip("_") or "value"
    return "_" + text if text[0].isdigit() else text


# How a temporary is tagged after the operation that makes it: `h_matmul` in `h = x @ W + b`.
OPERATOR_TAGS = {
    gast.Add: "add", gast.Sub: "sub", gast.Mult: "mul", gast.Div: "div", gast.FloorDiv: "floordiv",
    gast.Mod: "mod", gast.Pow: "pow", gast.MatMult: "matmul", gast.USub: "neg", gast.UAdd: "pos",
    gast.Not: "not", gast.Invert: "invert", gast.LShift: "lshift", gast.RShift: "rshift",
    gast.BitAnd: "and", gast.BitOr: "or", gast.BitXor: "xor",
}
