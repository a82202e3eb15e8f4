"""Rules that let derivatives compose: `adjoint.jvp` and `adjoint.grad` called inside code that
is itself differentiated, and the helpers generated JVP code calls.

- `adjoint.jvp(f, ...)` (and `adj.jvp`, which generated JVP code calls) has a forward rule, the
  JVP of `f`'s generated JVP code (forward-over-forward), and a reverse rule, that code reversed
  (reverse-over-forward).
- `adjoint.grad(f)` made inside differentiated code hands `f`'s tangent or cotangent (a
  closure's: what it closes over) to the gradient, whose own rules (`adjoint.gradient_rules`)
  differentiate through them.
- The tangent helpers are linear in the tangent (`adj.tangent_like`...) or carry no derivative.
"""

from __future__ import annotations

import types

import numpy as np

from . import arguments, derivatives, frules, registry, runtime, tree
from .compiler import pipeline
from .runtime import calls as runtime_calls
from .errors import AdjointError
from .runtime.marks import marked

# `adjoint.grad(f)` made inside differentiated code: the gradient carries `f`'s tangent (a
# closure's: what it closes over), so calling it differentiates with respect to those too; the
# gradient's cotangent goes back to `f` the same way. So for `adjoint.value_and_grad`.
def _constructor_frule(constructor):
    def constructor_frule(primals, tangents, **kwargs):
        return constructor(*primals, **kwargs), tangents[0] if tangents else None

    constructor_frule.__name__ = constructor_frule.__qualname__ = f"{constructor.__name__}_frule"
    return constructor_frule


def _constructor_rrule(constructor):
    def constructor_rrule(f, *args, **kwargs):
        def constructor_pullback(g):
            return (g,)

        return constructor(f, *args, **kwargs), constructor_pullback

    constructor_rrule.__name__ = constructor_rrule.__qualname__ = f"{constructor.__name__}_rrule"
    return constructor_rrule


# `adjoint.jvp` inside differentiated code: its generated JVP code is differentiated again, in
# forward mode (forward-over-forward) or reverse mode (reverse-over-forward).
def _jvp_code(f, primals, tangents, outer_tangents=None):
    """The generated JVP function of `f` for the positions with a tangent (inner or outer), and
    the tuple of inner tangents it takes (zeros where only the outer derivative moves one)."""
    if isinstance(f, types.FunctionType) and (frules.lookup(f) is not None or registry.lookup(f) is not None):
        f = runtime.calling(f, len(primals))  # a function with your rule: called from code adjoint reads
    if not isinstance(f, types.FunctionType) or marked(f, "__adjoint_frule__", None) is not None:
        raise AdjointError(
            f"adjoint.jvp of {arguments.name_of(f)} can be differentiated again only for a Python function"
        )
    outer = outer_tangents or (None,) * len(primals)
    positions = tuple(i for i, (t, o) in enumerate(zip(tangents, outer)) if t is not None or o is not None)
    inner = tuple(runtime.tangent_or_zeros(tangents[i], primals[i]) for i in positions)
    containers = tuple(i for i in positions if not runtime.is_differentiable(primals[i]))
    return pipeline.jvp_function(f, positions, containers), positions, inner


def jvp_frule(primals, tangents):
    """Forward mode over `adjoint.jvp(f, primals, tangents)`."""
    (f, inner_primals, inner_tangents), (df, dprimals, dtangents) = primals[:3], (tuple(tangents) + (None,) * 3)[:3]
    if df is not None:
        raise AdjointError("adjoint.jvp of a closure over varied values cannot be differentiated again yet")
    inner_primals, inner_tangents = tuple(inner_primals), tuple(inner_tangents)
    dprimals = tuple(dprimals) if dprimals is not None else (None,) * len(inner_primals)
    dtangents = tuple(dtangents) if dtangents is not None else (None,) * len(inner_primals)
    code, positions, inner = _jvp_code(f, inner_primals, inner_tangents, dtangents)
    moved = any(dtangents[i] is not None for i in positions)
    douter = tuple(runtime.tangent_or_zeros(dtangents[i], inner_primals[i]) for i in positions) if moved else None
    return runtime.jvp(code, (inner, *inner_primals), (douter, *dprimals))


def jvp_rrule(f, primals, tangents):
    """Reverse mode over `adjoint.jvp(f, primals, tangents)`: the generated JVP code, reversed;
    a closure `f` gets the cotangents of what it closes over (the JVP code shares its cells)."""
    primals, tangents = tuple(primals), tuple(tangents)
    code, positions, inner = _jvp_code(f, primals, tangents)
    wrt = (1,) + tuple(2 + i for i, p in enumerate(primals) if runtime.is_differentiable(p) or tree.tree_leaves(p))
    closes_over = bool(runtime_calls.captured_names(f))
    value, back = runtime.closure_vjp(((0,) if closes_over else ()) + wrt, code, inner, *primals)

    def jvp_pullback(g):
        f_bar, dinner, *dprimals = back(g)
        dtangents = [None] * len(primals)
        for position, part in zip(positions, dinner or ()):
            dtangents[position] = part if tangents[position] is not None else None
        return f_bar, tuple(dprimals), tuple(dtangents)

    return value, jvp_pullback


def register():
    from . import api, steering  # noqa: PLC0415

    registry.non_differentiable(arguments.unit)  # a gradient's seed: ones
    for function in (derivatives.jvp, runtime.jvp):
        frules.frule(function)(jvp_frule)
        registry.rrule(function, sequences=True, checked=True)(jvp_rrule)
    frules.linear(runtime.tangent_like, runtime.tangent_or_zeros, runtime.complete_tangent)
    # `checked`: a None cotangent for a float argument (the value `tangent_like` takes the shape
    # of) becomes zeros, as generated code adds what a called rule returns
    registry.rrule(runtime.tangent_like, checked=True)(tangent_like_rrule)
    registry.rrule(runtime.tangent_or_zeros, checked=True)(tangent_or_zeros_rrule)
    registry.non_differentiable(runtime.zero_tangent, runtime.holds_floats)
    for helper in (runtime.closure_jvp, runtime.method_jvp, runtime.keywords_jvp, runtime.field_tangent):
        registry.rrule(helper)(_not_yet(helper))
        frules.frule(helper)(_not_yet(helper))
    frules.frule(runtime.star_vjp)(_star_refused)
    for function, why in [
        (api.pullback, "use adjoint.grad or adjoint.jvp inside, which can be differentiated"),
        (api.gradient, "use adjoint.grad inside, which can be differentiated"),
        (derivatives.hvp, "a Hessian-vector product differentiated again is a third derivative"),
        (derivatives.hessian, "a Hessian differentiated again is a third derivative"),
        (derivatives.jacobian, "build it from adjoint.jvp or adjoint.grad, which can be differentiated"),
    ]:
        registry.rrule(function)(_refusing(function, why))
        frules.frule(function)(_refusing(function, why))
    for constructor in (api.grad, api.value_and_grad, steering.checkpoint):
        frules.frule(constructor)(_constructor_frule(constructor))
        registry.rrule(constructor)(_constructor_rrule(constructor))



def tangent_like_rrule(tangent, value):
    """`adj.tangent_like` is linear in the tangent: the cotangent goes back summed over the axes
    it broadcast, in the tangent's kind."""
    def tangent_like_pullback(g):
        return runtime.cotangent_like(runtime.sum_to_shape(g, np.shape(tangent)), tangent), None

    return runtime.tangent_like(tangent, value), tangent_like_pullback


def tangent_or_zeros_rrule(tangent, value):
    def tangent_or_zeros_pullback(g):
        return (g if tangent is not None else None), None

    return runtime.tangent_or_zeros(tangent, value), tangent_or_zeros_pullback


def _star_refused(primals, tangents, **kwargs):
    raise AdjointError(
        "a second derivative through a call that spreads `*args` or `**kwargs` (`f(*xs)`) is not supported yet: "
        "pass the arguments one by one"
    )


def _not_yet(helper):
    def refused(*args, **kwargs):
        raise AdjointError(
            f"adjoint cannot differentiate forward-mode code through `{helper.__name__}` again yet (a closure, "
            "method or keyword call inside a function given to adjoint.jvp, differentiated once more): call a "
            "plain function of the arrays there instead"
        )

    refused.__name__ = refused.__qualname__ = f"{helper.__name__}_refused"
    return refused


def _refusing(function, why):
    def refused(*args, **kwargs):
        raise AdjointError(f"adjoint.{function.__name__} cannot be used inside a function being differentiated: {why}")

    refused.__name__ = refused.__qualname__ = f"{function.__name__}_refused"
    return refused
