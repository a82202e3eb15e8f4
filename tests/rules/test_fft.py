"""Rules of adjoint/rules/fft.py (the transforms of np.fft and the shifts), checked directly and
through the compiler: every norm, `n`/`s` cropping and padding (odd and even lengths), axes, real
and complex inputs, float32 and float64."""

import warnings

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, sample, value_id

fft = np.fft
COMPLEX_1D = [fft.fft, fft.ifft]  # complex in, complex out
REAL_1D = [fft.rfft, fft.ihfft]  # real in, half spectrum out
HALF_1D = [fft.irfft, fft.hfft]  # half spectrum in, real out
COMPLEX_2D = [fft.fft2, fft.ifft2, fft.fftn, fft.ifftn]
REAL_2D = [fft.rfft2, fft.rfftn]
HALF_2D = [fft.irfft2, fft.irfftn]
SHIFTS = [fft.fftshift, fft.ifftshift]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = COMPLEX_1D + REAL_1D + HALF_1D + COMPLEX_2D + REAL_2D + HALF_2D + SHIFTS

NORMS = [None, "ortho", "forward"]  # None is "backward" (see test_backward_norm_is_the_default)


# ---- one-dimensional transforms -------------------------------------------------------------------

# The input has length 5 along the transformed axis: `n` crops it (3, 4), keeps it, or pads it (8, 9).
LENGTHS = [None, 3, 4, 8, 9]
# (shape, axis): the transformed axis last, first, or the only one.
LAYOUTS = [((2, 5), -1), ((5, 2), 0), ((5,), 0)]


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("primitive", COMPLEX_1D + REAL_1D, ids=value_id)
def test_transform_of_real_input_matches_finite_differences(rng, primitive, n, norm, layout):
    shape, axis = layout
    check_rrule(primitive, sample(rng, "real", shape), n=n, axis=axis, norm=norm)


@pytest.mark.parametrize("n", [None, 3, 8])
@pytest.mark.parametrize("primitive", COMPLEX_1D + REAL_1D + HALF_1D, ids=value_id)
def test_transform_in_float32_matches_finite_differences(rng, primitive, n):
    domain = "complex" if primitive in HALF_1D else "real"
    check_rrule(primitive, sample(rng, domain, (2, 5), np.float32), n=n, norm="ortho")


@pytest.mark.parametrize("primitive", COMPLEX_1D + REAL_1D + HALF_1D, ids=value_id)
def test_backward_norm_is_the_default(rng, primitive):
    x = sample(rng, "complex" if primitive in HALF_1D else "real", (2, 5))
    check_rrule(primitive, x, n=4, norm="backward")
    np.testing.assert_array_equal(lookup(primitive).rrule(x, n=4)[0], primitive(x, n=4, norm="backward"))


@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("primitive", COMPLEX_1D, ids=value_id)
def test_transform_of_complex_input_matches_finite_differences(rng, primitive, n, norm, dtype):
    check_rrule(primitive, sample(rng, "complex", (2, 5), dtype), n=n, norm=norm)


# The half spectrum has 4 bins along the transformed axis; the default `n` is 6. `n` even or odd
# decides whether the last bin read stands for one frequency or two; 2 and 3 crop the input, 9 pads it.
HALF_LENGTHS = [None, 2, 3, 5, 6, 7, 9]
HALF_LAYOUTS = [((2, 4), -1), ((4, 3), 0)]


@pytest.mark.parametrize("layout", HALF_LAYOUTS, ids=str)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", HALF_LENGTHS)
@pytest.mark.parametrize("primitive", HALF_1D, ids=value_id)
def test_transform_of_half_spectrum_matches_finite_differences(rng, primitive, n, norm, layout):
    shape, axis = layout
    check_rrule(primitive, sample(rng, "complex", shape), n=n, axis=axis, norm=norm)


@pytest.mark.parametrize("n", [None, 5])
@pytest.mark.parametrize("primitive", HALF_1D, ids=value_id)
def test_transform_of_real_half_spectrum_gets_real_cotangent(rng, primitive, n):
    check_rrule(primitive, sample(rng, "real", (2, 4)), n=n)


def test_transform_with_positional_arguments_matches_finite_differences(rng):
    check_rrule(fft.rfft, sample(rng, "real", (3, 4)), 6, 0, "ortho")
    check_rrule(fft.irfft, sample(rng, "complex", (3, 4)), 5, 0)


# ---- n-dimensional transforms ----------------------------------------------------------------------

# On a (3, 4, 5) input: (s, axes); s crops, pads, or mixes the two, and axes may come out of order.
SIZES = [
    (None, None), (None, (0, 2)), (None, (2, 0)), ((3, 4), (0, 2)), ((2, 7), (0, 2)), ((4, 6), (2, 1)),
    ((-1, 8), (1, 2)), ((2, 3, 6), (0, 1, 2)),
]
# For the 2-D transforms, whose default axes are the last two.
SIZES_2D = [(None, (-2, -1)), ((2, 7), (-2, -1)), ((3, 4), (0, 2)), ((4, 6), (2, 1))]


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("domain", ["real", "complex"])
@pytest.mark.parametrize("s, axes", SIZES, ids=str)
@pytest.mark.parametrize("primitive", [fft.fftn, fft.ifftn], ids=value_id)
def test_n_dimensional_transform_matches_finite_differences(rng, primitive, s, axes, domain, norm):
    check_rrule(primitive, sample(rng, domain, (3, 4, 5)), s=s, axes=axes, norm=norm)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("s, axes", SIZES, ids=str)
def test_n_dimensional_real_transform_matches_finite_differences(rng, s, axes, norm):
    check_rrule(fft.rfftn, sample(rng, "real", (3, 4, 5)), s=s, axes=axes, norm=norm)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("domain", ["complex", "real"])
@pytest.mark.parametrize("s, axes", SIZES, ids=str)
def test_n_dimensional_transform_of_half_spectrum_matches_finite_differences(rng, s, axes, domain, norm):
    check_rrule(fft.irfftn, sample(rng, domain, (3, 4, 5)), s=s, axes=axes, norm=norm)


@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("s, axes", SIZES_2D, ids=str)
@pytest.mark.parametrize("primitive", COMPLEX_2D[:2] + REAL_2D[:1], ids=value_id)
def test_two_dimensional_transform_matches_finite_differences(rng, primitive, s, axes, norm, dtype):
    check_rrule(primitive, sample(rng, "real", (3, 4, 5), dtype), s=s, axes=axes, norm=norm)


@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("s, axes", SIZES_2D, ids=str)
@pytest.mark.parametrize("primitive", [fft.fft2, fft.ifft2, fft.irfft2], ids=value_id)
def test_two_dimensional_transform_of_complex_input_matches_finite_differences(rng, primitive, s, axes, norm, dtype):
    check_rrule(primitive, sample(rng, "complex", (3, 4, 5), dtype), s=s, axes=axes, norm=norm)


@pytest.mark.parametrize("s, axes", [(None, None), ((2, 7), (0, 2))], ids=str)
@pytest.mark.parametrize("primitive", [fft.fftn, fft.ifftn, fft.rfftn, fft.irfftn], ids=value_id)
def test_n_dimensional_transform_in_float32_matches_finite_differences(rng, primitive, s, axes):
    domain = "complex" if primitive is fft.irfftn else "real"
    check_rrule(primitive, sample(rng, domain, (3, 4, 5), np.float32), s=s, axes=axes, norm="ortho")


@pytest.mark.parametrize("primitive", [fft.fftn, fft.rfftn, fft.irfftn], ids=value_id)
def test_sizes_without_axes_transform_the_last_axes(rng, primitive):
    x = sample(rng, "complex" if primitive is fft.irfftn else "real", (3, 4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 wants `axes` with `s`
        check_rrule(primitive, x, s=(3, 6))


# ---- shifts ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("domain", ["real", "complex"])
@pytest.mark.parametrize("shape, axes", [((5,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), (-1,)), ((3, 4), (0, 1))],
                         ids=str)
@pytest.mark.parametrize("primitive", SHIFTS, ids=value_id)
def test_shift_rule_matches_finite_differences(rng, primitive, shape, axes, domain, dtype):
    check_rrule(primitive, sample(rng, domain, shape, dtype), axes=axes)


# ---- through the compiler ---------------------------------------------------------------------------

def power_spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def cropped_power_spectrum(x):
    return np.sum(np.abs(np.fft.rfft(x, n=4, axis=0, norm="ortho")) ** 2)


def filtered(x):
    spectrum = np.fft.fft(x, n=8) * np.array([1.0, 0.5, 0.25, 0.0, 0.0, 0.0, 0.25, 0.5])
    return np.sum(np.real(np.fft.ifft(spectrum)) ** 2)


def smoothed_roundtrip(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * np.exp(-np.arange(3.0)), n=5) ** 3)


def centred_magnitudes(x):
    return np.sum(np.abs(np.fft.fftshift(np.fft.fft2(x, s=(4, 4)), axes=(0, 1))) * np.arange(16.0).reshape(4, 4))


def two_dimensional_real(x):
    return np.sum(np.fft.irfft2(np.fft.rfft2(x, norm="forward") ** 2, s=(3, 5)) ** 2)


def n_dimensional(x):
    half = np.fft.rfftn(x, axes=(0, 1))
    return np.sum(np.real(np.fft.ifftn(half, s=(2, 4), axes=(0, 1), norm="ortho")) ** 2)


def hermitian(x):
    return np.sum(np.fft.hfft(np.fft.ihfft(x) * 1j + 1, n=6) ** 2)


def shift_back(x):
    return np.sum(np.fft.ifftshift(np.fft.fftshift(x) * np.arange(5.0), axes=-1) ** 2)


REAL_LOSSES = [
    power_spectrum, cropped_power_spectrum, filtered, smoothed_roundtrip, centred_magnitudes, two_dimensional_real,
    n_dimensional, hermitian, shift_back,
]


@pytest.mark.parametrize("loss", REAL_LOSSES, ids=lambda f: f.__name__)
def test_loss_through_compiler_matches_finite_differences(rng, loss):
    x = sample(rng, "real", (5,) if loss in (smoothed_roundtrip, hermitian, shift_back) else (3, 5))
    check_grad(loss, x)


def complex_filtered(z):
    return np.sum(np.abs(np.fft.ifft2(np.fft.fft2(z, norm="ortho") * np.array([1.0, 2.0, 0.5]))) ** 2)


def test_loss_of_complex_input_through_compiler_matches_finite_differences(rng):
    check_grad(complex_filtered, sample(rng, "complex", (2, 3)))


def parseval(z):
    return np.sum(np.abs(np.fft.fft(z, norm="ortho")) ** 2)


def test_unitary_transform_keeps_the_squared_norm_gradient(rng):
    # With norm="ortho" the DFT is unitary: the loss is sum |z|^2, whose gradient is 2 conj(z).
    z = sample(rng, "complex", (6,))
    np.testing.assert_allclose(adjoint.grad(parseval)(z), 2 * np.conj(z), rtol=1e-12, atol=1e-12)
    x = sample(rng, "real", (6,))
    np.testing.assert_allclose(adjoint.grad(parseval)(x), 2 * x, rtol=1e-12, atol=1e-12)


def test_real_input_in_float32_gets_float32_cotangent(rng):
    x = sample(rng, "real", (3, 5), np.float32)
    g = adjoint.grad(power_spectrum)(x)
    assert g.dtype == np.float32
    check_grad(power_spectrum, x)


@pytest.mark.parametrize("primitive", [fft.fft, fft.rfft, fft.fftn], ids=value_id)
def test_integer_input_gets_no_cotangent(primitive):
    value, back = lookup(primitive).rrule(np.arange(4))
    assert back(np.ones_like(value)) == (None,)


# ---- keywords out of scope --------------------------------------------------------------------------

def fft_into_buffer(x):
    return np.sum(np.abs(np.fft.fft(x, out=np.empty(3, dtype=complex))))


def test_fft_refuses_out_keyword(rng):
    with pytest.raises(adjoint.AdjointError, match="out="):
        adjoint.grad(fft_into_buffer)(sample(rng, "real", (3,)))
