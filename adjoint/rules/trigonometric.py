"""Trigonometric, inverse trigonometric and hyperbolic functions, by their partial derivatives.

As in `elementwise`, each partial is the complex derivative for complex inputs, with no
conjugate (JAX's convention). Inverse functions use the form of the derivative whose branch
cuts are NumPy's: `arccosh`'s is `1 / (sqrt(z - 1) sqrt(z + 1))`, not `1 / sqrt(z^2 - 1)`,
which has the opposite sign for Re z < 0. `arctan2` and `hypot` have slope 0 at the origin,
where their values are finite but they have no derivative.
"""

import numpy as np

from .. import runtime as adj
from ..registry import elementwise

# ---- trigonometric ------------------------------------------------------------------------------

@elementwise(np.sin)
def d_sin(ans, x):
    return np.cos(x)


@elementwise(np.cos)
def d_cos(ans, x):
    return -np.sin(x)


@elementwise(np.tan)
def d_tan(ans, x):
    return 1 + ans ** 2


@elementwise(np.sinc)
def d_sinc(ans, x):
    return adj.sinc_derivative(x)


# ---- inverse trigonometric ----------------------------------------------------------------------

@elementwise(np.arcsin)
def d_arcsin(ans, x):
    return 1 / np.sqrt(1 - x ** 2)


@elementwise(np.arccos)
def d_arccos(ans, x):
    return -1 / np.sqrt(1 - x ** 2)


@elementwise(np.arctan)
def d_arctan(ans, x):
    return 1 / (1 + x ** 2)


@elementwise(np.arctan2)
def d_arctan2(ans, y, x):
    return adj.divide_or_zero(x, x ** 2 + y ** 2), adj.divide_or_zero(-y, x ** 2 + y ** 2)


@elementwise(np.hypot)
def d_hypot(ans, a, b):
    return adj.divide_or_zero(a, ans), adj.divide_or_zero(b, ans)


# ---- hyperbolic ---------------------------------------------------------------------------------

@elementwise(np.sinh)
def d_sinh(ans, x):
    return np.cosh(x)


@elementwise(np.cosh)
def d_cosh(ans, x):
    return np.sinh(x)


@elementwise(np.tanh)
def d_tanh(ans, x):
    return 1 - ans ** 2


@elementwise(np.arcsinh)
def d_arcsinh(ans, x):
    return 1 / np.sqrt(x ** 2 + 1)


@elementwise(np.arccosh)
def d_arccosh(ans, x):
    return 1 / (np.sqrt(x - 1) * np.sqrt(x + 1))


@elementwise(np.arctanh)
def d_arctanh(ans, x):
    return 1 / (1 - x ** 2)


# ---- angle conversions ----------------------------------------------------------------------------
# np.pi is a Python float, so float32 partials stay float32.

@elementwise(np.deg2rad, np.radians)
def d_deg2rad(ans, x):
    return np.pi / 180


@elementwise(np.rad2deg, np.degrees)
def d_rad2deg(ans, x):
    return 180 / np.pi
