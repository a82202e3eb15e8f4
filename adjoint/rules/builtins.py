"""Python's built-in functions: `sum`, `max` and `min`, and those whose results carry no gradient.

`abs`, `pow` and `float` have their rules next to their NumPy and `math` counterparts.
Forward rules refuse what the reverse rules refuse: `sum` is linear in its items and `start`
jointly, and `max` and `min` return the tangent of the item they chose.
"""

import builtins

from .. import runtime as adj
from ..frules import frule
from ..registry import non_differentiable, rrule


def _bar(g, x):
    """`g` summed to `x`'s shape for a float or array, `g` itself for an item of another kind
    that holds floats (a tuple `max` chose by its key), None for an int or a string."""
    if adj.is_differentiable(x):
        return adj.unbroadcast(g, x)
    return g if isinstance(x, (tuple, list, dict)) or adj.structs.is_struct(x) else None


def _items(iterable, name):
    """The items of `iterable`. An iterator's are listed, since the call uses them up, and
    refused if they are floats: their gradient could not reach what made them."""
    if iter(iterable) is not iterable:
        return iterable
    items = list(iterable)
    if any(adj.is_differentiable(item) for item in items):
        raise adj.RuleError(
            f"adjoint cannot differentiate the built-in {name}() of a generator or other iterator: "
            f"pass it a list instead, `{name}([...])`"
        )
    return items


def _summed(iterable, start):
    """The items `sum(iterable, start)` adds, refused if it would not add numbers or arrays."""
    items = _items(iterable, "sum")
    if isinstance(start, (list, tuple)):
        raise adj.RuleError(
            "adjoint cannot differentiate sum() of lists or tuples, which concatenates them: "
            "concatenate with `+` in a loop, or build the list with a comprehension"
        )
    if any(adj.structs.is_struct(item) or isinstance(item, dict) for item in items):
        raise adj.RuleError(
            "adjoint cannot differentiate sum() of objects, which calls their own `__add__`: add their "
            "fields instead"
        )
    return items


# `sum(items, start)`: every item gets the cotangent (summed to its shape), as does `start`.
@rrule(builtins.sum, sequences=True)
def sum_rrule(iterable, /, start=0):
    items = _summed(iterable, start)

    def sum_pullback(g):
        return adj.unpack_bar([_bar(g, item) for item in items], iterable), _bar(g, start)

    return builtins.sum(items, start), sum_pullback


# Linear in the items and `start` jointly. Not declared `linear`: that would not refuse what the
# reverse rule refuses, such as a generator of floats, whose items' tangents are lost.
@frule(builtins.sum)
def sum_frule(primals, tangents):
    def sum_jvp(iterable, /, start=0):
        items = _summed(iterable, start)
        t_items, t_start = (tuple(tangents) + (None, None))[:2]
        ans = builtins.sum(items, start)
        if t_items is None and t_start is None:
            return ans, adj.zero_tangent(ans)
        tangent = builtins.sum(adj.tangent_or_zeros(t_items, items), adj.tangent_or_zeros(t_start, start))
        return ans, adj.tangent_like(tangent, ans)

    return sum_jvp(*primals)


# `max(a, b, ...)` and `max(items)` return one of their items: it gets the cotangent.
@rrule(builtins.max, sequences=True)
def max_rrule(*args, **kwargs):
    items = _items(args[0], "max") if len(args) == 1 else args
    ans = builtins.max(items, **kwargs)

    def max_pullback(g):
        return _to_chosen(g, items, ans, args)

    return ans, max_pullback


@rrule(builtins.min, sequences=True)
def min_rrule(*args, **kwargs):
    items = _items(args[0], "min") if len(args) == 1 else args
    ans = builtins.min(items, **kwargs)

    def min_pullback(g):
        return _to_chosen(g, items, ans, args)

    return ans, min_pullback


def _chosen_frule(choose):
    """The forward rule of `max` or `min`: the tangent of the item chosen (the first that is
    the result, as in the pullback), zeros for a `default`."""

    def extremum_frule(primals, tangents, **kwargs):
        items = _items(primals[0], choose.__name__) if len(primals) == 1 else primals
        ans = choose(items, **kwargs)
        chosen = _chosen(items, ans)
        parts = tangents[0] if len(primals) == 1 else tangents
        if chosen is None or parts is None or parts[chosen] is None:
            return ans, adj.zero_tangent(ans)
        return ans, adj.tangent_like(parts[chosen], ans)

    extremum_frule.__name__ = extremum_frule.__qualname__ = f"{choose.__name__}_frule"
    return frule(choose)(extremum_frule)


max_frule = _chosen_frule(builtins.max)
min_frule = _chosen_frule(builtins.min)


def _chosen(items, ans):
    """The position of the first item that is `ans`, or None (a `default`)."""
    chosen = next((i for i, item in enumerate(items) if item is ans), None)
    if chosen is None:  # iterating an array makes new scalars: compare values instead
        chosen = next((i for i, item in enumerate(items) if item == ans), None)
    return chosen


def _to_chosen(g, items, ans, args):
    """Cotangents of `args` when `ans`, one of `items`, got `g`: the first item that is `ans`
    (Python returns the first of equal items) gets it, the others zeros."""
    chosen = _chosen(items, ans)
    parts = [_bar(g, item) if i == chosen else adj.zeros_like(item) for i, item in enumerate(items)]
    return (adj.unpack_bar(parts, args[0]),) if len(args) == 1 else tuple(parts)


non_differentiable(
    builtins.len, builtins.range, builtins.isinstance, builtins.issubclass, builtins.type,
    builtins.int, builtins.bool, builtins.round, builtins.print, builtins.repr, builtins.str,
    builtins.id, builtins.hash, builtins.hasattr, builtins.callable, builtins.all, builtins.any,
    builtins.ord, builtins.chr, builtins.ascii, builtins.bin, builtins.hex, builtins.oct, builtins.format,
    builtins.bytes, builtins.dir, builtins.open, builtins.input,
)


# `super(cls, obj)` (which `normalize` writes for `super()`): a view of `obj` whose methods are
# those of `cls`'s base classes; its cotangent is `obj`'s.
@rrule(builtins.super)
def super_rrule(cls, obj, /):
    def super_pullback(g):
        return None, g

    return builtins.super(cls, obj), super_pullback


# The proxy's tangent is its object's: methods called on it read the object's fields.
@frule(builtins.super)
def super_frule(primals, tangents):
    return builtins.super(*primals), (tuple(tangents) + (None, None))[1]
