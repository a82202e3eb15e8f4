"""The command line: `python -m adjoint show|explain|check|export path/to/file.py:function [--wrt 0,1]`.

A thin layer over `adjoint.source`, `adjoint.explain`, `adjoint.check` and `adjoint.export`. The file is
imported under a private module name (so its `if __name__ == "__main__":` block does not run),
with its folder on `sys.path` while it loads so its sibling imports work. Exit codes: 0 done;
1 the function cannot be transformed (the located error on stderr, or `check`'s report saying
why); 2 the request itself is wrong (no such file or function, a malformed `--wrt`, the file
failing to import), with a one-line message."""

from __future__ import annotations

import argparse
import importlib.util
import io
import itertools
import os
import re
import sys
import tokenize
import types

from .errors import AdjointError

__all__ = ["main"]

_MODES = {"rev": "vjp", "fwd": "jvp"}
_LINE_COMMENT = re.compile(r"^# line (\d+): ")  # what `emit` writes above each adjoint block
_module_numbers = itertools.count()


class UsageError(Exception):
    """The request cannot be served: its one-line message is shown, and the exit code is 2."""


def main(argv=None) -> int:
    """Run the command line with arguments `argv` (by default `sys.argv[1:]`); the exit code.

    >>> main(["show", "no/such/file.py:f"])  # (it says why on stderr: no such file)
    2
    """
    parser = _parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exit:  # --help, or arguments argparse refused (it printed why)
        return exit.code if isinstance(exit.code, int) else 2
    if options.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        f, path = _load_function(options.target)
        wrt = _parse_wrt(options.wrt, f)
        return options.run(options, f, path, wrt)
    except UsageError as error:
        print(f"adjoint: {error}", file=sys.stderr)
        return 2
    except AdjointError as error:  # a TransformError names the user's file and line itself
        print(_as_typed(str(error), options.target), file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m adjoint",
        description="Read, check and export the derivative code adjoint generates for a function in a Python file.",
        epilog="example: python -m adjoint show model.py:loss --wrt 0,1",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    show = commands.add_parser(
        "show", help="print the generated forward function and pullback (or JVP function)",
        description="Print the code adjoint generates for FILE.py:FUNCTION. Each block is labelled "
        "`# FILE.py:LINE: <your source line>`, the line it differentiates.",
    )
    _common(show)
    show.add_argument("--mode", choices=sorted(_MODES), default="rev",
                      help="rev: forward function and pullback (reverse mode, the default); fwd: JVP function")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="highlight the code with pygments, if installed (auto: when printing to a "
                      "terminal and NO_COLOR is not set)")
    show.set_defaults(run=_show)
    explain = commands.add_parser(
        "explain", help="which variables get adjoints, and why the others do not",
        description="List the variables of FILE.py:FUNCTION whose adjoints are computed, and for the "
        "others why they are skipped.",
    )
    _common(explain)
    explain.set_defaults(run=_explain)
    check = commands.add_parser(
        "check", help="what every call resolves to: rule, user function, non-differentiable or missing",
        description="Resolve every call in FILE.py:FUNCTION and in the functions of yours it reaches, "
        "without running anything; exit 1 if adjoint would refuse one.",
    )
    _common(check)
    check.set_defaults(run=_check)
    export = commands.add_parser(
        "export", help="write the derivative as a standalone module (see adjoint.export)",
        description="Write the forward function and pullback of FILE.py:FUNCTION as a module with entry points "
        "pullback, grad and value_and_grad, which runs without transforming anything.",
    )
    _common(export, default_wrt="0")
    export.add_argument("-o", "--output", metavar="MODULE.py", required=True, help="the module to write")
    export.set_defaults(run=_export)
    return parser


def _common(command: argparse.ArgumentParser, default_wrt=None) -> None:
    command.add_argument("target", metavar="FILE.py:FUNCTION",
                         help="the function, by its file and name (Class.method for a method)")
    command.add_argument("--wrt", metavar="PARAMS", default=default_wrt,
                         help="the parameters to differentiate, by position or name, comma-separated "
                         "(0,1 or x,y); by default " + ("all of them" if default_wrt is None else default_wrt))


def _show(options, f, path: str, wrt) -> int:
    from .api import source  # noqa: PLC0415  (the CLI's own import stays light for --help)

    text = labelled(source(f, wrt, mode=_MODES[options.mode]), path)
    if _colored(options.color):
        text = _highlighted(text)
    sys.stdout.write(text)
    return 0


def _explain(options, f, path: str, wrt) -> int:
    from .explaining import explain  # noqa: PLC0415

    print(explain(f, wrt).format(path))
    return 0


def _check(options, f, path: str, wrt) -> int:
    from .checking import check  # noqa: PLC0415

    report = check(f, wrt, file=None)
    print(report.format(os.path.relpath))  # (files named as `show` names them: from here)
    return 0 if report.ok else 1


def _export(options, f, path: str, wrt) -> int:
    from .exporting import export  # noqa: PLC0415

    written = export(f, options.output, wrt=wrt)
    print(f"adjoint: wrote {written}", file=sys.stderr)
    return 0


# ---- reading the request -----------------------------------------------------------------------

def _load_function(target: str) -> tuple[types.FunctionType, str]:
    """The function `target` (`path/to/file.py:name`, or `:Class.method`) names, and its path."""
    path, colon, qualname = target.rpartition(":")
    if not colon or not path or not qualname:
        raise UsageError(f"expected FILE.py:FUNCTION, got {target!r}")
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    module = _import(path)
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
        if found is None:
            defined = ", ".join(_defined(module)) or "none"
            raise UsageError(f"{path} defines no function {qualname!r} (functions there: {defined})")
    function = getattr(found, "__func__", found)  # a classmethod or staticmethod read off its class
    if not isinstance(function, types.FunctionType):
        raise UsageError(f"{path}:{qualname} is a {type(found).__name__}, not a Python function")
    return function, path


def _import(path: str) -> types.ModuleType:
    """Run the file as a fresh module (named as the file is, unless a module of that name is
    loaded already), its folder first on `sys.path` while it runs."""
    stem = os.path.splitext(os.path.basename(path))[0]
    # its own name where that is free (what `export` writes imports of), a private one otherwise
    name = stem
    if not stem.isidentifier() or stem in sys.modules:
        name = f"_adjoint_cli_{next(_module_numbers)}_" + re.sub(r"\W", "_", stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.modules[name] = module  # (dataclasses and pickling look their module up)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except BaseException as error:  # noqa: BLE001  (the file's own error, whatever it is, is the message)
        del sys.modules[name]
        if isinstance(error, KeyboardInterrupt):
            raise
        raise UsageError(f"importing {path} failed: {type(error).__name__}: {error}") from error
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _defined(module) -> list[str]:
    """The functions (and classes' methods) the module's own file defines, sorted."""
    names = []
    for name, value in sorted(vars(module).items()):
        if getattr(value, "__module__", None) != module.__name__:
            continue  # imported, not defined there
        if isinstance(value, types.FunctionType):
            names.append(name)
        elif isinstance(value, type):
            names += [f"{name}.{m}" for m, v in sorted(vars(value).items()) if isinstance(v, types.FunctionType)]
    return names


def _parse_wrt(text: str | None, f) -> int | tuple[int, ...] | None:
    """`--wrt`'s positions: `0`, `0,1` or parameter names `x,y` (None: all parameters)."""
    if text is None:
        return None
    params = f.__code__.co_varnames[: f.__code__.co_argcount]
    positions = []
    for item in text.split(","):
        item = item.strip()
        if item.isdigit() and int(item) < len(params):
            positions.append(int(item))
        elif item in params:
            positions.append(params.index(item))
        elif item.isdigit() or item.isidentifier():
            raise UsageError(f"--wrt names {item!r}, but {f.__qualname__} has parameters ({', '.join(params)})")
        else:
            raise UsageError(f"--wrt takes positions or parameter names separated by commas (0,1 or x,y), not {text!r}")
    return positions[0] if len(positions) == 1 else tuple(positions)


# ---- writing the answer --------------------------------------------------------------------------

def labelled(text: str, path: str) -> str:
    r"""Generated source with each `# line N: ...` comment naming the file too (`# path:N: ...`,
    which terminals and editors can jump to). Only comments are touched, never code or strings.

    >>> print(labelled("def f_forward(x):\n    # line 3: y = x * 2\n    y = x * 2\n", "model.py"), end="")
    def f_forward(x):
        # model.py:3: y = x * 2
        y = x * 2
    """
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"\({re.escape(os.path.basename(path))}:(\d+)\)$")  # `# adjoint: ... of `f` (file.py:3)`
    try:
        comments = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError):  # (generated code always tokenizes: kept as it is if not)
        return text
    for token in comments:
        row, col = token.start
        line = lines[row - 1]
        renamed = _LINE_COMMENT.sub(lambda m: f"# {path}:{m.group(1)}: ", token.string, count=1)
        if renamed.startswith("# adjoint: "):
            renamed = header.sub(lambda m: f"({path}:{m.group(1)})", renamed)
        lines[row - 1] = line[:col] + renamed + line[col + len(token.string):]
    return "".join(lines)


def _as_typed(message: str, target: str) -> str:
    """`message` with the file's absolute path (as imports record it) written as the user typed it.

    >>> _as_typed(f"{os.path.abspath('model.py')}:9:5: no rule", "model.py:loss")
    'model.py:9:5: no rule'
    """
    path = target.rpartition(":")[0]
    return message.replace(os.path.abspath(path), path) if path else message


def _colored(choice: str) -> bool:
    if choice == "never" or _pygments() is None:
        return False
    if choice == "always":
        return True
    return not os.environ.get("NO_COLOR") and sys.stdout.isatty()


def _pygments():
    try:
        import pygments  # noqa: PLC0415  (optional)
    except ImportError:
        return None
    return pygments


def _highlighted(text: str) -> str:
    from pygments import highlight  # noqa: PLC0415
    from pygments.formatters import TerminalFormatter  # noqa: PLC0415
    from pygments.lexers import PythonLexer  # noqa: PLC0415

    return highlight(text, PythonLexer(), TerminalFormatter())
