"""Load: compile generated source and bind it to the user's live globals and closure cells.

The generated function is wrapped in two factories: an outer one that declares the user's free
variables (so the generated code compiles them as free variables too), and an inner one that
takes the runtime alias and injected objects as parameters. The inner factory is rebuilt on
the user's own globals and cells, never a snapshot, so monkeypatching and `nonlocal` rebinding
are seen. The text is registered in `linecache` under `<adjoint NAME #N>`, so tracebacks and
`inspect.getsource` show generated lines, and `user_location` maps a generated line back to
the user's by the `# line N:` comments `emit` writes (what `adjoint.tracebacks` notes on an
exception raised in generated code).

    def __adjoint_closure__():
        W = None                       # the user's free variables, one line each
        def __adjoint_factory__(adj, sum_rrule):
            def f_forward(x): ...      # the generated function
            return f_forward
        return __adjoint_factory__
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import itertools
import linecache
import re
import types

from .. import registry
from .context import free_name

_counter = itertools.count(1)


@dataclasses.dataclass
class Compiled:
    """Generated code, ready to be bound to any function object sharing the user's code."""

    factory_code: types.CodeType
    parameters: tuple[str, ...]  # of the inner factory, in order
    arguments: tuple[object, ...]  # what to pass for them
    text: str  # the generated function alone
    arity: int  # positional parameters of the generated function
    bindings: tuple = ()  # (name, attributes, object) the code assumes; see `still_valid`
    rules_version: int = -1  # `registry.version` when it was generated
    updated_parameters: tuple = ()  # (parameter, line): updated in place in the user's code


def compile_source(
    text: str, name: str, free_names, alias: str, runtime, injected: dict, arity: int, bindings=(),
    user_filename=None,
) -> Compiled:
    """Compile the generated function `text` inside its factories; `alias` names `runtime`."""
    filename = f"<adjoint {name} #{next(_counter)}>"
    if user_filename is not None:
        _user_files[filename] = user_filename
    parameters = (alias,) + tuple(injected)
    declared = "".join(f"    {v} = None\n" for v in free_names) or "    pass\n"
    module_text = (
        "def __adjoint_closure__():\n"
        + declared
        + f"    def __adjoint_factory__({', '.join(parameters)}):\n"
        + _indented(text)
        + f"        return {_defined_name(text)}\n"
        + "    return __adjoint_factory__\n"
    )
    linecache.cache[filename] = (len(module_text), None, module_text.splitlines(True), filename)
    module_code = compile(module_text, filename, "exec")
    closure_code = _constant(module_code, "__adjoint_closure__")
    factory_code = _constant(closure_code, "__adjoint_factory__")
    arguments = (runtime,) + tuple(injected.values())
    return Compiled(factory_code, parameters, arguments, text, arity, tuple(bindings), registry.version)


_user_files: dict[str, str] = {}  # generated file -> the file it was made from (the user's, or generated)
_LINE_COMMENT = re.compile(r"^\s*# line (\d+): (.*)$")
_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)")


def made_from(filename: str):
    """The file the generated code in `filename` was made from (the user's; or, for code
    generated from generated code, as forward mode over a gradient is, that generated file),
    or None for a file adjoint did not generate."""
    return _user_files.get(filename)


@dataclasses.dataclass(frozen=True)
class Located:
    """Where a line of generated code comes from, read off its text."""

    line: int | None  # the line of the file it was made from (its `# line N:` comment), or None
    text: str  # that line's text as the comment shows it ("" without one)
    functions: tuple[str, ...]  # the generated functions enclosing it, innermost first


def locate(lines, line: int) -> Located:
    """Read the generated text `lines` (as `linecache` holds them) above `line` (1-based):
    the `# line N:` comment that statement belongs to, and the functions enclosing it.

    A comment belongs to the statements after it in its own block, and to the blocks nested in
    them: walking up, a comment inside a nested block (a loop's body, a nested function, written
    deeper) is passed over, so a statement after a loop or a nested function, which gets no
    comment of its own when its line is that of the statements before the block, is not given
    the block's. Stops at an export's `# adjoint:` header (the code of the function before it).

    >>> text = ["def f_forward(x):\\n", "    # line 2: y = g(x)\\n", "    for i in r:\\n",
    ...         "        # line 3: y = y * i\\n", "        y = y * i\\n", "    z = y\\n"]
    >>> locate(text, 6)
    Located(line=2, text='y = g(x)', functions=('f_forward',))
    >>> locate(text, 5).line
    3
    """
    found, functions = None, []
    limit = _indentation(lines[line - 1]) if 0 < line <= len(lines) else 0
    for text in reversed(lines[: max(line - 1, 0)]):
        stripped = text.strip()
        if not stripped:
            continue
        indentation = _indentation(text)
        if stripped.startswith("#"):
            if stripped.startswith("# adjoint:") and indentation <= limit:
                break
            match = _LINE_COMMENT.match(text) if found is None and indentation <= limit else None
            if match:
                found = Located(int(match.group(1)), match.group(2).strip(), ())
            continue
        if indentation < limit:  # the header of the block enclosing what came before
            limit = indentation
            definition = _DEF.match(text)
            if definition:
                functions.append(definition.group(1))
    if found is None:
        return Located(None, "", tuple(functions))
    return dataclasses.replace(found, functions=tuple(functions))


def _indentation(text: str) -> int:
    return len(text) - len(text.lstrip())


def user_location(filename: str, line: int):
    """`(user's file, line)` for a line of generated code (a nested function's statement, found
    again by the `# line N:` comment above it; code generated from generated code, followed back
    to the user's), or None for other files."""
    seen = set()
    while filename in _user_files and filename not in seen:
        seen.add(filename)
        located = locate(linecache.getlines(filename), line)
        if located.line is None:
            return None
        filename, line = _user_files[filename], located.line
    return (filename, line) if seen else None


def instantiate(compiled: Compiled, fn, checked: bool = True):
    """The generated function bound to `fn`'s globals, closure cells and defaults; with
    `checked`, its `__adjoint_bound__()` tells, quickly enough to ask on every call, whether
    `still_valid` (writing that check costs more than a call: a function instantiated for
    one call, a pullback's JVP, goes without)."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[v] for v in compiled.factory_code.co_freevars)
    factory = types.FunctionType(compiled.factory_code, fn.__globals__, "__adjoint_factory__", None, closure)
    generated = factory(*compiled.arguments)
    generated.__defaults__ = fn.__defaults__
    generated.__kwdefaults__ = fn.__kwdefaults__
    generated.__adjoint_arity__ = compiled.arity
    generated.__adjoint_source__ = compiled.text
    generated.__adjoint_compiled__ = compiled
    if checked:
        generated.__adjoint_bound__ = binding_check((compiled, fn))
    return generated


def still_valid(compiled: Compiled, fn) -> bool:
    """Whether the names the generated code was resolved against still mean the same objects,
    and no rule was registered since."""
    if compiled.rules_version != registry.version:
        return False
    for owner, root, attributes, expected in compiled.bindings:
        value = free_name(owner.obj or fn, root, _MISSING)
        for attribute in attributes:
            value = getattr(value, attribute, _MISSING)
        if value is not expected.obj:
            return False
    return True


def binding_check(*pairs):
    """`still_valid(compiled, fn)` for every `(compiled, fn)` of `pairs`, as one function of no
    arguments, written out as straight-line code (a name two of them read where it lives is
    checked once): each name is looked up where it lived when `fn`'s code was instantiated (a
    closure cell, or the globals and then the builtins), so a monkeypatched global or a rebound
    cell is still seen. Where a name lives is fixed for a function object as long as its code
    is (the caller checks `fn`'s; a rule's code is not replaced). Missing names and attributes,
    and emptied cells, fail the check: the code is then compiled again, and checked anew."""
    names: dict[int, str] = {}
    objects: list = []

    def named(obj) -> str:  # the check's parameter holding `obj`
        if id(obj) not in names:
            names[id(obj)] = f"_{len(objects)}"
            objects.append(obj)
        return names[id(obj)]

    versions = sorted({compiled.rules_version for compiled, _ in pairs})
    terms = [f"{named(registry)}.version == {named(version)}" for version in versions]
    checked = {}  # (where the name lives, attributes) -> the object checked there
    bindings = [(binding, fn) for compiled, fn in pairs for binding in compiled.bindings]
    for (owner, root, attributes, expected), fn in sorted(bindings, key=lambda b: (len(b[0][2]), b[0][1], b[0][2])):
        function = owner.obj or fn
        code = function.__code__
        cell = function.__closure__[code.co_freevars.index(root)] if root in code.co_freevars else None
        place = (id(cell if cell is not None else function.__globals__), root)
        if checked.get((place, attributes), _MISSING) is expected.obj:
            continue  # two rules of one module
        parent = checked.get((place, attributes[:-1]), _MISSING) if attributes else _MISSING
        if parent is not _MISSING:  # `np.exp` after `np`: read it from the object `np` was just checked to be
            value = f"{named(parent)}.{attributes[-1]}"
        else:
            if cell is not None:
                value = f"{named(cell)}.cell_contents"
            elif root in function.__globals__:
                value = f"{named(function.__globals__)}.get({root!r}, _M)"
            else:
                value = f"{named(function.__globals__)}.get({root!r}, _B.get({root!r}, _M))"
            value += "".join(f".{attribute}" for attribute in attributes)
        checked[(place, attributes)] = expected.obj
        terms.append(f"{value} is {named(expected.obj)}")
    return _check_factory(len(objects), " and ".join(terms))(*objects)


@functools.lru_cache(maxsize=1024)
def _check_factory(count: int, condition: str):
    """Compiled once per shape of check (closures of one function share it)."""
    parameters = ", ".join(f"_{i}" for i in range(count))
    text = (
        f"def __adjoint_check_factory__({parameters}):\n"
        "    def __adjoint_bound__():\n"
        "        try:\n"
        f"            return {condition}\n"
        "        except (AttributeError, ValueError):  # a name or attribute gone, a cell emptied\n"
        "            return False\n"
        "    return __adjoint_bound__\n"
    )
    namespace = {"_M": _MISSING, "_B": _BUILTINS}
    exec(compile(text, "<adjoint binding check>", "exec"), namespace)
    return namespace["__adjoint_check_factory__"]


_MISSING = object()
_BUILTINS = vars(builtins)  # where `free_name` looks after the globals


def _constant(code, name):
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _indented(text: str) -> str:
    """`textwrap.indent(text, " " * 8)` (blank lines, inside a multi-line string, left as they are),
    without a call per line.

    >>> _indented("x = 1\\n\\nif x:\\n    y = 2\\n")
    '        x = 1\\n\\n        if x:\\n            y = 2\\n'
    """
    return "".join(["        " + line if line.strip() else line for line in text.splitlines(True)])


def _defined_name(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("def "):
            return line[4 : line.index("(")]
    raise ValueError("no function definition in generated text")
