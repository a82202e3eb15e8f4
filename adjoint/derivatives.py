"""Forward mode and derivatives of derivatives: `jvp`, `hvp`, `hessian`, `jacobian`, `frule`
(the rules that let a gradient be differentiated again are in `gradient_rules`).
"""

from __future__ import annotations

import functools

import numpy as np

from . import arguments, forwards, frules, runtime, tree
from .runtime import structs
from .runtime.gradient_mode import differentiating
from .compiler import pipeline
from .errors import AdjointError
from .runtime.marks import marked
from .tracebacks import annotate_handled

__all__ = ["jvp", "hvp", "hessian", "jacobian", "frule"]


def jvp(f, primals, tangents):
    """`(f(*primals), its directional derivative along tangents)`, by forward mode.

    `primals` and `tangents` are tuples with one entry per positional argument; a tangent is
    `None` for an argument held constant, and otherwise has its argument's shape (a container
    or model: the same structure). The result's tangent mirrors the value.

    >>> import numpy as np, adjoint
    >>> def f(x, y):
    ...     return np.sin(x) * y
    >>> value, tangent = adjoint.jvp(f, (0.0, 2.0), (1.0, None))
    >>> float(value), float(tangent)
    (0.0, 2.0)
    """
    try:
        plain = getattr(f, "__adjoint_plain_jvps__", None)  # a gradient at floats and float arrays: kept cheap
        if plain is not None and type(primals) is tuple and type(tangents) is tuple:
            done = plain(primals, tangents)
            if done is not None:
                return done
        if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
            raise AdjointError("jvp takes the primals and the tangents as tuples, one entry per positional argument: "
                               "adjoint.jvp(f, (x,), (v,))")
        primals, tangents = tuple(primals), tuple(tangents)
        if len(primals) != len(tangents):
            raise AdjointError(
                f"jvp needs one tangent per primal: got {len(primals)} primals and {len(tangents)} tangents"
            )
        checked = tuple(_checked_tangent(p, t, i) for i, (p, t) in enumerate(zip(primals, tangents)))
        with forwards.recursion_headroom(), differentiating():
            value, tangent = runtime.jvp(f, primals, checked, outermost=True)
        return value, runtime.complete_tangent(tangent, value)
    except BaseException:  # a note naming your line (see `tracebacks`: free until raised)
        annotate_handled()
        raise


def _checked_tangent(primal, tangent, index, path=""):
    """`tangent` checked against the argument `primal` it moves, leaf by leaf: a float leaf's
    tangent has its shape (and its precision), a container's or object's mirrors it (a dict may
    leave keys out, read as zeros; an object's is a `Tangent` or an object of its type, which
    its `__getitem__` indexes), and what is not a float (an int, a function) gets None."""
    if tangent is None:
        return None
    if (
        type(primal) is np.ndarray and type(tangent) is np.ndarray and tangent.dtype is primal.dtype
        and tangent.shape == primal.shape and primal.dtype.kind == "f"
    ):
        return tangent  # a float array's tangent of its shape and precision: the common case
    where = f"argument {index}{path}"
    if runtime.is_differentiable(primal):
        if not (runtime.is_differentiable(tangent) or isinstance(tangent, (int, np.integer))) or np.shape(tangent) != np.shape(primal):
            raise AdjointError(
                f"the tangent of {where} has shape {np.shape(tangent)}, the argument {np.shape(primal)}"
                if runtime.is_differentiable(tangent) else
                f"the tangent of {where} is a {type(tangent).__name__}, for a float or float array"
            )
        if np.iscomplexobj(tangent) and not np.iscomplexobj(primal):
            raise AdjointError(f"{where} is real, so its tangent must be real, not complex")
        if isinstance(primal, np.ndarray):  # the argument's precision (a float32 argument, a float32 tangent)
            return np.asarray(tangent, dtype=primal.dtype)
        return tangent
    kids = tree.children(primal)
    if not kids or not tree.tree_leaves(primal):
        if not path:  # an argument given a tangent it cannot have (`2` written for `2.0`)
            raise AdjointError(
                f"argument {index} is a {type(primal).__name__}, which does not move: its tangent must be None "
                f"(write a float, `2.0`, to differentiate with respect to it)"
            )
        return None  # an int, a string, a function inside a model: nothing moves
    if isinstance(tangent, structs.Tangent):
        fits = structs.is_struct(primal) and structs.tangent_type(tangent) is type(primal)
        given = list(structs.tangent_fields(tangent))
    elif isinstance(tangent, dict):
        fits, given = isinstance(primal, dict), list(tangent)
    elif isinstance(tangent, (list, tuple)):
        fits, given = isinstance(primal, (list, tuple)) and len(tangent) == len(primal), []
        if isinstance(primal, (list, tuple)) and not fits:
            raise AdjointError(f"the tangent of {where} has {len(tangent)} items, the argument {len(primal)}")
    else:
        fits, given = type(tangent) is type(primal), []
    names = {key for key, _ in kids}
    unknown = [key for key in given if key not in names]
    if not fits or unknown:
        what = f"the field or key {unknown[0]!r}" if fits else f"a {type(tangent).__name__}"
        raise AdjointError(
            f"the tangent of {where} does not mirror it: {what} for a {type(primal).__name__}. Pass one "
            "of the same structure (an `adjoint.Tangent` or the same type for an object)"
        )
    parts = {key: _checked_tangent(part, tree.child(tangent, key), index, f"{path}{_step(key)}") for key, part in kids}
    if isinstance(tangent, structs.Tangent):
        return structs.Tangent(type(primal), parts)
    return tree.rebuild(primal, parts)  # an object of its type: its `__getitem__` reads its items


def _step(key) -> str:
    return f"[{key!r}]" if not isinstance(key, str) or not key.isidentifier() else f".{key}"


def hvp(f, x, v, *args):
    """The Hessian of scalar `f` at `x`, times `v` (shaped like `x`): one JVP over the gradient
    (forward-over-reverse), costing a small constant times one gradient. Further positional
    arguments `args` are held constant.

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> adjoint.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    array([6., 0.])
    """
    from .api import grad  # noqa: PLC0415

    _, tangent = jvp(grad(f), (x, *args), (v,) + (None,) * len(args))
    return tangent


def hessian(f, wrt=0):
    """A function computing the Hessian of scalar `f` with respect to argument `wrt`: at `x`,
    an array of shape `x.shape + x.shape` (one Hessian-vector product per entry of `x`).

    >>> import numpy as np, adjoint
    >>> H = adjoint.hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0]))
    >>> H
    array([[4., 2.],
           [2., 0.]])
    """
    from .api import grad  # noqa: PLC0415

    gradient = grad(f, wrt)

    @functools.wraps(f, updated=())  # not `f`'s attributes: adjoint's marks on it are not this function's
    def hessian_of_f(*args):
        return jacobian(gradient, wrt=wrt, mode="fwd")(*args)

    return hessian_of_f


def jacobian(f, wrt=0, mode="rev"):
    """A function computing the Jacobian of `f` with respect to argument `wrt`: at `x`, an
    array of shape `output.shape + x.shape`. `mode="rev"` takes one pullback per output entry
    (best for few outputs), `mode="fwd"` one JVP per input entry (best for few inputs).

    >>> import numpy as np, adjoint
    >>> def f(x):
    ...     return np.array([x[0] * x[1], np.sin(x[0])])
    >>> adjoint.jacobian(f)(np.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    >>> adjoint.jacobian(f, mode="fwd")(np.array([0.0, 2.0]))
    array([[2., 0.],
           [1., 0.]])
    """
    if mode not in ("rev", "fwd"):
        raise AdjointError(f'jacobian mode must be "rev" or "fwd", not {mode!r}')
    if not isinstance(wrt, int) or isinstance(wrt, bool) or wrt < 0:
        raise AdjointError(f"jacobian's wrt must be a non-negative int, not {wrt!r}")

    @functools.wraps(f, updated=())  # not `f`'s attributes: adjoint's marks on it are not this function's
    def jacobian_of_f(*args, **kwargs):
        if wrt >= len(args):
            raise AdjointError(f"wrt names argument {wrt}, but {arguments.name_of(f)} was called with {len(args)} arguments")
        x = args[wrt]
        if not runtime.is_differentiable(x):
            raise AdjointError(f"jacobian needs argument {wrt} to be a float or float array, not {type(x).__name__}")
        x_array = np.asarray(x)
        if mode == "fwd":
            columns = []
            value = None
            for k in range(x_array.size):
                direction = np.zeros(x_array.size, dtype=x_array.dtype)
                direction[k] = 1
                direction = direction.reshape(x_array.shape) if isinstance(x, np.ndarray) else direction.reshape(()).item()
                tangents = tuple(direction if i == wrt else None for i in range(len(args)))
                value, column = jvp(functools.partial(f, **kwargs) if kwargs else f, args, tangents)
                if not runtime.is_differentiable(value):
                    raise AdjointError(f"jacobian needs {arguments.name_of(f)} to return a float or float array")
                columns.append(np.asarray(column))
            out_shape = np.shape(value) if value is not None else np.shape(f(*args))
            if not columns:
                return np.zeros(out_shape + x_array.shape)
            return np.stack(columns, axis=-1).reshape(out_shape + x_array.shape)
        from .api import pullback  # noqa: PLC0415

        value, back = pullback(f, *args, **kwargs)
        if not runtime.is_differentiable(value):
            raise AdjointError(f"jacobian needs {arguments.name_of(f)} to return a float or float array")
        out = np.asarray(value)
        rows = []
        for k in range(out.size):
            seed = np.zeros(out.size, dtype=out.dtype)
            seed[k] = 1
            seed = seed.reshape(out.shape) if isinstance(value, np.ndarray) else seed.reshape(()).item()
            rows.append(np.asarray(back(seed)[wrt]))
        if not rows:
            return np.zeros(out.shape + x_array.shape)
        return np.stack(rows).reshape(out.shape + x_array.shape)

    return jacobian_of_f


def frule(*primitives):
    """Register a forward rule for `primitives` (a decorator): see `adjoint.frules`.

    The rule is called as `rule(primals, tangents, **kwargs)`, with tuples as in `jvp` (a float
    argument held constant gets zeros; an int or other non-float argument, None), and returns
    `(value, tangent)`; a `None` tangent for a float part of the value is read as zeros.

    >>> import numpy as np, adjoint
    >>> def softplus(x):
    ...     return np.log1p(np.exp(x))
    >>> @adjoint.frule(softplus)
    ... def softplus_frule(primals, tangents):
    ...     (x,), (dx,) = primals, tangents
    ...     return softplus(x), dx / (1 + np.exp(-x))
    >>> value, tangent = adjoint.jvp(softplus, (0.0,), (2.0,))
    >>> float(tangent)
    1.0
    """
    return frules.frule(*primitives, checked=True)


def derivative_source(f, positions, args, mode) -> str:
    """What `adjoint.source` shows for a gradient made by `adjoint.grad` (the code of the function
    it differentiates) and for forward mode (`mode="jvp"`): the JVP code of `f`, or, given example
    `args`, every JVP function a JVP of `f` at `args` runs (for a gradient: the JVP of its
    forward function and of its pullback)."""
    inner = marked(f, "__adjoint_gradient_of__", None)
    if mode == "vjp":
        function, wrt = inner
        function = marked(function, "__adjoint_checkpoint_of__", function)  # the code it runs
        return pipeline.compiled(function, wrt).text
    if args is None:
        if inner is not None:
            raise AdjointError(
                "the forward-mode code of a gradient is generated per call: pass example arguments, "
                "adjoint.source(adjoint.grad(f), mode=\"jvp\", args=(x,))"
            )
        return pipeline.compiled(f, positions, mode=pipeline.TANGENT).text
    tangents = tuple(runtime.tangent_or_zeros(None, a) if i in positions else None for i, a in enumerate(args))
    with pipeline.recording() as texts:
        jvp(f, tuple(args), tangents)
    return "\n".join(texts)
