"""Tracebacks that point at your line: a note on an exception raised in generated code.

An exception raised while a generated forward function, pullback, fused gradient or JVP runs
(a shape mismatch, a domain error, a failing `assert` of yours, an error in a rule) shows
generated lines in its traceback. `annotate(exc)` adds one PEP 678 note naming the statement
of yours responsible: its file, line and text, whether the forward pass or the pullback was
running, and the generated line. The API's entry points call it as the exception leaves them
(`except BaseException as exc: annotate(exc); raise`, which costs nothing until something is
raised), so generated code carries no dispatch or wrapper for it. On the cached-call paths the
handler takes the place of a `finally` (the same one jump when nothing is raised) and binds no
name (`annotate_handled`: a bound name is one more local each call's frame clears).

    adjoint: in the pullback of `loss`, for model.py:12
        h = np.tanh(x @ W)
      generated: <adjoint loss #3>:27: W_bar = adj.matmul_rhs_bar(h_matmul_bar, x, W)

Generated code is found by its file: `<adjoint NAME #N>` (see `compiler.loader`), or a real
file written by `adjoint.export`, recognised by its header comment
``# adjoint: <what> of `NAME` (<file>:<line>)`` above the function; in both, the `# line N:`
comments map a generated line back to yours (`loader.locate`).
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import re
import sys

from .compiler import loader
from .errors import TransformError

__all__ = ["annotate", "annotate_handled"]

NOTE_PREFIX = "adjoint: "
_NOTED = "__adjoint_noted__"  # set on an exception once noted: one note, however many entry points it leaves
_GENERATED_NAME = re.compile(r"^<adjoint (.+) #\d+>$")
_HEADER = re.compile(r"^\s*# adjoint: (.+) of `(.+)` \((.+):(\d+)\)\s*$")
_CHAIN = 3  # the callers' generated code listed at most
_DEPTH = 8  # generated code made from generated code followed back at most (a JVP of a gradient: 2)


def annotate(exc: BaseException) -> BaseException:
    """Add to `exc` a note naming the line of yours whose generated code raised it, if its
    traceback passes through generated code (the innermost such frame; the generated callers
    of that one are listed after it). Returns `exc`. Noted once: an exception already noted,
    and a `TransformError` (located in your source already), are left as they are.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.sum(x @ np.ones((3, 2)))
    >>> try:
    ...     adjoint.grad(f)(np.ones(2))
    ... except ValueError as exc:
    ...     print(exc.__notes__[0])  # doctest: +ELLIPSIS
    adjoint: in the forward pass (fused gradient) of `f`, for <doctest ...>:2
        return np.sum(x @ np.ones((3, 2)))
      generated: <adjoint f #...>:...: f_matmul = x @ f_ones
    """
    if getattr(exc, _NOTED, False) or isinstance(exc, TransformError):
        return exc
    if any(isinstance(note, str) and note.startswith(NOTE_PREFIX) for note in getattr(exc, "__notes__", ())):
        return exc  # (an exception that takes no attributes)
    try:
        note = _note_for(exc.__traceback__)
    except Exception:  # (a RecursionError deep in the stack, say): never hide your error behind one of ours
        return exc
    if note is not None:
        try:
            setattr(exc, _NOTED, True)
        except (AttributeError, TypeError):
            pass
        try:
            exc.add_note(note)
        except TypeError:  # `__notes__` made something other than a list
            pass
    return exc


def _note_for(traceback) -> str | None:
    """The note for an exception whose traceback is `traceback`, or None if no generated code
    of yours raised it."""
    frames = _generated_frames(traceback)
    sites = []
    while frames and len(sites) <= _CHAIN:  # innermost first; the frames of one generated function as one
        function, line, _ = frames[-1]
        names = []
        while frames and frames[-1][0] == function:
            names.append(frames.pop()[2])
        site = _site(function[0], line, names)
        if site is not None:
            sites.append(site)
    return _note(sites) if sites else None


def annotate_handled() -> None:
    """`annotate` the exception being handled, for an `except BaseException:` clause on a hot
    path: one that binds a name (`as exc`) gives every call's frame one more local to clear,
    raised or not.

    >>> try:
    ...     raise ValueError("not from generated code")
    ... except ValueError:
    ...     annotate_handled()
    """
    annotate(sys.exception())


@dataclasses.dataclass(frozen=True)
class Site:
    """A generated line that was running, and the line of yours it comes from."""

    generated: str  # its file
    generated_line: int
    generated_text: str
    phase: str  # "the pullback", "the forward pass", ...
    function: str  # your function's name
    user_file: str
    user_line: int
    user_text: str


def site(filename: str, line: int, running=()) -> Site | None:
    """The `Site` of line `line` of generated file `filename`, or None for other code.
    `running` names the functions running there, innermost first: a function of yours defined
    in generated code (a lambda handed to `adjoint.hook`) is called from the pullback there
    (without them, the functions enclosing the line say).

    >>> import numpy as np, adjoint
    >>> from adjoint.compiler import pipeline
    >>> def f(x):
    ...     y = np.sin(x)
    ...     return y * x
    >>> forward = pipeline.forward_function(f, (0,))
    >>> text = linecache.getlines(forward.__code__.co_filename)
    >>> line = next(i for i, t in enumerate(text, 1) if "x_bar" in t and "cos" in t)
    >>> found = site(forward.__code__.co_filename, line)
    >>> found.phase, found.function, found.user_line - f.__code__.co_firstlineno, found.user_text
    ('the pullback', 'f', 1, 'y = np.sin(x)')
    """
    return _site(filename, line, running)


def _generated_frames(traceback) -> list:
    """`((file, its function's header), line, code name)` of each frame of `traceback` running
    generated code, outermost first."""
    frames = []
    while traceback is not None:
        code, line = traceback.tb_frame.f_code, traceback.tb_lineno
        filename = code.co_filename
        if line is None:  # (an instruction with no line, as Python 3.12 on may report)
            pass
        elif loader.made_from(filename) is not None:
            frames.append(((filename, 0), line, code.co_name))
        elif filename[:1] != "<" and _headers(filename):  # an exported module: one function per header
            above = [h for h in _headers(filename) if h <= line]
            frames.append(((filename, above[-1] if above else 0), line, code.co_name))
        traceback = traceback.tb_next
    return frames


def _site(filename: str, line: int, running=()) -> Site | None:
    lines = linecache.getlines(filename)
    if not 0 < line <= len(lines):
        return None
    generated_text = lines[line - 1].strip()
    phases, function, user_file, user_line, user_text = [], None, filename, line, ""
    following = True  # a derivative of generated code (a JVP of a gradient): say so, name the function it is of
    for _ in range(_DEPTH):  # followed back to your file
        made_from = loader.made_from(user_file)
        header = None if made_from is not None else _header_above(user_file, user_line)
        if made_from is None and header is None:
            break
        located = loader.locate(linecache.getlines(user_file), user_line)
        functions = running if running and not phases else located.functions
        # a function of yours nested in your function, transformed from the copy its generated
        # code holds: the functions enclosing the copy are not what was running
        following = following and (not phases or _is_generated(functions[0] if functions else ""))
        if following:
            phases.append(_phase(functions, linecache.getlines(user_file), user_line))
            named = _GENERATED_NAME.match(user_file) if made_from is not None else None
            function = named.group(1) if named else header.group(2) if header else function
        if made_from is None:  # an exported module: its header names your file
            made_from = _exported_user_file(user_file, header.group(3))
        if located.line is None:  # not code of yours (an export's entry points)
            return None
        user_file, user_line, user_text = made_from, located.line, located.text
    if not phases:
        return None
    user_text = linecache.getline(user_file, user_line).strip() or user_text
    return Site(filename, line, generated_text, _phrase(phases), function or "?", user_file, user_line, user_text)


def _phase(functions, lines, line) -> str:
    """What a generated function whose enclosing functions are `functions` (innermost first)
    computes at `line` of its text `lines`."""
    names = [name for name in functions if not name.startswith("__adjoint_")]
    if any(name.endswith("_pullback") for name in names):
        return "the pullback"
    outermost = names[-1] if names else ""
    if outermost.endswith("_gradient"):  # the pullback, inlined, starts at its seed (see `compiler.fuse`)
        seeded = any(_SEED.match(text) for text in _back_to(lines, line, outermost))
        return "the pullback (fused gradient)" if seeded else "the forward pass (fused gradient)"
    if outermost.endswith("_jvp"):
        return "the JVP (forward mode)"
    if outermost.endswith("_forward"):
        return "the forward pass"
    return "the generated code"


_SEED = re.compile(r"^\s*\w+_bar = \w+\.unit\(")


def _back_to(lines, line, function):
    """The lines above `line` (1-based) up to the definition of `function`."""
    definition = re.compile(rf"^\s*def {re.escape(function)}\(")
    for text in reversed(lines[: line - 1]):
        if definition.match(text):
            return
        yield text


def _is_generated(name: str) -> bool:
    return name.endswith(_GENERATED_SUFFIXES)


_GENERATED_SUFFIXES = ("_forward", "_pullback", "_gradient", "_jvp")


def _phrase(phases) -> str:
    """`["the JVP (forward mode)", "the pullback"]` -> "the JVP (forward mode) of the pullback"."""
    return " of ".join(phases)


def _note(sites) -> str:
    innermost, callers = sites[0], sites[1 : 1 + _CHAIN]
    lines = [f"{NOTE_PREFIX}in {innermost.phase} of `{innermost.function}`, for {_where(innermost, full=True)}"]
    if innermost.user_text:
        lines.append(f"    {innermost.user_text}")
    lines.append(f"  generated: {innermost.generated}:{innermost.generated_line}: {innermost.generated_text}")
    for caller in callers:
        lines.append(
            f"  called from {caller.phase} of `{caller.function}`, for {_where(caller, full=False)}"
            + (f": {caller.user_text}" if caller.user_text else "")
        )
    return "\n".join(lines)


def _where(site: Site, full: bool) -> str:
    filename = site.user_file if full else os.path.basename(site.user_file)
    return f"{filename}:{site.user_line}"


# ---- exported modules: real files, recognised by their header comment ------------------------

_header_cache: dict[str, tuple] = {}  # file -> (its lines as linecache held them, header lines)


def _headers(filename: str) -> tuple:
    """The 1-based lines of `filename` holding an export's `# adjoint:` header (none for most)."""
    lines = linecache.getlines(filename)
    cached = _header_cache.get(filename)
    if cached is not None and cached[0] is lines:
        return cached[1]
    found = tuple(i for i, text in enumerate(lines, 1) if "# adjoint:" in text and _HEADER.match(text))
    _header_cache[filename] = (lines, found)
    return found


def _header_above(filename: str, line: int):
    """The header match of the exported function holding `line` of real file `filename`, or None."""
    if filename is None or filename.startswith("<"):
        return None
    above = [h for h in _headers(filename) if h <= line]
    return _HEADER.match(linecache.getline(filename, above[-1])) if above else None


def _exported_user_file(exported: str, named: str) -> str:
    """Your file as an export's header names it (its base name), found next to the export if
    it is there (so its line can be shown in full), else as named."""
    beside = os.path.join(os.path.dirname(exported), named)
    return beside if os.path.exists(beside) else named
