"""What generated code and rules call at run time, through the one alias `adj`.

Generated code reads `adj.unbroadcast(z_bar, b)`: every helper here is a small NumPy function
with no knowledge of the compiler. This module never imports the compiler or the source front
end; calls into user Python functions (`vjp`) reach the compiler through a hook that the
public API installs, so an exported gradient needs only NumPy and this module.

Cotangent conventions: a cotangent has its primal's shape and dtype; `None` is the "no
cotangent" value of a non-differentiable primal (an int, a string, a shape).
"""

from __future__ import annotations

import numpy as np

from .errors import AdjointError

__all__ = [
    "RuleError",
    "is_differentiable",
    "zeros_like",
    "add",
    "unbroadcast",
    "unreduce",
    "unreduce_chosen",
    "tie_weight",
    "matmul_lhs_bar",
    "matmul_rhs_bar",
    "dot_lhs_bar",
    "dot_rhs_bar",
    "untranspose",
    "unindex",
    "unpack_bar",
    "vjp",
    "no_cotangents",
    "zeros_for_none",
]


class RuleError(AdjointError):
    """A rule or a runtime helper was used against its contract."""


# ---- what carries a gradient ----------------------------------------------------------------

def is_differentiable(value) -> bool:
    """Whether `value` is a float or complex scalar or array, the values that get cotangents."""
    if isinstance(value, (float, complex)):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and isinstance(value, (np.ndarray, np.generic)) and dtype.kind in "fc"


def zeros_like(value):
    """The zero cotangent of `value`: 0.0 for a float, zeros for an array, None for the rest."""
    if type(value) is float:
        return 0.0
    if type(value) is complex:
        return 0j
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "fc":
        return np.zeros_like(value)
    if type(value) is tuple:
        return tuple(zeros_like(v) for v in value)
    if type(value) is list:
        return [zeros_like(v) for v in value]
    return None


def add(a, b):
    """Sum of two cotangents, where `None` is zero and tuples and lists add elementwise."""
    if a is None:
        return b
    if b is None:
        return a
    if type(a) is tuple or type(a) is list:
        return type(a)(add(x, y) for x, y in zip(a, b))
    return a + b


# ---- broadcasting and reductions -------------------------------------------------------------

def unbroadcast(g, x):
    """Sum `g` over the axes NumPy broadcast `x` along, and cast it to `x`'s float dtype."""
    if type(g) is np.ndarray and type(x) is np.ndarray and g.shape == x.shape and g.dtype == x.dtype:
        return g
    if type(g) is float and type(x) is float:
        return g
    if type(x) is tuple or type(x) is list:
        raise RuleError(
            f"a {type(x).__name__} was used in arithmetic (`+` concatenates, `*` repeats): adjoint "
            "cannot differentiate that; operate on arrays"
        )
    shape = np.shape(x)
    if np.shape(g) != shape:
        g = np.asarray(g)
        extra = g.ndim - len(shape)
        if extra > 0:
            g = g.sum(axis=tuple(range(extra)))
        elif extra < 0:  # `x` had leading axes of size 1 that the operation dropped
            g = np.reshape(g, (1,) * -extra + g.shape)
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        if stretched:
            g = g.sum(axis=stretched, keepdims=True)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and dtype.kind in "fc" and getattr(g, "dtype", None) != dtype:
        g = np.asarray(g if dtype.kind == "c" else np.real(g), dtype=dtype)
    return g


def unreduce(g, x, axis=None, keepdims=False):
    """Spread the cotangent of a reduction of `x` over `axis` back to `x`'s shape."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    dtype = getattr(x, "dtype", None)
    if dtype is not None and getattr(g, "dtype", None) != dtype:
        g = np.asarray(g, dtype=dtype)
    return np.broadcast_to(g, np.shape(x))


def unreduce_chosen(g, x, ans, axis=None, keepdims=False):
    """Cotangent of `max`/`min`: to the chosen entries, shared equally between ties."""
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
        ans = np.expand_dims(ans, axis)
    chosen = x == ans
    count = np.maximum(np.sum(chosen, axis=axis, keepdims=True), 1)  # 0 where the extremum is NaN
    return unbroadcast(g * chosen / count, x)


def tie_weight(x, ans, other):
    """Share of `maximum(x, other)`'s cotangent that goes to `x`: 1, 0, or 1/2 at ties."""
    return (x == ans) / (1.0 + (x == other))


# ---- products and shapes ---------------------------------------------------------------------

def _as_matrices(g, a, b):
    """Promote 1-D matmul operands (and the cotangent) to matrices, as `matmul` does."""
    a2 = a[np.newaxis, :] if np.ndim(a) == 1 else a
    b2 = b[:, np.newaxis] if np.ndim(b) == 1 else b
    g2 = np.asarray(g)
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        g2 = np.reshape(g2, (1, 1))
    elif np.ndim(a) == 1:
        g2 = np.expand_dims(g2, -2)
    elif np.ndim(b) == 1:
        g2 = np.expand_dims(g2, -1)
    return g2, a2, b2


def matmul_lhs_bar(g, a, b):
    """Cotangent of `a` in `a @ b`: `g @ b.T`, for vectors and stacks of matrices too."""
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return unbroadcast(g @ b.T, a)
    g2, a2, b2 = _as_matrices(g, a, b)
    a_bar = g2 @ np.swapaxes(b2, -1, -2)
    return np.reshape(unbroadcast(a_bar, a2), np.shape(a))


def matmul_rhs_bar(g, a, b):
    """Cotangent of `b` in `a @ b`: `a.T @ g`, for vectors and stacks of matrices too."""
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return unbroadcast(a.T @ g, b)
    g2, a2, b2 = _as_matrices(g, a, b)
    b_bar = np.swapaxes(a2, -1, -2) @ g2
    return np.reshape(unbroadcast(b_bar, b2), np.shape(b))


def dot_lhs_bar(g, a, b):
    """Cotangent of `a` in `np.dot(a, b)`, for every combination of dimensions."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * np.conj(b), a)
    b_kept = [i for i in range(np.ndim(b)) if i != max(np.ndim(b) - 2, 0)]
    g_axes = list(range(np.ndim(g) - len(b_kept), np.ndim(g)))
    return np.tensordot(g, b, axes=(g_axes, b_kept)).astype(np.result_type(a), copy=False)


def dot_rhs_bar(g, a, b):
    """Cotangent of `b` in `np.dot(a, b)`, for every combination of dimensions."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * np.conj(a), b)
    lead = list(range(np.ndim(a) - 1))
    b_bar = np.tensordot(a, g, axes=(lead, lead))
    return np.moveaxis(b_bar, 0, max(np.ndim(b) - 2, 0)).astype(np.result_type(b), copy=False)


def layout_order(a) -> str:
    """The index order `np.reshape(a, ..., order="A")` reads `a` in."""
    return "F" if np.isfortran(a) else "C"


def untranspose(g, axes=None):
    """Undo `np.transpose(x, axes)` on a cotangent."""
    return np.transpose(g) if axes is None else np.transpose(g, np.argsort(np.mod(axes, np.ndim(g))))


def unindex(g, x, index):
    """Cotangent of `x` in `x[index]`: `g` scattered into zeros, repeated indices adding up.

    `x` may be a tuple or list (indexed by an int or a slice), whose cotangent is one too.
    """
    if type(x) is tuple or type(x) is list:
        parts = [zeros_like(v) for v in x]
        positions = range(len(x))[index]
        if isinstance(positions, int):
            parts[positions] = g
        else:
            for position, part in zip(positions, g):
                parts[position] = part
        return type(x)(parts)
    x_bar = np.zeros(np.shape(x), dtype=np.result_type(x, g))
    np.add.at(x_bar, index, g)
    return x_bar


def unpack_bar(parts, x):
    """Cotangent of `x` in `a, b = x`, from the cotangents of the parts (None for zero).

    Unpacking an array iterates its first axis, so the parts stack back into an array.
    """
    parts = [zeros_like(v) if p is None else p for p, v in zip(parts, x)]
    if isinstance(x, np.ndarray):
        return np.stack(parts).astype(x.dtype, copy=False)
    return type(x)(parts) if type(x) in (tuple, list) else tuple(parts)


# ---- calls into user functions ----------------------------------------------------------------

_transform_hook = None


def install_transformer(hook) -> None:
    """Set how `vjp` differentiates a Python function: `hook(fn, wrt) -> forward function`."""
    global _transform_hook
    _transform_hook = hook


def vjp(wrt, fn, /, *args, **kwargs):
    """Call `fn(*args, **kwargs)` and return `(value, pullback)`.

    `wrt` holds the positions of the arguments that carry gradients. `fn` is resolved here, at
    run time: a registered rule, a non-differentiable primitive, or a Python function, which is
    transformed (once per code object) and called.
    """
    rule = registry.lookup(fn)
    if rule is not None or registry.is_non_differentiable(fn):
        if rule is not None:
            value, pullback = rule.rrule(*args, **kwargs)
        else:
            value, pullback = fn(*args, **kwargs), None
        if pullback is None or not (is_differentiable(value) or type(value) in (tuple, list)):
            pullback = no_cotangents(len(args))  # an integer result (`dtype=int`) has no gradient
        return value, zeros_for_none(pullback, args, wrt)
    if _transform_hook is None:
        raise RuleError(f"no rule for {fn!r} and no compiler installed to differentiate it")
    forward = _transform_hook(fn, wrt)
    value, pullback = forward(*args, **kwargs)
    return value, pullback if forward.__adjoint_arity__ == len(args) else _truncated(
        pullback, len(args)
    )


def no_cotangents(count):
    """A pullback for a result with no gradient: `None` for each of `count` arguments."""

    def no_pullback(g):
        return (None,) * count

    return no_pullback


def zeros_for_none(pullback, args, wrt):
    """`pullback` with its trailing `None`s padded back and a `None` for an argument in `wrt`
    made zeros: a rule's `None` means zero, but generated code needs an array."""

    def zero_filled_pullback(g):
        cotangents = registry.padded(pullback(g), len(args))
        return tuple(
            zeros_like(args[i]) if c is None and i in wrt else c for i, c in enumerate(cotangents)
        )

    return zero_filled_pullback


def _truncated(pullback, count):
    def truncated_pullback(g):
        return pullback(g)[:count]

    return truncated_pullback


from . import registry  # noqa: E402  (registry imports this module)
