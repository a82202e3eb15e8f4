"""`adjoint.explain`: which of a function's variables get adjoints, and why the others do not.

It runs the compiler up to its activity analysis (`compiler.activity`) and reads the two sets
that pass leaves, in the user's names: a variable is *active* when its value depends
differentiably on the requested inputs (varied) and reaches the returned value (useful); its
adjoint is computed. Every other assignment's adjoint is skipped, and the reason is which of
the two it lacks. Reasons are given per assignment, not per name: `z = np.ones(3) * n` in one
branch skips its adjoint even when `z = y` in the other is active, so a variable can be listed
as active at some lines and skipped at others. Nothing here decides activity a second time:
only the analysis the generated code was built from is read.
"""

from __future__ import annotations

import dataclasses
import inspect
import os

import gast

from . import arguments, forwards
from .api import _positions  # (the validation `adjoint.source` applies)
from .compiler import activity, pipeline, syntax
from .compiler import annotations as anno
from .errors import AdjointError

__all__ = ["explain", "Explanation", "Variable"]

NOT_DIFFERENTIATED = "parameter not differentiated (outside wrt)"
INDEPENDENT = "does not depend on the requested inputs"
KEYWORD = "keyword parameter: keyword arguments are not differentiated"
UNUSED = "does not reach the output along a differentiable path"
NEITHER = "does not depend on the requested inputs, nor reach the output along a differentiable path"
THROUGH = "depends on the requested inputs only through {}, which has no derivative"


@dataclasses.dataclass(frozen=True)
class Variable:
    """A user variable with the lines (in the user's file) where it is assigned, or where the
    function starts for a parameter; `reason` says why those assignments get no adjoint
    ("" when they do)."""

    name: str
    lines: tuple[int, ...]
    reason: str = ""


@dataclasses.dataclass(frozen=True, repr=False)
class Explanation:
    """What `explain` found: `active` variables (adjoints computed) and `inactive` ones (skipped,
    each with its reason), both in source order. Its `repr` is the readable table `format` gives."""

    function: str
    filename: str
    line: int
    wrt: tuple[str, ...]
    active: tuple[Variable, ...]
    inactive: tuple[Variable, ...]

    def format(self, filename: str | None = None) -> str:
        """The report as a table: one row per variable (and reason), located `file:line`, the
        file named `filename` (by default by its base name)."""
        where = os.path.basename(self.filename) if filename is None else filename
        header = f"adjoint.explain: `{self.function}` ({where}:{self.line}), differentiated with respect to "
        header += ", ".join(self.wrt) if self.wrt else "nothing"
        rows = [("active (adjoint computed)", "", "")] + [_row(v, where) for v in self.active]
        rows += [("", "", ""), ("skipped", "", "")] + [_row(v, where) for v in self.inactive]
        name_width = max((len(r[0]) for r in rows if r[1]), default=0)
        where_width = max((len(r[1]) for r in rows if r[1]), default=0)
        lines = [header, ""]
        for name, location, reason in rows:
            if not location:  # a heading or the blank line between the two groups
                lines.append(name)
                continue
            lines.append(f"  {name:<{name_width}}  {location:<{where_width}}  {reason}".rstrip())
        if not self.active:
            lines.insert(3, "  (none)")
        if not self.inactive:
            lines.append("  (none)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    __repr__ = __str__


def _row(variable: Variable, where: str) -> tuple[str, str, str]:
    return variable.name, f"{where}:{','.join(map(str, variable.lines))}", variable.reason


def explain(f, wrt=None) -> Explanation:
    """Which variables of `f` carry adjoints when it is differentiated with respect to the
    positional parameters `wrt` (an int or a tuple of ints; by default all of them), and why
    each other assignment's adjoint is skipped. Nothing is run: `f` is only read.

    >>> import numpy as np, adjoint
    >>> def f(x, n):
    ...     y = x * 2
    ...     w = x * 5
    ...     k = n + 1
    ...     return np.sum(y * k)
    >>> report = adjoint.explain(f, wrt=0)
    >>> [v.name for v in report.active]
    ['x', 'y']
    >>> print(report)  # doctest: +NORMALIZE_WHITESPACE
    adjoint.explain: `f` (<doctest ...>:1), differentiated with respect to x
    <BLANKLINE>
    active (adjoint computed)
      x  <doctest ...>:1
      y  <doctest ...>:2
    <BLANKLINE>
    skipped
      n  <doctest ...>:1  parameter not differentiated (outside wrt)
      w  <doctest ...>:3  does not reach the output along a differentiable path
      k  <doctest ...>:4  does not depend on the requested inputs
    """
    forwards.require_python_function(f)
    code = f.__code__
    params = code.co_varnames[: code.co_argcount]
    positions = tuple(range(len(params))) if wrt is None else _positions(wrt)
    if not code.co_flags & inspect.CO_VARARGS and any(i >= len(params) for i in positions):
        raise AdjointError(f"wrt names argument {max(positions)}, but {arguments.name_of(f)} has {len(params)} parameters")
    node, ctx = pipeline.lower(f, positions, until="activity")
    varied, useful = anno.get(node, anno.VARIED), anno.get(node, anno.USEFUL)
    start = ctx.source.node.lineno
    found = [(name, start, reason) for name, reason in _parameters(node.args, positions, useful)]
    own = {n.id for n in ctx.source.nodes if type(n) is gast.Name and isinstance(n.ctx, gast.Store)}
    own = {ctx.user_name(name) for name in own} | {name for name, _, _ in found}
    for stmt in syntax.statements(node.body):
        if anno.get(stmt, anno.PHI) is not None or anno.get(stmt, anno.ORIGIN) is None:
            continue  # a copy ssa made where control flow joins: no assignment of the user's
        for generated in _assigned(stmt):
            name = ctx.user_name(generated)
            if name in own:
                found.append((name, anno.get(stmt, anno.ORIGIN), _reason(stmt, generated, varied, useful)))
    active, inactive = _grouped(found)
    return Explanation(
        ctx.function_name, ctx.source.filename, start, _names(params, node.args.vararg, positions), active, inactive,
    )


def _parameters(args: gast.arguments, positions: tuple[int, ...], useful: set):
    """`(name, reason)` for each parameter, in order (the reason "" for those differentiated)."""
    named = [a.id for a in args.posonlyargs + args.args]
    for i, name in enumerate(named):
        yield name, NOT_DIFFERENTIATED if i not in positions else "" if name in useful else UNUSED
    if args.vararg is not None:
        chosen = any(i >= len(named) for i in positions)
        yield args.vararg.id, NOT_DIFFERENTIATED if not chosen else "" if args.vararg.id in useful else UNUSED
    for keyword in args.kwonlyargs + ([args.kwarg] if args.kwarg is not None else []):
        yield keyword.id, KEYWORD


def _names(params: tuple[str, ...], vararg, positions: tuple[int, ...]) -> tuple[str, ...]:
    """The differentiated parameters' names, `*args` items as `args[0]`."""
    return tuple(params[i] if i < len(params) else f"{vararg.id}[{i - len(params)}]" for i in positions)


def _assigned(stmt) -> list[str]:
    """The names a statement assigns, as the passes left them."""
    if isinstance(stmt, gast.Assign):
        return sorted(activity.targets(stmt))
    if isinstance(stmt, gast.For):
        return sorted(syntax.stored_names(stmt.target))
    if isinstance(stmt, gast.FunctionDef):
        return [stmt.name]
    return []


def _reason(stmt, name: str, varied: set, useful: set) -> str:
    """Why the assignment of `name` by `stmt` gets no adjoint ("" when it gets one). A name is
    varied when any of its assignments reads a varied name; this one depends on the inputs only
    if it does itself."""
    depends = name in varied
    if depends and isinstance(stmt, gast.Assign):
        depends = bool(activity.differentiable_reads(stmt) & varied)
    reaches = name in useful
    if depends and reaches:
        return ""
    if not depends and isinstance(stmt, gast.Assign) and _reads(stmt.value) & varied:
        return THROUGH.format(_operation(stmt.value))  # (`k = np.argmax(x)`: it does depend on x)
    return UNUSED if depends else INDEPENDENT if reaches else NEITHER


def _reads(value) -> set[str]:
    return {n.id for n in gast.walk(value) if type(n) is gast.Name and isinstance(n.ctx, gast.Load)}


def _operation(value) -> str:
    """How a statement's value reads to the user: the call's callee as written (`np.argmax`), or
    the kind of operation."""
    if isinstance(value, gast.Call):
        callee = anno.get(value, anno.CALLEE)
        text = getattr(callee, "text", None) or syntax.dotted(value.func)
        return f"`{text}`" if text else "a call"
    if isinstance(value, gast.Compare):
        return "a comparison"
    if isinstance(value, gast.BinOp) and isinstance(value.op, gast.FloorDiv):
        return "`//`"
    return "an operation"


def _grouped(found) -> tuple[tuple[Variable, ...], tuple[Variable, ...]]:
    """One `Variable` per name and reason, its lines in order, in the order names first appear."""
    lines: dict[tuple[str, str], list[int]] = {}
    for name, line, reason in found:
        kept = lines.setdefault((name, reason), [])
        if line not in kept:
            kept.append(line)
    variables = [Variable(name, tuple(sorted(at)), reason) for (name, reason), at in lines.items()]
    variables.sort(key=lambda v: v.lines[0])  # (stable: a parameter before what shares its line)
    return tuple(v for v in variables if not v.reason), tuple(v for v in variables if v.reason)
