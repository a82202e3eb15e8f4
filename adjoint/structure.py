"""A model's gradient at the API's edge: completed to mirror the model, and sharing no memory.

Inside generated code the cotangent of a container or object is sparse (a `Tangent` holds
only the fields something flowed into). `structure` completes it against the argument:
the same containers, a `Tangent` per object, projected float leaves (zeros where nothing
flowed), `None` for frozen paths and for subtrees without a float leaf. Where an object
refers back to itself (a cycle), what reaches it again is added at its first place. A
function stored in a model cannot take a gradient back, so one reaching it is refused.

`unshared` then copies any array leaf that shares memory with an earlier one, or with the
caller's seed, so updating one gradient in place changes nothing else.
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np

from . import arguments, layouts, runtime, trainable, tree
from .errors import AdjointError
from .layouts import layout_of
from .runtime import structs

_NDARRAY = np.ndarray


def structure(arg, cotangent, frozen=frozenset(), project=arguments.project):
    """The gradient handed back for the container or object `arg` (see the module docstring);
    `project(leaf, cotangent)` shapes a float leaf's cotangent like the leaf.

    >>> import numpy as np
    >>> structure({"W": np.ones(2), "n": 3, "b": 0.5}, {"W": np.array([1.0, 2.0])})
    {'W': array([1., 2.]), 'n': None, 'b': 0.0}
    """
    result = _Completion(frozen, project).complete(arg, cotangent, "")
    if result is None and "" not in frozen and tree.is_tree_with_floats(arg):  # all frozen: still `g.layers`
        result = structs.Tangent(type(arg), {}) if structs.is_struct(arg) else tree.rebuild(arg, {})
        result = tree.rebuild(result, {key: None for key, _ in tree.children(arg)})
    return result


class _Completion:
    """One completion. `pending` holds, for each container or object being completed (by id),
    the cotangents met again on a cycle back to it.

    A node's path is needed only to compare it with the `frozen` paths and to name it in an
    error, so it is written out only where paths are frozen: elsewhere a node's path is the
    triple `(path of its parent, parent, key)`, which `tree.path_text` writes out."""

    def __init__(self, frozen, project):
        self.frozen, self.project = frozen, project
        self.pending: dict[int, list] = {}

    def complete(self, arg, cotangent, path):
        if self.frozen and path in self.frozen:
            return None
        layout = layout_of(type(arg))
        if layouts.is_differentiable(arg, layout):
            return self.project(arg, cotangent)
        kids = list(tree.entries(arg, layout))
        if not kids:
            refuse_gradient_into_function(arg, cotangent, path)
            return None
        key = id(arg)
        if key in self.pending:  # back to an object on the way here: count it at its first place
            if cotangent is not None:
                self.pending[key].append(cotangent)
            return None
        self.pending[key] = []
        try:
            result = self._children(arg, layout, kids, cotangent, path)
            while self.pending[key]:
                again, self.pending[key] = self.pending[key], []
                for more in again:
                    result = runtime.add(result, self._children(arg, layout, kids, more, path))
        finally:
            del self.pending[key]
        return result

    def _children(self, arg, layout, kids, cotangent, path):
        given = _entries_of(cotangent)
        paths_open, project = not self.frozen, self.project
        is_object = layout.kind in layouts.OBJECTS or layout.kind is layouts.GENERIC and structs.is_struct(arg)
        # fields its class declares frozen, at every place of a tied object (the frozen paths
        # name one place of each)
        declared = trainable.frozen_fields(arg) if is_object and not paths_open else ()
        parts, held = {}, False
        for key, value in kids:
            part = given(key) if given is not None else tree.child(cotangent, key)
            # the common leaves without `complete`'s steps: weights, and functions or ints that
            # nothing flowed into (`complete` gives them what it would)
            if key in declared:
                done = None
            elif paths_open and type(value) is _NDARRAY and value.dtype.kind in "fc":
                done = project(value, part)
            elif paths_open and part is None and layout_of(type(value)).kind is layouts.LEAF:
                done = None
            else:
                done = self.complete(value, part, (path, arg, key) if paths_open else tree.path_of(path, arg, key))
            parts[key] = done
            held = held or done is not None
        if is_object and isinstance(cotangent, structs.Tangent) and not structs.tangent_fields(cotangent).keys() <= parts.keys():
            refuse_stray_fields(arg, cotangent, parts)
        if not held:
            return None
        if is_object:
            return structs.Tangent(type(arg), parts)
        kind = type(arg)
        if kind is list or kind is tuple:  # every item is in `parts`, in order
            return kind(parts.values())
        return tree.rebuild(arg, parts)


def _entries_of(cotangent):
    """What gives the entry of `cotangent` under a key, as `tree.child` would, for the common
    kinds of cotangent (None for the others: ask `tree.child`)."""
    if cotangent is None:
        return _nothing
    kind = type(cotangent)
    if kind is structs.Tangent:
        return structs.tangent_fields(cotangent).get
    if kind is dict:
        return cotangent.get
    if kind is list or kind is tuple:
        return lambda key: cotangent[key] if isinstance(key, int) and key < len(cotangent) else None
    return None


def _nothing(key):
    return None




def refuse_stray_fields(arg, cotangent, parts):
    """A gradient for an attribute that is not one of the object's fields (one computed by
    `__getattr__`) cannot be handed back; one for a class attribute read through the object
    is dropped (a constant shared by every instance)."""
    for name, value in structs.tangent_fields(cotangent).items():
        if name not in parts and _nonzero(value) and not hasattr(type(arg), name):
            raise AdjointError(
                f"a gradient reached `{type(arg).__name__}.{name}`, which is not a field of the object "
                "(an attribute computed by `__getattr__`?): adjoint cannot hand it back. Store it on the "
                "instance, or compute it in a method"
            )


def refuse_gradient_into_function(arg, cotangent, path):
    """An int, a bool array or a string has no gradient to hand back (what arithmetic sent it
    is dropped); a stored function that closes over the model would need one."""
    if callable(arg) and _nonzero(cotangent):
        path = tree.path_text(path)
        raise AdjointError(
            f"a gradient reached `{path.lstrip('.') or 'the argument'}`, a {type(arg).__name__} that closes over "
            "differentiable values: adjoint cannot hand a gradient back into a stored function. Make it "
            "a method of the class, or store the values it uses as fields"
        )


def _nonzero(cotangent) -> bool:
    if cotangent is None:
        return False
    if runtime.is_differentiable(cotangent):
        return bool(np.any(cotangent != 0))
    return any(_nonzero(part) for _, part in tree.children(cotangent))


# ---- sharing no memory -------------------------------------------------------------------------

def unshared(gradients, seed) -> tuple:
    """`gradients` with every array leaf that shares memory with an earlier leaf, or with a
    leaf of the caller's cotangent `seed`, replaced by a copy."""
    seen = set() if type(seed) in _SCALAR_SEEDS else _roots_in(seed)
    return tuple(_unshare(g, seen) for g in gradients)


def plain_gradients(args, cotangents, positions, seed, prepare=None) -> tuple:
    """What `unshared` makes of the projected cotangents of the float and float-array arguments
    at `positions` (ascending; see `forwards.PlainCalls`), with less work: the gradient of
    `args[i]` is `cotangents[i]` (None, or missing, for zeros) as its kind of value, a copy
    where it shares memory with an earlier one or with the caller's cotangent `seed`.
    `prepare(cotangent, arg)`, if given, makes what is not the common case (below) into the
    value to project first (for the tangents of gradients: `tangent_like`).

    The common case is told in a few steps: a writeable array of the argument's shape and dtype
    that owns its memory and that nothing but `cotangents` refers to (a fresh result the
    generated code made), so nothing else can share its memory: it is handed back as it is.

    >>> x, cotangent = np.zeros(2), np.ones(2)
    >>> g0, g1, g2 = plain_gradients((x, 2.0, x), (cotangent, np.float64(3.0), cotangent), (0, 1, 2), 1.0)
    >>> g1, g0 is cotangent, np.shares_memory(g0, g2)
    (3.0, True, False)
    """
    if len(cotangents) < len(args):
        cotangents = tuple(cotangents) + (None,) * (len(args) - len(cotangents))
    gradients = []
    for i in positions:
        # (the count before the item is bound to a name: no other reference, see `_held_once`)
        if getrefcount(cotangents[i]) == _HELD_ONCE:
            cotangent, arg = cotangents[i], args[i]
            if (
                type(cotangent) is _NDARRAY and type(arg) is _NDARRAY and cotangent.dtype is arg.dtype
                and cotangent.base is None and cotangent.shape == arg.shape and cotangent.flags.writeable
            ):
                gradients.append(cotangent)
                continue
        return _shared_gradients(args, cotangents, positions, seed, prepare, gradients)
    return tuple(gradients)


def _shared_gradients(args, cotangents, positions, seed, prepare, gradients):
    """`plain_gradients` from the first cotangent that is not the common case on (the ones in
    `gradients` before it share memory with nothing)."""
    seen = set() if type(seed) in _SCALAR_SEEDS else _roots_in(seed)
    for i in positions[len(gradients):]:
        cotangent, arg = cotangents[i], args[i]
        if prepare is not None:
            cotangent = prepare(cotangent, arg)
        gradients.append(_plain_gradient(arg, cotangent, seen))
    return tuple(gradients)


def _held_once():
    """What `sys.getrefcount` tells, as `plain_gradients` reads it, of an item of a tuple held
    in a local variable when only the tuple refers to it; None (equal to no count) where an
    item referred to from elsewhere as well would not tell more (an interpreter that counts
    differently)."""
    shared = np.empty(0)
    items = (np.empty(0), shared)
    alone = getrefcount(items[0])
    return alone if getrefcount(items[1]) == alone + 1 else None


def _plain_gradient(arg, cotangent, seen):
    """The gradient of one float or float-array argument, as `plain_gradients` hands it back
    (`seen`: the ids of the arrays owning the memory of the ones handed back so far)."""
    if type(arg) is float:
        kind = type(cotangent)
        if kind is float or kind is np.float64:
            return float(cotangent)
        return arguments.project(arg, cotangent)
    gradient = arguments.project(arg, cotangent)  # itself, a new array, or a copy where it must be
    root = id(_root(gradient))
    if root in seen:
        return gradient.copy()
    seen.add(root)
    return gradient


_SCALAR_SEEDS = (float, np.float64, type(None))
_HELD_ONCE = _held_once()


def _roots_in(seed) -> set:
    """The ids of the arrays owning the memory of `seed`'s array leaves."""
    leaves = [seed] if type(seed) is np.ndarray else tree.tree_leaves(seed)
    return {id(_root(leaf)) for leaf in leaves if isinstance(leaf, np.ndarray)}


def unshare(gradient, seen):
    """`gradient` with every array leaf whose memory is owned by an array in `seen` (ids of
    roots, see `_root`), or by one met before in `gradient`, replaced by a copy; `seen` gets
    the roots of the arrays kept.

    >>> a = np.ones(2)
    >>> g = unshare([a, a[:1]], set())
    >>> g[0] is a, np.shares_memory(g[0], g[1])
    (True, False)
    """
    return _unshare(gradient, seen)


def seed_roots(seed) -> set:
    """What `unshare` starts from to share no memory with the caller's cotangent `seed`.

    >>> seed = np.ones(3)
    >>> unshare([seed[1:]], seed_roots(seed))[0] is seed[1:], seed_roots(1.0)
    (False, set())
    """
    return set() if type(seed) in _SCALAR_SEEDS else _roots_in(seed)


def leaf_gradient(arg, cotangent, seen):
    """The gradient of the float leaf `arg` (`arguments.project`), unshared (`unshare`).

    >>> g, seen = np.ones(2), set()
    >>> leaf_gradient(np.zeros(2), g, seen) is g, leaf_gradient(np.zeros(2), g, seen) is g
    (True, False)
    >>> leaf_gradient(np.zeros(2, dtype=np.float32), None, seen).dtype
    dtype('float32')
    """
    if (  # the common case first: an array the generated code made for this one
        type(cotangent) is _NDARRAY and cotangent.base is None and type(arg) is _NDARRAY
        and cotangent.dtype is arg.dtype and cotangent.shape == arg.shape and cotangent.flags.writeable
    ):
        if id(cotangent) in seen:
            return cotangent.copy()
        seen.add(id(cotangent))
        return cotangent
    gradient = arguments.project(arg, cotangent)
    if isinstance(gradient, np.ndarray):
        root = id(_root(gradient))
        if root in seen:
            return gradient.copy()
        seen.add(root)
    return gradient


def _unshare(value, seen):
    kind = type(value)
    if kind is _NDARRAY or isinstance(value, np.ndarray):
        root = id(_root(value))
        if root in seen:
            return value.copy()
        seen.add(root)
        return value
    if kind is structs.Tangent:  # the common kinds first: a model's gradient is made of them
        kids = structs.tangent_fields(value).items()
    elif kind is list or kind is tuple:
        kids = enumerate(value)
    elif kind is dict:
        kids = value.items()
    elif isinstance(value, (dict, list, tuple, structs.Tangent)):
        kids = tree.children(value)
    else:
        return value
    parts = {}
    for key, part in kids:
        new = _unshare(part, seen)
        if new is not part:
            parts[key] = new
    return tree.rebuild(value, parts) if parts else value


def _root(array):
    """The array owning `array`'s memory (views share their base's)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array
