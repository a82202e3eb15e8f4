"""Get a function's syntax tree with true file positions.

Reads the function's file through `linecache` (so notebooks and adjoint's own generated code
work too; the file is checked first, so one edited and reloaded is read again). A `def` is
parsed from its own lines, found by its code object's line numbers and parsed at their true
lines and columns (most of a file is other functions: parsing it all would cost more than
the rest of reading one); a lambda, or a `def` whose lines the code cannot tell, is picked
from its whole file, parsed once per text, by its first line, name and, for lambdas sharing a
line, column. This avoids `inspect.getsource`'s pitfalls: dedenting methods with multi-line
strings, lambdas sharing a statement, decorators. Only the function's part of the tree is
converted to gast.

Guarantees: the returned `FunctionDef` (a lambda is rewritten into one returning its body)
is a private copy whose statements carry `ORIGIN` annotations, and its parameter names match
the code object that runs (or an error says the file changed since it was imported).
"""

from __future__ import annotations

import __future__
import ast
import dataclasses
import functools
import inspect
import linecache
import operator
import os
import types

import gast

from ..errors import AdjointError
from . import annotations as anno
from . import syntax


@dataclasses.dataclass
class FunctionSource:
    """A function's tree and where it came from."""

    node: gast.FunctionDef
    filename: str
    lines: list[str]
    name: str  # as the user wrote it (`<lambda>` for lambdas)

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    @functools.cached_property
    def nodes(self) -> list:
        """Every node of `node` as `get_source` made it (`syntax.walk`), walked once for what
        reads the tree before any pass changes it (`Context`, `fence`, `within`)."""
        return syntax.walk(self.node)


def get_source(fn) -> FunctionSource:
    """The syntax tree of Python function `fn`, or an `AdjointError` saying why there is none."""
    code = _code_of(fn)
    if os.path.isfile(code.co_filename):  # (a file since deleted keeps the text read before)
        linecache.checkcache(code.co_filename)  # a file edited (and reloaded) since it was read: read again
    lines = linecache.getlines(code.co_filename, getattr(fn, "__globals__", None))
    if not lines:
        raise AdjointError(
            f"adjoint cannot read the source of `{fn.__qualname__}`: Python keeps no source for "
            f"functions defined in {code.co_filename} (the plain interactive prompt or exec()). "
            "Define it in a .py file or a notebook cell, or register a rule for it with "
            "@adjoint.rrule."
        )
    lines = tuple(lines)
    own = _own_lines(code, lines)
    node = _definition(code.co_filename, *own, code) if own is not None else None
    if node is None:
        own, node = None, _find(_parse_lines(code.co_filename, lines), code)
    if node is None:
        raise AdjointError(
            f"adjoint cannot find `{fn.__qualname__}` in {code.co_filename} at line "
            f"{code.co_firstlineno}: was the file edited after it was imported? Reload it."
        )
    node = _as_function(_converted(node))
    _mangle_private_attributes(node, getattr(fn, "__qualname__", ""))
    _check_parameters(node, code, fn)
    _check_unchanged(code, fn, lines, own)
    return FunctionSource(node, code.co_filename, list(lines), code.co_name)


def definition_lines(fn) -> list[str]:
    """The lines of the `def` of function `fn` (decorators first), as `inspect.getsourcelines`
    gives them: read by its code object's line numbers, without tokenizing its file (which costs
    as much as parsing the lines, for each rule `inline` reads). `inspect` still decides where
    the code cannot tell: no code object, no positions recorded, a lambda, or a line after the
    last one its instructions come from that is indented as part of the body (`pass`, a string).

    >>> definition_lines(definition_lines)[0]
    'def definition_lines(fn) -> list[str]:\\n'
    """
    fn = inspect.unwrap(fn) if hasattr(fn, "__wrapped__") else fn  # (as `inspect` reads it)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return inspect.getsourcelines(fn)[0]
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    first, last = code.co_firstlineno, _last_line(code)
    head = lines[first - 1].lstrip() if 0 < first <= len(lines) else ""
    if last is not None and last <= len(lines) and head.startswith(("def ", "async def ", "@")):
        following = next((line for line in lines[last:] if line.strip() and not line.lstrip().startswith("#")), "")
        if _indent(following) <= _indent(lines[first - 1]):  # (not more of the body)
            return lines[first - 1 : last]
    return inspect.getsourcelines(fn)[0]


def _last_line(code) -> int | None:
    """The last line any instruction of `code` or of the code nested in it comes from (None if
    no position was recorded, as with `python -X no_debug_ranges`)."""
    ends = [end for _, end, _, _ in code.co_positions() if end is not None]
    ends += [_last_line(c) for c in code.co_consts if isinstance(c, types.CodeType)]
    ends = [end for end in ends if end is not None]
    return max(ends) if ends else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip()) if line.strip() else 0


def _own_lines(code, lines) -> tuple[int, str] | None:
    """`(first line, text)` of the `def` of `code` alone, padded to start at its true line and
    column (an indented one inside `if 1:`), or None for a lambda. Its lines run from its first
    (decorator) line on while they are blank, comments, indented deeper than the `def`, or
    close a bracket (a parameter list, a decorator's arguments): the next statement is the first
    at the `def`'s indent after the `def`. A line of its that reads otherwise (a string or a
    bracket running on at a lesser indent) cuts it short inside that line, where it does not
    parse: the whole file is read instead."""
    first = code.co_firstlineno
    if code.co_name == "<lambda>" or not 0 < first <= len(lines):
        return None
    head = lines[first - 1].lstrip()
    if not head.startswith(_HEADS):
        return None
    indent, seen_def, last = _indent(lines[first - 1]), head[0] != "@", first
    while last < len(lines):
        line = lines[last]
        text = line.lstrip()
        if text and text[0] not in "#)]}" and len(line) - len(text) <= indent:
            if seen_def or not text.startswith(_HEADS):
                break
            seen_def = text[0] != "@"
        last += 1
    if not indent:
        return first, "\n" * (first - 1) + "".join(lines[first - 1 : last])
    if first == 1:
        return None
    return first, "\n" * (first - 2) + "if 1:\n" + "".join(lines[first - 1 : last])


_HEADS = ("def ", "async def ", "@")


def _definition(filename, first, text, code):
    """The function of `code` in its own lines `(first, text)` (`_own_lines`), or None."""
    module = _parse_definition(filename, first, text)
    found = module.body[-1] if module is not None and module.body else None
    if isinstance(found, ast.If):
        found = found.body[0]
    if not isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) or found.name != code.co_name:
        return None
    return found if (found.decorator_list[0] if found.decorator_list else found).lineno == first else None


@functools.lru_cache(maxsize=64)
def _parse_definition(filename, first, text) -> ast.Module | None:
    """A function's own lines parsed, once per text; never changed (`_converted` copies)."""
    try:
        return syntax.parse_stdlib(text)
    except SyntaxError:
        return None  # (cut short: `_own_lines`)


def _mangle_private_attributes(node, qualname: str) -> None:
    """`self.__W` in a method of `Model` as `self._Model__W`, as Python's compiler writes it:
    generated code runs outside the class body, where Python would not."""
    parts = qualname.split(".")
    owner = parts[-2].lstrip("_") if len(parts) > 1 and parts[-2] != "<locals>" else ""
    if not owner:
        return
    for attribute in syntax.walk(node):
        if isinstance(attribute, gast.Attribute) and attribute.attr.startswith("__") and not attribute.attr.endswith("__"):
            attribute.attr = f"_{owner}{attribute.attr}"


def _code_of(fn) -> types.CodeType:
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        raise AdjointError(
            f"adjoint cannot differentiate {fn!r}: it is not a Python function, so it has no "
            "source to transform. Register a rule for it with @adjoint.rrule."
        )
    return code


@functools.lru_cache(maxsize=64)
def _parse_lines(filename: str, lines: tuple[str, ...]) -> ast.Module:
    """The file's standard library tree, parsed once per text of the file; never changed (each
    function converts its own part, `_converted`)."""
    try:
        return syntax.parse_stdlib("".join(lines))
    except SyntaxError as error:
        raise AdjointError(f"adjoint cannot parse {filename}: {error}") from None


def _converted(node) -> gast.AST:
    """The gast tree of a function's `ast` node (a new tree: the function's private copy), every
    statement annotated with its `ORIGIN`."""
    converted = syntax.from_stdlib(node)
    for current in syntax.all_statements([converted]):
        if isinstance(current, gast.stmt):
            anno.set_(current, anno.ORIGIN, current.lineno)
    return converted


def _find(module, code):
    candidates = [node for node in _by_line(module).get(code.co_firstlineno, ()) if (
        code.co_name == "<lambda>" if isinstance(node, ast.Lambda) else node.name == code.co_name
    )]
    if len(candidates) > 1:
        candidates = _by_position(candidates, code) or candidates
    return candidates[0] if candidates else None


def _by_line(module) -> dict:
    """The module's functions and lambdas by the lines their code objects may start on (a
    function's decorator line and its `def` line), indexed once per parsed file."""
    index = getattr(module, "_adjoint_functions", None)
    if index is None:
        index = {}
        for node in syntax.walk(module):  # (faster than `ast.walk`; a `global`'s names come along as strings)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                for line in {first, node.lineno}:
                    index.setdefault(line, []).append(node)
            elif isinstance(node, ast.Lambda):
                index.setdefault(node.lineno, []).append(node)
        module._adjoint_functions = index
    return index


def _by_position(candidates, code):
    """Tell apart lambdas on one line by the columns their instructions come from."""
    positions = [p for p in code.co_positions() if None not in p and p[3] > p[2]]
    if not positions:
        return None
    line, _, col, _ = positions[0]
    inside = [
        node for node in candidates
        if (node.body.lineno, node.body.col_offset) <= (line, col)
        and (line, col) <= (node.body.end_lineno, node.body.end_col_offset)
    ]
    # The innermost lambda is the one whose body starts last.
    return sorted(inside, key=lambda n: (n.body.lineno, n.body.col_offset))[-1:]


def _as_function(node):
    if not isinstance(node, gast.Lambda):
        return node
    body = syntax.returns(node.body)
    gast.copy_location(body, node.body)
    body.end_lineno, body.end_col_offset = node.body.end_lineno, node.body.end_col_offset
    function = syntax.function("<lambda>", node.args, [body])
    gast.copy_location(function, node)
    for stmt in (body, function):
        anno.set_(stmt, anno.ORIGIN, stmt.lineno)
    return function


def _check_unchanged(code, fn, lines, own=None):
    """Refuse a file edited after import: the function compiled from the text as it is now
    must be the code that runs. (Only for real files; pytest-rewritten asserts are skipped.)
    A function at module level is first compiled from its own lines `own` (`_own_lines`) alone,
    which is quicker; where that gives other code (a call of a method of a module is compiled
    one way or another by whether an `import` bound the module's name), and for any other
    function, its whole file tells."""
    if not os.path.isfile(code.co_filename) or any(n.startswith("@py") for n in code.co_names):
        return
    if own is not None and "." not in code.co_qualname and _written_as(code, _compiled_alone(code, fn, own)):
        return
    if _written_as(code, _compile_lines(code.co_filename, lines)) is False:
        raise AdjointError(
            f"the source of `{fn.__qualname__}` in {code.co_filename} is not the code that runs: "
            "the file was edited after it was imported. Reload it."
        )


def _written_as(code, module_code) -> bool | None:
    """Whether `module_code` holds `code` (None: it holds no function at its line, or there is
    no `module_code`: it cannot tell)."""
    if module_code is None:
        return None
    written = [c for c in _code_objects(module_code) if (c.co_name, c.co_firstlineno) == (code.co_name, code.co_firstlineno)]
    return any(_same_code(c, code) for c in written) if written else None


def _compiled_alone(code, fn, own):
    """Module code of a function's own lines, compiled under the `__future__` imports its code
    records, with its names that hold modules bound by an `import` (as they most likely were)."""
    names = getattr(fn, "__globals__", {})
    modules = tuple(sorted({n for n in code.co_names if isinstance(names.get(n), types.ModuleType)}))
    return _compile_definition(code.co_filename, *own, code.co_flags & _FUTURE_FLAGS, modules)


@functools.lru_cache(maxsize=64)
def _compile_lines(filename, lines):
    try:
        return compile("".join(lines), filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _compile_definition(filename, first, text, flags, modules):
    """`_compile_lines` of a function's own lines (from the tree `_parse_definition` made of
    them, without parsing them again), `import`ing `modules` after it."""
    module = _parse_definition(filename, first, text)
    if module is None:
        return None
    end = module.body[-1].end_lineno + 1
    imports = [ast.Import(names=[ast.alias(name=n, lineno=end, col_offset=0, end_lineno=end, end_col_offset=0) for n in modules],
                          lineno=end, col_offset=0, end_lineno=end, end_col_offset=0)] if modules else []
    try:
        return compile(ast.Module(body=module.body + imports, type_ignores=[]), filename, "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, TypeError):
        return None


# what `__future__` imports set in `co_flags`, as `compile` takes them (`nested_scopes` and
# `generators` are always on: the bits theirs would set mean other things there)
_FUTURE_FLAGS = functools.reduce(operator.or_, (
    getattr(__future__, feature).compiler_flag for feature in __future__.all_feature_names
    if feature not in ("nested_scopes", "generators")
))


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _same_code(a, b) -> bool:
    return (
        a.co_code == b.co_code and a.co_names == b.co_names and a.co_varnames == b.co_varnames
        and len(a.co_consts) == len(b.co_consts)
        and all(
            _same_code(x, y) if isinstance(x, types.CodeType) and isinstance(y, types.CodeType)
            else (type(x), repr(x)) == (type(y), repr(y))
            for x, y in zip(a.co_consts, b.co_consts)
        )
    )


def _check_parameters(node, code, fn):
    args = node.args
    written = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    running = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    if written != running:
        raise AdjointError(
            f"the source of `{fn.__qualname__}` in {code.co_filename} does not match the code "
            f"that runs (parameters {written} in the file, {running} in memory): the file was "
            "edited after it was imported. Reload it."
        )
