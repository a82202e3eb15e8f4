"""Arguments and cotangents at the API's edge: which arguments are differentiated, the seed of
a gradient, and the cotangents handed back (completed, projected to each argument's kind; a
model's completed by `structure`).
"""

from __future__ import annotations

import numpy as np

from . import runtime, tree
from .errors import AdjointError


def name_of(f) -> str:
    """How messages name a function: `` `module.f` `` by its qualified name."""
    return f"`{getattr(f, '__qualname__', f)}`"


def carries_gradient(arg, index, f) -> bool:
    """Whether argument `index` of `f` gets a gradient: a float or complex number or array, or
    a container or object holding one (a model)."""
    return runtime.is_differentiable(arg) or tree.is_tree_with_floats(arg)


def complete(value, cotangent):
    """The cotangent the user gave for the output `value`, checked against it (containers,
    namedtuples and objects mirrored, leaves shaped like the value's), `None` leaves made zeros."""
    if type(value) in _SCALARS and type(cotangent) in _SCALARS:  # the common cases, nothing to check
        return cotangent
    if type(value) is np.ndarray and type(cotangent) is np.ndarray and value.shape == cotangent.shape and (
        cotangent.dtype.kind != "c" or value.dtype.kind == "c"
    ):
        return cotangent
    if isinstance(value, (tuple, list)):
        if cotangent is None:
            cotangent = [None] * len(value)
        if not isinstance(cotangent, (tuple, list)) or len(cotangent) != len(value):
            raise AdjointError(
                f"the cotangent must mirror the output: a {type(value).__name__} of {len(value)}"
            )
        parts = [complete(v, c) for v, c in zip(value, cotangent)]
        return type(value)._make(parts) if hasattr(type(value), "_fields") else type(value)(parts)
    if isinstance(value, dict) or runtime.structs.is_struct(value):
        return _complete_mapping(value, cotangent)
    if cotangent is None:
        return runtime.zeros_like(value)
    if np.shape(cotangent) != np.shape(value):
        raise AdjointError(
            f"the cotangent has shape {np.shape(cotangent)} but the output has shape {np.shape(value)}"
        )
    if np.iscomplexobj(cotangent) and runtime.is_differentiable(value) and not np.iscomplexobj(value):
        return np.real(cotangent)  # a real output's cotangent is real: its imaginary part moves nothing
    return cotangent


_SCALARS = (float, np.float64)


def _complete_mapping(value, cotangent):
    """A dict output's cotangent (a dict with some of its keys) or an object output's (a
    `Tangent` of its type with some of its fields), checked; absent entries stay absent."""
    is_object = runtime.structs.is_struct(value)
    if cotangent is None:
        return None
    kind = runtime.Tangent if is_object else dict
    if not isinstance(cotangent, kind) or is_object and runtime.structs.tangent_type(cotangent) is not type(value):
        wanted = f"an adjoint.Tangent of {type(value).__name__}" if is_object else "a dict"
        raise AdjointError(f"the cotangent must mirror the output: {wanted}, not {type(cotangent).__name__}")
    entries = dict(tree.children(value))
    given = runtime.structs.tangent_fields(cotangent) if is_object else cotangent
    unknown = [key for key in given if key not in entries]
    if unknown:
        raise AdjointError(f"the cotangent names {unknown}, which the output does not have")
    parts = {key: complete(entries[key], part) for key, part in given.items() if part is not None}
    return runtime.Tangent(type(value), parts) if is_object else parts


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
        return cotangent if type(cotangent) is float else float(np.real(cotangent))
    if type(arg) is complex:
        return complex(cotangent)
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


_ONES = {np.float32: np.float32(1), np.float16: np.float16(1)}


def unit(value, f):
    """The seed of a gradient: 1 shaped like the scalar output."""
    if type(value) is float:  # the common cases first: every gradient asks
        return 1.0
    if type(value) is np.float64:
        return 1.0  # the same number as np.float64(1), without NumPy's dispatch on its scalars
    one = _ONES.get(type(value))
    if one is not None:  # a float32 or float16 loss: a seed of its type (NumPy scalars never change)
        return one
    if isinstance(value, tuple):
        raise AdjointError(
            f"grad needs {name_of(f)} to return a float scalar, but it returned a tuple of {len(value)}. "
            "If the first item is the loss and the rest are extra outputs, use "
            "adjoint.value_and_grad(f, has_aux=True) with `return loss, aux`."
        )
    if np.iscomplexobj(value) and np.ndim(value) == 0:
        raise AdjointError(
            f"grad needs {name_of(f)} to return a real scalar, but it returned a complex one. "
            "Differentiate a real loss of it (`abs(z) ** 2`, `z.real`), or use adjoint.pullback(f, *args) "
            "and pass a complex cotangent to back()."
        )
    if not (runtime.is_differentiable(value) and np.ndim(value) == 0):
        kind = f"an array of shape {np.shape(value)}" if np.ndim(value) else type(value).__name__
        raise AdjointError(
            f"grad needs {name_of(f)} to return a float scalar, but it returned {kind}. "
            "For other outputs use adjoint.pullback(f, *args) and pass a cotangent to back()."
        )
    if isinstance(value, np.generic):
        return type(value)(1)  # a NumPy scalar, not a 0-d array: scalar code stays on fast paths
    return np.ones_like(value) if isinstance(value, np.ndarray) else type(value)(1)


def loss_of(value, f):
    """The loss in the output `(loss, aux)` of `f`, differentiated with `has_aux=True`."""
    if not (isinstance(value, tuple) and len(value) == 2):
        raise AdjointError(f"with has_aux=True, {name_of(f)} must return a pair (value, aux)")
    return value[0]




def select(cotangents, wrt):
    """The gradients `grad` returns for `wrt`: one, or a tuple of them (copies where a position
    repeats, so they share no memory)."""
    if isinstance(wrt, int):
        return cotangents[wrt]
    from .structure import unshared  # noqa: PLC0415

    return unshared([cotangents[i] for i in wrt], None)  # `wrt=(0, 0)` gets two arrays, not one shared
