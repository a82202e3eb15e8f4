"""Helpers of elementwise rules: quotients that are 0 where their divisor is, a series where a
formula cancels, and cotangents that only float operands take; and the second derivatives
(`sinc_second_derivative`, `trigamma`) that forward mode over a gradient reads through them."""

from __future__ import annotations

import math

import numpy as np

from .cotangents import cotangent_like, is_differentiable, sum_to_shape, unbroadcast

__all__ = ["digamma", "divide_or_zero", "sinc_derivative", "unbroadcast_float"]


def divide_or_zero(numerator, denominator):
    """`numerator / denominator`, and 0 where the denominator is 0: the quotient of a partial
    whose formula divides 0 by 0 at a point where the function is finite (`abs` and `hypot` at
    the origin), which takes the subgradient 0 there rather than nan.

    >>> divide_or_zero(np.array([1.0, 2.0]), np.array([0.0, 4.0])), divide_or_zero(0.0, 0.0)
    (array([0. , 0.5]), np.float64(0.0))
    """
    vanishing = np.equal(denominator, 0)
    return np.where(vanishing, 0, numerator / np.where(vanishing, 1, denominator))[()]


# Below |x| = 0.1 the first six terms of sinc's Taylor series give its slope to double
# precision, while `(cos(pi x) - sinc(x)) / x` loses digits to cancellation (from x / 3 at x = 0,
# (-1)^k 2k pi^2k / (2k + 1)!, the coefficients of x^(2k - 1)).
_SINC_SERIES_BELOW = 0.1
_SINC_SLOPE_COEFFICIENTS = [(-1) ** k * 2 * k * math.pi ** (2 * k) / math.factorial(2 * k + 1) for k in range(1, 7)]


def sinc_derivative(x):
    """The derivative of `np.sinc(x) = sin(pi x) / (pi x)`: `(cos(pi x) - sinc(x)) / x`, or near
    0, where that formula cancels, its Taylor series (0 at 0). Computed in double precision,
    returned in `x`'s precision.

    >>> sinc_derivative(np.array([0.5, 1.0]))  # -4 / pi and -1
    array([-1.27323954, -1.        ])
    """
    dtype = np.result_type(x, np.float64)
    wide = np.asarray(x, dtype=dtype)
    small = np.abs(wide) < _SINC_SERIES_BELOW
    away = np.where(small, 1, wide)
    formula = (np.cos(np.pi * away) - np.sinc(away)) / away
    series = wide * np.polynomial.polynomial.polyval(wide ** 2, _SINC_SLOPE_COEFFICIENTS)
    slope = np.where(small, series, formula)
    precision = getattr(x, "dtype", dtype)
    return slope.astype(precision if precision.kind in "fc" else dtype)[()]


def sinc_second_derivative(x):
    """sinc''(x) = -pi^2 sinc(x) - 2 sinc'(x) / x, and -pi^2 / 3 at 0; `sinc_derivative` has the
    slope to double precision near 0, where it is x times a series, so dividing by x loses nothing.

    >>> sinc_second_derivative(np.array([0.0, 1.0]))  # -pi^2 / 3 and 2
    array([-3.28986813,  2.        ])
    """
    wide = np.asarray(x, dtype=np.result_type(x, np.float64))
    at_zero = wide == 0
    over_x = np.where(at_zero, -np.pi ** 2 / 3, sinc_derivative(wide) / np.where(at_zero, 1, wide))
    curvature = -np.pi ** 2 * np.sinc(wide) - 2 * over_x
    precision = getattr(x, "dtype", wide.dtype)
    return curvature.astype(precision if precision.kind in "fc" else wide.dtype)[()]


def unbroadcast_float(g, x):
    """`unbroadcast(g, x)` for a float or complex operand `x`; for a (nested) list or tuple of
    values that NumPy read as an array, each value's entry of it; None for the rest (an int
    array, a bool, None), which carry no cotangent.

    >>> unbroadcast_float(np.ones((2, 3)), np.zeros(3)), unbroadcast_float(np.ones(3), 0)
    (array([2., 2., 2.]), None)
    >>> unbroadcast_float(np.ones((2, 2)), [0.5, 1])
    [2.0, None]
    """
    if type(x) is list or type(x) is tuple:
        return cotangent_like(sum_to_shape(g, np.shape(x)), x)
    return unbroadcast(g, x) if is_differentiable(x) else None


# Coefficients of digamma's asymptotic series in 1 / x^2, B_2k / 2k (Bernoulli numbers), enough
# for double precision from x = 10 on, where the next term is below 5e-17.
_DIGAMMA_SERIES = [1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12]
_DIGAMMA_SERIES_FROM = 10.0


def digamma(x) -> float:
    """The digamma function psi(x) = d/dx log|gamma(x)|, to double precision, for a real x that
    is not 0 or a negative integer (where gamma has poles).

    Below 1/2 by the reflection psi(x) = psi(1 - x) - pi / tan(pi x); then by the recurrence
    psi(x) = psi(x + 1) - 1 / x up to 10; there the asymptotic series
    log x - 1 / 2x - sum_k B_2k / (2k x^2k).

    >>> round(digamma(1.0), 14)  # minus Euler's constant, 0.5772156649015328...
    -0.57721566490153
    """
    x = float(x)
    if x < 0.5:  # tan has period 1 in pi x: x - round(x) is exact, so near a pole no digits are lost
        return digamma(1 - x) - math.pi / math.tan(math.pi * (x - round(x)))
    shift = 0.0
    while x < _DIGAMMA_SERIES_FROM:
        shift -= 1 / x
        x += 1
    t = 1 / (x * x)
    series = 0.0
    for coefficient in reversed(_DIGAMMA_SERIES):
        series = coefficient + t * series
    return shift + math.log(x) - 0.5 / x - t * series


# psi_1(x) ~ 1/x + 1/2x^2 + sum_k B_2k / x^(2k + 1): from x = 10 on, the next term is below 6e-17.
_TRIGAMMA_SERIES = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510]


def trigamma(x) -> float:
    """psi_1(x), digamma's derivative: as `digamma` computes, by reflection below 1/2
    (psi_1(1 - x) + psi_1(x) = pi^2 / sin^2(pi x)), the recurrence psi_1(x) = psi_1(x + 1) + 1 / x^2
    up to 10, and the asymptotic series there.

    >>> round(trigamma(1.0), 14)  # pi^2 / 6, 1.6449340668482264...
    1.64493406684823
    """
    x = float(x)
    if x < 0.5:
        return (math.pi / math.sin(math.pi * (x - round(x)))) ** 2 - trigamma(1 - x)
    shift = 0.0
    while x < 10.0:
        shift += 1 / (x * x)
        x += 1
    t, series = 1 / (x * x), 0.0
    for coefficient in reversed(_TRIGAMMA_SERIES):
        series = t * (coefficient + series)
    return shift + 1 / x + 0.5 * t + series / x
