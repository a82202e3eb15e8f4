"""Implicit parameters: `params` collects a model's arrays, `gradient(loss, ps)` returns `Grads`.

Script-style models need no class: the loss reads its weights as globals or through closures,
and `adjoint.gradient(lambda: loss(x, y), ps)` returns a `Grads`, a mapping from each
parameter array (by identity) to its gradient. While such a gradient runs, every user
function adjoint differentiates also differentiates with respect to the globals and closure
variables that hold parameters (`implicit_names`); its pullback hands their cotangents to the
running `Collector` rather than to its caller. A weight used in several places (tied) gets
the sum of its uses.

>>> import numpy as np, adjoint
>>> W = np.array([1.0, 2.0])
>>> def loss(x):
...     return np.sum(W * x)
>>> ps = adjoint.params(W)
>>> gs = adjoint.gradient(lambda: loss(np.array([3.0, 4.0])), ps)
>>> gs[W]
array([3., 4.])
"""

from __future__ import annotations

import collections.abc
import contextlib
import contextvars
import functools
import types

import numpy as np

from .errors import AdjointError
from .runtime import is_differentiable
from .runtime.structs import Tangent, is_struct, tangent_fields
from .trainable import frozen_fields
from .tree import child, children


class Params(collections.abc.Sequence):
    """The trainable float arrays of a model, each once, in the order they were found
    (`adjoint.params` makes them); membership is by identity.

    >>> import numpy as np
    >>> W = np.ones(2)
    >>> ps = Params([W, W, np.zeros(3)])
    >>> len(ps), W in ps, np.ones(2) in ps
    (2, True, False)
    """

    def __init__(self, arrays=()):
        self._arrays, self._ids = [], set()
        for array in arrays:
            if id(array) not in self._ids:
                self._ids.add(id(array))
                self._arrays.append(array)

    def __getitem__(self, index):
        return self._arrays[index]

    def __len__(self):
        return len(self._arrays)

    def __contains__(self, array):
        return id(array) in self._ids

    def __repr__(self):
        shapes = ", ".join(str(a.shape) for a in self._arrays)
        return f"Params({len(self)} arrays: {shapes})"

    def __tree_children__(self):  # for `tree_leaves` and `tree_map`: the arrays
        return list(enumerate(self._arrays))

    def __tree_rebuild__(self, parts):
        return Params(parts.get(i, a) for i, a in enumerate(self._arrays))


def params(*trees) -> Params:
    """The trainable float arrays reachable from `trees` (models, containers, arrays), each
    once: fields a class declares frozen are skipped (see `adjoint.trainable`). Python floats
    are not parameters here: they cannot be updated in place; hold them in 0-d arrays.

    >>> import numpy as np, adjoint
    >>> W = np.ones((2, 2))
    >>> adjoint.params({"W": W, "tied": W, "n": 3}, np.zeros(2))
    Params(2 arrays: (2, 2), (2,))
    """
    found, seen = [], set()
    for tree in trees:
        _collect(tree, found, seen)
    return Params(found)


def _collect(tree, found, seen) -> None:
    """Append the trainable float arrays of `tree` to `found` (`seen`: the containers and
    objects walked, each once, so ties and cycles end)."""
    if isinstance(tree, np.ndarray):
        if is_differentiable(tree):
            found.append(tree)
        return
    if is_struct(tree) or isinstance(tree, (dict, list)):
        if id(tree) in seen:
            return
        seen.add(id(tree))
    frozen = frozen_fields(tree) if is_struct(tree) else ()
    for key, value in children(tree):
        if key not in frozen:
            _collect(value, found, seen)


class Grads(collections.abc.Mapping):
    """The gradients of implicit parameters: `gs[W]` is the gradient of the array `W`, looked
    up by identity. Iterating gives the parameters, in the order of their `Params`; a
    parameter nothing reached has zeros. `tree_leaves(gs)` are the gradients, and `gs.value`
    is the loss they are the gradients of (what `gradient(loss, ps)` computed).

    >>> import numpy as np
    >>> W, unused = np.array([1.0, 2.0]), np.ones(3)
    >>> gs = Grads(Params([W, unused]), {id(W): np.array([0.5, 0.5])})
    >>> gs[W], gs[unused]
    (array([0.5, 0.5]), array([0., 0., 0.]))
    """

    def __init__(self, ps: Params, sums: dict, value=None):
        self._params = ps
        self._grads = {id(p): _as_gradient(sums.get(id(p)), p) for p in ps}
        self.value = value  # the loss these are the gradients of (None for a sum of them)

    def __getitem__(self, array):
        try:
            return self._grads[id(array)]
        except (KeyError, TypeError):
            raise KeyError("not one of the parameters these gradients were taken for (they are looked up by identity)") from None

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, array):
        return id(array) in self._grads

    def __repr__(self):
        return f"Grads({len(self)} arrays: {', '.join(str(g.shape) for g in self._grads.values())})"

    def __add__(self, other):
        """Gradients accumulated over batches: the same parameters, gradients added."""
        if not isinstance(other, Grads) or [id(p) for p in other._params] != [id(p) for p in self._params]:
            return NotImplemented
        return self.__tree_rebuild__({i: g + other[p] for i, (p, g) in enumerate(self.items())})

    def __tree_children__(self):  # for `tree_leaves` and `tree_map`: the gradients, not the parameters
        return [(i, self._grads[id(p)]) for i, p in enumerate(self._params)]

    def __tree_rebuild__(self, parts):
        """Grads for the same parameters with the gradients in `parts` (by position) replaced."""
        new = object.__new__(Grads)
        new._params, new.value = self._params, None
        new._grads = {id(p): parts.get(i, self._grads[id(p)]) for i, p in enumerate(self._params)}
        return new


def _as_gradient(total, param):
    if total is None:
        return np.zeros_like(param)
    return np.array(np.broadcast_to(total, param.shape), dtype=param.dtype)


# ---- collecting cotangents while a gradient runs -------------------------------------------

class Collector:
    """The sums of cotangents per parameter (by identity) during one implicit gradient."""

    def __init__(self, ps: Params):
        self.ids = {id(p) for p in ps}
        self.sums: dict[int, object] = {}
        self._holds: dict[int, bool] = {}

    def holds_parameter(self, value) -> bool:
        """Whether a parameter is reachable from `value`: an array, a container, an object, a
        bound method's object, a partial's arguments, a module or class of yours (cached per
        object for the call)."""
        return self._holds_parameter(value, set())[0]

    def _holds_parameter(self, value, visiting) -> tuple[bool, bool]:
        """`(holds, complete)`: `complete` is False when a cycle was cut below `value`, whose
        answer then holds only for this question (it is not cached)."""
        if isinstance(value, np.ndarray):
            return id(value) in self.ids, True
        key = id(value)
        if key in self._holds:
            return self._holds[key], True
        if key in visiting:
            return False, False
        parts = _parts(value)
        if not parts:
            return False, True
        visiting.add(key)
        holds, complete = False, True
        for part in parts:
            part_holds, part_complete = self._holds_parameter(part, visiting)
            complete = complete and part_complete
            if part_holds:
                holds, complete = True, True
                break
        visiting.discard(key)
        if complete:
            self._holds[key] = holds
        return holds, complete

    def holding_positions(self, args, kwargs, name) -> tuple:
        """The positions of the arguments that hold parameters; keyword arguments may not (they
        are constants)."""
        held = [key for key, value in kwargs.items() if self.holds_parameter(value)]
        if held:
            raise AdjointError(
                f"the keyword argument(s) {', '.join(f'`{k}=`' for k in held)} of {name} hold parameters, and "
                "keyword arguments are constants: bind them by position (functools.partial(f, model)), or let "
                "the function read them as globals or closure variables"
            )
        return tuple(i for i, arg in enumerate(args) if self.holds_parameter(arg))

    def add(self, value, cotangent) -> None:
        """Add the cotangent of `value` (an array, or a tree holding some) to its parameters."""
        if cotangent is None:
            return
        if isinstance(value, types.MethodType):
            value = value.__self__  # a bound method's cotangent is its receiver's
        if isinstance(value, np.ndarray):
            if id(value) in self.ids:
                total = self.sums.get(id(value))
                self.sums[id(value)] = cotangent if total is None else total + cotangent
            return
        if isinstance(value, functools.partial):  # its cotangent: its arguments' (see `closure_vjp`)
            for part, part_bar in zip(value.args, cotangent):
                self.add(part, part_bar)
            return
        if isinstance(cotangent, Tangent):  # by the attributes read: fields, class attributes, `__getattr__`'s
            for name, part in tangent_fields(cotangent).items():
                self.add(getattr(value, name, None), part)
            return
        for key, part in children(value):
            self.add(part, child(cotangent, key))


def _parts(value) -> list:
    """What `value` holds that may hold parameters."""
    if isinstance(value, types.MethodType):
        return [value.__self__]
    if isinstance(value, functools.partial):
        return [*value.args, *value.keywords.values()]
    if isinstance(value, (types.ModuleType, type)):
        name = getattr(value, "__module__", None) if isinstance(value, type) else value.__name__
        if (name or "builtins").split(".")[0] in _LIBRARIES:
            return []
        return [v for v in vars(value).values() if not isinstance(v, (types.FunctionType, types.ModuleType))]
    if isinstance(value, (dict, list, tuple)):
        return [v for _, v in children(value)]
    if is_struct(value):  # its fields, and what its classes hold (read as `self.W`)
        return [v for _, v in children(value)] + [type(value)]
    return []


_LIBRARIES = {"builtins", "numpy", "scipy", "math", "cmath", "functools", "collections", "typing", "abc",
              "dataclasses", "enum", "types", "logging", "random", "os", "sys", "re"}


_collector: contextvars.ContextVar[Collector | None] = contextvars.ContextVar("adjoint_params", default=None)


def collector() -> Collector | None:
    """The collector of the implicit gradient running now, if any."""
    return _collector.get()


@contextlib.contextmanager
def collecting(ps):
    """Inside, differentiated functions hand the cotangents of `ps` to a new `Collector`."""
    if not isinstance(ps, Params):
        raise AdjointError(f"implicit gradients need adjoint.params(...), not {type(ps).__name__}")
    token = _collector.set(Collector(ps))
    try:
        yield _collector.get()
    finally:
        _collector.reset(token)


def implicit_names(fn, wrt, collector: Collector) -> tuple:
    """The globals and closure variables of `fn` (and of the comprehensions and lambdas in
    it) that hold parameters, not already in `wrt`."""
    names = []
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:
            continue
        if name not in wrt and collector.holds_parameter(contents):
            names.append(name)
    for name in _global_names(code):
        if name in fn.__globals__ and name not in wrt and name not in names and collector.holds_parameter(fn.__globals__[name]):
            names.append(name)
    return tuple(names)


def _global_names(code) -> list:
    names = list(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names += [n for n in _global_names(constant) if n not in names]
    return names


def defaulted_positions(fn, args, collector: Collector) -> tuple:
    """The positions of `fn`'s parameters left to default values that hold parameters."""
    defaults = fn.__defaults__ or ()
    code = fn.__code__
    first = code.co_argcount - len(defaults)
    return tuple(
        p for p in range(max(first, len(args)), code.co_argcount)
        if collector.holds_parameter(defaults[p - first])
    )


def collected(forward, fn, names, defaulted, collector: Collector):
    """`forward`, whose pullback returns the cotangents of `names` last (and those of the
    parameters at the positions `defaulted`), as a forward function whose pullback adds those
    to `collector` and returns the others."""
    count = len(names)
    code = fn.__code__

    def implicit_forward(*args, **kwargs):
        values = [_current(fn, name) for name in names]
        first = code.co_argcount - len(fn.__defaults__ or ())
        used = [(p, kwargs.get(code.co_varnames[p], fn.__defaults__[p - first])) for p in defaulted]
        value, pullback = forward(*args, **kwargs)

        def implicit_pullback(g):
            cotangents = tuple(pullback(g))
            for position, held in used:
                collector.add(held, cotangents[position])
            if not count:
                return cotangents
            for held, cotangent in zip(values, cotangents[-count:]):
                collector.add(held, cotangent)
            return cotangents[:-count]

        return value, implicit_pullback

    for attribute in ("__adjoint_arity__", "__adjoint_updates__", "__adjoint_code__", "__adjoint_compiled__"):
        setattr(implicit_forward, attribute, getattr(forward, attribute))
    return implicit_forward


def _current(fn, name):
    code = fn.__code__
    if name in code.co_freevars:
        return fn.__closure__[code.co_freevars.index(name)].cell_contents
    return fn.__globals__[name]
