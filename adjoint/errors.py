"""The errors adjoint raises, and how a problem in the user's source is shown.

Every error derives from `AdjointError`. `TransformError` carries one `Problem` per location
found in the user's source, all of a function's problems at once, each formatted with the file,
line and column, the offending line with a caret underneath, and what to do about it.
"""

from __future__ import annotations

import dataclasses


class AdjointError(Exception):
    """Base class of every error adjoint raises."""


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing adjoint cannot differentiate, located in the user's source."""

    filename: str
    line: int
    col: int  # 0-based, as in the AST
    end_col: int | None
    source_line: str
    message: str
    hint: str = ""

    def format(self) -> str:
        width = max(1, (self.end_col or self.col + 1) - self.col)
        text = self.source_line.rstrip("\n")
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        caret = " " * max(0, self.col - indent) + "^" * width
        lines = [
            f"{self.filename}:{self.line}:{self.col + 1}: {self.message}",
            f"    {stripped}",
            f"    {caret}",
        ]
        if self.hint:
            lines.append(f"    hint: {self.hint}")
        return "\n".join(lines)


class TransformError(AdjointError):
    """A function's source holds constructs adjoint cannot differentiate.

    `problems` lists every one found, so they can all be fixed in one go.
    """

    def __init__(self, function_name: str, problems: list[Problem], context: str = ""):
        self.function_name = function_name
        self.problems = list(problems)
        count = len(self.problems)
        header = (
            f"adjoint cannot differentiate `{function_name}`: "
            f"{count} problem{'s' if count != 1 else ''} found\n"
            + (f"{context}\n" if context else "") + "\n"
        )
        super().__init__(header + "\n\n".join(p.format() for p in self.problems))
