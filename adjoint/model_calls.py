"""The general path: what every entry point of the API runs for a call that is not plain
(`forwards.PlainCalls` takes those): models and containers, rules, bound methods, partials,
implicit parameters. `pullback` is it; the work on a call's arguments is kept cheap for models:
which arguments carry gradients and what is frozen in them (`differentiated`), the gradients
handed back once the pullback has run (`Differentiated.gradients`), and the generated forward
function found for a kind of call (`ModelCalls`).

A model argument with a plan (`adjoint.plans`) is told by its plan: it holds floats, nothing
in it is frozen, and its gradient is completed by the plan's code. The other arguments are told
as they always were: `arguments.carries_gradient`, `trainable.freezings`, `structure`.

`ModelCalls` is what `forwards.PlainCalls` is for calls at floats and arrays: for one gradient
function made by `grad` or `value_and_grad`, the forward function generated for each kind of
call (differentiated positions, frozen paths, Python floats), handed back with a few identity
checks while the function, its code and defaults, the names its code resolved and the
registered rules are those it was found with.
"""

from __future__ import annotations

import functools
import types

from . import arguments, forwards, implicit, plans, registry, runtime, structure, trainable
from .errors import AdjointError
from .runtime import gradient_mode
from .runtime.gradient_mode import differentiated_call, differentiating
from .runtime.marks import marked
from .tracebacks import annotate


def pullback(f, args, kwargs, positions, freeze=None, implicit_parameters=False, calls=None, seed=None):
    """`(value, back)` of `f(*args, **kwargs)` differentiated at `positions`, `back` as
    `adjoint.pullback` hands it out; `freeze` as `grad` takes it; `calls`, if given, the
    `ModelCalls` of `f` (a gradient function's own). With `seed`, a function of the value giving
    the cotangent to pull back (`grad`'s 1.0), it returns `(value, gradients)`: the pullback
    runs at once, in the same differentiated call as the forward pass where nothing is pruned."""
    call = getattr(type(f), "__call__", None)
    if not isinstance(f, (types.FunctionType, type)) and isinstance(call, types.FunctionType):
        f = types.MethodType(call, f)  # an object with `__call__`: differentiate that method
    if isinstance(f, (functools.partial, types.MethodType)) or _is_array_method(f):
        value, back = _pullback_of_bound(f, args, kwargs, positions, freeze, implicit_parameters)
        return (value, back) if seed is None else (value, back(seed(value)))
    collector = implicit.collector() if implicit_parameters else None
    if collector is not None:  # `gradient(model.loss, ps)`: the receiver may hold parameters
        positions = collector.holding_positions(args, kwargs, _name(f))
    if positions and max(positions) >= len(args):
        raise AdjointError(
            f"wrt names argument {max(positions)}, but {_name(f)} was called with {len(args)} "
            "positional arguments"
        )
    # implicit parameters say themselves what is trained (`params` skips declared-frozen fields)
    known = differentiated(args, positions, freeze, f, implicit=collector is not None)
    wrt = known.wrt
    try:
        forward = calls.forward(f, known) if calls is not None and collector is None else None
        if forward is None and (registry.lookup(f) is not None or marked(f, "__adjoint_rrule__") is not None):
            with differentiating():  # a rule, or a derivative
                value, generated_pullback = runtime.vjp(wrt, f, *args, **kwargs)
        else:
            if forward is None:
                version = registry.version  # before the look-up: a rule registered meanwhile is seen next time
                _require_python_function(f)
                forward = _forward(f, wrt, known.frozen, args)
                forwards.refuse_shared_updated_arguments(f, forward, args)
                if calls is not None and collector is None:
                    calls.remember(f, known, forward, version)
            if known.pruned:
                with differentiated_call(), trainable.pruning(known.pruned):
                    value, generated_pullback = forward(*args, **kwargs)
            else:
                gradient_mode.enter()  # not a `with`: cheaper, on every call
                try:
                    value, generated_pullback = forward(*args, **kwargs)
                    if seed is not None:
                        return value, _pulled_back(value, generated_pullback, args, known, collector, seed(value))
                finally:
                    gradient_mode.leave()
    except BaseException as exc:  # a note naming your line, if generated code raised it (see `tracebacks`)
        annotate(exc)
        raise
    back = _back(value, generated_pullback, args, known, collector)
    return (value, back) if seed is None else (value, back(seed(value)))


def _back(value, generated_pullback, args, known, collector):
    """The `back` that `adjoint.pullback` hands out."""

    def back(cotangent):
        gradient_mode.enter()  # deep models are completed recursively too (not a `with`: cheaper)
        try:
            return _pulled_back(value, generated_pullback, args, known, collector, cotangent)
        finally:
            gradient_mode.leave()

    return back


def _pulled_back(value, generated_pullback, args, known, collector, cotangent):
    """The gradients for `cotangent` (on the output `value`), inside a differentiated call."""
    try:
        cotangents = registry.padded(generated_pullback(arguments.complete(value, cotangent)), len(args))
    except BaseException as exc:  # a note naming your line (this is the function `pullback` hands you)
        annotate(exc)
        raise
    for i in known.wrt if collector is not None else ():
        collector.add(args[i], cotangents[i])
    return known.gradients(args, cotangents, cotangent)


def _pullback_of_bound(f, args, kwargs, positions, freeze, implicit_parameters):
    """`functools.partial(mse, X=X)` and `model.loss`: differentiate the function they wrap with
    their bound arguments prepended (constants: they get no cotangent)."""
    if isinstance(f, functools.partial):
        function, bound, kwargs = f.func, f.args, {**f.keywords, **kwargs}
    else:
        function, bound = registry.unbound(f), (f.__self__,)  # `model.loss`, `x.dot`
    if isinstance(freeze, dict):
        freeze = {p + len(bound): paths for p, paths in freeze.items()}
    shifted = [p + len(bound) for p in positions]
    value, back = pullback(function, bound + tuple(args), kwargs, shifted, freeze, implicit_parameters)
    return value, lambda cotangent: back(cotangent)[len(bound) :]


def _is_array_method(f) -> bool:
    return isinstance(f, types.BuiltinMethodType) and registry.unbound(f) is not None


_name = arguments.name_of
_forward = forwards.forward
_require_python_function = forwards.require_python_function


class Differentiated:
    """What the general path knows of one call's arguments: the positions `wrt` that carry
    gradients, the `planned` ones (position -> `plans.Plan`), the `freezings` of the others
    (position -> `trainable.Freezing`), the compiler's `frozen` key, the ids to prune, and
    the positions in `wrt` of Python floats (`floats`, as `forwards.python_floats` tells)."""

    __slots__ = ("wrt", "planned", "freezings", "frozen", "pruned", "floats")

    def gradients(self, args, cotangents, seed) -> tuple:
        """One gradient per argument from the pullback's `cotangents` (None outside `wrt`),
        each completed to mirror its argument and sharing memory with no other, nor with the
        caller's cotangent `seed`."""
        seen = structure.seed_roots(seed)
        gradients = [None] * len(args)
        for i in range(len(args)):  # in order: a gradient is copied where it shares memory with one before it
            if i not in self.wrt:
                continue
            arg, cotangent = args[i], cotangents[i]
            if i in self.planned:
                gradients[i] = self.planned[i].gradient(arg, cotangent, seen)
            elif runtime.is_differentiable(arg):
                gradients[i] = structure.unshare(arguments.project(arg, cotangent), seen)
            else:
                frozen = frozenset(self.freezings[i].paths) if i in self.freezings else ()
                gradients[i] = structure.unshare(structure.structure(arg, cotangent, frozen), seen)
        return tuple(gradients)


def differentiated(args, positions, freeze, f, implicit=False) -> Differentiated:
    """Which of `args` at `positions` carry gradients, and what is frozen in them (`freeze` as
    `grad` takes it). While an implicit gradient runs (`implicit`), nothing is frozen: the
    parameters asked for say what is trained.

    >>> import numpy as np
    >>> known = differentiated(({"W": np.ones(2)}, 2.0, "tag"), (0, 1, 2), None, None)
    >>> known.wrt, known.frozen
    ((0, 1), ((0, ()),))
    """
    known = Differentiated()
    planned, wrt, frozen, floats, containers = {}, [], [], [], False
    for i in positions:  # one loop, not several: this runs on every call
        arg = args[i]
        if runtime.is_differentiable(arg):
            wrt.append(i)
            if type(arg) is float:
                floats.append(i)
            continue
        # a model with nothing frozen in it has a plan for this work (see `adjoint.plans`)
        plan = plans.plan_for(arg) if not freeze and not implicit else None
        if plan is not None:
            if i not in planned:
                planned[i] = plan
                frozen.append((i, ()))
            wrt.append(i)
        elif arguments.carries_gradient(arg, i, f):
            wrt.append(i)
            containers = True
    wrt = tuple(wrt)
    known.wrt, known.planned, known.pruned, known.floats = wrt, planned, _NOTHING, tuple(floats)
    if implicit:
        known.freezings, known.frozen = {}, ()
    elif not freeze and not containers:  # nothing is frozen
        known.freezings, known.frozen = {}, tuple(frozen)
    else:
        known.freezings = freezings = trainable.freezings(args, wrt, positions, freeze)
        known.frozen = trainable.frozen_spec(freezings)
        known.pruned = trainable.pruned(freezings, args, wrt) if freezings else _NOTHING
    return known


_NOTHING = frozenset()


class ModelCalls:
    """The forward functions found for the calls of one function `f` made through the general
    path, per kind of call (see the module). Every call is given `f`, as to `PlainCalls`.

    >>> import numpy as np
    >>> def f(p):
    ...     return np.sum(p["W"] ** 2)
    >>> calls, args = ModelCalls(), ({"W": np.ones(2)},)
    >>> value, gradients = pullback(f, args, {}, (0,), calls=calls, seed=lambda value: 1.0)
    >>> gradients
    ({'W': array([2., 2.])},)
    >>> calls.forward(f, differentiated(args, (0,), None, f)) is not None  # found again
    True
    """

    __slots__ = ("found",)

    def __init__(self):
        # (wrt, frozen, Python floats) -> (`registry.version`, code, defaults, forward function)
        # when found; each entry replaced whole, so that threads read it whole
        self.found: dict = {}

    def forward(self, f, known: Differentiated):
        """The forward function found before for a call of `f` whose arguments `known` tells
        of, if it still holds; else None (look it up, and `remember` it)."""
        entry = self.found.get((known.wrt, known.frozen, known.floats))
        if entry is None:
            return None
        version, code, defaults, generated = entry
        if (
            version == registry.version and code is f.__code__ and defaults is f.__defaults__
            and generated.__kwdefaults__ is f.__kwdefaults__ and generated.__adjoint_bound__()
        ):
            return generated
        return None

    def remember(self, f, known: Differentiated, generated, version) -> None:
        """Keep `generated`, found for a call of `f` whose arguments `known` tells of while the
        rules were at `version` (a function that updates an argument in place is checked against
        the arguments on every call: not kept)."""
        if generated.__adjoint_updates__ or len(self.found) >= 16:  # a few kinds of call per function
            return
        key = (known.wrt, known.frozen, known.floats)
        self.found[key] = (version, generated.__adjoint_code__, f.__defaults__, generated)
