"""Which float leaves of a model are trainable: declared by its classes, or frozen per call.

A class declares its trainable fields with `__trainable__ = ("W", "b")` (the others are
frozen), and a dataclass field can say `dataclasses.field(metadata={"trainable": False})`.
A call freezes more with `freeze=["layers[0].W", "encoder"]`: paths written as Python
attribute and index access relative to the differentiated argument.

A frozen field gets `None` as its gradient, and adjoint spends no work on it: the forward
function is specialised on the frozen paths of its arguments (`Freezing.paths`), so activity
analysis treats a frozen read as a constant. Inside calls the compiler cannot see into (a
layer's own `__call__`), the arrays and objects reachable only through frozen paths are
known by identity (`Freezing.pruned`), and `call_spec` freezes the fields that hold them.

>>> import dataclasses, numpy as np
>>> @dataclasses.dataclass
... class Norm:
...     scale: np.ndarray
...     eps: np.ndarray = dataclasses.field(metadata={"trainable": False})
>>> sorted(frozen_fields(Norm(np.ones(2), np.ones(1))))
['eps']
"""

from __future__ import annotations

import ast
import contextlib
import contextvars

import numpy as np

from . import layouts
from .errors import AdjointError
from .layouts import layout_of
from .runtime import is_differentiable
from .runtime.structs import fields_of, is_namedtuple, is_struct
from .tree import children, entries, is_tree_with_floats, path_of, path_text


def frozen_fields(obj) -> frozenset:
    """The names of `obj`'s fields its class declares frozen (not trainable). A name in
    `__trainable__` that is not a field is refused: a typo would freeze everything else."""
    cls = type(obj)
    declared = getattr(cls, "__trainable__", None)  # read on every call: a class may be given one later
    layout = layout_of(cls)
    if declared is None:
        return layout.metadata_frozen
    declared = (declared,) if isinstance(declared, str) else tuple(declared)
    fields = layouts.fields(obj, layout) if layout.kind in layouts.OBJECTS else fields_of(obj)
    unknown = [name for name in declared if name not in fields]
    if unknown:
        raise AdjointError(
            f"`{cls.__qualname__}.__trainable__` names {', '.join(map(repr, unknown))}, which "
            f"{'is not a field' if len(unknown) == 1 else 'are not fields'} of the object (its fields: {', '.join(fields)})"
        )
    return frozenset(set(fields) - set(declared)) | layout.metadata_frozen


def declares_frozen(tree) -> bool:
    """Whether an object in `tree` has a class that declares which of its fields are trainable
    (`__trainable__`) or frozen (dataclass metadata): if not, and no `freeze=` paths are
    given, nothing in `tree` is frozen. Found without walking past the first.

    >>> import numpy as np
    >>> class Norm:
    ...     __trainable__ = ("scale",)
    ...     def __init__(self):
    ...         self.scale, self.eps = np.ones(2), np.ones(2)
    >>> declares_frozen({"norm": Norm()}), declares_frozen({"W": np.ones(2)})
    (True, False)
    """
    seen, walk = set(), [tree]  # a stack, not recursion: a linked list may be deep
    while walk:
        node = walk.pop()
        layout = layout_of(type(node))
        kind = layout.kind
        if kind in layouts.OBJECTS or kind is layouts.GENERIC and is_struct(node):
            if layout.metadata_frozen or getattr(type(node), "__trainable__", None) is not None:
                return True
        elif kind in _NO_CHILDREN:
            continue
        if id(node) not in seen:
            seen.add(id(node))
            walk.extend(child for _, child in entries(node, layout))
    return False


_NO_CHILDREN = frozenset({layouts.FLOAT, layouts.ARRAY, layouts.LEAF})


def parse_path(text: str) -> list:
    """The steps of a freeze path: `[("attr", "layers"), ("item", 0), ("attr", "W")]`.

    >>> parse_path("layers[0].W"), parse_path("['W1']")
    ([('attr', 'layers'), ('item', 0), ('attr', 'W')], [('item', 'W1')])
    """
    try:
        node = ast.parse("_" + ("" if text.startswith("[") else ".") + text, mode="eval").body
        steps = []
        while not isinstance(node, ast.Name):
            if isinstance(node, ast.Attribute):
                steps.append(("attr", node.attr))
            elif isinstance(node, ast.Subscript):
                steps.append(("item", ast.literal_eval(node.slice)))
            else:
                raise ValueError
            node = node.value
    except (SyntaxError, ValueError):
        raise AdjointError(
            f"cannot read the freeze path {text!r}: write attribute and index access relative to the "
            "argument, e.g. 'layers[0].W', 'encoder' or \"['W1']\""
        ) from None
    return steps[::-1]


class Freezing:
    """What is frozen in one argument: `paths`, the paths (`.layers[0].W`) of frozen subtrees
    that hold floats, and the ids of the containers, objects and float leaves reachable through
    frozen paths (`frozen_ids`) and through the others (`open_ids`). (Not of functions, ints,
    strings or None: they carry no gradient, so pruning them would change nothing.)

    >>> import numpy as np
    >>> z = Freezing({"enc": {"W": np.ones(2)}, "dec": np.ones(2)}, ["['enc']"])
    >>> sorted(z.paths)
    ["['enc']"]
    """

    def __init__(self, argument, freeze=()):
        self.paths: set[str] = set()
        self.frozen_ids, self._open_ids, self._argument = set(), None, argument
        if not freeze and not declares_frozen(argument):  # the common case: nothing is frozen
            return
        user = {self._resolve(argument, text) for text in freeze}
        frozen_ids, open_ids = set(), set()
        stack = [(argument, "", False)]
        seen = set()
        # a path is written out where it is compared with the user's, else only where recorded
        # (as `(path of the parent, parent, key)` until then: see `tree.path_text`)
        written = bool(user)
        while stack:
            tree, path, frozen = stack.pop()
            frozen = frozen or written and path in user
            if (id(tree), frozen) in seen:
                continue
            seen.add((id(tree), frozen))
            layout = layout_of(type(tree))
            if layout.kind in _NO_CHILDREN:  # a leaf: one without a gradient is nothing to prune
                if layouts.is_differentiable(tree, layout):
                    (frozen_ids if frozen else open_ids).add(id(tree))
                continue
            (frozen_ids if frozen else open_ids).add(id(tree))
            is_object = layout.kind in layouts.OBJECTS or layout.kind is layouts.GENERIC and is_struct(tree)
            declared = frozen_fields(tree) if is_object else ()
            for key, value in entries(tree, layout):
                child_path = path_of(path, tree, key) if written else (path, tree, key)
                child_frozen = frozen or key in declared
                if child_frozen and not frozen and is_tree_with_floats(value):
                    self.paths.add(path_text(child_path))
                stack.append((value, child_path, child_frozen))
        self.paths |= {p for p in user if p}
        self.frozen_ids, self._open_ids = frozen_ids, open_ids

    @classmethod
    def unfrozen(cls, argument) -> Freezing:
        """The `Freezing` of `argument` where the caller knows that nothing in it is frozen (no
        paths given, no class declaring fields frozen: a plan says so, see `adjoint.plans`)."""
        freezing = cls.__new__(cls)
        freezing.paths, freezing.frozen_ids, freezing._open_ids, freezing._argument = set(), set(), None, argument
        return freezing

    @property
    def open_ids(self) -> set:
        """The ids reachable through paths that are not frozen (all of them, where nothing is
        frozen: then found only when asked)."""
        if self._open_ids is None:
            self._open_ids = {id(self._argument)}
            tree_walk = [self._argument]
            while tree_walk:
                for _, child in children(tree_walk.pop()):
                    if id(child) not in self._open_ids:
                        self._open_ids.add(id(child))
                        tree_walk.append(child)
        return self._open_ids

    @property
    def pruned(self) -> frozenset:
        """The ids reachable only through frozen paths of this argument (see `pruned`)."""
        if not self.frozen_ids:
            return frozenset()
        return frozenset(self.frozen_ids - self.open_ids)

    @staticmethod
    def _resolve(argument, text) -> str:
        """The canonical path of `text` in `argument` (`layers[-1]` as `.layers[2]`), checked
        step by step: a field of an object, a key of a dict, a position in a list or tuple."""
        if not isinstance(text, str):
            raise AdjointError(f"freeze paths are strings such as 'layers[0].W', not {text!r}")
        value, path = argument, ""
        for kind, key in parse_path(text):
            value, path = _step(value, path, kind, key, text)
        return path


def _named(what: str) -> str:
    return what if what == "the argument itself" else f"`{what}`"


def _step(value, path, kind, key, text):
    """The child `key` of `value` and its canonical path, or an AdjointError saying why not."""
    where = f"the freeze path {text!r}"
    what = path.lstrip(".") or "the argument itself"
    if kind == "attr":
        fields = fields_of(value) if is_struct(value) else dict(zip(value._fields, value)) if is_namedtuple(value) else None
        if fields is None or key not in fields:
            known = f" (its fields: {', '.join(fields)})" if fields else ""
            if isinstance(value, dict):
                known = f" (a dict: write [{key!r}])"
            raise AdjointError(f"{where}: {_named(what)} has no field `{key}`{known}")
        return fields[key], f"{path}.{key}"
    if isinstance(value, dict):
        if key not in value:
            raise AdjointError(f"{where}: {_named(what)} has no key {key!r}")
        return value[key], f"{path}[{key!r}]"
    if isinstance(value, (list, tuple)):
        if not (isinstance(key, int) and -len(value) <= key < len(value)):
            raise AdjointError(f"{where}: {_named(what)} has no item {key!r} (it has {len(value)})")
        key %= len(value)
        if is_namedtuple(value):
            return value[key], f"{path}.{type(value)._fields[key]}"
        return value[key], f"{path}[{key!r}]"
    raise AdjointError(
        f"{where}: {_named(what)} has no item {key!r} (freeze paths name fields "
        "of objects, keys of dicts and positions in lists and tuples, not parts of arrays)"
    )


_pruned: contextvars.ContextVar[frozenset] = contextvars.ContextVar("adjoint_pruned", default=frozenset())


@contextlib.contextmanager
def pruning(ids: frozenset):
    """Inside, `call_spec` also freezes fields holding the objects and arrays in `ids`."""
    token = _pruned.set(_pruned.get() | ids) if ids else None
    try:
        yield
    finally:
        if token is not None:
            _pruned.reset(token)


def call_spec(args, wrt, keep=None) -> tuple:
    """The frozen fields of the container and object arguments of a call made from
    differentiated code, as the compiler's `frozen` key: `((position, (".eps", ...)), ...)`,
    empty for a call with arrays and floats only.
    Fields whose values satisfy `keep` (implicit parameters asked for) are never frozen."""
    pruned = _pruned.get()
    spec, count = (), len(args)
    for position in wrt:  # (asked on every call from generated code: the common arguments told first)
        if not isinstance(position, int) or position >= count:
            continue
        arg, names = args[position], ()
        kind = type(arg)
        if kind is float or kind is np.ndarray and arg.dtype.kind in "fc":
            continue
        layout = layout_of(kind)
        if layout.kind in layouts.OBJECTS:  # an object of yours (`is_struct`), never a float
            if not pruned and not layout.metadata_frozen and declares_no_trainable(kind):
                spec += ((position, ()),)  # nothing declared frozen, nothing pruned: the common model
                continue
        elif is_differentiable(arg):
            continue
        if layout.kind in layouts.OBJECTS or is_struct(arg):
            names = set(frozen_fields(arg))
            if pruned:
                names |= {name for name, value in fields_of(arg).items() if id(value) in pruned}
            if keep is not None and names:
                names = {name for name in names if not keep(getattr(arg, name, None))}
        elif pruned and isinstance(arg, dict):
            names = {key for key, value in arg.items() if id(value) in pruned}
        spec += ((position, tuple(sorted(path_of("", arg, n) for n in names))),)
    return spec


def declares_no_trainable(cls) -> bool:
    """Whether neither `cls` nor a base of it declares `__trainable__` (read from the class
    dictionaries, so a class given one since is seen); False for a class with a metaclass of
    its own, which might answer otherwise.

    >>> class Norm:
    ...     pass
    >>> declares_no_trainable(Norm)
    True
    >>> Norm.__trainable__ = ("scale",)
    >>> declares_no_trainable(Norm)
    False
    """
    if type(cls) is not type:
        return False
    for klass in cls.__mro__[:-1]:  # (the last is `object`, which takes no attributes)
        if "__trainable__" in klass.__dict__:
            return False
    return True


# ---- the `freeze=` argument of `grad` ---------------------------------------------------------

def freezings(args, wrt, positions, freeze) -> dict:
    """A `Freezing` per differentiated container or object argument among `args` (positions
    `wrt`), given the `freeze` argument of `grad` (see `freeze_paths`)."""
    if isinstance(freeze, dict) and set(freeze) - set(wrt):
        raise AdjointError(f"freeze names argument(s) {sorted(set(freeze) - set(wrt))}, which are not differentiated")
    result = {}
    for i in wrt:
        paths = freeze_paths(freeze, i, positions)
        if not is_differentiable(args[i]):
            result[i] = Freezing(args[i], paths)
        elif paths:
            raise AdjointError(
                f"freeze paths name fields of containers and objects, and argument {i} is a "
                f"{type(args[i]).__name__}: leave it out of wrt instead"
            )
    return result


def pruned(freezings, args, wrt) -> frozenset:
    """The ids of the objects and arrays reachable only through frozen paths, in every
    differentiated argument: a weight tied to a trainable place, or passed as an argument
    itself, still needs its cotangent."""
    frozen = set().union(*(z.frozen_ids for z in freezings.values()))
    if not frozen:  # nothing frozen: nothing to prune
        return frozenset()
    reachable = set().union(*(z.open_ids for z in freezings.values())) | {id(args[i]) for i in wrt}
    return frozenset(frozen - reachable)


def frozen_spec(freezings) -> tuple:
    """The compiler's `frozen` key: `((position, (path, ...)), ...)`, an entry for each
    container or object argument (they are not numbers), perhaps with no paths."""
    return tuple((i, tuple(sorted(z.paths))) for i, z in freezings.items())


def freeze_paths(freeze, position, positions) -> list:
    """The freeze paths for argument `position`: `freeze` is a list of paths relative to the
    one differentiated argument, or a dict from positions to such lists."""
    if not freeze:
        return []
    if isinstance(freeze, dict):
        return list(freeze.get(position, ()))
    if isinstance(freeze, str):
        freeze = [freeze]
    if len(positions) != 1:
        raise AdjointError(
            "with several arguments differentiated, give freeze as a dict from argument position to "
            "paths, e.g. freeze={0: ['encoder']}"
        )
    return list(freeze)
