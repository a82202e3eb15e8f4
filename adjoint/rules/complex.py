"""Complex numbers: real and imaginary parts, conjugates and angles, in JAX's convention.

For a real loss `L` of `z = x + iy`, the cotangent of `z` is `z_bar = dL/dx - i dL/dy`, and
cotangents pair with tangents without a conjugate: `dL = Re(sum(z_bar * dz))`. A holomorphic
function pulls back as `g * f'(z)` and a linear map as its plain transpose; the functions here
are not holomorphic, so each derives its cotangent from that pairing. A real input keeps only
the real part of its cotangent (`adj.cotangent_like`): it has no imaginary direction to move in.
"""

import builtins

import numpy as np

from .. import runtime as adj
from ..registry import rrule

# ---- parts and conjugates --------------------------------------------------------------------

# `L` sees only `x`: dL/dx = g, dL/dy = 0.
@rrule(np.real, np.ndarray.real)  # and the attribute `z.real`
def real_rrule(val):
    def real_pullback(g):
        return (adj.cotangent_like(g, val),)

    return np.real(val), real_pullback


# `L` sees only `y`: dL/dy = g, so z_bar = -i g (zero for a real input, whose imag is constant).
@rrule(np.imag, np.ndarray.imag)  # and the attribute `z.imag`
def imag_rrule(val):
    def imag_pullback(g):
        return (adj.cotangent_like(-1j * g, val),)

    return np.imag(val), imag_pullback


# `w = conj(z)` flips the sign of `y`, so of dL/dy: z_bar = conj(w_bar).
@rrule(np.conjugate, np.ndarray.conj, np.ndarray.conjugate)  # `np.conj` is `np.conjugate`
def conjugate_rrule(x):
    def conjugate_pullback(g):
        return (adj.cotangent_like(np.conjugate(g), x),)

    return np.conjugate(x), conjugate_pullback


# ---- angle -------------------------------------------------------------------------------------

# angle = atan2(y, x): dL/dx - i dL/dy = g (-y - ix) / |z|^2 = -i g conj(z) / |z|^2. A real
# input's angle, 0 or pi, is flat on either side, and gets zero; so does z = 0, where NumPy says
# 0 but the angle is undefined (nan-free, as the value is).
@rrule(np.angle)
def angle_rrule(z, deg=False):
    def angle_pullback(g):
        partial = adj.divide_or_zero(-1j * np.conjugate(z), np.abs(z) ** 2)
        return (adj.cotangent_like((np.rad2deg(g) if deg else g) * partial, z),)

    return np.angle(z, deg=deg), angle_pullback


# ---- conversions -------------------------------------------------------------------------------

# `complex(re, im)` is `re + i im`: holomorphic in each, so re_bar = g and im_bar = i g, each
# matched to its input (a real part gets the real part: dL/d(re) = Re(g), dL/d(im) = -Im(g)).
def _complex_conversion(kind):
    def conversion_rrule(real=0, imag=None):
        def conversion_pullback(g):
            return adj.cotangent_like(g, real), adj.cotangent_like(1j * g, imag)

        return kind(real) if imag is None else kind(real, imag), conversion_pullback

    conversion_rrule.__name__ = f"{kind.__name__}_rrule"
    return conversion_rrule


for _kind in (builtins.complex, np.complex128, np.complex64):
    rrule(_kind)(_complex_conversion(_kind))
