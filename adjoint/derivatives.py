"""Forward mode and derivatives of derivatives: `jvp`, `hvp`, `hessian`, `jacobian`, `frule`, and
the rules that let a gradient be differentiated again.

A gradient made by `adjoint.grad` is an ordinary function, and carries two rules:

- forward (`__adjoint_frule__`): the JVP of its gradient program, `gradient_program` below,
  whose call of the generated forward function and pullback is transformed like any other
  code. This is forward-over-reverse: one JVP over the gradient.
- reverse (`__adjoint_rrule__`): the cotangent `v` of a gradient maps back through the
  symmetric Hessian, so the pullback is again one JVP of the gradient with respect to every
  argument, in the direction `v` (the Lux recipe for a loss that holds an inner gradient).

`adjoint.grad` itself has rules that hand a closure's tangent or cotangent through, so an
inner gradient of a function that closes over differentiated values is differentiated with
respect to them too (no perturbation confusion: each derivative has its own tangents).
"""

from __future__ import annotations

import functools
import types

import numpy as np

from . import arguments, forwards, frules, gradient_jvps, registry, runtime, tree
from .runtime import structs
from .runtime.gradient_mode import differentiating
from .compiler import pipeline
from .runtime import calls as runtime_calls
from .errors import AdjointError
from .runtime.marks import marked

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
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise AdjointError("jvp takes the primals and the tangents as tuples, one entry per positional argument: "
                           "adjoint.jvp(f, (x,), (v,))")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise AdjointError(f"jvp needs one tangent per primal: got {len(primals)} primals and {len(tangents)} tangents")
    plain = getattr(f, "__adjoint_plain_jvps__", None)  # a gradient at floats and float arrays: kept cheap
    if plain is not None:
        done = plain(primals, tangents)
        if done is not None:
            return done
    checked = tuple(_checked_tangent(p, t, i) for i, (p, t) in enumerate(zip(primals, tangents)))
    with forwards.recursion_headroom(), differentiating():
        value, tangent = runtime.jvp(f, primals, checked, outermost=True)
    return value, runtime.complete_tangent(tangent, value)


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


# ---- gradients differentiated again -----------------------------------------------------------

def gradient_program(forward, seed, args):
    """What a gradient computes, written as code adjoint can transform again: the generated
    forward function, then its pullback from the seed. Forward mode differentiates this."""
    value, pullback = forward(*args)
    return pullback(seed(value))


def attach_rules(gradient_function, f, wrt, positions):
    """Give `gradient_function`, which is `adjoint.grad(f, wrt)`, its forward and reverse rules."""
    gradient_function.__adjoint_gradient_of__ = (f, positions)
    if type(f) is types.FunctionType and all(a < b for a, b in zip(positions, positions[1:])):
        gradient_function.__adjoint_plain_jvps__ = gradient_jvps.PlainGradientJvps(f, wrt, positions)
    gradient_function.__adjoint_frule__ = functools.partial(_gradient_frule, f, wrt, positions)
    gradient_function.__adjoint_rrule__ = functools.partial(_gradient_rrule, f, wrt, positions)
    return gradient_function


def attach_value_and_grad_rules(function, f, wrt, positions):
    """Give `function`, which is `adjoint.value_and_grad(f, wrt)`, forward and reverse rules:
    the value's are `f`'s own (by `jvp` and the gradient), the gradient's as for `grad`."""

    def value_and_grad_frule(primals, tangents, closure=None, **kwargs):
        if closure:
            raise AdjointError("value_and_grad of a closure over varied values cannot be differentiated again yet")
        value, dvalue = runtime.jvp(f, tuple(primals), tuple(tangents))
        gradient, dgradient = _gradient_frule(f, wrt, positions, primals, tangents)
        return (value, gradient), (dvalue, dgradient)

    def value_and_grad_rrule(*args, closure=False, **kwargs):
        if closure:
            raise AdjointError("value_and_grad of a closure over varied values cannot be differentiated again yet")
        gradient, gradient_pullback = _gradient_rrule(f, wrt, positions, *args)
        value = f(*args)

        def value_and_grad_pullback(g):
            value_bar, gradient_bar = g if g is not None else (None, None)
            cotangents = list(gradient_pullback(gradient_bar)) if gradient_bar is not None else [None] * len(args)
            if value_bar is not None:  # the value's cotangent times the gradient of every argument
                everything = tuple(i for i, a in enumerate(args) if arguments.carries_gradient(a, i, f))
                full, _ = _gradient_jvp(f, everything, args, (None,) * len(args), None)
                cotangents = [runtime.add(c, None if d is None else value_bar * d) for c, d in zip(cotangents, full)]
            return tuple(cotangents)

        return (value, gradient), value_and_grad_pullback

    function.__adjoint_frule__ = value_and_grad_frule
    function.__adjoint_rrule__ = value_and_grad_rrule
    return function


def refuse_differentiating(function, what):
    """Make differentiating `function` (a derivative adjoint made) refuse, naming `what` it is."""

    def refused(*args, **kwargs):
        raise AdjointError(f"{what} cannot be differentiated again yet: use adjoint.grad without them")

    function.__adjoint_frule__ = function.__adjoint_rrule__ = refused
    return function


def _gradient_frule(f, wrt, positions, primals, tangents, closure=None, **kwargs):
    """The gradient of `f` and its JVP along `tangents` (and `closure`, the tangents of what `f`
    closes over)."""
    if kwargs:
        raise AdjointError("a gradient differentiated again takes positional arguments only")
    cotangents, dcotangents = _gradient_jvp(f, positions, primals, tangents, closure)
    return arguments.select(_structured(cotangents, primals), wrt), arguments.select(_structured(dcotangents, primals), wrt)


def _structured(cotangents, primals) -> tuple:
    """A container argument's cotangent (or its tangent) as `grad` returns it: mirroring the
    container, None for what is not a float (an int exponent)."""
    if all(type(p) is float or type(p) is np.ndarray and p.dtype.kind != "O" for p in primals):
        return tuple(cotangents)  # (the common case: nothing to mirror)
    from . import structure  # noqa: PLC0415  (it imports the API's modules)

    return tuple(
        structure.structure(p, c) if c is not None and not runtime.is_differentiable(p) and tree.tree_leaves(p) else c
        for c, p in zip(cotangents, tuple(primals) + (None,) * (len(cotangents) - len(primals)))
    )


def _gradient_jvp(f, positions, primals, tangents, closure, captured=(), bound=0):
    """The cotangents of every positional argument of `f` (None outside `positions`), then of
    the names in `captured` that `f` closes over, and the tangents of all of them, by forward
    mode over the gradient program (`closure`: the tangents of what `f` closes over)."""
    primals = tuple(primals)
    f = marked(f, "__adjoint_checkpoint_of__", f)  # no memory to save in a second derivative
    if not closure and not captured and type(f) is types.FunctionType:
        fused = gradient_jvps.fused_gradient_jvp(f, positions, primals, tangents)
        if fused is not None:
            return _per_argument(f, primals, *fused, 0)
    _refuse_models(f, primals[bound:])  # what a bound method or partial binds is constant
    function, binds, keywords = runtime._unwrapped(f)
    if binds and not keywords:  # a bound method, partial or callable object: what it binds is constant
        count = len(binds)
        cotangents, dcotangents = _gradient_jvp(
            function, tuple(i + count for i in positions), binds + primals, (None,) * count + tuple(tangents),
            closure, captured, count,
        )
        return cotangents[count:], dcotangents[count:]
    if (not hasattr(f, "__code__") or registry.lookup(f) is not None) and marked(f, "__adjoint_gradient_of__") is None:
        # `hessian(np.sin)`, or a function with your rule: called from code adjoint reads, so the rule is used
        f = runtime.calling(f, len(primals))
    if marked(f, "__adjoint_gradient_of__") is not None:
        raise AdjointError(
            f"a gradient of a gradient of {arguments.name_of(f.__adjoint_gradient_of__[0])} cannot be "
            "differentiated again: adjoint computes first and second derivatives (grad, jvp, hvp, hessian "
            "and their mixes), not a third derivative yet"
        )
    reverse_wrt = tuple(i for i in positions if i < len(primals) and arguments.carries_gradient(primals[i], i, f))
    forward = forwards.forward(f, reverse_wrt + tuple(captured), (), primals)
    seed = functools.partial(arguments.unit, f=f)
    tangents = tuple(tangents) + (None,) * (len(primals) - len(tangents))
    with forwards.recursion_headroom():
        if closure or any(t is not None for t in tangents):
            program_tangents = (closure or None, None, tangents)
            cotangents, dcotangents = runtime.jvp(gradient_program, (forward, seed, primals), program_tangents)
        else:  # the gradient alone (a reverse rule's value): no tangents to carry
            cotangents = gradient_program(forward, seed, primals)
            dcotangents = (None,) * len(tuple(cotangents))
    return _per_argument(f, primals, cotangents, dcotangents, len(captured))


def _per_argument(f, primals, cotangents, dcotangents, captured: int):
    """The cotangents a pullback of `f` gave and their tangents, one per argument in `primals`
    then one per captured name (`captured` of them), the tangents shaped as their cotangents."""
    # the pullback gives one cotangent per parameter (those left to defaults too), then the captured
    positional = runtime_calls.positional_count(f, len(primals)) if hasattr(f, "__code__") else len(primals)
    count = positional + captured
    cotangents, dcotangents = registry.padded(cotangents, count), registry.padded(dcotangents, count)
    cotangents = cotangents[: len(primals)] + cotangents[positional:]
    dcotangents = dcotangents[: len(primals)] + dcotangents[positional:]
    dcotangents = tuple(
        None if c is None else runtime.tangent_like(d, c) for c, d in zip(cotangents, dcotangents)
    )
    return cotangents, dcotangents


def _gradient_rrule(f, wrt, positions, *args, closure=False, **kwargs):
    """The gradient of `f` at `args`, and its pullback: the Hessian (symmetric) applied to the
    cotangent `v`, as one JVP of the gradient with respect to every argument along `v`. With
    `closure`, the pullback returns first the cotangents of what `f` closes over, by name (and
    of the float default values the call leaves to `f`, by parameter), as `closure_vjp` does."""
    if kwargs:
        raise AdjointError("a gradient differentiated again takes positional arguments only")
    _refuse_models(f, args)
    captured = tuple(runtime_calls.captured_names(f)) if closure else ()
    defaulted = runtime_calls._defaulted(f, args, {}) if closure else {}
    full = tuple(args)
    if defaulted:  # the defaults as arguments, so the pullback reaches them
        first = f.__code__.co_argcount - len(f.__defaults__)
        full += tuple(f.__defaults__[i - first] for i in range(len(args), max(defaulted) + 1))
    everything = tuple(i for i, a in enumerate(full) if arguments.carries_gradient(a, i, f))
    value = _gradient_frule(f, wrt, positions, args, (None,) * len(args))[0]
    selected = (wrt,) if isinstance(wrt, int) else tuple(wrt)

    def gradient_pullback(v):
        parts = (v,) if isinstance(wrt, int) else tuple(v)
        direction = [None] * len(full)
        for position, part in zip(selected, parts):
            direction[position] = runtime.tangent_or_zeros(part, args[position]) if part is not None else None
        if all(d is None for d in direction):
            cotangents = (None,) * (len(full) + len(captured))
        else:
            _, cotangents = _gradient_jvp(f, everything, full, tuple(direction), None, captured)
        if not closure:
            return tuple(cotangents)
        closure_bar = dict(zip(captured, cotangents[len(full):]))
        closure_bar.update({name: cotangents[position] for position, name in defaulted.items()})
        return (closure_bar, *cotangents[: len(args)])

    return value, gradient_pullback


def _refuse_models(f, args):
    for i, a in enumerate(args):
        if not runtime.is_differentiable(a) and tree.tree_leaves(a) and not isinstance(a, (tuple, list, dict)):
            raise AdjointError(
                f"a gradient of {arguments.name_of(f)} with respect to an object (argument {i}, "
                f"{type(a).__name__}) cannot be differentiated again yet: pass its arrays as arguments"
            )


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
