"""Trees: models and nested containers as structures of float leaves.

A tree is a float, a float array, or a dict, list, tuple, namedtuple or object (see
`runtime.structs.is_struct`) holding trees; anything else (ints, strings, functions, None) is
a leaf without a gradient. The gradient of a tree mirrors it: the same containers, a
`Tangent` for an object, `None` for a subtree that holds no trainable float leaf.

>>> import numpy as np, adjoint
>>> params = {"W": np.ones((2, 2)), "b": np.zeros(2), "name": "layer"}
>>> [leaf.shape for leaf in adjoint.tree_leaves(params)]
[(2, 2), (2,)]
>>> halved = adjoint.tree_map(lambda w: w / 2, params)
>>> float(halved["W"][0, 0]), halved["name"]
(0.5, 'layer')
"""

from __future__ import annotations

import copy

import numpy as np

from . import layouts
from .errors import AdjointError
from .layouts import GENERIC, layout_of
from .runtime import is_differentiable
from .runtime.structs import Tangent, fields_of, is_namedtuple, is_struct, tangent_fields, tangent_type

__all__ = ["tree_leaves", "tree_map", "children", "rebuild"]


def tree_leaves(tree) -> list:
    """The float leaves of `tree` (floats and float arrays), in order: dict entries in key
    order, items in sequence order, an object's fields in declaration order. `None`, ints,
    strings and functions are skipped, and an object, dict or list reached twice (tied, or
    in a cycle) is walked once.

    >>> import numpy as np, adjoint
    >>> adjoint.tree_leaves([1.0, {"a": np.zeros(2), "n": 3}, None])
    [1.0, array([0., 0.])]
    """
    leaves = []
    _walk(tree, leaves.append, set())
    return leaves


def _walk(tree, visit, seen):
    layout = layout_of(type(tree))
    if layouts.is_differentiable(tree, layout):
        visit(tree)
        return
    if _may_recur(tree, layout):  # what can be reached twice, or hold itself
        if id(tree) in seen:
            return
        seen.add(id(tree))
    for _, child in entries(tree, layout):
        _walk(child, visit, seen)


def _may_recur(tree, layout) -> bool:
    """Whether `tree` is of a kind that can be reached twice in a tree, or hold itself: the
    walks keep note of those they have seen."""
    if layout.kind is GENERIC:
        return is_struct(tree) or isinstance(tree, (Tangent, dict, list))
    return layout.kind in _MAY_RECUR


_MAY_RECUR = frozenset({layouts.DICT, layouts.LIST, layouts.TANGENT, layouts.OBJECT, layouts.DATACLASS, layouts.STRUCT})


def children(tree) -> list:
    """`(key, child)` pairs of a container or object; empty for a leaf. Keys are dict keys,
    positions, or field names."""
    return list(entries(tree, layout_of(type(tree))))


def entries(tree, layout):
    """`children(tree)`, as an iterable that may be a view of `tree` itself (read it before
    anything updates `tree`); `layout` is `layouts.layout_of(type(tree))`.

    >>> params = {"W": 1.0, "n": 3}
    >>> list(entries(params, layout_of(dict))), list(entries(2.0, layout_of(float)))
    ([('W', 1.0), ('n', 3)], [])
    """
    kind = layout.kind
    if kind in layouts.OBJECTS:
        return layouts.fields(tree, layout).items()
    if kind is layouts.LIST or kind is layouts.TUPLE:
        return enumerate(tree)
    if kind is layouts.DICT:
        return tree.items()
    if kind is layouts.TANGENT:
        return tangent_fields(tree).items()
    if kind is layouts.NAMEDTUPLE:
        return zip(type(tree)._fields, tree)
    if kind is GENERIC:
        return _children_of_any(tree)
    return ()  # a float, an array, a leaf without a gradient




def _children_of_any(tree) -> list:
    """`children` of a value whose type's layout leaves it to the value (`layouts.GENERIC`)."""
    if hasattr(type(tree), "__tree_children__"):  # `Grads`, `Params`: say what they hold
        return tree.__tree_children__()
    if isinstance(tree, dict):
        return list(tree.items())
    if is_namedtuple(tree):
        return list(zip(type(tree)._fields, tree))
    if isinstance(tree, (list, tuple)):
        return list(enumerate(tree))
    if isinstance(tree, Tangent):
        return list(tangent_fields(tree).items())
    if is_struct(tree):
        return list(fields_of(tree).items())
    return []


def child(tree, key):
    """The child of `tree` under `key`, or None where `tree` (a gradient) has none."""
    if tree is None:
        return None
    if hasattr(type(tree), "__tree_children__"):
        return dict(tree.__tree_children__()).get(key)
    if isinstance(tree, dict):
        return tree.get(key)
    if isinstance(tree, (list, tuple, np.ndarray)) and not is_namedtuple(tree):  # an array: a list's rows
        return tree[key] if isinstance(key, int) and key < len(tree) else None
    if isinstance(tree, Tangent):
        return tangent_fields(tree).get(key)
    return getattr(tree, key, None) if isinstance(key, str) else None


def rebuild(tree, parts: dict):
    """A new container or object like `tree`, with the children in `parts` (by key) replaced.

    Objects are copied shallowly and their fields set directly, so frozen dataclasses and
    classes with `__slots__` rebuild too.
    """
    if hasattr(type(tree), "__tree_rebuild__"):
        return tree.__tree_rebuild__(parts)
    if isinstance(tree, dict):
        new = copy.copy(tree) if type(tree) is not dict else dict(tree)  # an OrderedDict stays one
        new.update(parts)
        return new
    if is_namedtuple(tree):
        return type(tree)._make(parts.get(name, v) for name, v in zip(type(tree)._fields, tree))
    if isinstance(tree, list):
        new = copy.copy(tree)
        for i, value in parts.items():
            new[i] = value
        return new
    if isinstance(tree, tuple):
        return type(tree)(parts.get(i, v) for i, v in enumerate(tree))
    if isinstance(tree, Tangent):
        return Tangent(tangent_type(tree), {**tangent_fields(tree), **parts})
    new = copy.copy(tree)
    for name, value in parts.items():
        object.__setattr__(new, name, value)
    return new


def tree_map(fn, tree, *rest):
    """A tree like `tree` with `fn(leaf, *others)` for each float leaf, where `others` are the
    leaves at the same place in each of `rest` (gradients, usually). A leaf whose counterparts
    in `rest` are None (no gradient) is kept as it is, as are ints, strings and functions.

    Mapping a model and its gradient gives a new model of the same type:

    >>> import dataclasses, numpy as np, adjoint
    >>> @dataclasses.dataclass(frozen=True)
    ... class Dense:
    ...     W: np.ndarray
    ...     b: np.ndarray
    >>> model = Dense(np.ones(2), np.zeros(2))
    >>> grads = adjoint.Tangent(Dense, W=np.ones(2), b=None)
    >>> adjoint.tree_map(lambda w, g: w - 0.5 * g, model, grads)
    Dense(W=array([0.5, 0.5]), b=array([0., 0.]))

    Ties are kept: an array or object found at several places of `tree` (a tied weight) is
    mapped once, its `others` summed over its places, so the new tree ties them too. An
    object that refers back to itself maps to a new object that refers back to itself.
    """
    others: dict = {}
    if rest:
        _gather(tree, list(rest), others, None, set())
    return _map(fn, tree, others, bool(rest), None, {})


def _leaf_key(leaf, place):
    """Where a float leaf's `others` are summed: an array by identity (tied arrays are one
    parameter), a Python float by its place (`(id(container), key)`: floats are values)."""
    return id(leaf) if isinstance(leaf, np.ndarray) else place


def _gather(tree, rest, others, place, path):
    """Sum the leaves of `rest` found at each place of each float leaf of `tree` (a leaf of
    `rest` met again at another place, tied as the leaf is, counts once)."""
    if is_differentiable(tree):
        key = _leaf_key(tree, place)
        if key not in others:
            others[key] = (list(rest), [{id(r)} for r in rest])
            return
        totals, counted = others[key]
        for i, part in enumerate(rest):
            if id(part) not in counted[i]:
                counted[i].add(id(part))
                totals[i] = _sum(totals[i], part)
        return
    if id(tree) in path or not (isinstance(tree, (dict, list, tuple, Tangent)) or is_struct(tree)):
        return
    for other in rest:
        check_mirrors(tree, other)
    path.add(id(tree))
    for key, value in children(tree):
        _gather(value, [child(r, key) for r in rest], others, (id(tree), key), path)
    path.discard(id(tree))


def _sum(a, b):
    if a is None or b is None:
        return b if a is None else a
    return a + b


def _map(fn, tree, others, with_rest, place, done):
    if is_differentiable(tree):
        if not with_rest:
            return fn(tree)
        key = _leaf_key(tree, place)
        parts = others[key][0] if key in others else None
        if parts is None or any(p is None for p in parts):
            return tree
        if key not in done:
            done[key] = fn(tree, *parts)
        return done[key]
    if tree is None or not (isinstance(tree, (dict, list, tuple, Tangent)) or is_struct(tree)):
        return tree
    if id(tree) in done:
        return done[id(tree)]
    if isinstance(tree, tuple) or hasattr(type(tree), "__tree_rebuild__"):  # built from its mapped items
        result = rebuild(tree, {k: _map(fn, v, others, with_rest, (id(tree), k), done) for k, v in children(tree)})
        done[id(tree)] = result
        return result
    result = rebuild(tree, {})  # a new container or object first, so cycles come back to it
    done[id(tree)] = result
    for key, value in children(tree):
        mapped = _map(fn, value, others, with_rest, (id(tree), key), done)
        if mapped is not value:
            _set(result, key, mapped)
    return result


def _set(container, key, value):
    if isinstance(container, (dict, list)):
        container[key] = value
    elif isinstance(container, Tangent):
        setattr(container, key, value)
    else:
        object.__setattr__(container, key, value)


def is_tree_with_floats(tree, seen=None) -> bool:
    """Whether `tree` holds a float leaf anywhere (`tree_leaves(tree)` is not empty), found
    without walking past the first.

    >>> is_tree_with_floats({"n": 3, "layers": [None, (1, 2.5)]}), is_tree_with_floats({"n": 3})
    (True, False)
    """
    seen = set() if seen is None else seen
    layout = layout_of(type(tree))
    if layouts.is_differentiable(tree, layout):
        return True
    if _may_recur(tree, layout):
        if id(tree) in seen:
            return False
        seen.add(id(tree))
    for _, child in entries(tree, layout):
        if is_tree_with_floats(child, seen):
            return True
    return False


def path_of(path: str, tree, key) -> str:
    """The path of `tree`'s child `key`, `tree` being at `path`: `.W` for a field of an object
    or namedtuple, `[0]` or `['W']` for an item of a list, tuple or dict."""
    if isinstance(tree, (dict, list)) or isinstance(tree, tuple) and not is_namedtuple(tree):
        return f"{path}[{key!r}]"
    return f"{path}.{key}"


def path_text(path) -> str:
    """A path kept by a walk as a string, or as `(path of the parent, parent, key)` until it
    is needed, written out (`.layers[0].W`).

    >>> path_text((("", {"layers": [1]}, "layers"), [1], 0))
    "['layers'][0]"
    """
    if isinstance(path, str):
        return path
    parent, tree, key = path
    return path_of(path_text(parent), tree, key)


def check_mirrors(tree, other) -> None:
    """Refuse `other` (a gradient, or a tree to map along) that does not mirror `tree` here:
    a tuple from `gradient(...)` for a model, a `Tangent` of another class, lists of other
    lengths. None (no gradient) mirrors anything; dicts may hold fewer keys."""
    if other is None or is_differentiable(tree) and not isinstance(other, (dict, list, tuple, Tangent)):
        return
    if isinstance(other, Tangent):
        fits = is_struct(tree) and tangent_type(other) is type(tree)
    elif isinstance(other, dict):
        fits = isinstance(tree, dict) and all(key in tree for key in other)
    elif isinstance(other, (list, tuple)):
        fits = isinstance(tree, (list, tuple)) and is_namedtuple(tree) == is_namedtuple(other) and len(tree) == len(other)
    else:
        fits = is_struct(other) and type(other) is type(tree) or hasattr(type(other), "__tree_children__")
    if not fits:
        raise AdjointError(
            f"the gradient does not mirror the model: a {_kind(other)} for a {_kind(tree)}. Pass the "
            "model's own gradient (from `grad(loss)(model)`; `gradient(loss, model, x)` returns a tuple: "
            "take its first entry)"
        )


def _kind(value) -> str:
    return f"Tangent of {tangent_type(value).__name__}" if isinstance(value, Tangent) else type(value).__name__
