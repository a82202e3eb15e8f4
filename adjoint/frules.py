"""Forward rules: how adjoint pushes a tangent through a primitive it does not read the source of.

The one forward-rule convention, written once:

- A rule is called as `rule(primals, tangents, **kwargs)`: `primals` is the tuple of the
  primitive's positional arguments, `tangents` a tuple with one tangent per primal, `None` for
  a primal held constant (an int, a flag, or a float nothing varies). Keyword arguments are
  never differentiated. It returns `(value, tangent)`: `value` equals what the primitive
  returns, and `tangent` mirrors it: the same shape and dtype for a float part, `None` for a
  part that is not a number.
- A method's rule (`np.ndarray.sum`) takes the receiver as its first primal.

Most rules need not be written out. They come in four kinds, each of which the compiler can
stitch into generated code as a NumPy expression:

- `elementwise`: derived from the partials of the reverse rule (`registry.elementwise`):
  `y_dot = x_dot * (1 - y ** 2)` for `y = np.tanh(x)`.
- `linear(primitive, operands=(0,))`: the primitive is linear in those arguments, jointly, so
  its tangent is the primitive applied to their tangents: `y_dot = np.sum(x_dot, axis=1)`.
- `multilinear(primitive, operands=(0, 1))`: linear in each operand on its own (a product),
  so the tangent is a sum of products with one operand's tangent each:
  `y_dot = a_dot @ b + a @ b_dot`.
- `frule(primitive)`: the rule as a function, called from generated code.

A primitive with only a reverse rule (a user's `adjoint.rrule`) gets a forward rule derived
from it: reverse mode over its pullback, which is linear, gives `J t` (about the cost of a
second pullback). Registering an `adjoint.frule` as well is faster.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import operator
from typing import Callable

import numpy as np

from . import registry, runtime, tree

__all__ = ["ForwardRule", "frule", "linear", "multilinear", "lookup", "ELEMENTWISE", "LINEAR", "MULTILINEAR", "RULE"]

ELEMENTWISE, LINEAR, MULTILINEAR, RULE = "elementwise", "linear", "multilinear", "rule"
TRANSPOSED = "transposed"  # derived from a reverse rule's pullback (see `_transposed`)


@dataclasses.dataclass(eq=False)
class ForwardRule:
    """A forward rule for one primitive: `frule(primals, tangents, **kwargs) -> (value, tangent)`.

    `kind` says how the compiler may inline it (see the module docstring); `operands` are the
    positions a linear or multilinear primitive is linear in; `partials` an elementwise
    primitive's partials (`registry.Rule.partials`).
    """

    primitive: object
    frule: Callable
    kind: str = RULE
    operands: tuple = ()
    partials: Callable | None = None


_FRULES: dict[int, tuple[object, ForwardRule]] = {}
_derived: dict[int, tuple[object, ForwardRule]] = {}  # elementwise rules made from partials, cached


def lookup(primitive) -> ForwardRule | None:
    """The forward rule of `primitive`, or None (as `registry.lookup` finds reverse rules:
    a bound method's function's rule, with the receiver first).

    >>> value, tangent = lookup(np.sin).frule((0.0,), (2.0,))
    >>> float(value), float(tangent)
    (0.0, 2.0)
    """
    entry = _FRULES.get(id(primitive))
    if entry is not None and entry[0] is primitive:
        return entry[1]
    reverse = registry.lookup(primitive)  # also loads optional rules (scipy) on first sight
    entry = _FRULES.get(id(primitive))
    if entry is not None and entry[0] is primitive:
        return entry[1]
    if reverse is not None and reverse.partials is not None:
        return _elementwise(primitive, reverse.partials)
    function = registry.unbound(primitive)
    if function is not None:
        return lookup(function)
    return _transposed(primitive, reverse) if reverse is not None else None


def _register(primitive, rule: ForwardRule) -> None:
    _FRULES[id(primitive)] = (primitive, rule)
    registry._NON_DIFFERENTIABLE.pop(id(primitive), None)  # a rule registered later wins, as for rrule
    registry.version += 1  # code generated before this rule is generated again


def frule(*primitives, checked: bool = False):
    """Register a forward rule for one or more primitives (a decorator); see the module
    docstring for the convention (a constant argument's tangent is None). With `checked=True`
    (how `adjoint.frule` registers users' rules), a `None` tangent for a float part of the value
    becomes zeros, and a tangent shaped unlike the value is refused.

    >>> import numpy as np
    >>> from adjoint.frules import frule, lookup
    >>> def cube(x):
    ...     return x ** 3
    >>> @frule(cube)
    ... def cube_frule(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return cube(x), 3 * x ** 2 * t
    >>> lookup(cube).frule((2.0,), (1.0,))
    (8.0, 12.0)
    """
    if not primitives:
        raise TypeError("frule() needs the primitive(s) the rule is for")

    def register(rule_fn):
        if checked:
            registry.refuse_unregistrable(primitives)
        fn = _completed(rule_fn) if checked else rule_fn
        for primitive in primitives:
            _register(primitive, ForwardRule(primitive, fn))
        if checked:
            _refuse_reverse(fn, primitives[0])
        return rule_fn

    return register


def _completed(rule_fn):
    @functools.wraps(rule_fn)
    def checked_frule(primals, tangents, **kwargs):
        primals = tuple(primals)
        tangents = tuple(  # zeros for a constant float argument, as a rule of yours may compute with it
            runtime.zero_tangent(p) if t is None and runtime.is_differentiable(p) else t
            for p, t in zip(primals, _padded(tangents, len(primals)))
        )
        value, tangent = rule_fn(primals, tangents, **kwargs)
        tangent = runtime.complete_tangent(tangent, value)
        _check_shapes(tangent, value, rule_fn)
        return value, tangent

    return checked_frule


def _check_shapes(tangent, value, rule_fn) -> None:
    """Refuse a user's forward rule whose tangent is not shaped like its value (it would be
    broadcast silently)."""
    if type(value) in (tuple, list) and type(tangent) in (tuple, list):
        for t, v in zip(tangent, value):
            _check_shapes(t, v, rule_fn)
    elif runtime.is_differentiable(value) and np.shape(tangent) != np.shape(value):
        raise runtime.RuleError(
            f"the forward rule {rule_fn.__qualname__} returned a tangent of shape {np.shape(tangent)} for a "
            f"value of shape {np.shape(value)}"
        )


registry.non_differentiable(_check_shapes)  # a check: forward mode over a rule of yours runs it as it is


def linear(*primitives, operands=(0,)):
    """Declare primitives linear, jointly, in the positional arguments `operands`: the tangent
    is the primitive applied to the operands' tangents (zeros for a constant float operand) and
    to the other arguments as they are. Returns the first primitive.

    >>> import numpy as np
    >>> from adjoint.frules import linear, lookup
    >>> def double(x):
    ...     return 2 * x
    >>> _ = linear(double)
    >>> lookup(double).frule((np.ones(2),), (np.array([1.0, 3.0]),))
    (array([2., 2.]), array([2., 6.]))
    """
    for primitive in primitives:
        _register(primitive, ForwardRule(primitive, _linear_frule(primitive, tuple(operands)), LINEAR, tuple(operands)))
    return primitives[0] if primitives else None


def multilinear(*primitives, operands=(0, 1)):
    """Declare primitives linear in each of the positional arguments `operands` on its own
    (products): the tangent is the sum, over the operands that have tangents, of the primitive
    with that operand replaced by its tangent. Returns the first primitive.

    >>> import numpy as np
    >>> from adjoint.frules import multilinear, lookup
    >>> value, tangent = lookup(np.matmul).frule((np.eye(2), np.ones(2)), (np.eye(2), None))
    >>> tangent
    array([1., 1.])
    """
    for primitive in primitives:
        rule = ForwardRule(primitive, _multilinear_frule(primitive, tuple(operands)), MULTILINEAR, tuple(operands))
        _register(primitive, rule)
    return primitives[0] if primitives else None


def caller(primitive):
    """How to call `primitive` with primals: an attribute (`np.ndarray.T`) is read, and an array
    method called on the receiver (which may be a NumPy scalar, not an array).

    >>> caller(np.ndarray.sum)(np.float64(2.0))
    np.float64(2.0)
    """
    if getattr(primitive, "__objclass__", None) is np.ndarray and callable(primitive):
        name = primitive.__name__
        return lambda receiver, *args, **kwargs: getattr(receiver, name)(*args, **kwargs)
    if callable(primitive) or not hasattr(primitive, "__get__"):
        return primitive
    return lambda obj: primitive.__get__(obj) if isinstance(obj, np.ndarray) else getattr(obj, primitive.__name__)


def operand_keywords(primitive, operands) -> frozenset:
    """The names of the parameters at the positions `operands` (as the reverse rule names
    them): passed by keyword, such an operand is a constant, so a linear rule's tangent takes
    zeros for it (`np.append(x, values=5.0)` moves only with `x`).

    >>> sorted(operand_keywords(np.append, (0, 1)))
    ['arr', 'values']
    """
    reverse = registry.lookup(primitive)
    signature = reverse.signature if reverse is not None else None
    if signature is None:
        return frozenset()
    names = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return frozenset(names[i] for i in operands if i < len(names))


def _linear_frule(primitive, operands):
    call = caller(primitive)
    keyword_operands = []  # found on first use: the rules of a family may be registered later

    def linear_frule(primals, tangents, **kwargs):
        value = call(*primals, **kwargs)
        if all(tangents[i] is None for i in operands if i < len(tangents)):
            return value, runtime.zero_tangent(value)
        moved = [
            runtime.tangent_or_zeros(t, p) if i in operands else p
            for i, (p, t) in enumerate(zip(primals, _padded(tangents, len(primals))))
        ]
        if kwargs:
            if not keyword_operands:
                keyword_operands.append(operand_keywords(primitive, operands))
            kwargs = {k: runtime.zero_tangent(v) if k in keyword_operands[0] else v for k, v in kwargs.items()}
        return value, runtime.tangent_like(call(*moved, **kwargs), value)

    linear_frule.__name__ = linear_frule.__qualname__ = f"{_name(primitive)}_frule"
    return linear_frule


def _multilinear_frule(primitive, operands):
    call = caller(primitive)

    def multilinear_frule(primals, tangents, **kwargs):
        value = call(*primals, **kwargs)
        tangents = _padded(tangents, len(primals))
        tangent = None
        for i in operands:
            if i >= len(primals) or tangents[i] is None:
                continue
            moved = list(primals)
            moved[i] = tangents[i]
            term = call(*moved, **kwargs)
            tangent = term if tangent is None else runtime.add(tangent, term)  # tuples add by item
        if tangent is None:
            return value, runtime.zero_tangent(value)
        return value, runtime.tangent_like(tangent, value)

    multilinear_frule.__name__ = multilinear_frule.__qualname__ = f"{_name(primitive)}_frule"
    return multilinear_frule


# Elementwise primitives whose partials divide nothing: no floating-point warnings to silence.
_QUIET = {operator.add, operator.sub, operator.mul, operator.neg, operator.pos,
          np.add, np.subtract, np.multiply, np.negative, np.positive}


def _elementwise(primitive, partials) -> ForwardRule:
    entry = _derived.get(id(primitive))
    if entry is not None and entry[0] is primitive and entry[1].partials is partials:
        return entry[1]

    quiet = isinstance(primitive, collections.abc.Hashable) and primitive in _QUIET

    def elementwise_frule(primals, tangents):
        value = primitive(*primals)
        tangents = _padded(tangents, len(primals))
        if all(t is None for t in tangents):
            return value, runtime.zero_tangent(value)
        if any(type(t) in (list, tuple) for t in tangents):
            raise runtime.RuleError(
                f"a list was used in arithmetic (`{_name(primitive)}`; `+` concatenates, `*` repeats): "
                "adjoint cannot differentiate that; operate on arrays"
            )
        if quiet:
            derivatives = partials(value, *primals)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):  # a constant operand's partial may be undefined
                derivatives = partials(value, *primals)
        if len(primals) == 1:
            derivatives = (derivatives,)
        tangent = None
        for derivative, t, x in zip(derivatives, tangents, primals):
            if derivative is None or t is None or not runtime.is_differentiable(x):
                continue  # an int (an exponent read out of a model) does not move
            unit = type(derivative) is int and derivative in (1, -1)  # `d_add`'s literal partials
            term = (t if derivative == 1 else -t) if unit else t * derivative
            tangent = term if tangent is None else tangent + term
        return value, runtime.tangent_like(tangent, value)

    elementwise_frule.__name__ = elementwise_frule.__qualname__ = f"{_name(primitive)}_frule"
    rule = ForwardRule(primitive, elementwise_frule, ELEMENTWISE, tuple(range(partials.__code__.co_argcount - 1)), partials)
    _derived[id(primitive)] = (primitive, rule)
    return rule


def _transposed(primitive, reverse) -> ForwardRule:
    """A forward rule for a primitive that has only a reverse rule (a user's `adjoint.rrule`):
    its pullback is linear in the cotangent, so reverse mode over the pullback (adjoint reads
    its source like any other code) maps the inputs' tangents to the output's, `J t`."""
    entry = _derived.get(id(primitive))
    if entry is not None and entry[0] is primitive and entry[1].partials is reverse:
        return entry[1]

    def transposed_frule(primals, tangents, **kwargs):
        from .errors import TransformError  # noqa: PLC0415

        value, pullback = reverse.definition(*primals, **kwargs)
        tangents = _padded(tangents, len(primals))
        if all(t is None for t in tangents):
            return value, runtime.zero_tangent(value)
        seed = _generic_like(value)  # not zeros: a solver's loop or an `if not g.any()` takes its usual path
        try:
            cotangents, back = runtime.vjp((0,), pullback, seed)
        except TransformError as error:
            raise runtime.RuleError(
                f"adjoint has only a reverse rule for `{_name(primitive)}`, and cannot read its pullback "
                f"to derive a forward one: register one with @adjoint.frule ({error.problems[0].message})"
            ) from None
        if not isinstance(cotangents, (tuple, list)):
            raise runtime.RuleError(
                f"the pullback of the rule for `{_name(primitive)}` returned a {type(cotangents).__name__}: return a "
                "tuple with one cotangent per positional argument, `(x_bar,)` for one"
            )
        count = len(cotangents)
        if any(t is not None and np.any(t) for t in tangents[count:] if runtime.is_differentiable(t) or t is None):
            raise runtime.RuleError(
                f"the pullback of the rule for `{_name(primitive)}` returned {count} cotangents for {len(primals)} "
                "positional arguments: return one for each (None for one with none)"
            )
        directions = tuple(tangents[i] if i < len(tangents) else None for i in range(count))
        (tangent,) = back(directions)
        return value, runtime.tangent_like(tangent, value)

    transposed_frule.__name__ = transposed_frule.__qualname__ = f"{_name(primitive)}_frule"
    _refuse_reverse(transposed_frule, primitive, forward_too=True)
    rule = ForwardRule(primitive, transposed_frule, TRANSPOSED, (), reverse)
    _derived[id(primitive)] = (primitive, rule)
    return rule


def _refuse_reverse(rule_callable, primitive, forward_too=False) -> None:
    """Reverse mode over a forward rule (a gradient of `adjoint.jvp` through the primitive)
    would differentiate the rule's code: refused, saying what works instead; so is forward mode
    over a derived rule (`forward_too`), whose code is adjoint's."""

    def refused(*args, **kwargs):
        raise runtime.RuleError(
            f"a derivative of adjoint.jvp through `{_name(primitive)}` would differentiate its forward rule, "
            f"which adjoint does not do yet: take second derivatives of `{_name(primitive)}` with adjoint.hvp, "
            "adjoint.hessian or adjoint.grad of adjoint.grad"
        )

    rule_callable.__adjoint_rrule__ = refused
    if forward_too:
        rule_callable.__adjoint_frule__ = refused


def _generic_like(value):
    """A cotangent shaped like `value` with generic entries (the pullback is linear: the
    transpose is the same at any seed, and a generic one takes the branches most do)."""
    if isinstance(value, (tuple, list)):
        parts = [_generic_like(v) for v in value]
        return type(value)._make(parts) if hasattr(type(value), "_fields") else type(value)(parts)
    if isinstance(value, dict):
        return {key: _generic_like(v) for key, v in value.items()}
    if runtime.structs.is_struct(value):
        return runtime.Tangent(type(value), {key: _generic_like(v) for key, v in tree.children(value)})
    zero = runtime.zero_tangent(value)
    if zero is None or not runtime.is_differentiable(zero):
        return zero
    generic = np.asarray(_seeds.standard_normal(np.shape(zero)) + 1.0).astype(np.result_type(zero))
    return generic if isinstance(zero, np.ndarray) else type(zero)(generic)


_seeds = np.random.default_rng(20261122)


def _padded(tangents, count) -> tuple:
    tangents = tuple(tangents)[:count]
    return tangents + (None,) * (count - len(tangents))


def _name(primitive) -> str:
    return getattr(primitive, "__name__", None) or type(primitive).__name__
