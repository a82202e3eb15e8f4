"""Python's `math` module and `float()`: scalar rules that stay `math` in the pullback.

`math.pow` shares the partials of `**`, which handle a zero base or exponent with NumPy.
"""

import builtins
import math

from .. import runtime as adj
from ..registry import elementwise, non_differentiable, rrule
from .elementwise import d_power


@elementwise(math.sin)
def d_sin(ans, x):
    return math.cos(x)


@elementwise(math.cos)
def d_cos(ans, x):
    return -math.sin(x)


@elementwise(math.tan)
def d_tan(ans, x):
    return 1 + ans ** 2


@elementwise(math.exp)
def d_exp(ans, x):
    return ans


@elementwise(math.log)
def d_log(ans, x):
    return 1 / x


@elementwise(math.sqrt)
def d_sqrt(ans, x):
    return 0.5 / ans


@elementwise(math.tanh)
def d_tanh(ans, x):
    return 1 - ans ** 2


@elementwise(math.atan)
def d_atan(ans, x):
    return 1 / (1 + x * x)


@elementwise(math.asin)
def d_asin(ans, x):
    return 1 / math.sqrt(1 - x * x)


@elementwise(math.acos)
def d_acos(ans, x):
    return -1 / math.sqrt(1 - x * x)


@elementwise(math.sinh)
def d_sinh(ans, x):
    return math.cosh(x)


@elementwise(math.cosh)
def d_cosh(ans, x):
    return math.sinh(x)


@elementwise(math.atan2)
def d_atan2(ans, y, x):
    return x / (x * x + y * y), -y / (x * x + y * y)


# At the origin, where hypot has no derivative, 0 (its smallest subgradient).
@elementwise(math.hypot)
def d_hypot(ans, x, y):
    return x / ans if ans else 0.0, y / ans if ans else 0.0


# `math.pow(a, b)` is `a ** b` for floats.
elementwise(math.pow)(d_power)


@rrule(builtins.float)
def float_rrule(x):
    def float_pullback(g):
        return (adj.unbroadcast(g, x),)

    return float(x), float_pullback


non_differentiable(math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite)
