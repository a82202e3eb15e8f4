"""Plans: the API's edge for a model argument, as straight-line code per shape of model.

A gradient with respect to a model asks, on every call, the same questions of the same
shape of tree: does it hold floats, does any of its classes declare frozen fields (then
`trainable` works out the paths), and, once the pullback has run, what is the completed
gradient (`structure`)? The general walks answer them node by node, with several calls
per node. A `Plan` answers them for one shape of tree in two generated functions:

- `matches(arg)`: whether `arg` still has that shape: the exact type of every node, the
  keys of every object's `__dict__` and dict, the length of every list and tuple, which
  arrays hold floats, and that no class in it (nor a base) has been given a `__trainable__`;
- `complete(arg, cotangent, seen)`: its gradient, as `structure.structure(arg, cotangent)`
  then `structure.unshare(..., seen)` would make it. It checks the shape again as it reads
  the model (code the forward pass ran may have changed it), and raises `Unplanned` where
  the model or the cotangent is not what it was made for (the caller takes the general path).

A plan is made only for trees of dicts, lists, tuples and objects whose fields are their
instance `__dict__` (`layouts.OBJECT`, `layouts.DATACLASS`) down to floats, arrays and other
leaves; with no cycle; and where no class declares trainable or frozen fields (so nothing is
frozen: a call with `freeze=` takes the general path). Each root type keeps its last few
plans in its `Layout` (so they go with it). Classes of the user's are named in the generated
code by weak reference: a plan keeps no class alive, and once a class is collected no value
matches it. A shape that keeps changing stops being planned (`_worth_planning`).

For `Chain(Dense(W1, b1), Dense(W2, b2, identity))` (`examples/train.py`), `matches` begins:

    def matches(v0):
        if not (type(v0) is R0()):  # Chain
            return False
        m0 = type(v0).__mro__
        if not (len(m0) == 2 and '__trainable__' not in m0[0].__dict__):
            return False
        d0 = v0.__dict__
        if not (tuple(d0) == ('layers',)):
            return False
        v1 = d0['layers']
        if not (type(v1) is list and len(v1) == 2):
            return False
        ...

and `complete` reads and checks the same nodes, with their cotangents, calling `leaf` (project
and unshare) for each float leaf and building `Tangent(type(v2), {'W': g3, ...})` for each
object.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import layouts, structure, tree
from .layouts import layout_of
from .runtime import structs
from .runtime.structs import Tangent


class Unplanned(Exception):
    """The model, or its cotangent, is not what the plan was made for: take the general path."""


class Plan:
    """The generated `matches` and `complete` of one shape of tree (see the module)."""

    __slots__ = ("matches", "complete", "source")

    def __init__(self, matches, complete, source):
        self.matches, self.complete, self.source = matches, complete, source

    def gradient(self, arg, cotangent, seen):
        """The gradient of `arg` for its cotangent from generated code, completed and sharing
        memory with no array whose root is in `seen` (`structure.unshare`): by the plan where
        `arg` still has its shape (`complete` checks it again as it reads it: the forward pass
        may have run code that changed the model), else by the general path.

        >>> import numpy as np
        >>> plan = _Builder().plan({"W": np.ones(2), "b": 0.5})
        >>> plan.gradient({"W": np.ones(2), "b": 0.5}, {"W": np.array([3.0, 4.0])}, set())
        {'W': array([3., 4.]), 'b': 0.0}
        >>> plan.gradient({"W": np.ones(2), "b": 0.5, "c": 1.0}, None, set())  # another shape
        {'W': array([0., 0.]), 'b': 0.0, 'c': 0.0}
        """
        before = set(seen)
        try:
            return self.complete(arg, cotangent, seen)
        except Unplanned:
            seen.clear()
            seen.update(before)
        return structure.unshare(structure.structure(arg, cotangent), seen)


def plan_for(arg) -> Plan | None:
    """The plan for `arg`'s shape of tree: one made before, or a new one; None where `arg`
    cannot have one (see the module), or its shape keeps changing.

    >>> import numpy as np
    >>> class Layer:
    ...     def __init__(self, W, n):
    ...         self.W, self.n = W, n
    >>> plan = plan_for(Layer(np.ones(2), 3))
    >>> plan.matches(Layer(np.zeros(2), 4)), plan.matches(Layer(np.zeros(2), "4"))
    (True, False)
    >>> plan.complete(Layer(np.ones(2), 3), None, set())
    Tangent[Layer](W=array([0., 0.]), n=None)
    """
    layout = layout_of(type(arg))
    if layout.kind not in _ROOTS:
        return None
    layout.plan_calls += 1
    for plan in layout.plans:
        if plan.matches(arg):
            return plan
    if not _worth_planning(layout):
        return None
    layout.plan_builds += 1
    plan = _Builder().plan(arg)
    if plan is not None:
        layout.plans = (plan, *layout.plans[: _KEPT - 1])  # replaced whole: other threads read it
    return plan


_ROOTS = frozenset({layouts.OBJECT, layouts.DATACLASS, layouts.DICT, layouts.LIST, layouts.TUPLE})
_KEPT = 4  # plans kept per root type: a few shapes of model per class, in turn


def _worth_planning(layout) -> bool:
    """Whether to make a plan for a tree rooted at this type: not once plans have been made
    for more than one call in eight (after the first few), where shapes keep changing."""
    return layout.plan_builds < 8 or layout.plan_builds * 8 < layout.plan_calls


# ---- what the generated code calls --------------------------------------------------------------

_NO_ENTRIES: dict = {}


def _fields_given(cotangent) -> dict:
    """The field cotangents in an object's cotangent: a `Tangent`'s, or none for None."""
    if cotangent is None:
        return _NO_ENTRIES
    if type(cotangent) is Tangent:
        return structs.tangent_fields(cotangent)
    raise Unplanned


def _entries_given(cotangent) -> dict:
    """The entries of a dict's cotangent: a dict, or none for None."""
    if cotangent is None:
        return _NO_ENTRIES
    if type(cotangent) is dict:
        return cotangent
    raise Unplanned


def _items_given(cotangent, count):
    """The `count` item cotangents of a list's or tuple's cotangent (a list or tuple, absent
    items None, as `tree.child` reads them), or `count` Nones for None."""
    if cotangent is None:
        return (None,) * count
    if type(cotangent) is list or type(cotangent) is tuple:
        return cotangent if len(cotangent) >= count else (*cotangent, *(None,) * (count - len(cotangent)))
    raise Unplanned


_HELPERS = {
    "fields_given": _fields_given,
    "entries_given": _entries_given,
    "items_given": _items_given,
    "leaf": structure.leaf_gradient,
    "refuse_stray": structure.refuse_stray_fields,
    "refuse_function": structure.refuse_gradient_into_function,
    "Tangent": Tangent,
    "Unplanned": Unplanned,
    "tangent_fields": structs.tangent_fields,
    "NO_ENTRIES": _NO_ENTRIES,
    "ndarray": np.ndarray,
}


# ---- making a plan ------------------------------------------------------------------------------

class _Builder:
    """Writes one plan's two functions while walking a tree once, depth first in field order
    (the order `structure` completes it in, so errors and `unshare` come out the same)."""

    _MAX_NODES = 2000  # a bigger model takes the general path (writing and compiling the code costs
    # about 0.1 ms a node, once per shape: a few hundred calls of the general path)
    _MAX_DEPTH = 64  # a deeper tree (a linked list) too: the walk that writes a plan recurses, a few
    # frames a level, and would run out of stack where the general path, with more headroom, does not

    def __init__(self):
        self.checks, self.steps = [], []  # the bodies of `matches` and `complete`
        self.namespace = dict(_HELPERS)
        self.nodes = 0
        self.classes: set[int] = set()  # ids of the classes whose `__trainable__` is checked
        self.ancestors: set[int] = set()
        self.types: dict[int, str] = {}  # id of a type -> how the code names it
        self.variables = 0

    def plan(self, arg) -> Plan | None:
        try:
            result = self._node(arg, "v0", "c0", "")
        except _Ineligible:
            return None
        if result is None:  # no float leaf: no gradient to complete
            return None
        source = (
            "def matches(v0):\n" + "".join(f"    {line}\n" for line in self.checks) + "    return True\n\n"
            "def complete(v0, c0, seen):\n" + "".join(f"    {line}\n" for line in self.steps)
            + f"    return {result}\n"
        )
        exec(compile(source, "<adjoint plan>", "exec"), self.namespace)  # noqa: S102  (our own code)
        return Plan(self.namespace["matches"], self.namespace["complete"], source)

    def _node(self, value, var, cot, path):
        """Write the checks and steps for the node `value`, read into `var` (its cotangent
        into `cot`); return the expression of its gradient, or None where it is None."""
        self.nodes += 1
        if self.nodes > self._MAX_NODES:
            raise _Ineligible
        layout = layout_of(type(value))
        kind = layout.kind
        if kind is layouts.FLOAT or kind is layouts.ARRAY or kind is layouts.LEAF:
            return self._leaf(value, var, cot, path, layout)
        if id(value) in self.ancestors or len(self.ancestors) >= self._MAX_DEPTH:  # a cycle: `structure` completes those
            raise _Ineligible
        self.ancestors.add(id(value))
        try:
            if kind is layouts.OBJECT or kind is layouts.DATACLASS:
                return self._object(value, var, cot, path, layout)
            if kind is layouts.LIST or kind is layouts.TUPLE:
                return self._sequence(value, var, cot, path)
            if kind is layouts.DICT:
                return self._dict(value, var, cot, path)
            raise _Ineligible
        finally:
            self.ancestors.discard(id(value))

    def _read(self, line):
        """A line of both functions: reading a node."""
        self.checks.append(line)
        self.steps.append(line)

    def _require(self, condition):
        """A check in both functions: `matches` is false, `complete` gives up, unless `condition`."""
        self.checks += [f"if not ({condition}):", "    return False"]
        self.steps += [f"if not ({condition}):", "    raise Unplanned"]

    def _leaf(self, value, var, cot, path, layout):
        kind = type(value)
        floats = layouts.is_differentiable(value, layout)
        if value is None:
            self._require(f"{var} is None")
        elif layout.kind is layouts.ARRAY:
            self._require(f"type({var}) is {self._type(kind)} and {var}.dtype.kind {'in' if floats else 'not in'} 'fc'")
        else:
            self._require(f"type({var}) is {self._type(kind)}")
        if floats and kind is np.ndarray:  # a weight: `leaf`'s common case written out
            self.steps += [
                f"if (type({cot}) is ndarray and {cot}.base is None and {cot}.dtype is {var}.dtype"
                f" and {cot}.shape == {var}.shape and {cot}.flags.writeable and id({cot}) not in seen):",
                f"    seen.add(id({cot}))",
                f"    g{var[1:]} = {cot}",
                "else:",
                f"    g{var[1:]} = leaf({var}, {cot}, seen)",
            ]
            return f"g{var[1:]}"
        if floats:
            self.steps.append(f"g{var[1:]} = leaf({var}, {cot}, seen)")
            return f"g{var[1:]}"
        if callable(value):  # a stored function: a gradient reaching it is refused
            self.steps += [f"if {cot} is not None:", f"    refuse_function({var}, {cot}, {path!r})"]
        return None

    def _object(self, value, var, cot, path, layout):
        kind, held, n = type(value), value.__dict__, var[1:]
        if layouts.fields(value, layout) is not held or any(type(name) is not str for name in held):
            raise _Ineligible
        if layout.metadata_frozen or getattr(kind, "__trainable__", None) is not None or type(kind) is not type:
            raise _Ineligible  # frozen fields: `trainable` works out their paths
        self._require(f"type({var}) is {self._type(kind)}")
        self.checks[-2] += f"  # {kind.__qualname__}"
        if id(kind) not in self.classes:  # given a `__trainable__` since: `trainable` asks again
            self.classes.add(id(kind))
            self._read(f"m{n} = type({var}).__mro__")
            bases = kind.__mro__[:-1]  # not `object`: it has none
            self._require(" and ".join([f"len(m{n}) == {len(kind.__mro__)}"] + [
                f"'__trainable__' not in m{n}[{i}].__dict__" for i in range(len(bases))
            ]))
        self._read(f"d{n} = {var}.__dict__")
        self._require(f"tuple(d{n}) == {tuple(held)!r}")
        if not held:  # no fields: a leaf to `structure`
            if callable(value):
                self.steps += [f"if {cot} is not None:", f"    refuse_function({var}, {cot}, {path!r})"]
            return None
        self.namespace[f"N{n}"] = frozenset(held)
        self.steps += [
            f"f{n} = NO_ENTRIES if {cot} is None else tangent_fields({cot}) if type({cot}) is Tangent else fields_given({cot})",
            f"if not f{n}.keys() <= N{n}:",
            f"    refuse_stray({var}, {cot}, N{n})",
        ]
        parts = {}
        for name, child in held.items():
            parts[name] = self._child(f"d{n}[{name!r}]", f"f{n}.get({name!r})", child, tree.path_of(path, value, name))
        if all(part is None for part in parts.values()):
            return None
        shown = ", ".join(f"{name!r}: {part}" for name, part in parts.items())
        self.steps.append(f"g{n} = Tangent(type({var}), {{{shown}}})")
        return f"g{n}"

    def _sequence(self, value, var, cot, path):
        kind, n = type(value), var[1:]
        self._require(f"type({var}) is {kind.__name__} and len({var}) == {len(value)}")
        if not value:
            return None
        self.steps.append(f"s{n} = items_given({cot}, {len(value)})")
        parts = []
        for index, child in enumerate(value):
            parts.append(self._child(f"{var}[{index}]", f"s{n}[{index}]", child, tree.path_of(path, value, index)))
        if all(part is None for part in parts):
            return None
        shown = ", ".join(str(part) for part in parts)
        self.steps.append(f"g{n} = [{shown}]" if kind is list else f"g{n} = ({shown},)")
        return f"g{n}"

    def _dict(self, value, var, cot, path):
        n = var[1:]
        if any(type(key) not in (str, int) for key in value):  # keys written into the code
            raise _Ineligible
        self._require(f"type({var}) is dict and tuple({var}) == {tuple(value)!r}")
        if not value:
            return None
        self.steps.append(f"e{n} = entries_given({cot})")
        parts = {}
        for key, child in value.items():
            parts[key] = self._child(f"{var}[{key!r}]", f"e{n}.get({key!r})", child, tree.path_of(path, value, key))
        if all(part is None for part in parts.values()):
            return None
        shown = ", ".join(f"{key!r}: {part}" for key, part in parts.items())
        self.steps.append(f"g{n} = {{{shown}}}")
        return f"g{n}"

    def _child(self, read, cotangent, child, path):
        """Read the node `child` of the node being written (`read`, and its cotangent `cotangent`,
        as expressions) into variables of its own, and write its checks and steps."""
        child_var = self._variable()
        self._read(f"{child_var} = {read}")
        self.steps.append(f"c{child_var[1:]} = {cotangent}")
        return self._node(child, child_var, f"c{child_var[1:]}", path)

    def _variable(self) -> str:
        self.variables += 1
        return f"v{self.variables}"

    def _type(self, kind) -> str:
        """How the code names the type `kind`: Python's and NumPy's types by value, the
        user's by weak reference (`R3()`: None once the class is gone)."""
        if id(kind) not in self.types:
            module = getattr(kind, "__module__", "") or ""
            strong = module.split(".")[0] in ("builtins", "numpy")
            name = f"{'T' if strong else 'R'}{len(self.types)}"
            self.namespace[name] = kind if strong else weakref.ref(kind)
            self.types[id(kind)] = name if strong else f"{name}()"
        return self.types[id(kind)]


class _Ineligible(Exception):
    """The tree has something a plan does not cover (see the module)."""
