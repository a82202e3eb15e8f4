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

from .runtime import is_differentiable
from .runtime.structs import Tangent, fields_of, is_namedtuple, is_struct, tangent_fields, tangent_type

__all__ = ["tree_leaves", "tree_map", "children", "rebuild"]


def tree_leaves(tree) -> list:
    """The float leaves of `tree` (floats and float arrays), in order: dict entries in key
    order, items in sequence order, an object's fields in declaration order. `None`, ints,
    strings and functions are skipped, and an object reached twice is walked once.

    >>> import numpy as np, adjoint
    >>> adjoint.tree_leaves([1.0, {"a": np.zeros(2), "n": 3}, None])
    [1.0, array([0., 0.])]
    """
    leaves = []
    _walk(tree, leaves.append, set())
    return leaves


def _walk(tree, visit, seen):
    if is_differentiable(tree):
        visit(tree)
        return
    if is_struct(tree) or isinstance(tree, Tangent):
        if id(tree) in seen:
            return
        seen.add(id(tree))
    for _, child in children(tree):
        _walk(child, visit, seen)


def children(tree) -> list:
    """`(key, child)` pairs of a container or object; empty for a leaf. Keys are dict keys,
    positions, or field names."""
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
    if isinstance(tree, dict):
        return tree.get(key)
    if isinstance(tree, (list, tuple)) and not is_namedtuple(tree):
        return tree[key] if isinstance(key, int) and key < len(tree) else None
    if isinstance(tree, Tangent):
        return tangent_fields(tree).get(key)
    return getattr(tree, key, None) if isinstance(key, str) else None


def rebuild(tree, parts: dict):
    """A new container or object like `tree`, with the children in `parts` (by key) replaced.

    Objects are copied shallowly and their fields set directly, so frozen dataclasses and
    classes with `__slots__` rebuild too.
    """
    if isinstance(tree, dict):
        return {key: parts.get(key, value) for key, value in tree.items()}
    if is_namedtuple(tree):
        return type(tree)._make(parts.get(name, v) for name, v in zip(type(tree)._fields, tree))
    if isinstance(tree, (list, tuple)):
        return type(tree)(parts.get(i, v) for i, v in enumerate(tree))
    if isinstance(tree, Tangent):
        return Tangent(tangent_type(tree), {**tangent_fields(tree), **parts})
    new = copy.copy(tree)
    for name, value in parts.items():
        object.__setattr__(new, name, value)
    return new


def tree_map(fn, tree, *rest):
    """A tree like `tree` with `fn(leaf, *others)` for each float leaf, where `others` are the
    leaves at the same place in each of `rest` (gradients, usually). A leaf whose counterpart
    in `rest` is None (no gradient) is kept as it is, as are ints, strings and functions.

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
    """
    return _map(fn, tree, rest, {})


def _map(fn, tree, rest, done):
    if is_differentiable(tree):
        if any(r is None for r in rest):
            return tree
        return fn(tree, *rest)
    if tree is None or not (isinstance(tree, (dict, list, tuple, Tangent)) or is_struct(tree)):
        return tree
    if id(tree) in done and not rest:
        return done[id(tree)]  # an object reached twice (tied weights) maps to one new object
    parts = {}
    for key, value in children(tree):
        mapped = _map(fn, value, [child(r, key) for r in rest], done)
        if mapped is not value:
            parts[key] = mapped
    result = rebuild(tree, parts)
    done[id(tree)] = result
    return result


def is_tree_with_floats(tree, seen=None) -> bool:
    """Whether `tree` holds a float leaf anywhere."""
    seen = set() if seen is None else seen
    if is_differentiable(tree):
        return True
    if is_struct(tree):
        if id(tree) in seen:
            return False
        seen.add(id(tree))
    return any(is_tree_with_floats(c, seen) for _, c in children(tree))


def path_of(path: str, tree, key) -> str:
    """The path of `tree`'s child `key`, `tree` being at `path`: `.W` for a field of an object
    or namedtuple, `[0]` or `['W']` for an item of a list, tuple or dict."""
    if isinstance(tree, (dict, list)) or isinstance(tree, tuple) and not is_namedtuple(tree):
        return f"{path}[{key!r}]"
    return f"{path}.{key}"
