"""Complex numbers: real and imaginary parts, conjugates and angles, in JAX's convention.

For a real loss `L` of `z = x + iy`, the cotangent of `z` is `z_bar = dL/dx - i dL/dy`, and
cotangents pair with tangents without a conjugate: `dL = Re(sum(z_bar * dz))`. A holomorphic
function pulls back as `g * f'(z)` and a linear map as its plain transpose; the functions here
are not holomorphic, so each derives its cotangent from that pairing. A real input keeps only
the real part of its cotangent (`adj.cotangent_like`): it has no imaginary direction to move in.
Forward: parts, conjugates and conversions are linear over the reals; the angle is not.
"""

import builtins

import numpy as np

from .. import runtime as adj
from ..frules import frule, linear, lookup
from ..registry import rrule

# ---- parts and conjugates --------------------------------------------------------------------

# `L` sees only `x`: dL/dx = g, dL/dy = 0.
@rrule(np.real, np.ndarray.real)  # and the attribute `z.real`
def real_rrule(val):
    def real_pullback(g):
        return (adj.cotangent_like(g, val),)

    return np.real(val), real_pullback


linear(np.real, np.ndarray.real)


# `L` sees only `y`: dL/dy = g, so z_bar = -i g (zero for a real input, whose imag is constant).
@rrule(np.imag, np.ndarray.imag)  # and the attribute `z.imag`
def imag_rrule(val):
    def imag_pullback(g):
        return (adj.cotangent_like(-1j * g, val),)

    return np.imag(val), imag_pullback


linear(np.imag, np.ndarray.imag)


# `w = conj(z)` flips the sign of `y`, so of dL/dy: z_bar = conj(w_bar).
@rrule(np.conjugate, np.ndarray.conj, np.ndarray.conjugate)  # `np.conj` is `np.conjugate`
def conjugate_rrule(x):
    def conjugate_pullback(g):
        return (adj.cotangent_like(np.conjugate(g), x),)

    return np.conjugate(x), conjugate_pullback


# The methods are called with NumPy scalars too (`np.complex128(1j).conj()`), which
# `np.ndarray.conj` itself refuses: they take the ufunc's rule.
linear(np.conjugate)
frule(np.ndarray.conj, np.ndarray.conjugate)(lookup(np.conjugate).frule)


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


# d angle = Im(conj(z) dz) / |z|^2, the real part of the pullback's partial times the tangent.
@frule(np.angle)
def angle_frule(primals, tangents, **kwargs):
    def angle_jvp(z, deg=False):
        ans = np.angle(z, deg=deg)
        slope = adj.divide_or_zero(np.imag(np.conjugate(z) * adj.tangent_or_zeros(tangents[0], z)), np.abs(z) ** 2)
        return ans, adj.tangent_like(np.rad2deg(slope) if deg else slope, ans)

    return angle_jvp(*primals, **kwargs)


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


# Linear in `re` and `im` jointly, but `complex(re, im)` takes no complex arrays, which tangents
# may be: the tangent is `t_re + i t_im`, converted.
def _complex_conversion_frule(kind):
    def conversion_frule(primals, tangents):
        def conversion_jvp(real=0, imag=None):
            ans = kind(real) if imag is None else kind(real, imag)
            t_real, t_imag = (tuple(tangents) + (None, None))[:2]
            if t_real is None and t_imag is None:
                return ans, adj.zero_tangent(ans)
            tangent = adj.tangent_or_zeros(t_real, real)
            if imag is not None:
                tangent = tangent + 1j * adj.tangent_or_zeros(t_imag, imag)
            return ans, adj.tangent_like(kind(tangent), ans)

        return conversion_jvp(*primals)

    conversion_frule.__name__ = f"{kind.__name__}_frule"
    return conversion_frule


for _kind in (builtins.complex, np.complex128, np.complex64):
    rrule(_kind)(_complex_conversion(_kind))
    frule(_kind)(_complex_conversion_frule(_kind))
