"""The catalog of what adjoint differentiates: every primitive with a built-in rule, by family,
with the arguments its rule takes, and every function declared to carry no gradient.

`docs/rules.md` is this catalog as markdown (`python -m adjoint.catalog > docs/rules.md`, or
`make docs`); a test keeps the two in sync, so the table is never out of date.

>>> entry = next(e for e in entries() if e.name == "np.sum")
>>> entry.call, entry.family, entry.inlined, entry.forward
('np.sum(a, axis=None, dtype=None, *, keepdims=False)', 'reductions', True, 'linear')
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import math
import operator

import numpy as np

from . import frules, registry
from .compiler import inline

_OPERATORS = {
    operator.add: "a + b", operator.sub: "a - b", operator.mul: "a * b", operator.truediv: "a / b",
    operator.floordiv: "a // b", operator.mod: "a % b", operator.pow: "a ** b", operator.matmul: "a @ b",
    operator.neg: "-a", operator.pos: "+a",
}

# Where a primitive's public name is looked for, in order: the first namespace holding it names it.
_NAMESPACES = [("np", np), ("np.linalg", np.linalg), ("np.fft", np.fft), ("math", math), ("", builtins)]


@dataclasses.dataclass(frozen=True)
class Entry:
    """One supported primitive: its public `name` (`np.sum`, `x.sum` for an array method,
    `a + b` for an operator), how to `call` it with the arguments the rule takes, its rule
    `family` (the module of `adjoint/rules/` defining it), whether generated code has the
    reverse rule's math `inlined` as NumPy expressions (otherwise the rule is called), and the
    kind of its `forward` rule (`adjoint.frules`: elementwise, linear and multilinear ones are
    inlined too)."""

    name: str
    call: str
    family: str
    inlined: bool
    aliases: tuple[str, ...] = ()
    forward: str = frules.RULE


def entries(builtin_only: bool = True) -> list[Entry]:
    """Every primitive with a rule, sorted by family and name; with `builtin_only`, only the
    rules adjoint ships (optional ones, such as scipy's, included when that library imports)."""
    registry.load_optional_rules()
    found = []
    for primitive, rule in _registered():
        module = getattr(rule.definition, "__module__", "") or ""
        if builtin_only and not module.startswith("adjoint.rules."):
            continue
        names = _names(primitive)
        if not names:
            continue  # the runtime's own primitives (`adj.setitem`), which users never call
        forward = frules.lookup(primitive)
        found.append(Entry(
            names[0], _call(names[0], rule), module.rsplit(".", 1)[-1],
            inline.plan_for(rule) is not None, tuple(names[1:]), forward.kind if forward is not None else "none",
        ))
    return sorted(found, key=lambda e: (e.family, e.name))


def without_gradient() -> list[str]:
    """The public names of the functions declared non-differentiable, sorted."""
    names = {_names(p)[0] for p in registry._NON_DIFFERENTIABLE.values() if _names(p)}
    return sorted(names)


def markdown() -> str:
    """The catalog as the markdown page `docs/rules.md`."""
    lines = [
        "# Supported functions",
        "",
        f"Generated from adjoint's rule registry by `make docs` (`python -m adjoint.catalog`), with NumPy",
        f"{numpy_version()}; a test keeps this page in sync with the code (functions that newer NumPy",
        "releases added are listed when they exist). Each function is listed with the arguments its rule",
        "takes: a keyword that is not listed (`out=`, `where=`...) is refused with an error naming it.",
        "*Inlined* rules are written into the generated code as NumPy expressions; the others are",
        "called. Every function has a reverse rule (gradients) and a forward rule (`adjoint.jvp`,",
        "Hessian-vector products): an elementwise, linear or multilinear forward rule is inlined",
        "(`dy = dx * (1 - y ** 2)`, `ds = np.sum(dx, axis=1)`, `dz = da @ b + a @ db`), a *rule* is",
        "called. Register rules for anything missing with `@adjoint.rrule` and `@adjoint.frule`, and",
        "check them with `adjoint.testing.check_rrule` (which checks the forward rule too).",
        "",
    ]
    by_family: dict[str, list[Entry]] = {}
    for entry in entries():
        by_family.setdefault(entry.family, []).append(entry)
    for family, group in by_family.items():
        lines += [f"## {family}", "", "| function | call | reverse rule | forward rule |", "|---|---|---|---|"]
        for e in group:
            also = f" (also {', '.join(f'`{a}`' for a in e.aliases)})" if e.aliases else ""
            forward = "*rule*" if e.forward == frules.RULE else e.forward
            lines.append(f"| `{e.name}`{also} | `{e.call}` | {'inlined' if e.inlined else 'called'} | {forward} |")
        lines.append("")
    lines += [
        "## Without gradient",
        "",
        "These run as they are inside differentiated code; their results carry no gradient.",
        "",
        ", ".join(f"`{name}`" for name in without_gradient()),
        "",
    ]
    return "\n".join(lines)


def numpy_version() -> str:
    """The NumPy release the catalog describes, as `major.minor`."""
    return ".".join(np.__version__.split(".")[:2])


def _registered():
    return [(primitive, rule) for primitive, rule in registry._RULES.values()]


def _names(primitive) -> list[str]:
    """The public names of `primitive`, canonical first: `["np.abs", "np.absolute"]`."""
    if _hashable(primitive) and primitive in _OPERATORS:
        return [_OPERATORS[primitive]]
    names = [f"x.{n}" for n in _attributes(np.ndarray) if getattr(np.ndarray, n, None) is primitive]
    for prefix, namespace in _NAMESPACES:
        names += [f"{prefix}.{n}".lstrip(".") for n in _attributes(namespace) if getattr(namespace, n) is primitive]
    names += _random_names(primitive)
    module = getattr(primitive, "__module__", None) or ""
    if module.startswith("scipy."):
        public = module.split("._")[0]  # `scipy.special._logsumexp` -> `scipy.special`
        names.append(f"{public}.{primitive.__name__}")
    own = getattr(primitive, "__name__", None)
    names.sort(key=lambda n: (n not in _USUAL, n.rsplit(".", 1)[-1] != own, len(n), n))  # its own name first
    return names


# Aliases people write more often than the function's own name (`np.absolute`, `np.remainder`).
_USUAL = {"np.abs", "np.mod", "np.conj"}



def _random_names(primitive) -> list[str]:
    """`np.random.rand` for `RandomState.rand`, which `np.random.rand` calls on NumPy's global
    generator, and `np.random.Generator.normal` for a generator's method."""
    functions = {n: getattr(np.random, n) for n in _attributes(np.random)}
    names = [f"np.random.{n}" for n, f in functions.items() if getattr(f, "__func__", f) is primitive]
    for state in (f for f in functions.values() if isinstance(f, type)):
        names += [f"np.random.{state.__name__}.{n}" for n, m in vars(state).items() if m is primitive and n[0] != "_"]
    return names


def _attributes(namespace) -> list[str]:
    return [n for n in dir(namespace) if not n.startswith("_")]


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _call(name, rule) -> str:
    """How to call `name` with the arguments the rule takes: `np.sum(a, axis=None, ...)`."""
    if not name.isidentifier() and "." not in name:
        return name  # an operator, shown as the expression
    signature = rule.signature
    if signature is None:
        return f"{name}(...)"
    parameters = list(signature.parameters.values())
    if name.startswith("x."):
        parameters = parameters[1:]  # the array is the receiver
        if isinstance(inspect.getattr_static(np.ndarray, name[2:]), (property, type(np.ndarray.T))):
            return name  # an attribute (`x.T`)
    shown = str(signature.replace(parameters=parameters))
    if rule.partials is not None:
        shown = shown.replace(", /", "")  # an elementwise rule's inputs: positional only, as ufuncs
    return f"{name}{shown}"


if __name__ == "__main__":
    print(markdown(), end="")
