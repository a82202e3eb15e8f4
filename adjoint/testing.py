"""Numerical checks of gradients, for adjoint's tests and for users who write rules.

Both checks use the inner-product identity of a pullback: for a random input direction `u`
and a random output cotangent `v`, `<J^T v, u>` (what the pullback computes) must equal
`<v, J u>`, which central finite differences estimate in float64. Each argument is checked on
its own, so a failure names the argument whose cotangent is wrong. They also check that
cotangents have their argument's shape and dtype, that arguments are not mutated, and that
the differentiated value equals the plain call's.
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np

from . import api, frules, random_states, registry, runtime, trainable, tree
from .runtime import structs
from .runtime.gradient_mode import differentiating

__all__ = ["check_grad", "check_jvp", "check_rrule", "check_frule"]


def check_grad(f, *args, rtol=None, atol=None, eps=1e-6, seed=0, forward=True, **kwargs):
    """Check adjoint's gradient of `f` at `args` against finite differences, and (with
    `forward`, the default) its forward mode too: `adjoint.jvp` along a random direction of
    every float argument at once against the same finite differences.

    Raises `AssertionError` with a report on failure; returns None on success. Tolerances
    follow the arguments' precision (float32 arguments get looser ones); a function that
    computes in float32 inside while its arguments are float64 needs them loosened by hand
    (`eps=1e-3, rtol=1e-2`), since its finite differences are only as precise as float32.
    Finite differences run `f` as it runs when differentiated: `adjoint.within_gradient()` is
    true (a dropout layer drops), and NumPy's and Python's global generators replay the draws
    the derivative saw. `adjoint.stop_gradient` and gradient hooks change the derivative on
    purpose, so finite differences of the function disagree with them.

    >>> import numpy as np
    >>> from adjoint.testing import check_grad
    >>> def f(x, y):
    ...     return np.sin(x) * y
    >>> check_grad(f, np.array([0.5, 1.0]), 2.0)
    """
    with _same_draws(args, kwargs):
        _check_vjp(f, lambda *a, **k: api.pullback(f, *a, **k), args, kwargs, rtol, atol, eps, seed)
    if forward:
        check_jvp(f, *args, rtol=rtol, atol=atol, eps=eps, seed=seed, **kwargs)


def check_jvp(f, *args, rtol=None, atol=None, eps=1e-6, seed=0, **kwargs):
    """Check `adjoint.jvp` of `f` at `args` along a random direction of every float argument
    (containers and models: of each float leaf) against central finite differences.

    >>> import numpy as np
    >>> from adjoint.testing import check_jvp
    >>> check_jvp(lambda x, y: np.sin(x) * y, np.array([0.5, 1.0]), 2.0)
    """
    from . import derivatives  # noqa: PLC0415

    if kwargs:
        f = _with_keywords(f, kwargs)
    rng = np.random.default_rng(seed + 2)
    originals = copy.deepcopy(args)
    directions = [
        _direction(a, rng, {}) if runtime.is_differentiable(a) or tree.is_tree_with_floats(a) else None for a in args
    ]
    with _same_draws(args, {}):
        value, tangent = derivatives.jvp(f, tuple(args), tuple(directions))
        return _check_tangent(f, args, originals, directions, value, tangent, rtol, atol, eps)


def _check_tangent(f, args, originals, directions, value, tangent, rtol, atol, eps):
    _assert_unchanged(args, originals, "jvp")
    _assert_close(value, _as_differentiated(f, args, {}), 1e-9, 1e-12, "jvp's value differs from the plain call's")
    low_precision = any(_dtype(a) in (np.float32, np.complex64) for a in args) or _dtype(value) == np.float32
    rtol = rtol if rtol is not None else (2e-3 if low_precision else 1e-6)
    atol = atol if atol is not None else (2e-3 if low_precision else 1e-8)
    expected = _directional_derivative_all(f, args, {}, directions, eps)
    problem = _compare_tangent(tangent, expected, value, rtol, atol)
    if problem:
        raise AssertionError(f"forward-mode check of {getattr(f, '__qualname__', repr(f))} failed: {problem}")


def _with_keywords(f, kwargs):
    def with_keywords(*args):
        return f(*args, **kwargs)

    with_keywords.__qualname__ = getattr(f, "__qualname__", "f")
    return with_keywords


def check_rrule(primitive, *args, rtol=None, atol=None, eps=1e-6, seed=0, **kwargs):
    """Check the rule registered for `primitive` at `args`, calling the rule directly.

    >>> import numpy as np
    >>> from adjoint.testing import check_rrule
    >>> check_rrule(np.tanh, np.array([0.1, -0.3]))
    >>> check_rrule(np.ndarray.T, np.ones((2, 3)))  # an attribute's rule: `x.T`
    """
    rule = registry.lookup(primitive)
    if rule is None:
        raise AssertionError(f"no rule is registered for {primitive!r}")
    _check_vjp(_reader(primitive), rule.rrule, args, kwargs, rtol, atol, eps, seed)
    check_frule(primitive, *args, rtol=rtol, atol=atol, eps=eps, seed=seed, **kwargs)


def check_frule(primitive, *args, rtol=None, atol=None, eps=1e-6, seed=0, **kwargs):
    """Check the forward rule registered for `primitive` at `args` (`check_rrule` does too):
    its value against the plain call, and its tangent for a random direction of every float
    argument at once against central finite differences, in shape, dtype and value.

    >>> import numpy as np
    >>> from adjoint.testing import check_frule
    >>> check_frule(np.tanh, np.array([0.1, -0.3]))
    >>> check_frule(np.matmul, np.ones((2, 3)), np.ones(3))
    """
    rule = frules.lookup(primitive)
    if rule is None:
        raise AssertionError(f"no forward rule is registered for {primitive!r}")
    f = frules.caller(primitive)
    rng = np.random.default_rng(seed + 1)
    originals = copy.deepcopy(args)
    directions = [
        _random_like(a, rng) if runtime.is_differentiable(a) or tree.is_tree_with_floats(a) else None for a in args
    ]
    value, tangent = rule.frule(tuple(args), tuple(directions), **kwargs)
    _assert_unchanged(args, originals, "the forward rule")
    _assert_close(value, f(*copy.deepcopy(args), **kwargs), 1e-12, 1e-12, "the value differs from the plain call's")
    low_precision = any(_dtype(a) in (np.float32, np.complex64) for a in args) or _dtype(value) == np.float32
    rtol = rtol if rtol is not None else (2e-3 if low_precision else 1e-6)
    atol = atol if atol is not None else (2e-3 if low_precision else 1e-8)
    expected = _directional_derivative_all(f, args, kwargs, directions, eps)
    problem = _compare_tangent(tangent, expected, value, rtol, atol)
    if problem:
        name = getattr(f, "__qualname__", repr(f))
        raise AssertionError(f"forward rule check of {name} failed: {problem}")


def _directional_derivative_all(f, args, kwargs, directions, eps):
    """(f(x + eps u) - f(x - eps u)) / 2 eps, every float argument moved along its direction."""
    wide = [_widen(a) for a in args]

    def moved_leaf(leaf, direction, step):
        result = leaf + step * np.asarray(direction, dtype=np.result_type(leaf, np.float64))
        if type(leaf) is float:
            return float(result)
        return np.asarray(result) if isinstance(leaf, np.ndarray) else result

    def shifted(step):
        moved = [
            a if d is None else tree.tree_map(lambda leaf, u: moved_leaf(leaf, u, step), a, d)
            for a, d in zip(wide, directions)
        ]
        return _as_differentiated(f, moved, kwargs)

    return _combine(shifted(eps), shifted(-eps), eps)


def _compare_tangent(tangent, expected, value, rtol, atol, where="the tangent"):
    """What is wrong with `tangent` as the tangent of `value`, or None."""
    if isinstance(value, (tuple, list)):
        if not isinstance(tangent, (tuple, list)) or len(tangent) != len(value):
            return f"{where} {tangent!r} does not mirror the value {value!r}"
        for i, (t, e, v) in enumerate(zip(tangent, expected, value)):
            problem = _compare_tangent(t, e, v, rtol, atol, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if not runtime.is_differentiable(value):
        return None
    if tangent is None:
        return f"{where} is None for a float value"
    if np.shape(tangent) != np.shape(value):
        return f"{where} has shape {np.shape(tangent)}, the value {np.shape(value)}"
    if isinstance(value, np.ndarray) and np.asarray(tangent).dtype != value.dtype:
        return f"{where} has dtype {np.asarray(tangent).dtype}, the value {value.dtype}"
    if not np.iscomplexobj(value) and np.iscomplexobj(expected):
        expected = np.real(expected)  # a real value's tangent is real (the step may leave the reals)
    if not np.allclose(tangent, expected, rtol=rtol, atol=atol, equal_nan=True):
        return f"{where} is {tangent!r} but finite differences give {expected!r}"
    return None


def _reader(primitive):
    """The function an attribute's rule stands for (`np.ndarray.T` reads `x.T`); any other
    primitive as it is."""
    if callable(primitive) or not hasattr(primitive, "__get__"):
        return primitive

    def read(obj):
        return primitive.__get__(obj)

    read.__qualname__ = getattr(primitive, "__qualname__", "attribute")
    return read


def _check_vjp(f, vjp, args, kwargs, rtol, atol, eps, seed):
    rng = np.random.default_rng(seed)
    originals = copy.deepcopy(args)
    value, back = vjp(*args, **kwargs)
    _assert_unchanged(args, originals, "the forward pass")
    expected = _as_differentiated(f, args, kwargs)  # the plain call may update its arguments
    _assert_close(value, expected, 1e-12, 1e-12, "the value differs from the plain call's")
    v = _random_like(value, rng)
    cotangents = registry.padded(back(v), len(args))
    _assert_unchanged(args, originals, "the pullback")
    if len(cotangents) != len(args):
        raise AssertionError(f"the pullback returned {len(cotangents)} cotangents for {len(args)} arguments")
    low_precision = any(_dtype(a) in (np.float32, np.complex64) for a in args) or _dtype(value) == np.float32
    rtol = rtol if rtol is not None else (2e-3 if low_precision else 1e-6)
    atol = atol if atol is not None else (2e-3 if low_precision else 1e-8)
    failures = []
    for index, (arg, cotangent) in enumerate(zip(args, cotangents)):
        if not (runtime.is_differentiable(arg) or tree.is_tree_with_floats(arg)):
            if not _is_empty(cotangent):
                failures.append(f"argument {index}: {type(arg).__name__} {arg!r} carries no gradient, "
                                f"but the pullback returned {cotangent!r} for it instead of None")
            continue
        problem = _check_cotangent(arg, cotangent)
        if problem:
            failures.append(f"argument {index}: {problem}")
            continue
        u = _random_like(arg, rng)
        derivative = _directional_derivative(f, args, kwargs, index, u, eps)
        analytic = _inner(cotangent, u)
        numeric = _inner(v, derivative)
        if not abs(analytic - numeric) <= atol + rtol * max(abs(analytic), abs(numeric)):
            failures.append(
                f"argument {index}: <pullback, u> = {analytic!r} but finite differences give "
                f"<v, J u> = {numeric!r} (difference {abs(analytic - numeric):.3g})"
            )
    if failures:
        name = getattr(f, "__qualname__", repr(f))
        raise AssertionError(f"gradient check of {name} failed:\n  " + "\n  ".join(failures))


def _check_cotangent(arg, cotangent):
    if not runtime.is_differentiable(arg):  # a model or container: check each float leaf
        problems = []
        tree.tree_map(lambda a, c: problems.append(_check_cotangent(a, c)) or a, arg, cotangent)
        return next((p for p in problems if p), None)
    if cotangent is None:
        return "no cotangent (None) for a float argument"
    if np.shape(cotangent) != np.shape(arg):
        return f"cotangent shape {np.shape(cotangent)} differs from the argument's {np.shape(arg)}"
    if isinstance(arg, np.ndarray) and np.asarray(cotangent).dtype != arg.dtype:
        return f"cotangent dtype {np.asarray(cotangent).dtype} differs from the argument's {arg.dtype}"
    return None


def _directional_derivative(f, args, kwargs, index, u, eps):
    """(f(x + eps u) - f(x - eps u)) / 2 eps, with every float argument in float64."""
    wide = [_widen(a) for a in args]

    def moved_leaf(leaf, direction, step):
        result = leaf + step * np.asarray(direction, dtype=np.result_type(leaf, np.float64))
        if type(leaf) is float:
            return float(result)
        return np.asarray(result) if isinstance(leaf, np.ndarray) else result  # a 0-d array stays one

    def shifted(step):
        moved = list(wide)
        moved[index] = tree.tree_map(lambda a, d: moved_leaf(a, d, step), wide[index], u)
        return _as_differentiated(f, moved, kwargs)

    return _combine(shifted(eps), shifted(-eps), eps)


def _as_differentiated(f, args, kwargs):
    """`f` called on copies of `args` as it runs when differentiated: `within_gradient()` true,
    and the generators (global, and among the arguments) drawing what they drew for the
    derivative."""
    if _draws:
        random_states.restore_random_states(_draws[-1])
    with differentiating():
        return f(*copy.deepcopy(args), **kwargs)


_draws: list = []  # while a check runs: the random states it started with


@contextlib.contextmanager
def _same_draws(args, kwargs):
    """Every call in the block starts from the states the global generators, and generators
    among the arguments, had at its start."""
    _draws.append(random_states.random_states(args, kwargs))
    try:
        yield
    finally:
        _draws.pop()


def _combine(plus, minus, eps):
    if isinstance(plus, (tuple, list)):
        parts = [_combine(p, m, eps) for p, m in zip(plus, minus)]
        return type(plus)._make(parts) if hasattr(type(plus), "_fields") else type(plus)(parts)
    if not runtime.is_differentiable(plus) and tree.is_tree_with_floats(plus):  # a dict or object output
        return tree.rebuild(plus, {key: _combine(p, tree.child(minus, key), eps) for key, p in tree.children(plus)})
    if not runtime.is_differentiable(plus):
        return None
    return (np.asarray(plus, dtype=np.complex128 if np.iscomplexobj(plus) else np.float64) - minus) / (2 * eps)


def _widen(arg):
    if not runtime.is_differentiable(arg):
        return tree.tree_map(_widen, arg) if tree.is_tree_with_floats(arg) else arg
    if isinstance(arg, np.ndarray) and arg.dtype == np.float32:
        return arg.astype(np.float64)
    if isinstance(arg, np.ndarray) and arg.dtype == np.complex64:
        return arg.astype(np.complex128)
    return arg


def _random_like(value, rng):
    if isinstance(value, (tuple, list)) and not tree.is_tree_with_floats(value):
        return type(value)([None] * len(value)) if not hasattr(type(value), "_fields") else None
    if tree.is_tree_with_floats(value) and not runtime.is_differentiable(value):
        return _direction(value, rng, {})
    if not runtime.is_differentiable(value):
        return None
    if type(value) is float:
        return float(rng.normal())
    sample = rng.normal(size=np.shape(value))
    if np.iscomplexobj(value):
        sample = sample + 1j * rng.normal(size=np.shape(value))
    return np.asarray(sample, dtype=np.asarray(value).dtype)


def _direction(value, rng, made):
    """A random direction shaped like the model or container `value`: None at the fields its
    classes declare frozen (adjoint gives them no gradient, so they must not move), and one
    direction for an array or object found at several places (a tied weight moves as one)."""
    if runtime.is_differentiable(value) and not isinstance(value, np.ndarray):
        return _random_like(value, rng)
    if id(value) in made:
        return made[id(value)]
    if isinstance(value, np.ndarray):
        made[id(value)] = _random_like(value, rng)
        return made[id(value)]
    made[id(value)] = None  # a cycle back to `value` moves nothing more
    if not tree.children(value):
        return None
    frozen = trainable.frozen_fields(value) if structs.is_struct(value) else ()
    parts = {key: None if key in frozen else _direction(part, rng, made) for key, part in tree.children(value)}
    made[id(value)] = tree.rebuild(value, parts)
    return made[id(value)]


def _is_empty(cotangent) -> bool:
    """Whether a cotangent is "none": None, or a container of Nones."""
    if isinstance(cotangent, (tuple, list)):
        return all(_is_empty(c) for c in cotangent)
    return cotangent is None


def _inner(a, b) -> float:
    """The pairing of a cotangent with a tangent, `Re(sum(a * b))` (leaves of containers, models
    and their `Tangent`s summed, None counting as zero). There is no conjugate: in the
    convention of JAX and autograd, the cotangent of `z = x + iy` is `dL/dx - i dL/dy`, so
    `dL = Re(z_bar * dz)`."""
    if a is None or b is None:
        return 0.0
    if not runtime.is_differentiable(a):
        return sum(_inner(x, tree.child(b, key)) for key, x in tree.children(a))
    if not runtime.is_differentiable(b):
        return 0.0
    return float(np.real(np.sum(np.asarray(a, dtype=np.complex128) * np.asarray(b))))


def _dtype(value):
    return getattr(value, "dtype", None)


def _assert_close(actual, expected, rtol, atol, message):
    if isinstance(expected, (tuple, list)):
        for a, e in zip(actual, expected):
            _assert_close(a, e, rtol, atol, message)
        return
    if runtime.is_differentiable(expected) or isinstance(expected, (int, np.integer)):
        if not np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True):
            raise AssertionError(f"{message}: {actual!r} != {expected!r}")


def _assert_unchanged(args, originals, when):
    for index, (arg, original) in enumerate(zip(args, originals)):
        now, before = tree.tree_leaves(arg), tree.tree_leaves(original)
        if isinstance(arg, np.ndarray):
            now, before = [arg], [original]
        if len(now) != len(before) or any(
            isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True) for a, b in zip(now, before)
        ):
            raise AssertionError(f"{when} mutated argument {index}")
