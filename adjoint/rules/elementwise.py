"""Elementwise NumPy functions and Python's arithmetic operators, by their partial derivatives.

Each rule gives `d(ans)/d(input)` as a function of the output `ans` and the inputs; the
registry multiplies by the cotangent and unbroadcasts. Partials hold for complex inputs in
JAX's convention (the cotangent of `z = x + iy` is `dL/dx - i dL/dy`): a holomorphic
function's partial is its complex derivative, with no conjugate; `abs`, which is not
holomorphic, has `conj(z) / |z|`. Where a formula would divide 0 by 0 at a point where the
function is finite, the partial is 0 there (`abs` at 0: `adj.divide_or_zero`), as in autograd
and JAX.

Every NumPy ufunc is classified, here or in `trigonometric` (sin ... arctanh, arctan2, hypot,
angle conversions, and `np.sinc`):

- rules: add, subtract, multiply, divide, negative, positive, reciprocal, mod/remainder, fmod,
  divmod, power, float_power, sqrt, cbrt, square, exp, exp2, expm1, log, log2, log10, log1p,
  logaddexp, logaddexp2, abs/absolute, fabs, maximum, minimum, fmax, fmin, copysign,
  heaviside (its second argument, the value at 0, gets the cotangent where the first is 0),
  nextafter, ldexp, frexp, modf; and `np.where`, `np.clip`, `np.nan_to_num` (not ufuncs);
- zero gradient (`non_differentiable`): the piecewise constant floor, ceil, rint, trunc
  (with `np.round`, `np.around`, `np.fix`), sign, signbit, spacing, floor_divide; comparisons,
  isnan/isinf/isfinite/isnat, logical_*; the integer-only bitwise_*, invert, shifts, gcd, lcm;
- elsewhere: conj/conjugate (`complex`); the products matmul, vecdot, matvec, vecmat (`linalg`).

Forward rules come from the partials for all but the functions of two results and the selections
(where, clip, nan_to_num), written out below next to their reverse rules.
"""

import math
import operator

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear
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


@elementwise(np.reciprocal)
def d_reciprocal(ans, x):
    return -ans * ans


# `a - b * floor(a / b)` (Python's `%`) and `a - b * trunc(a / b)` (C's fmod): the quotient is
# locally constant.
@elementwise(operator.mod, np.mod)
def d_mod(ans, a, b):
    return 1, -np.floor(a / b)


@elementwise(np.fmod)
def d_fmod(ans, a, b):
    return 1, -np.trunc(a / b)


# ---- powers and roots -------------------------------------------------------------------------

# d/da is 0 where b = 0 (not 0 * a ** -1 = nan at a = 0), as autograd does; d/db = a ** b log(a),
# taken as 0 where a = 0 (where a ** b is 0 or 1), as JAX does.
@elementwise(operator.pow, np.power, pow, np.float_power)
def d_power(ans, a, b):
    return b * a ** np.where(b == 0, 1, b - 1), ans * np.log(np.where(a == 0, 1.0, a))


@elementwise(np.sqrt)
def d_sqrt(ans, x):
    return 0.5 / ans


@elementwise(np.cbrt)
def d_cbrt(ans, x):
    return 1 / (3 * ans ** 2)


@elementwise(np.square)
def d_square(ans, x):
    return 2 * x


# ---- exponentials and logarithms ----------------------------------------------------------------
# Constants are Python floats (`math.log(2)`), which keep float32 partials float32.

@elementwise(np.exp)
def d_exp(ans, x):
    return ans


@elementwise(np.exp2)
def d_exp2(ans, x):
    return ans * math.log(2)


@elementwise(np.expm1)
def d_expm1(ans, x):
    return ans + 1


@elementwise(np.log)
def d_log(ans, x):
    return 1 / x


@elementwise(np.log2)
def d_log2(ans, x):
    return 1 / (x * math.log(2))


@elementwise(np.log10)
def d_log10(ans, x):
    return 1 / (x * math.log(10))


@elementwise(np.log1p)
def d_log1p(ans, x):
    return 1 / (1 + x)


# The softmax weights of the two operands, exp(a - ans) <= 1: no overflow where exp(a) would.
@elementwise(np.logaddexp)
def d_logaddexp(ans, a, b):
    return np.exp(a - ans), np.exp(b - ans)


@elementwise(np.logaddexp2)
def d_logaddexp2(ans, a, b):
    return np.exp2(a - ans), np.exp2(b - ans)


# ---- magnitude, sign and extrema ----------------------------------------------------------------

# conj(z) / |z|, which is sign(x) for a real x; 0 at 0, as autograd does.
@elementwise(np.abs, abs, operator.abs, np.fabs)
def d_abs(ans, x):
    return adj.divide_or_zero(np.conj(x), ans)


# Ties split the cotangent equally between the two inputs, as autograd does. For fmax and fmin a
# NaN operand is never the result, so the other gets the whole cotangent.
@elementwise(np.maximum, np.minimum, np.fmax, np.fmin)
def d_extremum(ans, a, b):
    return adj.tie_weight(a, ans, b), adj.tie_weight(b, ans, a)


# |a| with the sign of b, so sign(a) * sign(ans) (0 at a = 0, like abs); b only flips the sign.
@elementwise(np.copysign)
def d_copysign(ans, a, b):
    return np.sign(a) * np.sign(ans), 0


# A step at a = 0, where the value is b.
@elementwise(np.heaviside)
def d_heaviside(ans, a, b):
    return 0, a == 0


# The neighbouring float of a towards b: a itself, to within one unit in the last place.
@elementwise(np.nextafter)
def d_nextafter(ans, a, b):
    return 1, 0


# a * 2 ** i for an integer exponent i.
@elementwise(np.ldexp)
def d_ldexp(ans, a, i):
    return 2.0 ** i, None


# ---- functions with two results ------------------------------------------------------------------
# A result nothing used has the cotangent None, which `adj.item_bar` makes zeros.

# The fractional part's slope is 1; the integral part's, 0.
@rrule(np.modf)
def modf_rrule(x):
    ans = np.modf(x)

    def modf_pullback(g):
        return (adj.unbroadcast_float(adj.item_bar(g, 0, ans[0]), x),)

    return ans, modf_pullback


@frule(np.modf)
def modf_frule(primals, tangents):
    ans = np.modf(*primals)
    return ans, adj.tangent_like((tangents[0], None), ans)


# x = mantissa * 2 ** exponent, with an integer exponent: d mantissa / dx = 2 ** -exponent.
@rrule(np.frexp)
def frexp_rrule(x):
    ans = np.frexp(x)

    def frexp_pullback(g):
        return (adj.unbroadcast_float(adj.item_bar(g, 0, ans[0]) * 2.0 ** -ans[1], x),)

    return ans, frexp_pullback


@frule(np.frexp)
def frexp_frule(primals, tangents):
    ans = np.frexp(*primals)
    t = tangents[0]
    return ans, adj.tangent_like((None if t is None else t * 2.0 ** -ans[1], None), ans)


# The quotient floor(a / b) is locally constant; the remainder is `a % b`.
@rrule(np.divmod, divmod)
def divmod_rrule(a, b):
    ans = divmod(a, b)

    def divmod_pullback(g):
        remainder_bar = adj.item_bar(g, 1, ans[1])
        return (adj.unbroadcast_float(remainder_bar, a), adj.unbroadcast_float(-remainder_bar * ans[0], b))

    return ans, divmod_pullback


@frule(np.divmod, divmod)
def divmod_frule(primals, tangents):
    (a, b), (t_a, t_b) = primals, (tuple(tangents) + (None, None))[:2]
    ans = divmod(a, b)
    if t_a is None and t_b is None:
        return ans, adj.zero_tangent(ans)
    remainder = adj.tangent_or_zeros(t_a, a) - adj.tangent_or_zeros(t_b, b) * ans[0]
    return ans, adj.tangent_like((None, remainder), ans)


# ---- selection -----------------------------------------------------------------------------------

@rrule(np.where)
def where_rrule(condition, x, y):
    def where_pullback(g):
        return (
            None,
            adj.unbroadcast_float(np.where(condition, g, 0), x),
            adj.unbroadcast_float(np.where(condition, 0, g), y),
        )

    return np.where(condition, x, y), where_pullback


linear(np.where, operands=(1, 2))  # the condition held fixed


# NumPy clips as `minimum(maximum(a, low), high)`: the cotangent goes to whichever of the three
# the result is, `a` first at ties. Bounds come by position (`a_min`, `a_max`; an array's
# `x.clip(low, high)`) or by keyword (those, or `min=`, `max=`); those passed by keyword, like
# every keyword, get no cotangent (the registry drops what the pullback gives them); so only a
# positional `a_min` needs its mask, and then `min=` was not given.
@rrule(np.clip, np.ndarray.clip)
def clip_rrule(a, a_min=None, a_max=None, *, min=None, max=None):
    ans = np.clip(a, a_min if min is None else min, a_max if max is None else max)

    def clip_pullback(g):
        high = a_max if max is None else max
        to_a = ans == a
        to_high = (ans == high) & (ans != a)
        to_low = (ans == a_min) & (ans != a) & (ans != high)
        return (
            adj.unbroadcast_float(np.where(to_a, g, 0), a),
            adj.unbroadcast_float(np.where(to_low, g, 0), a_min),
            adj.unbroadcast_float(np.where(to_high, g, 0), a_max),
        )

    return ans, clip_pullback


# The tangent of whichever of the three the result is, chosen as in the pullback.
@frule(np.clip, np.ndarray.clip)
def clip_frule(primals, tangents, **kwargs):
    def clip_jvp(a, a_min=None, a_max=None, *, min=None, max=None):
        high = a_max if max is None else max
        ans = np.clip(a, a_min if min is None else min, high)
        to_a = ans == a
        to_high = (ans == high) & (ans != a)
        to_low = (ans == a_min) & (ans != a) & (ans != high)
        tangent = 0.0
        for chosen, t, operand in zip((to_a, to_low, to_high), tangents, (a, a_min, a_max)):
            if t is not None:
                tangent = tangent + np.where(chosen, adj.tangent_or_zeros(t, operand), 0)
        return ans, adj.tangent_like(tangent, ans)

    return clip_jvp(*primals, **kwargs)


# The cotangent passes where `x` is finite; entries NumPy replaced get none. `copy=False`, which
# overwrites `x`, is refused.
@rrule(np.nan_to_num)
def nan_to_num_rrule(x, *, nan=0.0, posinf=None, neginf=None):
    def nan_to_num_pullback(g):
        return (adj.unbroadcast_float(np.where(np.isfinite(x), g, 0), x),)

    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf), nan_to_num_pullback


@frule(np.nan_to_num)
def nan_to_num_frule(primals, tangents, **kwargs):
    def nan_to_num_jvp(x, *, nan=0.0, posinf=None, neginf=None):
        ans = np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
        return ans, adj.tangent_like(np.where(np.isfinite(x), adj.tangent_or_zeros(tangents[0], x), 0), ans)

    return nan_to_num_jvp(*primals, **kwargs)


# ---- piecewise constant or integer-valued: zero gradient wherever they are defined ----------------

non_differentiable(
    operator.floordiv, np.floor_divide, np.floor, np.ceil, np.rint, np.trunc, np.fix, np.round,
    np.around, np.ndarray.round, np.sign, np.signbit, np.spacing,
    np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
    np.isnan, np.isinf, np.isfinite, np.isnat, np.isposinf, np.isneginf,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not,
    np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.bitwise_count, np.invert, np.left_shift,
    np.right_shift, np.gcd, np.lcm,
)
