"""The report `adjoint.check` returns: one `CallEntry` per call site, and how a `CheckReport`
reads as a table.

>>> entry = CallEntry("f", "model.py", 3, 4, "    y = np.unwrap(x)", "np.unwrap", "numpy.unwrap", MISSING)
>>> report = CheckReport("f", [entry], [], [("f", "model.py:1")], [1])
>>> report.ok, report.summary()
(False, '1 missing')
"""

from __future__ import annotations

import collections
import dataclasses
import os

from .compiler import resolve
from .errors import Problem

__all__ = ["CallEntry", "CheckReport"]

RULE, USER_FUNCTION, NON_DIFFERENTIABLE, MISSING, DYNAMIC = (
    "rule", "user function", "non-differentiable", "missing", "dynamic",
)
_KINDS = {resolve.RULE: RULE, resolve.PYTHON: USER_FUNCTION, resolve.NON_DIFFERENTIABLE: NON_DIFFERENTIABLE,
          resolve.MISSING: MISSING, resolve.DYNAMIC: DYNAMIC}
_PLURALS = {RULE: "rules", USER_FUNCTION: "user functions", NON_DIFFERENTIABLE: "non-differentiable",
            MISSING: "missing", DYNAMIC: "dynamic"}


@dataclasses.dataclass(frozen=True)
class CallEntry:
    """One call site in the user's source and what adjoint makes of it."""

    function: str  # the qualified name of the function whose source holds the call
    filename: str
    line: int
    col: int  # 0-based, as in the AST
    source_line: str
    call: str  # the callee as written: "np.tanh"
    resolved: str  # what it refers to: "numpy.tanh" (or how it is found at run time)
    kind: str  # "rule", "user function", "non-differentiable", "missing" or "dynamic"
    note: str = ""  # more about the kind: "array method", "your rule", ...
    hint: str = ""  # for a missing rule: what to do about it
    active: bool | None = None  # whether a gradient flows through the call (None: not known)

    @property
    def blocking(self) -> bool:
        """Whether the transform would refuse this call: a missing rule the gradient reaches."""
        return self.kind == MISSING and self.active is not False


@dataclasses.dataclass
class CheckReport:
    """What `adjoint.check` found: `entries` (one `CallEntry` per call site, grouped by function
    in the order they were reached, then by line and column) and `problems` (syntax the
    transform refuses, as `adjoint.errors.Problem`s)."""

    function: str
    entries: list[CallEntry]
    problems: list[Problem]
    functions: list[tuple[str, str]]  # (qualified name, "path:line" of its definition), in order reached
    sizes: list[int] = dataclasses.field(default_factory=list, repr=False)  # each one's number of entries

    @property
    def missing(self) -> list[CallEntry]:
        """The calls adjoint has no rule for."""
        return [entry for entry in self.entries if entry.kind == MISSING]

    @property
    def ok(self) -> bool:
        """Whether the transform would accept everything found: no problem, and no missing rule
        on the gradient's path (one whose call carries no gradient is allowed)."""
        return not self.problems and not any(entry.blocking for entry in self.entries)

    def counts(self) -> dict[str, int]:
        """How many calls of each kind, in the order of `summary`."""
        found = collections.Counter(entry.kind for entry in self.entries)
        return {kind: found[kind] for kind in _PLURALS if found[kind]}

    def summary(self) -> str:
        """`"3 rules, 1 user function, 1 missing"`: the counts, and the problems if any."""
        parts = [f"{n} {kind if n == 1 else _PLURALS[kind]}" for kind, n in self.counts().items()]
        if self.problems:
            parts.append(f"{len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}")
        return ", ".join(parts) or "no calls"

    def format(self, path=os.path.basename) -> str:
        """The report as text: a table per function (location, call, what it resolved to, kind),
        the summary, then what to do about each missing rule and each problem; each file named
        `path(filename)` (by default its base name; the command line gives `os.path.relpath`)."""
        header = f"adjoint.check({self.function}): " + ("ok" if self.ok else "not differentiable as written")
        lines = [header, ""]
        rows = [(f"{path(e.filename)}:{e.line}", e.call, e.resolved, _kind_text(e)) for e in self.entries]
        widths = [max([len(row[i]) for row in rows] + [0]) for i in range(3)]
        start = 0
        for (name, where), size in zip(self.functions, self.sizes):
            filename, _, line = where.rpartition(":")
            lines.append(f"{name}  ({path(filename)}:{line})")
            own, start = rows[start : start + size], start + size
            for row in own:
                lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3])
            if not own:
                lines.append("  (no calls)")
        lines += ["", self.summary()]
        fixes = [e for e in self.missing if e.hint and e.blocking]
        if fixes:
            lines += ["", "missing rules:"]
            lines += [f"  {path(e.filename)}:{e.line}: `{e.call}`: {e.hint}" for e in fixes]
        if self.problems:
            lines += ["", "problems:"] + ["\n".join("  " + s for s in p.format().splitlines()) for p in self.problems]
        return "\n".join(line.rstrip() for line in lines)

    def __str__(self) -> str:
        return self.format()


def _kind_text(entry: CallEntry) -> str:
    text = entry.kind
    if entry.kind == MISSING and entry.active is False:
        text += " (no gradient flows through it: allowed)"
    elif entry.note:
        text += f" ({entry.note})"
    return text
