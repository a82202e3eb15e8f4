"""Python's `math` module and `float()`: scalar rules that stay `math` in the pullback.

The partials of NumPy's functions that are plain arithmetic (`np.log10`'s, `**`'s) serve
`math`'s namesakes too; `math.pow` shares those of `**`, which handle a zero base or exponent.
Where a formula would divide 0 by 0 at a point where the function is finite (`fabs`, `hypot`
and `dist` at 0), the slope is 0 there, as for NumPy's. `math.prod`, `math.fsum` and
`math.dist` take sequences of floats, whose cotangents are sequences of the same type.
Forward: `math.fsum` and `float()` are linear; `math.prod`'s tangent pairs its partials with
the items' tangents, `math.dist`'s is the unit vector from q to p against `t_p - t_q`.
"""

import builtins
import math

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
from ..registry import elementwise, non_differentiable, rrule
from .elementwise import d_cbrt, d_exp2, d_expm1, d_ldexp, d_log1p, d_log2, d_log10, d_nextafter, d_power
from .reductions import unary_frule

# ---- trigonometric and hyperbolic --------------------------------------------------------------

@elementwise(math.sin)
def d_sin(ans, x):
    return math.cos(x)


@elementwise(math.cos)
def d_cos(ans, x):
    return -math.sin(x)


@elementwise(math.tan)
def d_tan(ans, x):
    return 1 + ans ** 2


@elementwise(math.atan)
def d_atan(ans, x):
    return 1 / (1 + x * x)


@elementwise(math.asin)
def d_asin(ans, x):
    return 1 / math.sqrt(1 - x * x)


@elementwise(math.acos)
def d_acos(ans, x):
    return -1 / math.sqrt(1 - x * x)


@elementwise(math.atan2)
def d_atan2(ans, y, x):
    return x / (x * x + y * y), -y / (x * x + y * y)


# At the origin, where hypot has no derivative, 0 (its smallest subgradient).
@elementwise(math.hypot)
def d_hypot(ans, x, y):
    return x / ans if ans else 0.0, y / ans if ans else 0.0


@elementwise(math.sinh)
def d_sinh(ans, x):
    return math.cosh(x)


@elementwise(math.cosh)
def d_cosh(ans, x):
    return math.sinh(x)


@elementwise(math.tanh)
def d_tanh(ans, x):
    return 1 - ans ** 2


@elementwise(math.asinh)
def d_asinh(ans, x):
    return 1 / math.sqrt(x * x + 1)


@elementwise(math.acosh)
def d_acosh(ans, x):
    return 1 / math.sqrt(x * x - 1)


@elementwise(math.atanh)
def d_atanh(ans, x):
    return 1 / (1 - x * x)


@elementwise(math.degrees)
def d_degrees(ans, x):
    return 180 / math.pi


@elementwise(math.radians)
def d_radians(ans, x):
    return math.pi / 180


# ---- exponentials, logarithms, powers ------------------------------------------------------------
# `math.exp2` and `math.cbrt` are new in Python 3.11, the oldest adjoint supports.

@elementwise(math.exp)
def d_exp(ans, x):
    return ans


@elementwise(math.log)
def d_log(ans, x):
    return 1 / x


@elementwise(math.sqrt)
def d_sqrt(ans, x):
    return 0.5 / ans


elementwise(math.expm1)(d_expm1)
elementwise(math.exp2)(d_exp2)
elementwise(math.log2)(d_log2)
elementwise(math.log10)(d_log10)
elementwise(math.log1p)(d_log1p)
elementwise(math.cbrt)(d_cbrt)
elementwise(math.pow)(d_power)  # `math.pow(a, b)` is `a ** b` for floats
elementwise(math.ldexp)(d_ldexp)  # a * 2 ** i, for an integer i


# ---- magnitude, sign and remainders --------------------------------------------------------------

# |x| / x, the sign of x; 0 at 0, like abs.
@elementwise(math.fabs)
def d_fabs(ans, x):
    return ans / x if x else 0.0


# |x| with y's sign: ans / x is +-1 (0 at x = 0, like fabs); y only flips the sign.
@elementwise(math.copysign)
def d_copysign(ans, x, y):
    return ans / x if x else 0.0, 0.0


# The neighbouring float of a towards b: a itself, to within one unit in the last place.
elementwise(math.nextafter)(d_nextafter)


# `fmod(a, b) = a - b trunc(a / b)` and `remainder(a, b) = a - b round(a / b)`: the quotient q
# is locally constant, so d/db = -q = (ans - a) / b (a form that, unlike `math.trunc`, also
# takes NumPy's scalars and NaN).
@elementwise(math.fmod, math.remainder)
def d_fmod(ans, a, b):
    return 1.0, (ans - a) / b


# ---- special functions ---------------------------------------------------------------------------

@elementwise(math.erf)
def d_erf(ans, x):
    return 2 / math.sqrt(math.pi) * math.exp(-x * x)


@elementwise(math.erfc)
def d_erfc(ans, x):
    return -2 / math.sqrt(math.pi) * math.exp(-x * x)


# d/dx log|gamma(x)| is the digamma function, which `math` lacks.
@elementwise(math.lgamma)
def d_lgamma(ans, x):
    return adj.digamma(x)


@elementwise(math.gamma)
def d_gamma(ans, x):
    return ans * adj.digamma(x)


# ---- sums, products and distances of sequences ---------------------------------------------------

# Each float gets the product of the others (and `start`), exact where some are 0; a sequence
# of arrays multiplies them entrywise.
@rrule(math.prod, sequences=True)
def prod_rrule(iterable, *, start=1):
    def prod_pullback(g):
        return (adj.prod_bar(g * start, iterable, axis=0),)

    return math.prod(iterable, start=start), prod_pullback


# A generator's items have no tangent: it gets zero, as it gets no cotangent.
@unary_frule(math.prod)
def prod_jvp(t, items, ans, *, start=1):
    return np.sum(adj.prod_bar(start, items, axis=0) * t, axis=0)


@rrule(math.fsum, sequences=True)
def fsum_rrule(seq):
    def fsum_pullback(g):
        return (adj.unreduce(g, seq),)

    return math.fsum(seq), fsum_pullback


linear(math.fsum)


# The unit vector from q to p, and the zero subgradient where the points coincide.
@rrule(math.dist, sequences=True)
def dist_rrule(p, q):
    ans = math.dist(p, q)

    def dist_pullback(g):
        direction = adj.divide_or_zero(np.subtract(np.asarray(p, dtype=float), np.asarray(q, dtype=float)), ans)
        return adj.cotangent_like(g * direction, p), adj.cotangent_like(-g * direction, q)

    return ans, dist_pullback


@frule(math.dist)
def dist_frule(primals, tangents):
    (p, q), (t_p, t_q) = primals, (tuple(tangents) + (None, None))[:2]
    ans = math.dist(p, q)
    direction = adj.divide_or_zero(np.subtract(p, q), ans)
    change = np.subtract(adj.tangent_or_zeros(t_p, p), adj.tangent_or_zeros(t_q, q))
    return ans, adj.tangent_like(np.sum(direction * change), ans)


# ---- conversion -----------------------------------------------------------------------------------

@rrule(builtins.float)
def float_rrule(x):
    def float_pullback(g):
        return (adj.unbroadcast(g, x),)

    return float(x), float_pullback


linear(builtins.float)


# ---- functions with two results ------------------------------------------------------------------

# As NumPy's: the fractional part's slope is 1, the integral part's 0; x = mantissa * 2 ** exponent
# with an integer exponent, so d mantissa / dx = 2 ** -exponent.
@rrule(math.modf)
def modf_rrule(x):
    ans = math.modf(x)

    def modf_pullback(g):
        return (adj.unbroadcast_float(adj.item_bar(g, 0, ans[0]), x),)

    return ans, modf_pullback


@frule(math.modf)
def modf_frule(primals, tangents):
    ans = math.modf(*primals)
    return ans, adj.tangent_like((tangents[0], None), ans)


@rrule(math.frexp)
def frexp_rrule(x):
    ans = math.frexp(x)

    def frexp_pullback(g):
        return (adj.unbroadcast_float(adj.item_bar(g, 0, ans[0]) * 2.0 ** -ans[1], x),)

    return ans, frexp_pullback


@frule(math.frexp)
def frexp_frule(primals, tangents):
    ans = math.frexp(*primals)
    t = tangents[0]
    return ans, adj.tangent_like((None if t is None else t * 2.0 ** -ans[1], None), ans)


# ---- piecewise constant, integer-valued or boolean: no gradient ----------------------------------

non_differentiable(
    math.floor, math.ceil, math.trunc, math.isnan, math.isinf, math.isfinite, math.isclose, math.ulp,
    math.factorial, math.comb, math.perm, math.gcd, math.lcm, math.isqrt,
)
