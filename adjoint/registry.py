"""Reverse rules: how adjoint differentiates a primitive it does not read the source of.

The one rule convention, written once:

- A rule is called with the primitive's own arguments, keyword arguments included, and returns
  `(value, pullback)`. `value` equals what the primitive returns.
- `pullback(cotangent)` returns a tuple with one cotangent per positional argument, in order.
  `None` means the argument carries no cotangent (an int, a shape, a flag) and consumers skip
  work for it; trailing `None`s may be left out (`np.sum(x, 1)`'s pullback may return just
  `(x_bar,)`), and consumers pad; cotangents for parameters the call passed by keyword or not
  at all may be given, and consumers drop them (`padded`). A cotangent has its argument's
  shape and dtype.
- A method's rule (`np.ndarray.sum`) takes the receiver as its first argument.
- Keyword arguments are never differentiated.
- The pullback is a named closure (`sin_pullback`), so a traceback says which rule failed.

Elementwise primitives are registered by their local partial derivatives alone
(`elementwise`); the full rule, with unbroadcasting, is derived from them. Rules written in
the inlinable shapes (see `adjoint.compiler.inline`) are stitched into generated code as plain
NumPy expressions; any other rule is called as it is.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import random
import types
from typing import Callable

import numpy as np

from . import runtime
from .errors import AdjointError
from .runtime.marks import marked

__all__ = [
    "Rule", "rrule", "elementwise", "non_differentiable", "lookup", "is_non_differentiable", "unbound", "padded",
]


@dataclasses.dataclass(eq=False)
class Rule:
    """A registered reverse rule for one primitive.

    `rrule` is the full rule to call (see the module docstring). `definition` is the function
    as written, which the compiler may inline instead of calling. `partials`, for elementwise
    rules, gives `partials(ans, *inputs)`: the local derivative with respect to each input (a
    tuple for several inputs, `None` for an input with none).
    """

    primitive: object
    rrule: Callable
    definition: Callable
    partials: Callable | None = None
    sequences: bool = False  # its operands may be lists or tuples of arrays (`np.concatenate(xs)`)

    @functools.cached_property
    def signature(self) -> inspect.Signature | None:
        """The parameters a call may pass: the rule's own (an elementwise rule's inputs, after
        `ans`, positional only), or None where Python cannot tell."""
        if self.partials is not None:
            inputs = list(inspect.signature(self.partials).parameters)[1:]
            return inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in inputs])
        try:
            return inspect.signature(self.definition)
        except (TypeError, ValueError):
            return None

    def refusal(self, positional: int, keywords) -> str | None:
        """Why a call with `positional` arguments and these keyword names does not fit the
        rule (`"does not support the keyword argument `out=`"`), or None if it does.

        >>> lookup(np.sum).refusal(1, ["axis", "out"])
        'does not support the keyword argument `out=`'
        """
        key = (positional, tuple(keywords))
        if key not in self._refusals:  # asked at run time for every call with keywords: remembered
            self._refusals[key] = _refusal(self.signature, positional, key[1])
        return self._refusals[key]

    _refusals: dict = dataclasses.field(default_factory=dict, repr=False)

    def movable_keywords(self, positional: int, wanted, given) -> list[str]:
        """The parameters to pass by position so that the keyword arguments `wanted` can carry
        gradients (rules differentiate positional arguments only): from position `positional`
        up to the last of `wanted`, in order. Empty unless the rule and the primitive both take
        each of them at that position, the keywords (`given`) by name too, and those not given
        have the same simple default in both, which the caller passes for them.

        >>> lookup(np.average).movable_keywords(1, ["weights"], ["weights"])
        ['axis', 'weights']
        >>> lookup(np.where).movable_keywords(1, ["x"], ["x"])  # NumPy takes `x` by position only
        []
        """
        try:
            primitive = list(inspect.signature(self.primitive).parameters.values())
        except (TypeError, ValueError):
            return []
        ours = list(self.signature.parameters.values()) if self.signature is not None else []
        last = max((i for i, p in enumerate(ours) if p.name in wanted and _positional(p)), default=-1)
        if last < positional or last >= len(primitive):
            return []
        moved = []
        for rule_parameter, parameter in zip(ours[positional : last + 1], primitive[positional : last + 1]):
            if rule_parameter.name != parameter.name or not (_positional(rule_parameter) and _positional(parameter)):
                return []
            if rule_parameter.name in given:
                if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
                    return []  # the call itself is wrong: let NumPy say so
            elif not _same_simple_default(rule_parameter.default, parameter.default):
                return []
            moved.append(rule_parameter.name)
        return moved


def _positional(parameter) -> bool:
    return parameter.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _same_simple_default(ours, theirs) -> bool:
    return (ours is None or type(ours) in (bool, int, float, str)) and type(ours) is type(theirs) and ours == theirs


def _refusal(signature, positional, keywords) -> str | None:
    if signature is None:
        return None
    accepted = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        return None
    for keyword in keywords:
        parameter = accepted.get(keyword)
        if parameter is None or parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            return f"does not support the keyword argument `{keyword}=`"
    try:
        signature.bind(*range(positional), **dict.fromkeys(keywords))
    except TypeError as error:
        return f"cannot be called this way ({error})"
    return None


_RULES: dict[int, tuple[object, Rule]] = {}
_NON_DIFFERENTIABLE: dict[int, object] = {}
# Bumped by every registration, so code generated from older rules knows to be regenerated.
version = 0


def _key(primitive) -> int:
    # Keyed by identity: many NumPy callables are unhashable or compare by value.
    return id(primitive)


def lookup(primitive) -> Rule | None:
    """The rule registered for `primitive`, or None.

    For a bound method, the rule of the function it binds: `m.__func__`'s for a Python
    method, `np.ndarray.sum`'s for `x.sum` on an array or NumPy scalar. Such a rule takes the
    receiver as its first argument, so call it with the receiver first:

    >>> x = np.array([1.0, 2.0])
    >>> value, back = lookup(x.sum).rrule(x, axis=0)
    >>> float(value), back(1.0)
    (3.0, (array([1., 1.]),))
    """
    entry = _RULES.get(_key(primitive))
    if entry is not None and entry[0] is primitive:
        return entry[1]
    if _loads_optional_rules(primitive):
        return lookup(primitive)
    function = unbound(primitive)
    return lookup(function) if function is not None else None


# Rules for optional libraries, imported the first time one of the library's functions is looked
# up, so that `import adjoint` never imports them: the library's module prefix -> rule module.
_OPTIONAL_RULES = {"scipy.": "adjoint.rules.scipy_special"}
_loaded_optional: set[str] = set()


def load_optional_rules() -> None:
    """Import the optional rules of every optional library that is installed (the catalog
    lists them all)."""
    for prefix, rules_module in _OPTIONAL_RULES.items():
        try:
            importlib.import_module(prefix.rstrip("."))
        except ImportError:
            continue
        _load(rules_module)


def _loads_optional_rules(primitive) -> bool:
    """Import the optional rules for `primitive`'s library if not done yet; whether it did."""
    module = getattr(primitive, "__module__", None) or ""
    return any(module.startswith(prefix) and _load(rules) for prefix, rules in _OPTIONAL_RULES.items())


def _load(rules_module) -> bool:
    """Import `rules_module` once; whether this call did."""
    if rules_module in _loaded_optional:
        return False
    _loaded_optional.add(rules_module)
    importlib.import_module(rules_module)
    return True


def is_non_differentiable(primitive) -> bool:
    """Whether `primitive` (or a bound method's function, as for `lookup`) has no derivative."""
    if _NON_DIFFERENTIABLE.get(_key(primitive), _MISSING) is primitive:
        return True
    function = unbound(primitive)
    return function is not None and is_non_differentiable(function)


def unbound(primitive):
    """The function a bound method calls with its receiver first, or None for anything else:
    `m.__func__` for a Python method, the array method for a method of an array or NumPy scalar,
    the class's method for a method of a random generator, its bit generator or seed sequence
    (`np.random.normal` too: a method of NumPy's global `RandomState`).

    >>> unbound(np.ones(2).sum) is np.ndarray.sum
    True
    >>> unbound(np.random.default_rng(0).normal) is np.random.Generator.normal
    True
    """
    function = getattr(primitive, "__func__", None)  # also a compiled method of a NumPy class
    if function is None and isinstance(primitive, types.BuiltinMethodType):
        receiver = primitive.__self__
        if isinstance(receiver, (np.ndarray, np.generic)):  # `x.sum` is `np.ndarray.sum(x)`
            function = getattr(np.ndarray, primitive.__name__, None)
        elif isinstance(receiver, _RANDOM_STATES):  # where NumPy's methods are built-in methods
            function = getattr(type(receiver), primitive.__name__, None)
    return function


# The objects holding random state, whose methods draw from it (`rng.normal`, `rng.spawn`).
_RANDOM_STATES = (
    np.random.Generator, np.random.RandomState, np.random.BitGenerator, np.random.SeedSequence, random.Random,
)


_MISSING = object()


def _register(primitive, rule: Rule) -> None:
    global version
    _RULES[_key(primitive)] = (primitive, rule)
    _NON_DIFFERENTIABLE.pop(_key(primitive), None)
    version += 1


def rrule(*primitives, checked: bool = False, sequences: bool = False):
    """Register a reverse rule for one or more primitives (used as a decorator).

    The rule is called with the primitive's arguments, keywords such as `axis=` included, and
    returns `(value, pullback)`; `pullback(cotangent)` returns one cotangent per positional
    argument, `None` where an argument has none. With `checked=True` (how `adjoint.rrule`
    registers users' rules) the pullback's length is checked and a `None` for a float argument
    becomes zeros. `sequences=True` declares that operands may be lists or tuples of arrays
    (`np.concatenate(xs)`), whose cotangents the pullback returns as the same kind of sequence.

    `adjoint.rrule` is the public front end, with an example.
    """
    if not primitives:
        raise TypeError("rrule() needs the primitive(s) the rule is for")

    def register(rule_fn):
        if checked:
            from . import checked_rules  # noqa: PLC0415  (it imports this module)

            refuse_unregistrable(primitives)
            fn = checked_rules.checked(rule_fn, primitives)
        else:
            fn = rule_fn
        for primitive in primitives:
            _register(primitive, Rule(primitive, fn, rule_fn, sequences=sequences))
        return rule_fn

    return register


def refuse_unregistrable(primitives) -> None:
    """Refuse a user's rule for what a rule could not be found by: a bound method (each
    `obj.m` is a new object) or a function `adjoint.checkpoint` made (it has rules of its own)."""
    for primitive in primitives:
        if isinstance(primitive, types.MethodType):
            raise AdjointError(
                f"a rule for the bound method `{primitive.__qualname__}` would never be found (each attribute "
                f"read makes a new one): register it for `{primitive.__func__.__qualname__}` (the class's), the rule "
                "taking the receiver first"
            )
        if marked(primitive, "__adjoint_checkpoint_of__", None) is not None:
            raise AdjointError(
                f"`{primitive.__qualname__}` is checkpointed: register the rule for the function it wraps"
            )


def padded(cotangents, count: int) -> tuple:
    """A pullback's cotangents for the `count` positional arguments of a call: the trailing
    `None`s it left out put back, and the cotangents of parameters the call passed by keyword
    or not at all (`np.average(x, weights=w)`, `x.clip(max=1)`) dropped, since keyword
    arguments are never differentiated.

    >>> padded((1.0,), 3), padded((1.0, None, None), 1), padded((1.0, 2.0), 1)
    ((1.0, None, None), (1.0,), (1.0,))
    """
    cotangents = tuple(cotangents)[:count]
    return cotangents + (None,) * (count - len(cotangents))


def elementwise(*primitives):
    """Register elementwise primitives by their local partial derivatives (a decorator).

    The decorated function is called as `partials(ans, *inputs)`, `ans` being the primitive's
    output, and returns the derivative of the output with respect to the input (one input), or
    a tuple of them (several inputs; `None` for an input with no derivative). The full rule
    multiplies each by the cotangent and unbroadcasts it to its input's shape and dtype.

    >>> import numpy as np
    >>> from adjoint.registry import elementwise, lookup
    >>> def cube(x):
    ...     return x ** 3
    >>> @elementwise(cube)
    ... def d_cube(ans, x):
    ...     return 3 * x ** 2
    >>> value, back = lookup(cube).rrule(np.array([2.0]))
    >>> back(np.array([1.0]))
    (array([12.]),)
    """

    def register(partials):
        for primitive in primitives:
            rule_fn = _elementwise_rrule(primitive, partials)
            _register(primitive, Rule(primitive, rule_fn, partials, partials=partials))
        return partials

    return register


def _elementwise_rrule(primitive, partials):
    name = getattr(primitive, "__name__", "elementwise")
    arity = partials.__code__.co_argcount - 1  # the inputs, after `ans`

    def rule(*inputs, **kwargs):
        if len(inputs) > arity or kwargs:
            raise runtime.RuleError(
                f"adjoint's rule for {name} takes {arity} positional argument{'s' if arity != 1 else ''} "
                f"and no keywords; it was called with {len(inputs)} and {sorted(kwargs) or 'none'}"
            )
        ans = primitive(*inputs)

        def pullback(g):
            differentiable = [runtime.is_differentiable(x) for x in inputs]
            if all(differentiable):
                derivatives = partials(ans, *inputs)
            else:
                # The partial of a non-float input (an int exponent) may be undefined: unused.
                with np.errstate(all="ignore"):
                    derivatives = partials(ans, *inputs)
            if len(inputs) == 1:
                derivatives = (derivatives,)
            return tuple(
                None if d is None or not wanted else runtime.unbroadcast(g * d, x)
                for d, x, wanted in zip(derivatives, inputs, differentiable)
            )

        return ans, pullback

    return _renamed(rule, name)


def _renamed(rule, name):
    """Name a generic rule and its pullback after the primitive, once, so tracebacks say which."""
    pullback_name = f"{name}_pullback"
    consts = tuple(
        c.replace(co_name=pullback_name, co_qualname=pullback_name) if hasattr(c, "co_code") else c
        for c in rule.__code__.co_consts
    )
    code = rule.__code__.replace(co_consts=consts, co_name=f"{name}_rrule", co_qualname=f"{name}_rrule")
    renamed = type(rule)(code, rule.__globals__, code.co_name, rule.__defaults__, rule.__closure__)
    return renamed


def non_differentiable(*primitives, checked: bool = False):
    """Declare primitives whose outputs carry no gradient (shape queries, constructors, ...).

    Calls to them run as they are inside differentiated code, and no adjoint work is spent on
    their results. Returns the first primitive, so it also works as a decorator. A primitive
    with a rule keeps it; with `checked=True` (how `adjoint.non_differentiable` declares users'
    functions) that, and a bound method (never found again), are refused.

    >>> import adjoint
    >>> from adjoint.registry import non_differentiable, is_non_differentiable
    >>> @non_differentiable
    ... def bucket(x):
    ...     return int(x // 10)
    >>> is_non_differentiable(bucket)
    True
    """
    global version
    from . import frules  # noqa: PLC0415  (it imports this module)

    for primitive in primitives:
        if checked and isinstance(primitive, types.MethodType):
            primitive = primitive.__func__  # `log.info`: the method, whatever object it is read from
        if checked:
            refuse_unregistrable([primitive])
        ruled = lookup(primitive) is not None or checked and frules.lookup(primitive) is not None
        if checked and ruled:
            name = getattr(primitive, "__qualname__", None) or repr(primitive)
            raise AdjointError(
                f"`{name}` has a rule, so it carries a derivative: it cannot also be non-differentiable. "
                "Hold its result constant with adjoint.stop_gradient where you call it"
            )
        if not ruled:
            _NON_DIFFERENTIABLE[_key(primitive)] = primitive
    version += 1
    return primitives[0] if primitives else None
