"""The runtime's container updates, which `normalize` makes of Python's in-place statements.

`y[i] = v` becomes `y = adj.setitem(y, i, v)`, `ys.append(v)` becomes `ys = adj.append(ys, v)`
and `np.add.at(y, i, v)` becomes `y = adj.add_at(y, i, v)`: each returns a new container, so
the pullback below still reads the containers as they were before the update. Each is linear
in the container and the value jointly: the tangent makes the same update to the container's
tangent.
"""

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import non_differentiable, rrule

# `y = adj.unbound("y")`: what `ssa` binds where Python would have no value yet.
non_differentiable(adj.unbound)


@rrule(adj.setitem, sequences=True)
def setitem_rrule(x, index, value):
    def setitem_pullback(g):
        bars = adj.setitem_bar(g, x, index, value)
        return bars[0], None, bars[1]

    return adj.setitem(x, index, value), setitem_pullback


# Forward, the same update is made to the container's tangent; a container of ints or bools has
# none (what is written into it is truncated), so its tangent stays zero.
def _update_frule(update):
    def update_frule(primals, tangents):
        (x, index, value), (dx, _, dvalue) = primals, tangents
        y = update(x, index, value)
        if not adj.holds_floats(y):
            return y, adj.zero_tangent(y)
        return y, update(adj.tangent_or_zeros(dx, x), index, adj.tangent_or_zeros(dvalue, value))

    update_frule.__name__ = update_frule.__qualname__ = f"{update.__name__}_frule"
    return update_frule


frule(adj.setitem)(_update_frule(adj.setitem))


@rrule(adj.append, sequences=True)
def append_rrule(lst, v):
    def append_pullback(g):
        bars = adj.append_bar(g, v)
        return bars[0], bars[1]

    return adj.append(lst, v), append_pullback


linear(adj.append, operands=(0, 1))


# Every slot `v` was added into passes its cotangent back: a gather, summed where `v` broadcast.
@rrule(adj.add_at)
def add_at_rrule(x, index, value):
    def add_at_pullback(g):
        return g, None, adj.unbroadcast(g[index], value)

    return adj.add_at(x, index, value), add_at_pullback


frule(adj.add_at)(_update_frule(adj.add_at))
