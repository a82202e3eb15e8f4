"""Helpers of the FFT rules: cotangents of transforms that crop, pad or fold their input.

Cotangents of complex values follow JAX's convention: for a real loss `L` of `z = x + iy`,
`z_bar = dL/dx - i dL/dy`, paired with tangents without a conjugate. A real input has no
imaginary direction, so it keeps only the real part of what flows back to it
(`cotangent_like`). Transforms that crop or zero-pad their input (`n=`, `s=`) give back a
cotangent padded where they cropped and cropped where they padded (`unresize`).
"""

from __future__ import annotations

import numpy as np

from .cotangents import cotangent_like

__all__ = ["unresize", "hermitian_fold", "fft_axes", "fft_lengths"]


def unresize(g, x):
    """Cotangent of `x` in a transform that cropped or zero-padded it to `g`'s shape (`n=`,
    `s=`): `g` zero-padded where the transform cropped, cropped where it padded, and matched
    to `x` (`cotangent_like`).

    >>> unresize(np.array([1 + 1j, 2 + 0j, 3 - 1j]), np.zeros(2))
    array([1., 2.])
    >>> unresize(np.array([1.0, 2.0]), np.zeros(4))
    array([1., 2., 0., 0.])
    """
    shape = np.shape(x)
    if np.shape(g) != shape:
        kept = tuple(slice(0, min(n, m)) for n, m in zip(np.shape(g), shape))
        fitted = np.zeros(shape, dtype=np.result_type(g))
        fitted[kept] = g[kept]
        g = fitted
    return cotangent_like(g, x)


def hermitian_fold(spectrum, axis=-1):
    """The transpose of how `irfft` extends a half spectrum to a Hermitian one: the first
    `n // 2 + 1` bins of a length-`n` `spectrum` along `axis`, each doubled that stands for
    itself and its mirror image (all but bin 0 and, for even `n`, bin `n / 2`).

    >>> hermitian_fold(np.array([1.0, 1.0, 1.0, 1.0])), hermitian_fold(np.array([1.0, 1.0, 1.0]))
    (array([1., 2., 1.]), array([1., 2.]))
    """
    n = np.shape(spectrum)[axis]
    half = np.take(spectrum, np.arange(n // 2 + 1), axis=axis)
    weights = np.full(n // 2 + 1, 2.0, dtype=half.real.dtype)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    along_axis = [1] * half.ndim
    along_axis[axis] = -1
    return half * weights.reshape(along_axis)


def fft_axes(a, s=None, axes=None):
    """The axes an n-dimensional transform of `a` (`np.fft.fftn(a, s, axes)`) runs along:
    `axes`, or the last `len(s)` axes, or all.

    >>> fft_axes(np.zeros((2, 3, 4)), s=(5, 6)), fft_axes(np.zeros((2, 3))), fft_axes(np.zeros((2, 3)), axes=(0,))
    ([-2, -1], [-2, -1], [0])
    """
    if axes is not None:
        return list(axes)
    return list(range(-len(np.shape(a) if s is None else s), 0))


def fft_lengths(a, s, axes):
    """The lengths `a` is cropped or zero-padded to along `axes` by a transform given `s`:
    `s`, with `a`'s own length where `s` is None or says -1.

    >>> fft_lengths(np.zeros((2, 3)), None, [0, 1]), fft_lengths(np.zeros((2, 3)), (-1, 8), [0, 1])
    ([2, 3], [2, 8])
    """
    shape = np.shape(a)
    if s is None:
        return [shape[axis] for axis in axes]
    return [shape[axis] if n == -1 else n for n, axis in zip(s, axes)]
