"""Discrete Fourier transforms of `np.fft`: each a linear map, whose transpose is another transform.

In JAX's convention for complex cotangents (see `complex`) a linear map pulls back by its plain
transpose, with no conjugate. The DFT matrix `F[j, k] = c exp(-2 pi i jk / n)` is symmetric,
and so is its inverse, so `fft` transposes to `fft` and `ifft` to `ifft`, with the same `norm`
(the same scale `c`) along the same axes. The rest follows from three facts:

- `n=`/`s=` crop or zero-pad the input before the transform; the transpose pads where it cropped
  and crops where it padded (`adj.unresize`), and a real input keeps the real part.
- `rfft` is the first `n // 2 + 1` rows of `fft`; its transpose is `fft` of the cotangent
  zero-padded to length `n` (the length before halving, which `n=` or the input gives).
- `irfft` reads each bin of a half spectrum once (bin 0 and, for even `n`, bin `n / 2`) or twice
  (itself and its mirror image); its transpose is `ifft` of the cotangent with those bins kept
  and the twice-read ones doubled (`adj.hermitian_fold`).

`hfft` is `irfft` of the conjugate and `ihfft` the conjugate of `rfft`, with `norm` read in the
other direction: they transpose like `irfft` and `rfft` with `fft` and `ifft` swapped.

Forward, each transform and shift is `linear` in its input: the tangent is the same transform
of the input's tangent. For `irfft`, `hfft` (a real output of a complex input) and `ihfft` the map
is only real-linear (it drops imaginary parts or conjugates), which is all a tangent needs.
"""

import numpy as np

from .. import runtime as adj
from ..frules import linear
from ..registry import rrule

# ---- complex transforms --------------------------------------------------------------------------

@rrule(np.fft.fft)
def fft_rrule(a, n=None, axis=-1, norm=None):
    def fft_pullback(g):
        return (adj.unresize(np.fft.fft(g, axis=axis, norm=norm), a),)

    return np.fft.fft(a, n, axis=axis, norm=norm), fft_pullback


linear(np.fft.fft)


@rrule(np.fft.ifft)
def ifft_rrule(a, n=None, axis=-1, norm=None):
    def ifft_pullback(g):
        return (adj.unresize(np.fft.ifft(g, axis=axis, norm=norm), a),)

    return np.fft.ifft(a, n, axis=axis, norm=norm), ifft_pullback


linear(np.fft.ifft)


@rrule(np.fft.fft2)
def fft2_rrule(a, s=None, axes=(-2, -1), norm=None):
    def fft2_pullback(g):
        return (adj.unresize(np.fft.fft2(g, axes=axes, norm=norm), a),)

    return np.fft.fft2(a, s, axes=axes, norm=norm), fft2_pullback


linear(np.fft.fft2)


@rrule(np.fft.ifft2)
def ifft2_rrule(a, s=None, axes=(-2, -1), norm=None):
    def ifft2_pullback(g):
        return (adj.unresize(np.fft.ifft2(g, axes=axes, norm=norm), a),)

    return np.fft.ifft2(a, s, axes=axes, norm=norm), ifft2_pullback


linear(np.fft.ifft2)


@rrule(np.fft.fftn)
def fftn_rrule(a, s=None, axes=None, norm=None):
    transformed = adj.fft_axes(a, s, axes)

    def fftn_pullback(g):
        return (adj.unresize(np.fft.fftn(g, axes=transformed, norm=norm), a),)

    return np.fft.fftn(a, s, axes=axes, norm=norm), fftn_pullback


linear(np.fft.fftn)


@rrule(np.fft.ifftn)
def ifftn_rrule(a, s=None, axes=None, norm=None):
    transformed = adj.fft_axes(a, s, axes)

    def ifftn_pullback(g):
        return (adj.unresize(np.fft.ifftn(g, axes=transformed, norm=norm), a),)

    return np.fft.ifftn(a, s, axes=axes, norm=norm), ifftn_pullback


linear(np.fft.ifftn)


# ---- real transforms: half spectra ---------------------------------------------------------------

@rrule(np.fft.rfft)
def rfft_rrule(a, n=None, axis=-1, norm=None):
    length = np.shape(a)[axis] if n is None else n

    def rfft_pullback(g):
        return (adj.unresize(np.fft.fft(g, length, axis=axis, norm=norm), a),)

    return np.fft.rfft(a, n, axis=axis, norm=norm), rfft_pullback


linear(np.fft.rfft)


@rrule(np.fft.irfft)
def irfft_rrule(a, n=None, axis=-1, norm=None):
    def irfft_pullback(g):
        return (adj.unresize(adj.hermitian_fold(np.fft.ifft(g, axis=axis, norm=norm), axis=axis), a),)

    return np.fft.irfft(a, n, axis=axis, norm=norm), irfft_pullback


linear(np.fft.irfft)


@rrule(np.fft.rfft2)
def rfft2_rrule(a, s=None, axes=(-2, -1), norm=None):
    lengths = adj.fft_lengths(a, s, axes)

    def rfft2_pullback(g):
        return (adj.unresize(np.fft.fft2(g, lengths, axes=axes, norm=norm), a),)

    return np.fft.rfft2(a, s, axes=axes, norm=norm), rfft2_pullback


linear(np.fft.rfft2)


@rrule(np.fft.irfft2)
def irfft2_rrule(a, s=None, axes=(-2, -1), norm=None):
    def irfft2_pullback(g):
        return (adj.unresize(adj.hermitian_fold(np.fft.ifft2(g, axes=axes, norm=norm), axis=axes[-1]), a),)

    return np.fft.irfft2(a, s, axes=axes, norm=norm), irfft2_pullback


linear(np.fft.irfft2)


@rrule(np.fft.rfftn)
def rfftn_rrule(a, s=None, axes=None, norm=None):
    transformed = adj.fft_axes(a, s, axes)
    lengths = adj.fft_lengths(a, s, transformed)

    def rfftn_pullback(g):
        return (adj.unresize(np.fft.fftn(g, lengths, axes=transformed, norm=norm), a),)

    return np.fft.rfftn(a, s, axes=axes, norm=norm), rfftn_pullback


linear(np.fft.rfftn)


@rrule(np.fft.irfftn)
def irfftn_rrule(a, s=None, axes=None, norm=None):
    transformed = adj.fft_axes(a, s, axes)

    def irfftn_pullback(g):
        folded = adj.hermitian_fold(np.fft.ifftn(g, axes=transformed, norm=norm), axis=transformed[-1])
        return (adj.unresize(folded, a),)

    return np.fft.irfftn(a, s, axes=axes, norm=norm), irfftn_pullback


# ---- Hermitian transforms: `irfft` and `rfft` through a conjugate ------------------------------


linear(np.fft.irfftn)

@rrule(np.fft.hfft)
def hfft_rrule(a, n=None, axis=-1, norm=None):
    def hfft_pullback(g):
        return (adj.unresize(adj.hermitian_fold(np.fft.fft(g, axis=axis, norm=norm), axis=axis), a),)

    return np.fft.hfft(a, n, axis=axis, norm=norm), hfft_pullback


linear(np.fft.hfft)


@rrule(np.fft.ihfft)
def ihfft_rrule(a, n=None, axis=-1, norm=None):
    length = np.shape(a)[axis] if n is None else n

    def ihfft_pullback(g):
        return (adj.unresize(np.fft.ifft(g, length, axis=axis, norm=norm), a),)

    return np.fft.ihfft(a, n, axis=axis, norm=norm), ihfft_pullback


# ---- shifts: permutations, undone by the opposite shift --------------------------------------


linear(np.fft.ihfft)

@rrule(np.fft.fftshift)
def fftshift_rrule(x, axes=None):
    def fftshift_pullback(g):
        return (adj.cotangent_like(np.fft.ifftshift(g, axes=axes), x),)

    return np.fft.fftshift(x, axes=axes), fftshift_pullback


linear(np.fft.fftshift)


@rrule(np.fft.ifftshift)
def ifftshift_rrule(x, axes=None):
    def ifftshift_pullback(g):
        return (adj.cotangent_like(np.fft.fftshift(g, axes=axes), x),)

    return np.fft.ifftshift(x, axes=axes), ifftshift_pullback


linear(np.fft.ifftshift)
