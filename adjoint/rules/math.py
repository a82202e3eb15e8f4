"""Python's `math` module and `float()`: scalar rules that stay `math` in the pullback."""

import builtins
import math

from .. import runtime as adj
from ..registry import elementwise, non_differentiable, rrule


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


@rrule(builtins.float)
def float_rrule(x):
    def float_pullback(g):
        return (adj.unbroadcast(g, x),)

    return float(x), float_pullback


non_differentiable(math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite)
