"""The names an exported module binds: for every name generated code reads that it does not
define, an import or a literal (see `adjoint.exporting`).

A module is imported under the name the code uses (`import numpy as np`), the runtime under
its alias (`import adjoint.runtime as adj`), a function or class by its module and qualified
name when that leads back to the same object (`from model import Layer`), and a number,
string, boolean or None, or a tuple of them, is written as a literal (`SCALE = 2.0`). A
function of yours that the module differentiates itself is bound to its exported forward
function instead. Anything else is refused with where the code reads it.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import math
import os
import symtable
import sys
import types

from .compiler import loader
from .errors import AdjointError

@dataclasses.dataclass
class Binding:
    """How the exported module binds one name: `text`, a line of it (None: nothing to write)."""

    obj: object
    text: str | None
    kind: str  # "import", "constant", "builtin" or "exported"
    where: str  # the first use, as `file:line`


class Bindings:
    """Every name the exported units read, with the one object each means (refused where
    two units read one name as different objects)."""

    def __init__(self):
        self.bound: dict[str, Binding] = {}

    def read_by(self, unit, exported: dict) -> None:
        """Bind every name `unit`'s code reads; `exported` maps functions to their units."""
        for name in sorted(free_names(unit.compiled.text)):
            where = location(unit, first_use(unit.compiled.text, name))
            binding = _binding(unit, name, where, exported)
            if binding is None:
                continue
            known = self.bound.get(name)
            if known is None:
                self.bound[name] = binding
                if binding.kind == "exported":
                    exported[binding.obj].callee_names.append(name)
            elif not _same(known.obj, binding.obj):
                raise AdjointError(
                    f"{where}: `{name}` means {_described(binding.obj)} here, but {_described(known.obj)} at "
                    f"{known.where}: an exported module has one namespace; rename one of them"
                )

    def require(self, name: str, obj, where: str) -> None:
        """Bind `name` to `obj`, imported by its module and qualified name (a class whose method
        the module serves), as if the code read it."""
        binding = Binding(obj, _object_import(obj, name, where), "import", where)
        known = self.bound.setdefault(name, binding)
        if not _same(known.obj, obj):
            raise AdjointError(
                f"{where}: `{name}` means {_described(obj)} here, but {_described(known.obj)} at "
                f"{known.where}: an exported module has one namespace; rename one of them"
            )

    def fresh_name(self, preferred: str, taken) -> str:
        name, count = preferred, 1
        while name in self.bound or name in taken:
            name, count = f"{preferred}_{count}", count + 1
        return name

    def reserve(self, defined) -> None:
        """Refuse names the module defines (forward functions, entry points) that the code
        reads as something else, or that two units would both define."""
        seen = set()
        for name in defined:
            if name in seen:
                raise AdjointError(f"two exported functions would both define `{name}`: rename one of them")
            seen.add(name)
            if name in self.bound:
                raise AdjointError(
                    f"{self.bound[name].where}: the generated code reads `{name}`, a name the exported module "
                    "defines itself: rename it"
                )

    def imports(self, module_alias: str) -> str:
        lines = {b.text for b in self.bound.values() if b.kind == "import"}
        lines.add(f"import adjoint.runtime.exported as {module_alias}")
        return "\n".join(sorted(lines, key=lambda line: (line.startswith("from "), line)))

    def constants(self) -> str:
        return "\n".join(b.text for _, b in sorted(self.bound.items()) if b.kind == "constant")


def free_names(text: str) -> set[str]:
    """The names the functions in `text` read from the module's namespace or the builtins.

    >>> sorted(free_names("def f(x):\\n    def g():\\n        return np.sin(x) + k\\n    return g"))
    ['k', 'np']
    """
    names = set()
    pending = list(symtable.symtable(text, "<generated>", "exec").get_children())
    while pending:
        table = pending.pop()
        pending.extend(table.get_children())
        names.update(s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced())
    return names


def first_use(text: str, name: str) -> int:
    """The line of `text` where `name` is first read."""
    return min((n.lineno for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name) and n.id == name), default=1)


def location(unit, line: int) -> str:
    """`file:line` of the user's statement that generated line `line` of `unit`'s code (found as
    tracebacks find it, `loader.locate`)."""
    filename = os.path.basename(unit.fn.__code__.co_filename)
    found = loader.locate(unit.compiled.text.splitlines(True), line).line
    return f"{filename}:{found if found is not None else unit.fn.__code__.co_firstlineno}"


def literal(value) -> str | None:
    """`value` as Python source, if it is a number, string, boolean, None, or a tuple or dict of
    them; None otherwise.

    >>> literal((1, 2.5, "a", None)), literal(float("inf")), literal([1])
    ("(1, 2.5, 'a', None)", "float('inf')", None)
    """
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f"float({repr(value)!r})"
    if kind is complex and math.isfinite(value.real) and math.isfinite(value.imag):
        return repr(value)
    if kind is tuple:
        parts = [literal(v) for v in value]
        if None in parts:
            return None
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if kind is dict:
        parts = [(literal(k), literal(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in parts):
            return None
        return "{" + ", ".join(f"{k}: {v}" for k, v in parts) + "}"
    return None


# ---- one name ------------------------------------------------------------------------------------

def _binding(unit, name, where, exported) -> Binding | None:
    from .compiler.context import free_name  # noqa: PLC0415

    parameters, arguments = unit.compiled.parameters, unit.compiled.arguments
    if name in parameters:  # the runtime alias, or an object the transform injected (a rule)
        obj = arguments[parameters.index(name)]
    else:
        obj = free_name(unit.fn, name, _MISSING)
        if obj is _MISSING:
            return None  # (the function reads a name nothing binds: it raises NameError, as it would)
        in_module = name in unit.fn.__code__.co_freevars or name in unit.fn.__globals__
        if not in_module and obj is _BUILTINS.get(name, _MISSING):
            return Binding(obj, None, "builtin", where)
    if isinstance(obj, types.FunctionType) and obj in exported:
        return Binding(obj, None, "exported", where)
    if getattr(obj, "__adjoint_vjp__", None) is not None:  # (`adjoint.checkpoint`: it transforms when its pullback runs)
        raise AdjointError(
            f"{where}: the generated code calls `{name}`, a checkpoint (`adjoint.checkpoint`), whose pullback "
            "transforms its function again when it runs, which an exported module never does: export a "
            "version that calls the function itself"
        )
    text = literal(obj)
    if text is not None:
        return Binding(obj, f"{name} = {text}", "constant", where)
    if isinstance(obj, types.ModuleType):
        return Binding(obj, _module_import(obj, name, where), "import", where)
    return Binding(obj, _object_import(obj, name, where), "import", where)


def _module_import(module, name, where) -> str:
    module_name = module.__name__
    if module_name == "__main__" or sys.modules.get(module_name) is not module:
        raise AdjointError(
            f"{where}: the generated code reads the module `{name}`, which cannot be imported by name "
            f"({module_name!r}): import it from a file on the path"
        )
    return f"import {module_name}" if module_name == name else f"import {module_name} as {name}"


def _object_import(obj, name, where) -> str:
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    found = _MISSING
    if isinstance(module_name, str) and isinstance(qualname, str) and module_name != "__main__":
        try:
            found = importlib.import_module(module_name)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = _MISSING
    if found is not obj or "." in qualname:
        raise AdjointError(
            f"{where}: the generated code reads `{name}`, {_described(obj)}, which an exported module can "
            "neither import by name nor write as a literal: pass it as an argument, or define it at the top "
            "level of an importable module (not `__main__`, not inside a function)"
        )
    return f"from {module_name} import {qualname}" + ("" if qualname == name else f" as {name}")


def _described(obj) -> str:
    if isinstance(obj, (types.FunctionType, type, types.ModuleType)):
        return f"{type(obj).__name__} `{getattr(obj, '__qualname__', obj.__name__)}`"
    text = repr(obj)
    return f"a {type(obj).__name__}" + (f" ({text})" if len(text) <= 40 and "\n" not in text else "")


def _same(a, b) -> bool:
    if literal(a) is not None and literal(b) is not None:
        return type(a) is type(b) and literal(a) == literal(b)
    return a is b


_MISSING = object()
_BUILTINS = vars(builtins)
