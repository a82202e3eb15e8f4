"""In-place: refuse updates that adjoint's non-mutating code would not reproduce.

Assumes: a normalized, SSA, resolved function with activity annotations.
Guarantees: reports a problem for
- `x += d` (rewritten as `x = x + d` by `normalize`, never mutating) unless `x` is an array
  only this name refers to: refused when `x` is a parameter (the caller's array, which plain
  Python would update), a copy of another name, a view (`v[0:2]`, `v.T`, a reshape), a part of
  something unpacked, or the result of a call that may return its input; or when `x` itself
  was copied, put in a tuple or list, viewed, or passed to a function that may keep it;
- a call writing into an `out=` array when differentiable values are involved;
- a call made for its effect (its result unused) that is passed a differentiable value and is
  not a non-differentiable function (`h.fill(0)`, `record(h)`): it may update that value;
- any update (`out=`, a call made for its effect, a mutating method such as `.sort()`) of an
  array, differentiable or not, after a differentiated operation read it: the pullback would
  read the updated array (`y = x * w; np.multiply(w, 2, out=w)`).

Before:  y = x[0:2]; y += 1.0       After: TransformError at `y += 1.0`
"""

from __future__ import annotations

import dataclasses
import types

import gast
import numpy as np

from . import annotations as anno
from . import resolve, syntax
from .context import Context

# NumPy primitives whose result may share memory with their first argument.
_VIEWS = {id(f) for f in (np.reshape, np.transpose, np.ravel, np.squeeze, np.expand_dims, np.swapaxes,
                          np.moveaxis, np.broadcast_to, np.asarray, np.asanyarray, np.diagonal,
                          np.real, np.imag, np.ndarray.T, np.atleast_1d, np.atleast_2d, np.atleast_3d)}
_FRESH_MODULES = {"numpy", "math", "builtins", "operator", "_operator"}
_MUTATING_METHODS = {
    "sort", "fill", "put", "resize", "partition", "itemset", "setflags", "append", "extend",
    "insert", "pop", "remove", "clear", "update", "setdefault", "popitem", "reverse",
}


@dataclasses.dataclass
class _Facts:
    """What the checks need to know about the whole function."""

    varied: set[str]
    useful: set[str]
    loaded: set[str]  # every name the function reads
    params: set[str]
    definitions: dict  # name -> the statements assigning it
    shared: set[str]  # names also reachable another way
    first_read: dict[str, int]  # name -> first statement reading it with gradient
    aliases: dict[str, set[str]]  # name -> every name that may refer to the same memory
    modules: set[str]  # free names bound to modules (`np` is not updated by `np.random.shuffle`)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    """Report in-place updates and effect-only calls that cannot be differentiated faithfully."""
    varied, useful = anno.get(node, anno.VARIED), anno.get(node, anno.USEFUL)
    body = [s for s in syntax.statements(node.body) if not syntax.bodies(s)]
    facts = _Facts(
        varied, useful, syntax.load_names(node),
        params={a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs},
        definitions=_definitions(body),
        shared=set().union(*(_aliased_by(stmt) for stmt in body)),
        first_read=_first_differentiated_read(body, varied, useful),
        aliases=_alias_classes(body),
        modules={n for n in syntax.load_names(node) if isinstance(ctx.lookup_global(n), types.ModuleType)}
        | {ctx.runtime_alias},
    )
    for index, stmt in enumerate(body):
        problem = _problem(stmt, index, facts)
        if problem:
            ctx.problem(*problem)
    return node


def _problem(stmt, index, facts: _Facts):
    """`(node, message, hint)` if `stmt` cannot be differentiated faithfully, else None."""
    value = getattr(stmt, "value", None)
    for updated in sorted(_updated_by(stmt, facts)):  # named as the user wrote it
        if any(facts.first_read.get(n, index) < index for n in facts.aliases.get(updated, {updated})):
            return (value, f"this updates `{updated}` after a differentiated operation used it, so the "
                    "pullback would see the updated values", f"update a copy instead, or update `{updated}` before it is used")
    update = anno.get(stmt, anno.IN_PLACE)
    if update is not None:
        return _update_problem(update, stmt.value.left.id, facts)
    if isinstance(value, gast.Call) and _writes_out(value, facts.varied):
        return (value, "this call writes into an array through `out=`, which adjoint cannot differentiate",
                "assign the result to a name instead")
    if isinstance(value, gast.Call) and _only_for_effect(stmt, facts.loaded) and _passes_varied(value, facts.varied):
        return (value, "this call is made for its effect on a differentiable value, which adjoint cannot "
                "differentiate", "use its result, or mark the function @adjoint.non_differentiable")
    return None


def _update_problem(update, updated, facts: _Facts):
    name, sign = update.target.id, syntax.symbol(update.op)
    origins = _origins(updated, facts)
    if updated in facts.shared or any(isinstance(d.value, (gast.Name, gast.Subscript, gast.Attribute)) for d in origins):
        reason = f"`{name}` may also be reached through another name or view here"
    elif not all(_is_fresh(d) for d in origins):
        reason = f"`{name}` comes from a call that may return an array held elsewhere (adjoint cannot tell)"
    else:
        return None
    return (update, f"{reason}, and adjoint does not update arrays in place",
            f"write `{name} = {name} {sign} ...` to make the new value explicit")


def _definitions(body) -> dict:
    definitions: dict = {}
    for stmt in body:
        if isinstance(stmt, gast.Assign):
            for target in _stored(stmt):
                definitions.setdefault(target, []).append(stmt)
    return definitions


def _origins(name, facts, seen=None) -> list:
    """The statements that made `name`'s value, through the copies `ssa` made at joins (a
    parameter has none: the caller's array is never updated, its name is rebound)."""
    seen = set() if seen is None else seen
    if name in seen:
        return []
    seen.add(name)
    found = []
    for definition in facts.definitions.get(name, []):
        if anno.get(definition, anno.PHI):
            found += _origins(definition.value.id, facts, seen)
        else:
            found.append(definition)
    return found


def _first_differentiated_read(body, varied, useful) -> dict[str, int]:
    """For each name an adjoint may read, the first statement that reads it with gradient."""
    first = {}
    for index, stmt in enumerate(body):
        if isinstance(stmt, gast.Assign) and set(_stored(stmt)) & varied & useful:
            for name in syntax.load_names(stmt.value):
                first.setdefault(name, index)
    return first


def _updated_by(stmt, facts: _Facts) -> set[str]:
    """Names whose arrays `stmt` may update in place."""
    value = getattr(stmt, "value", None)
    if not isinstance(value, gast.Call):
        return set()
    callee = anno.get(value, anno.CALLEE)
    updated = set().union(*(syntax.load_names(o) for o in _outputs(value, callee)))
    receiver = syntax.root_name(value.func) if isinstance(value.func, gast.Attribute) else None
    method_name = syntax.dotted(value.func).rsplit(".", 1)[-1]
    effect_only = _only_for_effect(stmt, facts.loaded)
    if receiver and receiver not in facts.modules and (effect_only or method_name in _MUTATING_METHODS):
        updated.add(receiver)  # `w.fill(0)`, `buffer.sort()`
    pure = callee is not None and (callee.kind == resolve.NON_DIFFERENTIABLE or _returns_new_array(callee))
    if effect_only and not pure:
        updated |= {a.id for a in value.args + [k.value for k in value.keywords] if isinstance(a, gast.Name)}
    return updated


def _outputs(call, callee) -> list:
    """The arrays a call writes its result into: `out=`, or a ufunc's extra positional arguments."""
    outputs = [k.value for k in call.keywords if k.arg == "out"]
    ufunc = getattr(callee, "obj", None)
    if isinstance(ufunc, np.ufunc):
        outputs += call.args[ufunc.nin :]
    return outputs


def _alias_classes(body) -> dict[str, set[str]]:
    """Group names that may refer to the same memory: copies, views, containers, and results
    of calls that may return an argument."""
    classes: dict[str, set[str]] = {}
    for stmt in body:
        if not isinstance(stmt, gast.Assign):
            continue
        group = set(_stored(stmt)) | _aliased_by(stmt)
        if len(group) > 1:
            merged = set().union(*(classes.get(n, {n}) for n in group))
            for name in merged:
                classes[name] = merged
    return classes


def _stored(stmt):
    return [n.id for n in gast.walk(stmt.targets[0]) if isinstance(n, gast.Name)]


def _is_fresh(definition) -> bool:
    """Whether the statement defining a name makes a new array no other name refers to."""
    if definition is None or isinstance(definition.targets[0], gast.Tuple):
        return False
    value = definition.value
    if isinstance(value, (gast.BinOp, gast.UnaryOp, gast.Compare, gast.Constant)):
        return True
    return isinstance(value, gast.Call) and _returns_new_array(anno.get(value, anno.CALLEE))


def _returns_new_array(callee) -> bool:
    """A NumPy or built-in primitive known not to return a view of its input."""
    if callee is None or callee.kind not in (resolve.RULE, resolve.NON_DIFFERENTIABLE):
        return False
    module = getattr(callee.obj, "__module__", None) or type(callee.obj).__module__ or ""
    if module == "adjoint.runtime":
        return True  # `adj.setitem` and `adj.append` build new containers
    return module.split(".")[0] in _FRESH_MODULES and id(callee.obj) not in _VIEWS


def _aliased_by(stmt) -> set[str]:
    """Names whose arrays `stmt` makes reachable another way (copy, container, view, call)."""
    value = getattr(stmt, "value", None)
    if anno.get(stmt, anno.PHI):
        return set()  # a join of control flow moves a value, it does not share it
    if isinstance(value, gast.Name):
        return {value.id}
    if isinstance(value, (gast.Tuple, gast.List)):
        return {e.id for e in value.elts if isinstance(e, gast.Name)}
    if isinstance(value, (gast.Subscript, gast.Attribute)) and isinstance(value.value, gast.Name):
        callee = anno.get(value, anno.CALLEE)
        queried = callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE  # x.shape
        return set() if queried else {value.value.id}
    if isinstance(value, gast.Call) and not _returns_new_array(anno.get(value, anno.CALLEE)):
        return {a.id for a in value.args + [k.value for k in value.keywords] if isinstance(a, gast.Name)}
    return set()


def _writes_out(call, varied) -> bool:
    outputs = _outputs(call, anno.get(call, anno.CALLEE))
    return bool(outputs) and bool(syntax.load_names(call) & varied)


def _only_for_effect(stmt, loaded) -> bool:
    if isinstance(stmt, gast.Expr):
        return True
    return isinstance(stmt, gast.Assign) and not set(_stored(stmt)) & loaded


def _passes_varied(call, varied) -> bool:
    callee = anno.get(call, anno.CALLEE)
    if callee is not None and callee.kind == resolve.NON_DIFFERENTIABLE:
        return False
    if callee is not None and callee.kind == resolve.RULE and _returns_new_array(callee):
        return False  # a pure NumPy function whose result is simply unused
    return bool(syntax.load_names(call) & varied)
