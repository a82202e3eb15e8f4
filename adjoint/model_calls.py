"""The general path's work on a call's arguments, kept cheap for models (`api._pullback` is
its user): which arguments carry gradients and what is frozen in them (`differentiated`), the
gradients handed back once the pullback has run (`Differentiated.gradients`), and the generated
forward function found for a kind of call (`ModelCalls`).

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

from . import arguments, plans, registry, runtime, structure, trainable
from .forwards import python_floats


class Differentiated:
    """What the general path knows of one call's arguments: the positions `wrt` that carry
    gradients, the `planned` ones (position -> `plans.Plan`), the `freezings` of the others
    (position -> `trainable.Freezing`), the compiler's `frozen` key and the ids to prune."""

    __slots__ = ("wrt", "planned", "freezings", "frozen", "pruned")

    def gradients(self, args, cotangents, seed) -> tuple:
        """One gradient per argument from the pullback's `cotangents` (None outside `wrt`),
        each completed to mirror its argument and sharing memory with no other, nor with the
        caller's cotangent `seed`."""
        seen = structure.seed_roots(seed)
        planned, freezings = self.planned, self.freezings
        return tuple(
            None if i not in self.wrt
            else planned[i].gradient(args[i], cotangents[i], seen) if i in planned
            else structure.unshare(arguments.project(args[i], cotangents[i]), seen) if runtime.is_differentiable(args[i])
            else structure.unshare(
                structure.structure(args[i], cotangents[i], frozenset(freezings[i].paths) if i in freezings else ()), seen
            )
            for i in range(len(args))
        )


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
    # a model with nothing frozen in it has a plan for this work (see `adjoint.plans`)
    known.planned = planned = plans.planned(args, positions) if not freeze and not implicit else {}
    known.wrt = wrt = tuple(i for i in positions if i in planned or arguments.carries_gradient(args[i], i, f))
    known.pruned = frozenset()
    if implicit:
        known.freezings, known.frozen = {}, ()
    elif not freeze and all(i in planned or runtime.is_differentiable(args[i]) for i in wrt):  # nothing frozen
        known.freezings, known.frozen = {}, tuple({i: () for i in wrt if i in planned}.items())
    else:
        known.freezings = freezings = trainable.freezings(args, wrt, positions, freeze)
        known.frozen = trainable.frozen_spec(freezings)
        known.pruned = trainable.pruned(freezings, args, wrt) if freezings else frozenset()
    return known


class ModelCalls:
    """The forward functions found for the calls of one function `f` made through the general
    path, per kind of call (see the module). Every call is given `f`, as to `PlainCalls`."""

    __slots__ = ("found",)

    def __init__(self):
        # (wrt, frozen, Python floats) -> (`registry.version`, code, defaults, forward function)
        # when found; each entry replaced whole, so that threads read it whole
        self.found: dict = {}

    def forward(self, f, known: Differentiated, args):
        """The forward function found before for the call `f(*args)` with `known` arguments,
        if it still holds; else None (look it up, and `remember` it)."""
        entry = self.found.get((known.wrt, known.frozen, python_floats(known.wrt, args)))
        if entry is None:
            return None
        version, code, defaults, generated = entry
        if (
            version == registry.version and code is f.__code__ and defaults is f.__defaults__
            and generated.__kwdefaults__ is f.__kwdefaults__ and generated.__adjoint_bound__()
        ):
            return generated
        return None

    def remember(self, f, known: Differentiated, args, generated, version) -> None:
        """Keep `generated`, found for the call `f(*args)` while the rules were at `version`
        (a function that updates an argument in place is checked against the arguments on
        every call: not kept)."""
        if generated.__adjoint_updates__ or len(self.found) >= 16:  # a few kinds of call per function
            return
        key = (known.wrt, known.frozen, python_floats(known.wrt, args))
        self.found[key] = (version, generated.__adjoint_code__, f.__defaults__, generated)
