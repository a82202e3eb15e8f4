"""The runtime's container updates, which `normalize` makes of Python's in-place statements.

`y[i] = v` becomes `y = adj.setitem(y, i, v)`, `ys.append(v)` becomes `ys = adj.append(ys, v)`
and `np.add.at(y, i, v)` becomes `y = adj.add_at(y, i, v)`: each returns a new container, so
the pullback below still reads the containers as they were before the update.
"""

from .. import runtime as adj
from ..registry import non_differentiable, rrule

# `y = adj.unbound("y")`: what `ssa` binds where Python would have no value yet.
non_differentiable(adj.unbound)


@rrule(adj.setitem, sequences=True)
def setitem_rrule(x, index, value):
    def setitem_pullback(g):
        bars = adj.setitem_bar(g, x, index, value)
        return bars[0], None, bars[1]

    return adj.setitem(x, index, value), setitem_pullback


@rrule(adj.append, sequences=True)
def append_rrule(lst, v):
    def append_pullback(g):
        bars = adj.append_bar(g, v)
        return bars[0], bars[1]

    return adj.append(lst, v), append_pullback


# Every slot `v` was added into passes its cotangent back: a gather, summed where `v` broadcast.
@rrule(adj.add_at)
def add_at_rrule(x, index, value):
    def add_at_pullback(g):
        return g, None, adj.unbroadcast(g[index], value)

    return adj.add_at(x, index, value), add_at_pullback
