"""Elementwise NumPy functions and Python's arithmetic operators, by their partial derivatives.

Each rule gives `d(ans)/d(input)` as a function of the output `ans` and the inputs; the
registry multiplies by the cotangent and unbroadcasts. Ties of `maximum`/`minimum` split the
cotangent equally between the two inputs, as autograd does.
"""

import operator

import numpy as np

from .. import runtime as adj
from ..registry import elementwise, non_differentiable, rrule

# ---- arithmetic -------------------------------------------------------------------------------

@elementwise(operator.add, np.add)
def d_add(ans, a, b):
    return 1, 1


@elementwise(operator.sub, np.subtract)
def d_subtract(ans, a, b):
    return 1, -1


@elementwise(operator.mul, np.multiply)
def d_multiply(ans, a, b):
    return b, a


@elementwise(operator.truediv, np.divide)
def d_divide(ans, a, b):
    return 1 / b, -ans / b


@elementwise(operator.neg, np.negative)
def d_negative(ans, a):
    return -1


@elementwise(operator.pos, np.positive)
def d_positive(ans, a):
    return 1


@elementwise(operator.mod, np.mod)
def d_mod(ans, a, b):
    return 1, -np.floor(a / b)


# ---- powers and roots -------------------------------------------------------------------------

# d/da is 0 where b = 0 (not 0 * a ** -1 = nan at a = 0), as autograd does; d/db = a ** b log(a),
# taken as 0 where a = 0 (where a ** b is 0 or 1), as JAX does.
@elementwise(operator.pow, np.power, pow)
def d_power(ans, a, b):
    return b * a ** np.where(b == 0, 1, b - 1), ans * np.log(np.where(a == 0, 1.0, a))


@elementwise(np.sqrt)
def d_sqrt(ans, x):
    return 0.5 / ans


@elementwise(np.square)
def d_square(ans, x):
    return 2 * x


# ---- exponentials and logarithms ----------------------------------------------------------------

@elementwise(np.exp)
def d_exp(ans, x):
    return ans


@elementwise(np.expm1)
def d_expm1(ans, x):
    return ans + 1


@elementwise(np.log)
def d_log(ans, x):
    return 1 / x


@elementwise(np.log1p)
def d_log1p(ans, x):
    return 1 / (1 + x)


# ---- trigonometric and hyperbolic -------------------------------------------------------------

@elementwise(np.sin)
def d_sin(ans, x):
    return np.cos(x)


@elementwise(np.cos)
def d_cos(ans, x):
    return -np.sin(x)


@elementwise(np.tan)
def d_tan(ans, x):
    return 1 + ans ** 2


@elementwise(np.tanh)
def d_tanh(ans, x):
    return 1 - ans ** 2


# ---- magnitude, extrema and selection -----------------------------------------------------------

@elementwise(np.abs, abs)
def d_abs(ans, x):
    return np.sign(x)


@elementwise(np.maximum, np.minimum)
def d_extremum(ans, a, b):
    return adj.tie_weight(a, ans, b), adj.tie_weight(b, ans, a)


@rrule(np.where)
def where_rrule(condition, x, y):
    def where_pullback(g):
        return (
            None,
            adj.unbroadcast(np.where(condition, g, 0), x),
            adj.unbroadcast(np.where(condition, 0, g), y),
        )

    return np.where(condition, x, y), where_pullback


# NumPy clips as `minimum(maximum(a, low), high)`: the cotangent goes to whichever of the three
# the result is, `a` first at ties. Bounds passed by keyword, like every keyword, get none.
@rrule(np.clip, np.ndarray.clip)
def clip_rrule(a, *bounds, **keyword_bounds):
    low, high = (*bounds, None, None)[:2]
    low = keyword_bounds.get("a_min", keyword_bounds.get("min", low))
    high = keyword_bounds.get("a_max", keyword_bounds.get("max", high))
    ans = np.clip(a, *bounds, **keyword_bounds)

    def clip_pullback(g):
        to_a = ans == a
        to_high = ~to_a & (ans == high)
        to_low = ~to_a & ~to_high & (ans == low)
        bounds_bar = [
            None if bound is None else adj.unbroadcast(np.where(to, g, 0), bound)
            for to, bound in zip((to_low, to_high), bounds)
        ]
        return (adj.unbroadcast(np.where(to_a, g, 0), a), *bounds_bar)

    return ans, clip_pullback


# ---- piecewise constant: zero gradient everywhere they are defined ---------------------------------

non_differentiable(
    operator.floordiv, np.floor_divide, np.sign, np.floor, np.ceil, np.round, np.rint, np.trunc,
    np.isnan, np.isinf, np.isfinite, np.greater, np.greater_equal, np.less, np.less_equal,
    np.equal, np.not_equal, np.logical_and, np.logical_or, np.logical_not,
)
