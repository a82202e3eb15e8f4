"""Python's built-in functions: `sum`, `max` and `min`, and those whose results carry no gradient.

`abs`, `pow` and `float` have their rules next to their NumPy and `math` counterparts.
"""

import builtins

from .. import runtime as adj
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


# `sum(items, start)`: every item gets the cotangent (summed to its shape), as does `start`.
@rrule(builtins.sum, sequences=True)
def sum_rrule(iterable, /, start=0):
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

    def sum_pullback(g):
        return adj.unpack_bar([_bar(g, item) for item in items], iterable), _bar(g, start)

    return builtins.sum(items, start), sum_pullback


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


def _to_chosen(g, items, ans, args):
    """Cotangents of `args` when `ans`, one of `items`, got `g`: the first item that is `ans`
    (Python returns the first of equal items) gets it, the others zeros."""
    chosen = next((i for i, item in enumerate(items) if item is ans), None)
    if chosen is None:  # iterating an array makes new scalars: compare values instead
        chosen = next((i for i, item in enumerate(items) if item == ans), None)
    parts = [_bar(g, item) if i == chosen else adj.zeros_like(item) for i, item in enumerate(items)]
    return (adj.unpack_bar(parts, args[0]),) if len(args) == 1 else tuple(parts)


non_differentiable(
    builtins.len, builtins.range, builtins.isinstance, builtins.issubclass, builtins.type,
    builtins.int, builtins.bool, builtins.round, builtins.print, builtins.repr, builtins.str,
    builtins.id, builtins.hash, builtins.hasattr, builtins.callable, builtins.all, builtins.any,
    builtins.ord, builtins.chr,
)


# `super(cls, obj)` (which `normalize` writes for `super()`): a view of `obj` whose methods are
# those of `cls`'s base classes; its cotangent is `obj`'s.
@rrule(builtins.super)
def super_rrule(cls, obj, /):
    def super_pullback(g):
        return None, g

    return builtins.super(cls, obj), super_pullback
