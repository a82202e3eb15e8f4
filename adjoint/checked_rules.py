"""Users' reverse rules (`adjoint.rrule`), checked as they run.

Generated code consumes cotangents as arrays, so the wrapper around a user's rule makes its
pullback safe to consume without run-time checks in generated code: a `None` cotangent for a
float argument becomes zeros, an output's cotangent is handed over complete (zeros for the
items and fields nothing flowed into), a pullback returning no tuple, too many cotangents, too
few for arguments that carry gradients, or a misshapen one is refused naming the rule, and
while `adjoint.gradient(f, params)` runs, a rule for a function that reaches parameters through
its globals, closure, defaults or helpers is refused (the rule cannot give them gradients). The
wrapper and its pullback have forward rules, so second derivatives go through the rule as
written.
"""

from __future__ import annotations

import dis
import functools
import inspect
import types

import numpy as np

from . import registry, runtime, tree


def checked(rule_fn, primitives):
    """`rule_fn`, a user's rule for `primitives`, wrapped: see the module docstring."""

    parameters = inspect.signature(rule_fn).parameters.values()
    most = (
        float("inf") if any(p.kind is p.VAR_POSITIONAL for p in parameters)
        else sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    )

    def checked_back(pullback, value, args):
        def counted_pullback(cotangent):
            cotangents = pullback(cotangent)
            if not isinstance(cotangents, (tuple, list)):
                raise runtime.RuleError(
                    f"the pullback of rule {rule_fn.__qualname__} returned a {type(cotangents).__name__}: return a "
                    "tuple with one cotangent per positional argument, `(x_bar,)` for one"
                )
            cotangents = tuple(cotangents)
            missing = [i for i in range(len(cotangents), len(args)) if _carries_gradient(args[i])]
            if len(cotangents) > max(most, len(args)) or missing:
                raise runtime.RuleError(
                    f"the pullback of rule {rule_fn.__qualname__} returned {len(cotangents)} "
                    f"cotangents for {len(args)} positional arguments: return one for each (None for one with none)"
                )
            return cotangents

        zero_filled = runtime.zeros_for_none(counted_pullback, args, range(len(args)))

        def checked_pullback(cotangent):
            cotangents = zero_filled(_dense(cotangent, value))
            for index, (c, arg) in enumerate(zip(cotangents, args)):
                if c is not None and runtime.is_differentiable(arg) and np.shape(c) != np.shape(arg):
                    raise runtime.RuleError(
                        f"the pullback of rule {rule_fn.__qualname__} returned a cotangent of shape {np.shape(c)} "
                        f"for argument {index}, of shape {np.shape(arg)}"
                    )
            return cotangents

        def checked_pullback_frule(primals, tangents, closure=None):
            (g,), (dg,) = primals, tangents
            dg = None if dg is None else _dense(dg, value)
            _, dcotangents = runtime.closure_jvp(pullback, closure, (_dense(g, value),), (dg,))
            return checked_pullback(g), registry.padded(dcotangents, len(args))

        checked_pullback.__name__ = checked_pullback.__qualname__ = getattr(pullback, "__name__", "pullback")
        checked_pullback.__adjoint_frule__ = checked_pullback_frule  # forward mode cannot read this wrapper
        return checked_pullback

    @functools.wraps(rule_fn)
    def checked_rule(*args, **kwargs):
        _refuse_hidden_parameters(primitives)
        value, pullback = rule_fn(*args, **kwargs)
        return value, checked_back(pullback, value, args)

    def checked_rule_frule(primals, tangents, **kwargs):
        """Forward mode over the rule and its pullback (a second derivative through the rule):
        the rule as written, its pullback's cotangents checked as when it is called."""
        (value, pullback), (dvalue, dpullback) = runtime.jvp(rule_fn, primals, tangents, **kwargs)
        return (value, checked_back(pullback, value, primals)), (dvalue, dpullback)

    checked_rule.__adjoint_frule__ = checked_rule_frule
    return checked_rule


def _refuse_hidden_parameters(primitives) -> None:
    """While `adjoint.gradient(f, params)` runs, a function with a rule that reaches parameters
    through its globals, closure or default values (or a function of yours it calls does) would
    give them no gradient: its rule returns cotangents for its arguments only."""
    from . import implicit  # noqa: PLC0415  (it imports the registry)

    collector = implicit.collector()
    if collector is None:
        return
    for primitive in primitives:
        hidden = _reached_parameters(primitive, collector, set())
        if hidden:
            raise runtime.RuleError(
                f"`{primitive.__qualname__}` has a rule of yours, and reaches parameters through "
                f"{', '.join(sorted(set(hidden)))}, which a rule cannot give gradients to: pass them as arguments"
            )


def _reached_parameters(fn, collector, seen) -> list:
    """What of `fn`'s closure, defaults and the globals it loads hold parameters, and so for the
    functions of yours it loads."""
    if not isinstance(fn, types.FunctionType) or id(fn) in seen or fn.__module__.startswith(("adjoint", "numpy")):
        return []
    seen.add(id(fn))
    found = []
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            contents = cell.cell_contents
        except ValueError:
            continue
        found += [f"`{name}`"] if collector.holds_parameter(contents) else _reached_parameters(contents, collector, seen)
    defaults = (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values())
    found += ["a default value"] * any(collector.holds_parameter(d) for d in defaults)
    for name in _loaded_globals(fn.__code__):
        value = fn.__globals__.get(name)
        found += [f"`{name}`"] if collector.holds_parameter(value) else _reached_parameters(value, collector, seen)
    return found


def _loaded_globals(code) -> set:
    """The global names `code` (and the code nested in it) reads, not its attribute names."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _loaded_globals(constant)
    return names


def _carries_gradient(arg) -> bool:
    return runtime.is_differentiable(arg) or bool(tree.tree_leaves(arg))


def _dense(cotangent, value):
    """A user's rule gets its output's cotangent with every part there: generated code leaves
    out (None) the items of a tuple, list or dict and the fields of an object that nothing
    flowed into; they come as zeros (None for an int)."""
    if isinstance(value, (tuple, list)) and (cotangent is None or isinstance(cotangent, (tuple, list))):
        parts = [_dense(c, v) for c, v in zip(cotangent or [None] * len(value), value)]
        return type(value)._make(parts) if hasattr(type(value), "_fields") else type(value)(parts)
    if isinstance(value, dict) and (cotangent is None or isinstance(cotangent, dict)):
        given = cotangent or {}
        return {key: _dense(given.get(key), v) for key, v in value.items()}
    if runtime.structs.is_struct(value) and (cotangent is None or isinstance(cotangent, runtime.Tangent)):
        given = runtime.structs.tangent_fields(cotangent) if cotangent is not None else {}
        return runtime.Tangent(type(value), {key: _dense(given.get(key), v) for key, v in tree.children(value)})
    if cotangent is None:
        return runtime.zeros_like(value)
    return cotangent
