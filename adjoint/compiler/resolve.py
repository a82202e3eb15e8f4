"""Resolve: decide, once, what each call and attribute read in the function refers to.

Assumes: a normalized function in SSA form.
Guarantees: every call that is a statement's operation (in any body), and every attribute
read of a local value, carries a `CALLEE` annotation (a `Callee`). Callees written as
module-level dotted names (`np.sum`, `math.exp`, `dense`) are looked up now, in the function's
live globals; `adj.setitem` and the other runtime helpers `normalize` writes resolve to the
runtime's functions. Callees reached through locals or closure cells (a function passed as an
argument, a method), objects with `__call__` and methods of module-level arrays (`W.dot`) are
left to run time (`dynamic`), since closures sharing this code may hold different ones.

Before:  s = np.sum(x, axis=1)   After: the call annotated Callee("rule", "np.sum", np.sum, <rule>)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import random
import types

import gast
import numpy as np

from .. import registry, runtime
from . import annotations as anno
from . import syntax
from .context import Context
from .normalize import assigned_names, is_object_of_user
from ..runtime.marks import marked

RULE, NON_DIFFERENTIABLE, PYTHON, DYNAMIC, MISSING = "rule", "nondiff", "python", "dynamic", "missing"
FIELD = "field"  # an attribute read that is not an array's: a field of the user's object


@dataclasses.dataclass(frozen=True)
class Callee:
    """What a call (or attribute read) resolved to."""

    kind: str  # one of RULE, NON_DIFFERENTIABLE, PYTHON, DYNAMIC, MISSING, FIELD
    text: str  # as the user wrote it, e.g. "np.sum" or "x.T"
    obj: object = None
    rule: registry.Rule | None = None
    method: bool = False  # a call of a method of a local value, e.g. `x.sum()`


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Annotate every call and local attribute read of `node`'s statements with a `Callee`."""
    local_names = assigned_names(node)
    for stmt in syntax.statements(node.body):
        value = getattr(stmt, "value", None)
        if isinstance(value, gast.Call):
            callee = _resolve_call(value.func, ctx, local_names)
            if callee.kind == RULE:
                callee = _with_dtype(callee, value, ctx, local_names)
            anno.set_(value, anno.CALLEE, callee)
        elif isinstance(value, gast.Attribute) and syntax.is_atom(value.value):
            anno.set_(value, anno.CALLEE, _resolve_attribute(value))
    return node


def _with_dtype(callee, call, ctx, local_names) -> Callee:
    """A rule call asking for a result `dtype` that is not floating has no gradient
    (`np.sum(x, dtype=int)`); one whose dtype is known only at run time is dispatched then."""
    dtype = _argument(call, callee.rule.definition, "dtype")
    if dtype is None or (isinstance(dtype, gast.Constant) and dtype.value is None):
        return callee
    text = syntax.dotted(dtype)
    if isinstance(dtype, gast.Constant):
        value = dtype.value
    elif text and syntax.root_name(dtype) not in local_names:
        value = lookup_dotted(text, ctx)
        ctx.rely_on(text, value)
    else:
        return dataclasses.replace(callee, kind=DYNAMIC)  # `dtype=x.dtype`: adj.vjp decides
    try:
        floating = np.dtype(value).kind in "fc"
    except TypeError:
        return callee
    return callee if floating else dataclasses.replace(callee, kind=NON_DIFFERENTIABLE)


def _argument(call, signature_of, name):
    """The node passed for parameter `name` of `signature_of`, by keyword or by position."""
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    try:
        parameters = list(inspect.signature(signature_of).parameters)
    except (TypeError, ValueError):
        return None
    position = parameters.index(name) if name in parameters else len(call.args)
    return call.args[position] if position < len(call.args) else None


def resolve_call(func, ctx: Context, local_names: set[str]) -> Callee:
    """What a call of `func` (the node a call calls) in `ctx`'s function refers to, as this pass
    decides it for the calls it annotates; `local_names` are the names the function binds.
    `adjoint.check` asks it about calls no statement makes (a loop's `range(n)`, a lambda's).

    >>> import numpy as np, gast
    >>> from adjoint.compiler.pipeline import lower
    >>> def f(x):
    ...     return np.tanh(x)
    >>> _, ctx = lower(f, (0,), until="within")
    >>> resolve_call(gast.parse("np.tanh").body[0].value, ctx, {"x"}).kind
    'rule'
    """
    return _resolve_call(func, ctx, local_names)


def _resolve_call(func, ctx, local_names) -> Callee:
    text = syntax.dotted(func)
    root = syntax.root_name(func)
    if text is None:  # a call of a computed callee (`adj.method_function(x, "f")(*args)`): run time's
        return Callee(DYNAMIC, syntax.unparse(func).strip())
    if root == ctx.runtime_alias:  # `adj.setitem`, written by `normalize`
        return classify(getattr(runtime, text.split(".", 1)[1]), text)
    if root in local_names:
        return Callee(DYNAMIC, text, method=isinstance(func, gast.Attribute))
    if ctx.is_free_variable(root) and not isinstance(ctx.lookup_global(root), types.ModuleType):
        return Callee(DYNAMIC, text)  # closures sharing this code may hold other callees
    obj = lookup_dotted(text, ctx)
    if obj is UNBOUND:
        return Callee(DYNAMIC, text)  # NameError or AttributeError at run time, as in Python
    callee = classify(obj, text)
    if callee.kind not in (RULE, NON_DIFFERENTIABLE) and isinstance(func, gast.Attribute) and is_object_of_user(
        ctx.lookup_global(root)
    ):
        return Callee(DYNAMIC, text, method=True)  # `model.loss(x)` on a global model: `adj.method_vjp`
    if callee.kind == RULE and isinstance(obj, (types.BuiltinMethodType, types.MethodType)) and registry.unbound(obj) is not None:
        # `W.dot(x)`, `model.score(x)` on a global: `adj.method_vjp`; a method held in a name: `adj.vjp`
        return Callee(DYNAMIC, text, method=isinstance(func, gast.Attribute))
    if callee.kind in (RULE, NON_DIFFERENTIABLE):
        ctx.rely_on(text, obj)  # a rebinding of `text` invalidates the generated code
    return callee


def lookup_dotted(text: str, ctx: Context):
    """What `np.linalg.inv` refers to now in the function's namespace, or `UNBOUND`."""
    root, *parts = text.split(".")
    obj = ctx.lookup_global(root, UNBOUND)
    for part in parts:
        obj = getattr(obj, part, UNBOUND)
    return obj


def classify(obj, text: str) -> Callee:
    """How adjoint differentiates a call of `obj`."""
    rule = registry.lookup(obj)
    if rule is not None:
        return Callee(RULE, text, obj, rule)
    if registry.is_non_differentiable(obj):
        return Callee(NON_DIFFERENTIABLE, text, obj)
    if marked(obj, "__adjoint_rrule__", None) is not None:
        return Callee(DYNAMIC, text, obj)  # a derivative or checkpoint adjoint made: it carries its rules
    if isinstance(obj, types.FunctionType) and not _is_library(obj):
        return Callee(PYTHON, text, obj)
    if isinstance(getattr(obj, "__self__", None), random.Random):
        return Callee(MISSING, text, obj)  # `random.gauss`: a draw, not code of yours to read
    if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        return Callee(DYNAMIC, text, obj)
    if not isinstance(obj, type) and isinstance(getattr(type(obj), "__call__", None), types.FunctionType):
        return Callee(DYNAMIC, text, obj)  # an object with `__call__`: `adj.vjp` calls that method
    if isinstance(obj, functools.partial):
        return Callee(DYNAMIC, text, obj)  # `adj.vjp` calls its function with its arguments
    if runtime.is_constructible(obj):
        return Callee(DYNAMIC, text, obj)  # `Dense(W, b)`: `adj.vjp` builds it, and its pullback unbuilds it
    return Callee(MISSING, text, obj)


def missing_hint(callee, register: str) -> str:
    """What to do about a call adjoint has no rule for."""
    return random_draw_hint(callee.obj) or (
        f"register one with @adjoint.{register}({callee.text}), or mark it @adjoint.non_differentiable"
    )


def random_draw_hint(obj) -> str | None:
    """For a random draw whose parameters carry a gradient: a draw of a constant shape moved and
    scaled, or items picked by drawn positions."""
    owner = getattr(obj, "__self__", None)
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("numpy.random") or isinstance(owner, (np.random.Generator, np.random.RandomState, random.Random)):
        return ("draw without the differentiable parameters and move them in: `mu + sigma * "
                "rng.standard_normal(n)`, or pick items by drawn positions: `x[rng.permutation(len(x))]`")
    return None


def _is_library(fn) -> bool:
    """NumPy's own Python functions are primitives to adjoint, not user code to read."""
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in _LIBRARIES


_LIBRARIES = {"numpy", "scipy", "math", "builtins"}


def _resolve_attribute(node) -> Callee:
    text = f"{syntax.unparse(node.value)}.{node.attr}"
    descriptor = getattr(np.ndarray, node.attr, None)
    if descriptor is None:
        return Callee(FIELD, text)  # `model.W`: what the object holds, read at run time
    return dataclasses.replace(classify(descriptor, text), text=text)


UNBOUND = object()
