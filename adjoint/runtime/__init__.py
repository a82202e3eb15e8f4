"""What generated code and rules call at run time, through the one alias `adj`.

Generated code reads `adj.unbroadcast(z_bar, b)`: every helper here is a small NumPy function
with no knowledge of the compiler. This package never imports the compiler or the source front
end; calls into user Python functions (`vjp`) reach the compiler through a hook that the
public API installs, so an exported gradient needs only NumPy and this package.

Cotangent conventions: a cotangent has its primal's shape and dtype; `None` is the "no
cotangent" value of a non-differentiable primal (an int, a string, a shape), and counts as
zero wherever cotangents are added. No helper updates its arguments, except `scatter_add`,
which adds into a buffer its caller owns.

The helpers live by concept in `cotangents` (zeros, sums, broadcasting, reductions),
`linear` (products, transposes, layouts), `indexing` (items, buffers, containers), `calls`
(closures and starred calls), `methods` (dispatch on the receiver's type), `structs` and
`building` (objects' cotangents, and objects built in differentiated code); `vjp`, the one
way into another function's pullback, is here, with the hook it reaches the compiler through.

The rules of each NumPy family (`adjoint.rules`) have their helpers in a module of their own:

- `pointwise`: quotients that are 0 where the divisor is, `sinc`'s slope, `digamma`, float-only
  cotangents;
- `reducing`: reductions, scans, averages and norms, spread back over the reduced axes;
- `shaping`: undoing the shape functions that one inverse call does not undo, the transposed
  differences of `np.diff` and `np.gradient`, and `np.linspace`'s fractions;
- `assembly`: joins cut back into their items, and copies of entries summed back (`np.pad`);
- `gathering`: selections (`np.take`, diagonals, `np.select`, `np.partition`) scattered back
  where they read;
- `contraction`: each operand's cotangent in products (`tensordot`, `einsum`, `kron`...);
- `factorizations`: inverses, determinants and decompositions (`svd`, `eigh`, `qr`...);
- `spectral`: FFTs' cotangents, padded, cropped or folded back to their input;
- `perturbations` and `reducing_tangents`: the tangents of decompositions and of the
  reductions' cotangents (forward mode over generated pullbacks); `transposes` and
  `item_transposes`: the pullbacks of the cotangent helpers, and of those for items, buffers
  and joins (reverse mode over generated pullbacks).

Forward mode's own helpers: `tangents` (zero tangents, tangents made to match their value),
`forward_calls` (`jvp` and its siblings, the way into another function's JVP), `nested` (what
`vjp` does, written so forward mode can read it).
"""

from __future__ import annotations

import functools
import types

import numpy as np

from ..errors import AdjointError  # noqa: F401  (importable from here, as it always was)
from .calls import check_unshared, closure_vjp, star_vjp, unbound, unconcat
from .methods import method_function, method_vjp
from .cotangents import (
    RuleError, add, add_chosen, cotangent_like, is_differentiable, prod_bar, reduced_axes, spread, sum_to_shape,
    tie_weight, unbroadcast, unreduce, unreduce_chosen, zeros_like,
)
from .indexing import (
    add_at, append, append_bar, buffer_like, from_buffer, scatter_add, setitem, setitem_bar, unindex, unitem, unpack_bar,
)
from .building import construct_vjp, is_constructible
from . import structs
from .structs import Tangent, field_bar, field_bars, item_bar
from .nested import (
    calling, closure_cotangents, dropped_cotangents, filled_cotangents, kept_cotangents, prefixed_cotangents, vjp_program,
)
from .gradient_mode import hooked
from .marks import marked
from .remembered import ByIdentity
from .tangents import complete_tangent, holds_floats, tangent_like, tangent_or_zeros, zero_tangent
from .forward_calls import closure_jvp, field_tangent, install_tangent_transformer, jvp, keywords_jvp, method_jvp
from .linear import (
    _as_matrices, dot_lhs_bar, dot_rhs_bar, layout_order, matmul_lhs_bar, matmul_rhs_bar, unravel,
    untranspose,
)
# The helpers of each family of rules, every name in each module's `__all__`.
from . import (  # noqa: E402
    assembly, contraction, factorizations, gathering, item_transposes, perturbations, pointwise, reducing,
    reducing_tangents, shaping, spectral, transposes,
)
from .assembly import *  # noqa: F401,F403
from .contraction import *  # noqa: F401,F403
from .factorizations import *  # noqa: F401,F403
from .perturbations import *  # noqa: F401,F403
from .gathering import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .reducing import *  # noqa: F401,F403
from .reducing_tangents import *  # noqa: F401,F403
from .shaping import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .transposes import *  # noqa: F401,F403
from .item_transposes import *  # noqa: F401,F403

__all__ = [
    "RuleError",
    "is_differentiable",
    "zeros_like",
    "cotangent_like",
    "add",
    "unbroadcast",
    "sum_to_shape",
    "reduced_axes",
    "spread",
    "unreduce",
    "unreduce_chosen",
    "add_chosen",
    "tie_weight",
    "prod_bar",
    "matmul_lhs_bar",
    "matmul_rhs_bar",
    "dot_lhs_bar",
    "dot_rhs_bar",
    "layout_order",
    "untranspose",
    "unravel",
    "unindex",
    "unpack_bar",
    "unitem",
    "buffer_like",
    "scatter_add",
    "from_buffer",
    "setitem",
    "setitem_bar",
    "append",
    "append_bar",
    "add_at",
    "vjp",
    "closure_vjp",
    "item_bar",
    "field_bar",
    "field_bars",
    "construct_vjp",
    "Tangent",
    "method_vjp",
    "method_function",
    "star_vjp",
    "unconcat",
    "unbound",
    "check_unshared",
    "no_cotangents",
    "zeros_for_none",
    "zero_tangent",
    "tangent_or_zeros",
    "tangent_like",
    "complete_tangent",
    "holds_floats",
    "jvp",
    "closure_jvp",
    "method_jvp",
    "keywords_jvp",
    "field_tangent",
    "install_tangent_transformer",
    "vjp_program",
    "filled_cotangents",
    "closure_cotangents",
    "prefixed_cotangents",
    "dropped_cotangents",
    "kept_cotangents",
    "calling",
    "hooked",
]
for _family in (
    assembly, contraction, factorizations, gathering, item_transposes, perturbations, pointwise, reducing,
    reducing_tangents, shaping, spectral, transposes,
):
    __all__ += _family.__all__


# ---- calls into other functions ----------------------------------------------------------------

_transform_hook = None


def install_transformer(hook) -> None:
    """Set how `vjp` differentiates a Python function: `hook(fn, wrt, args) -> forward function`
    (`args`, the positional arguments of the call, tell which of their fields are frozen)."""
    global _transform_hook
    _transform_hook = hook


def vjp(wrt, fn, /, *args, **kwargs):
    """Call `fn(*args, **kwargs)` and return `(value, pullback)`.

    `fn` is resolved here, at run time: a registered rule, a non-differentiable primitive, or
    a Python function, which is transformed (once per code object) and called. `wrt` holds the
    positions of the arguments that carry gradients; the pullback returns one cotangent per
    argument, never `None` for one in `wrt`. Which arguments count depends on `fn`:

    - a function, rule or primitive: the positional arguments, `args`;
    - a bound method whose receiver is an array or NumPy scalar (`x.sum`): the call is
      `np.ndarray.sum(x, *args)`, and the receiver counts as argument 0, in `wrt` and in the
      cotangents: the pullback's first cotangent is the receiver's, then one per `args`;
    - a dataclass, namedtuple or other class with a Python `__init__`: the object is built and
      its cotangent (see `building.construct`) goes back to the arguments stored in its fields;
    - a bound method of another object (`model.loss`), an object whose class defines
      `__call__` in Python, or a `functools.partial`: their function is differentiated with
      the receiver (or the partial's arguments) prepended as constants; only `args` count.

    >>> import numpy as np
    >>> x = np.array([1.0, 2.0])
    >>> value, back = vjp((0,), x.sum)
    >>> back(1.0)
    (array([1., 1.]),)
    """
    kind = type(fn)
    if kind is types.FunctionType and _transform_hook is not None and _transformed(fn):  # the common call
        forward = _transform_hook(fn, wrt, args)
        value, pullback = forward(*args, **kwargs)
        return value, pullback if forward.__adjoint_arity__ == len(args) else _truncated(pullback, len(args))
    if kind is np.ufunc:  # (a ufunc takes no attributes, so it carries no marks)
        rule = registry.lookup(fn)
        if rule is not None:
            return _primitive_vjp(wrt, fn, args, kwargs, rule=rule)
    if _is_array_method(fn):
        return _primitive_vjp(wrt, fn, args, kwargs, receiver=(fn.__self__,))
    bound = isinstance(fn, types.MethodType)  # its function's rules take the receiver first: below
    staged = None if bound else marked(fn, "__adjoint_vjp__", None)
    if staged is not None:  # a checkpointed function (`adjoint.checkpoint`)
        return staged(wrt, False, args, kwargs)
    special = None if bound else marked(fn, "__adjoint_rrule__", None)
    if special is not None:  # a derivative made by adjoint (`adjoint.grad(f)`), differentiated again
        value, pullback = special(*args, **kwargs)
        return value, zeros_for_none(pullback, args, wrt)
    if isinstance(fn, type) and registry.lookup(fn) is None and is_constructible(fn):
        return construct_vjp(wrt, fn, *args, **kwargs)
    if not isinstance(fn, types.MethodType):
        rule = registry.lookup(fn)
        if rule is not None or registry.is_non_differentiable(fn):
            return _primitive_vjp(wrt, fn, args, kwargs, rule=rule)
    function, bound, keywords = _unwrapped(fn)
    if function is not fn:
        shifted = tuple(i + len(bound) for i in wrt)
        value, pullback = vjp(shifted, function, *bound, *args, **{**keywords, **kwargs})
        return value, _dropped(pullback, len(bound))
    if not wrt and not isinstance(fn, types.FunctionType):
        return fn(*args, **kwargs), no_cotangents(len(args))  # nothing asked of a library's callable
    if _transform_hook is None:
        raise RuleError(f"no rule for {fn!r} and no compiler installed to differentiate it")
    forward = _transform_hook(fn, wrt, args)
    value, pullback = forward(*args, **kwargs)
    return value, pullback if forward.__adjoint_arity__ == len(args) else _truncated(pullback, len(args))


def _transformed(fn) -> bool:
    """Whether `vjp` differentiates the Python function `fn` by transforming its code: it has no
    rule, is not declared non-differentiable and carries no marks (`adjoint.checkpoint`,
    `adjoint.grad`). Remembered per function at the registry's version, which every rule and
    declaration bumps; marks are read on every call (cheap: most functions have none)."""
    if getattr(fn, "__adjoint_vjp__", None) is not None or getattr(fn, "__adjoint_rrule__", None) is not None:
        return False  # (`marked` tells whether they mean it: the general path asks)
    version = registry.version
    entry = _transformed_at.entries.get(id(fn))  # (`_transformed_at.get(fn)`, without its call)
    if entry is not None and entry[0]() is fn and entry[1][0] == version:
        return entry[1][1]
    transformed = registry.lookup(fn) is None and not registry.is_non_differentiable(fn)
    _transformed_at[fn] = (version, transformed)
    return transformed


_transformed_at = ByIdentity()  # Python function -> (the registry's version, whether it had no rule then)


def _is_array_method(fn) -> bool:
    return isinstance(fn, types.BuiltinMethodType) and isinstance(fn.__self__, (np.ndarray, np.generic))


def _primitive_vjp(wrt, fn, args, kwargs, receiver=(), rule=None):
    """`fn`'s rule applied to `(*receiver, *args)`, or `fn(*args)` if `fn` has no derivative.

    `receiver` is `(x,)` for an array's method `x.sum`, whose rule takes the array first;
    `rule`, `fn`'s rule if the caller looked it up already.
    """
    if rule is None:
        rule = registry.lookup(fn)
    if rule is not None:
        refusal = rule.refusal(len(receiver) + len(args), tuple(kwargs))  # remembered: cheap
        if refusal:
            raise RuleError(f"adjoint's rule for `{getattr(fn, '__qualname__', fn)}` {refusal}")
        value, pullback = rule.rrule(*receiver, *args, **kwargs)
    elif registry.is_non_differentiable(fn):
        value, pullback = fn(*args, **kwargs), None
    else:
        function = getattr(np, fn.__name__, None)
        instead = f"call `np.{fn.__name__}` instead, or " if registry.lookup(function) is not None else ""
        raise RuleError(
            f"adjoint has no rule for the array method `{type(fn.__self__).__name__}.{fn.__name__}`: "
            f"{instead}register a rule for np.ndarray.{fn.__name__} (it is called with the array first)"
        )
    inputs = (*receiver, *args)
    if pullback is None or not (
        is_differentiable(value)
        or isinstance(value, (tuple, list, dict)) or structs.is_struct(value)  # a namedtuple, a model
        or callable(value) and marked(value, "__adjoint_rrule__", None) is not None  # `adjoint.grad(f)`
    ):
        pullback = no_cotangents(len(inputs))  # an integer result (`dtype=int`) has no gradient
    return value, zeros_for_none(pullback, inputs, wrt)


def _unwrapped(fn):
    """`(function, bound arguments, bound keywords)` of a bound method, a callable object or a
    partial; `(fn, (), {})` for anything else."""
    if isinstance(fn, types.MethodType):
        return fn.__func__, (fn.__self__,), {}
    if isinstance(fn, functools.partial):
        return fn.func, fn.args, fn.keywords
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call, (fn,), {}
    return fn, (), {}


def no_cotangents(count):
    """A pullback for a result with no gradient: `None` for each of `count` arguments.

    >>> no_cotangents(2)(1.0)
    (None, None)
    """

    def no_pullback(g):
        return (None,) * count

    return no_pullback


def zeros_for_none(pullback, args, wrt):
    """`pullback` with its trailing `None`s padded back and a `None` for an argument in `wrt`
    made zeros: a rule's `None` means zero, but generated code needs an array.

    >>> back = zeros_for_none(lambda g: (g,), (np.ones(2), 3, np.zeros(2)), wrt=(0, 2))
    >>> back(np.ones(2))
    (array([1., 1.]), None, array([0., 0.]))
    """

    count = len(args)

    def zero_filled_pullback(g):
        cotangents = pullback(g)
        if type(cotangents) is not tuple or len(cotangents) != count:
            cotangents = registry.padded(cotangents, count)
        for i in wrt:
            if type(i) is int and i < count and cotangents[i] is None:
                return tuple(_zero(args[i]) if c is None and i in wrt else c for i, c in enumerate(cotangents))
        return cotangents  # (a rule's full tuple, as it is: the common case)

    return zero_filled_pullback


def _zero(value):
    """A zero cotangent for an argument generated code differentiates: 0 for an int (a model's
    size field used in arithmetic), so the code's arithmetic on it goes on."""
    zero = zeros_like(value)
    return 0 if zero is None and isinstance(value, (int, np.integer)) else zero


def _truncated(pullback, count):
    def truncated_pullback(g):
        return pullback(g)[:count]

    return truncated_pullback


def _dropped(pullback, count):
    """`pullback` without its first `count` cotangents (those of bound constants)."""

    def bound_pullback(g):
        return tuple(pullback(g))[count:]

    return bound_pullback


# Generated code reaches every helper as `adj.<name>`, and the compiler recognises helpers by
# their module: they all report this package, wherever in it they are defined.
for _helper in [*(globals()[name] for name in __all__), layout_order, _as_matrices]:
    _helper.__module__ = __name__
del _helper

from .. import registry  # noqa: E402  (registry imports this package)
