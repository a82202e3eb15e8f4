"""Per-transform state shared by the passes: the function, its source, names and problems."""

from __future__ import annotations

import builtins
import dataclasses
import linecache
import re
import types

import gast

from .. import runtime
from ..errors import Problem, TransformError
from . import syntax
from .naming import Namer
from .source import FunctionSource


@dataclasses.dataclass
class Context:
    """What every pass may read, and the problems they report (raised together by `check`)."""

    fn: object  # the user's function
    source: FunctionSource
    wrt: tuple[int, ...]  # positions of the parameters to differentiate with respect to
    # The differentiated arguments that are containers or objects, by parameter position, with
    # the paths frozen in them: `{0: (".encoder", ".layers[0].W"), 1: ()}`. The others are
    # floats or float arrays.
    frozen: dict[int, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # Compiling for implicit parameters: calls of Python functions carry gradients whatever
    # their arguments (they may read parameters through their globals and closures).
    implicit: bool = False
    namer: Namer = None
    problems: list[Problem] = dataclasses.field(default_factory=list)
    # Objects the generated code needs that the user's namespace does not hold, by name.
    injected: dict[str, object] = dataclasses.field(default_factory=dict)
    runtime_alias: str = "adj"
    # The function's parameters and assigned names (set by the pipeline after normalizing).
    local_names: set[str] = dataclasses.field(default_factory=set)
    # What the transform assumed about the function's free names: (name, attributes, object)
    # for each callee resolved at transform time and each user name inlined rules rely on.
    # The generated code is valid only while they hold (checked on every call).
    bindings: set[tuple] = dataclasses.field(default_factory=set)
    # Parameters the function updates in place (`x += 1`, `x[i] = v`), with the line: adjoint
    # rebinds them instead, which a caller inside differentiated code would notice (set by `inplace`).
    updated_parameters: set[tuple] = dataclasses.field(default_factory=set)
    # "reverse" or "tangent" (forward mode, where a value's tangent is computed when the value
    # is, so an update after a differentiated operation read the value changes nothing).
    mode: str = "reverse"
    # What the user wrote for names the passes made (`x_1` is `x`, `d_item` is `d['k']`).
    user_names: dict[str, str] = dataclasses.field(default_factory=dict)
    # Positions of the differentiated parameters whose arguments are Python floats: the code
    # is specialised on it (a float's arithmetic with floats broadcasts nothing).
    python_floats: tuple[int, ...] = ()
    # The forward function's names that certainly hold numbers or arrays (set by `reverse`).
    forward_numbers: frozenset = frozenset()

    def __post_init__(self):
        if self.namer is None:
            names = {n.id for n in self.source.nodes if type(n) is gast.Name}
            names |= set(getattr(getattr(self.fn, "__code__", None), "co_freevars", ()))
            self.namer = Namer(names)
            self.runtime_alias = self.namer.new("adj")

    @property
    def function_name(self) -> str:
        name = getattr(self.fn, "__qualname__", self.source.name)
        # a function nested in yours, made by generated code: named as in your source
        return _GENERATED_PREFIX.sub(r"\1", name)

    def problem(self, node, message: str, hint: str = "") -> None:
        """Record a problem located at `node`."""
        line = getattr(node, "lineno", None) or getattr(self.source.node, "lineno", 1)
        col = getattr(node, "col_offset", 0) or 0
        end_col = getattr(node, "end_col_offset", None)
        if getattr(node, "end_lineno", line) != line:
            end_col = len(self.source.line(line).rstrip("\n"))
        filename, text = self.source.filename, self.source.line(line)
        from .loader import user_location  # noqa: PLC0415  (the loader imports this module)

        user = user_location(filename, line)
        if user is not None:  # a function nested in yours, differentiated from generated code
            filename, line = user
            text = linecache.getline(filename, line)
            col, end_col = len(text) - len(text.lstrip()), len(text.rstrip("\n"))
        self.problems.append(Problem(filename, line, col, end_col, text, message, hint))

    def numeric_parameters(self, params: list[str]) -> set[str]:
        """The differentiated parameters that hold floats or float arrays (not a container or
        object: those have an entry in `frozen`)."""
        return {params[i] for i in self.wrt if isinstance(i, int) and i < len(params) and i not in self.frozen}

    def user_name(self, name: str) -> str:
        """How the user wrote what `name` holds, for messages."""
        seen = set()
        while name in self.user_names and name not in seen:
            seen.add(name)
            name = self.user_names[name]
        return name

    def check(self) -> None:
        """Raise every problem recorded so far, together."""
        if self.problems:
            raise TransformError(self.function_name, self.problems)

    def is_free_variable(self, identifier: str) -> bool:
        """Whether `identifier` is one of the function's closure variables."""
        return identifier in getattr(getattr(self.fn, "__code__", None), "co_freevars", ())

    def lookup_global(self, identifier: str, default=None):
        """What a free name of the function refers to now: closure cell, global or builtin."""
        return free_name(self.fn, identifier, default)

    def rely_on(self, dotted_name: str, obj, owner=None) -> None:
        """Record that the generated code assumes `dotted_name` refers to `obj`, in the
        differentiated function (or in `owner`, a rule whose free names were inlined)."""
        root, *attributes = dotted_name.split(".")
        self.bindings.add((_Identity(owner), root, tuple(attributes), _Identity(obj)))

    def reach(self, preferred: str, obj) -> str:
        """A name generated code can use for `obj`: the runtime alias, the name the user's
        module (or, for modules, a closure) already binds it to, or a new injected name."""
        if obj is runtime:
            return self.runtime_alias
        user_globals = getattr(self.fn, "__globals__", {})
        global_value = user_globals.get(preferred, _BUILTINS.get(preferred))
        candidates = [preferred] if global_value is obj and not self.is_free_variable(preferred) else []
        if isinstance(obj, types.ModuleType):
            free_names = getattr(self.fn.__code__, "co_freevars", ())
            candidates += [name for name in free_names if self.lookup_global(name) is obj]
            candidates += [name for name, value in user_globals.items() if value is obj]
        for name in candidates:
            if name not in self.local_names and name not in self.namer.issued and name != self.runtime_alias:
                self.namer.reserve(name)
                self.rely_on(name, obj)
                return name
        return self.inject(obj, preferred)

    def inject(self, obj, preferred: str) -> str:
        """A name under which generated code can reach `obj`."""
        for identifier, existing in self.injected.items():
            if existing is obj:
                return identifier
        identifier = self.namer.new(preferred)
        self.injected[identifier] = obj
        return identifier


_BUILTINS = vars(builtins)
_GENERATED_PREFIX = re.compile(r"__adjoint_closure__\.<locals>\.__adjoint_factory__\.<locals>\.(\w+?)(?:_forward)?\b")


def free_name(fn, name: str, default=None):
    """What free name `name` means in function `fn` now, in Python's order: closure cell,
    global, builtin."""
    code = fn.__code__
    if name in code.co_freevars:
        try:
            return fn.__closure__[code.co_freevars.index(name)].cell_contents
        except ValueError:  # an empty cell
            return default
    if name in fn.__globals__:
        return fn.__globals__[name]
    return _BUILTINS.get(name, default)  # (`getattr` would raise and drop an error for every local name)


class _Identity:
    """Wraps an object so bindings compare and hash it by identity."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)
