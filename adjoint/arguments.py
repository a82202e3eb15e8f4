"""Arguments and cotangents at the API's edge: which arguments are differentiated, the seed of
a gradient, and the cotangents handed back (completed, projected to each argument's kind, never
sharing memory with each other or with the caller's cotangent).
"""

from __future__ import annotations

import numpy as np

from . import runtime, tree
from .errors import AdjointError
from .runtime import structs


def name_of(f) -> str:
    """How messages name a function: `` `module.f` `` by its qualified name."""
    return f"`{getattr(f, '__qualname__', f)}`"


def unshared(cotangents, seed) -> tuple:
    """The cotangents, copied where one shares memory with another or with the caller's `seed`
    (`x + y` hands its cotangent to both), so updating one in place changes nothing else."""
    seen = [leaf for leaf in leaves(seed) if isinstance(leaf, np.ndarray)]
    result = []
    for cotangent in cotangents:
        if isinstance(cotangent, np.ndarray):
            if any(cotangent is s or np.may_share_memory(cotangent, s) for s in seen):
                cotangent = cotangent.copy()
            seen.append(cotangent)
        result.append(cotangent)
    return tuple(result)


def leaves(tree):
    """The items of nested tuples and lists, in order.

    >>> leaves((1.0, [2.0, (3.0,)]))
    [1.0, 2.0, 3.0]
    """
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in leaves(t)]
    return [tree]


def carries_gradient(arg, index, f) -> bool:
    """Whether argument `index` of `f` gets a gradient: a float or float array, or a container
    or object holding one (a model). Complex values are refused with what to do instead."""
    if runtime.is_differentiable(arg):
        if type(arg) is complex or getattr(arg, "dtype", None) is not None and arg.dtype.kind == "c":
            raise AdjointError(
                f"argument {index} of {name_of(f)} is complex: differentiating complex inputs is "
                "not supported yet. Split it into real and imaginary parts."
            )
        return True
    return tree.is_tree_with_floats(arg)


def structure(arg, cotangent, frozen=frozenset(), path="", walked=None):
    """The gradient handed back for a container or object `arg`: it mirrors `arg` (the same
    containers, a `Tangent` for an object), float leaves get their projected cotangents
    (zeros if nothing reached them), and `None` stands for a subtree with no float leaf and
    for the paths in `frozen`. An object reached twice is completed once per place."""
    if path in frozen:
        return None
    if runtime.is_differentiable(arg):
        return project(arg, cotangent)
    walked = set() if walked is None else walked
    if structs.is_struct(arg):
        if id(arg) in walked:
            return None  # a cycle back to an object being completed
        walked = walked | {id(arg)}
    parts = {key: structure(value, tree.child(cotangent, key), frozen, tree.path_of(path, arg, key), walked)
             for key, value in tree.children(arg)}
    if structs.is_struct(arg) and isinstance(cotangent, structs.Tangent):
        _refuse_stray_fields(arg, cotangent, parts)
    if all(part is None for part in parts.values()):
        return None
    if structs.is_struct(arg):
        return structs.Tangent(type(arg), parts)
    return tree.rebuild(arg, parts)


def _refuse_stray_fields(arg, cotangent, parts):
    """A gradient for an attribute that is not one of the object's fields (a class attribute
    read through the object, an attribute `__getattr__` computes) cannot be handed back."""
    for name, value in structs.tangent_fields(cotangent).items():
        if name not in parts and value is not None:
            raise AdjointError(
                f"a gradient reached `{type(arg).__name__}.{name}`, which is not a field of the object "
                "(a class attribute, or one computed by `__getattr__`): adjoint cannot hand it back. "
                "Store it on the instance, or compute it in a method"
            )


def complete(value, cotangent):
    """The cotangent the user gave, checked against the value, `None` leaves made zeros."""
    if isinstance(value, (tuple, list)):
        if cotangent is None:
            cotangent = [None] * len(value)
        if not isinstance(cotangent, (tuple, list)) or len(cotangent) != len(value):
            raise AdjointError(
                f"the cotangent must mirror the output: a {type(value).__name__} of {len(value)}"
            )
        return type(value)(complete(v, c) for v, c in zip(value, cotangent))
    if cotangent is None:
        return runtime.zeros_like(value)
    if np.shape(cotangent) != np.shape(value):
        raise AdjointError(
            f"the cotangent has shape {np.shape(cotangent)} but the output has shape {np.shape(value)}"
        )
    return cotangent


def project(arg, cotangent):
    """`cotangent` as the same kind of value as `arg`: float for float, dtype for arrays."""
    if (
        type(cotangent) is np.ndarray and type(arg) is np.ndarray and cotangent.dtype == arg.dtype
        and cotangent.shape == arg.shape and cotangent.flags.writeable
    ):
        return cotangent
    if cotangent is None:
        return runtime.zeros_like(arg)
    if type(arg) is float:
        return float(np.real(cotangent))
    dtype = arg.dtype if isinstance(arg, (np.ndarray, np.generic)) else np.result_type(arg)
    if isinstance(arg, np.generic):
        return dtype.type(cotangent if dtype.kind == "c" else np.real(cotangent))
    result = np.asarray(cotangent)
    if dtype.kind != "c":
        result = np.real(result)
    if result.dtype != dtype or not result.flags.writeable:
        result = np.array(result, dtype=dtype)
    if result.shape != np.shape(arg):
        raise AdjointError(f"internal error: cotangent shape {result.shape} for an argument of shape {np.shape(arg)}")
    return result


def unit(value, f):
    """The seed of a gradient: 1 shaped like the scalar output."""
    if not (runtime.is_differentiable(value) and np.ndim(value) == 0):
        kind = f"an array of shape {np.shape(value)}" if np.ndim(value) else type(value).__name__
        raise AdjointError(
            f"grad needs {name_of(f)} to return a float scalar, but it returned {kind}. "
            "For other outputs use adjoint.pullback(f, *args) and pass a cotangent to back()."
        )
    if isinstance(value, np.generic):
        return type(value)(1)  # a NumPy scalar, not a 0-d array: scalar code stays on fast paths
    return np.ones_like(value) if isinstance(value, np.ndarray) else type(value)(1)


def select(cotangents, wrt):
    """The gradients `grad` returns for `wrt`: one, or a tuple of them (copies where a position
    repeats, so they share no memory)."""
    if isinstance(wrt, int):
        return cotangents[wrt]
    seen, selected = set(), []
    for i in wrt:  # `wrt=(0, 0)` gets two arrays, not one shared
        selected.append(np.copy(cotangents[i]) if i in seen and cotangents[i] is not None else cotangents[i])
        seen.add(i)
    return tuple(selected)
