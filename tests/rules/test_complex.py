"""Rules of adjoint/rules/complex.py (real, imag, conj, angle, conversions), checked directly and
through the compiler, and the complex convention: for a real loss L of z = x + iy, the gradient
is dL/dx - i dL/dy, estimated here from finite differences in x and y separately."""

import numpy as np
import pytest

import adjoint
from adjoint.registry import lookup
from adjoint.testing import check_grad, check_rrule

from sampling import DTYPES, SHAPES, sample, value_id

PARTS = [np.real, np.imag, np.conj, np.angle]
METHODS = [np.ndarray.conj, np.ndarray.conjugate]
ATTRIBUTES = [np.ndarray.real, np.ndarray.imag]  # `z.real`, `z.imag`: the rules of np.real, np.imag
CONVERSIONS = [complex, np.complex128, np.complex64]

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = PARTS + METHODS + ATTRIBUTES + CONVERSIONS

# "nonzero" keeps real inputs off the step of `angle` at 0; complex ones are almost surely off 0.
DOMAINS = ["complex", "nonzero"]


# ---- the rules, over the grid ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("primitive", PARTS, ids=value_id)
def test_part_rule_matches_finite_differences(rng, primitive, domain, shape, dtype):
    check_rrule(primitive, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("domain", DOMAINS)
def test_angle_in_degrees_matches_finite_differences(rng, domain, dtype):
    check_rrule(np.angle, sample(rng, domain, (2, 3), dtype), deg=True)


# No 0-d arrays: one plus a finite-difference step is a NumPy scalar, which `np.ndarray.conj` refuses.
@pytest.mark.parametrize("dtype", DTYPES, ids=value_id)
@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 3)], ids=str)
@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("method", METHODS, ids=value_id)
def test_conj_method_rule_matches_finite_differences(rng, method, domain, shape, dtype):
    check_rrule(method, sample(rng, domain, shape, dtype))


@pytest.mark.parametrize("attribute, function", [(np.ndarray.real, np.real), (np.ndarray.imag, np.imag)])
def test_attribute_has_the_rule_of_its_function(attribute, function):
    assert lookup(attribute).rrule is lookup(function).rrule


@pytest.mark.parametrize("domain", ["real", "complex"])
@pytest.mark.parametrize("attribute", ATTRIBUTES, ids=["real", "imag"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_attribute_rule_matches_finite_differences(rng, attribute, domain, dtype):
    check_rrule(attribute, sample(rng, domain, (2, 3), dtype))


@pytest.mark.parametrize("args", [
    pytest.param((1.5,), id="float"),
    pytest.param((1.5, -0.5), id="float-float"),
    pytest.param((1 + 1j, 2j), id="complex-complex"),
    pytest.param((0.5, 1 - 2j), id="float-complex"),
])
def test_complex_builtin_rule_matches_finite_differences(args):
    check_rrule(complex, *args)


@pytest.mark.parametrize("shape", [None, (), (3,)], ids=str)
@pytest.mark.parametrize("domain", DOMAINS)
def test_complex128_conversion_rule_matches_finite_differences(rng, domain, shape):
    check_rrule(np.complex128, sample(rng, domain, shape))


def test_complex128_from_two_parts_matches_finite_differences():
    check_rrule(np.complex128, 0.5, -1.5)


def test_conversions_of_single_precision_inputs_give_single_precision_cotangents(rng):
    check_rrule(complex, np.float32(1.5), np.float32(-0.5))
    _, back = lookup(complex).rrule(np.float32(1.5), np.float32(-0.5))
    assert all(type(part) is np.float32 for part in back(1 + 2j))
    for domain in DOMAINS:
        check_rrule(np.complex128, sample(rng, domain, (3,), np.float32))  # checks the cotangent's dtype


def test_complex64_conversion_rule_matches_finite_differences(rng):
    # The conversion rounds to single precision: a step far above that rounding measures the slope.
    check_rrule(np.complex64, sample(rng, "real", (3,), np.float32), eps=1e-1)


# ---- through the compiler -------------------------------------------------------------------------

def real_times_imag(z):
    return np.sum(np.real(z) ** 2 * np.imag(z))


def imag_of_conj_squared(z):
    return np.sum(np.imag(np.conj(z) ** 2 * np.conjugate(z)))


def weighted_angles(z):
    return np.sum(np.angle(z) * np.array([1.0, -2.0, 0.5]))


def squared_angles_in_degrees(z):
    return np.sum(np.angle(z, deg=True) ** 2)


def attribute_parts(z):
    return np.sum(z.real * z.imag ** 2)


def conj_methods(z):
    return np.sum(np.real(z.conj() * z.conjugate() * z))


def squared_modulus(z):
    return np.sum(np.abs(z) ** 2)


def distance_from_one(z):
    return np.sum(np.abs(z * z - 1))


COMPLEX_LOSSES = [
    real_times_imag, imag_of_conj_squared, weighted_angles, squared_angles_in_degrees, attribute_parts,
    conj_methods, squared_modulus, distance_from_one,
]


@pytest.mark.parametrize("loss", COMPLEX_LOSSES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_loss_of_complex_array_through_compiler_matches_finite_differences(rng, loss, dtype):
    check_grad(loss, sample(rng, "complex", (3,), dtype))


def polar(r, t):
    return np.sum(np.imag(r * np.exp(1j * t)) ** 2 + np.real(r * np.exp(1j * t)))


def from_parts(x, y):
    z = x + 1j * y
    return np.sum(np.abs(z * z - 1j))


def builtin_conversion(x, y):
    return abs(complex(x, y) ** 2 - 1j)


def numpy_conversion(x):
    return np.sum(np.abs(np.complex128(x) * (1 + 1j) - 2) ** 2)


def real_part_of_real(x):
    return np.sum(np.real(x) ** 2 + np.imag(x) + np.angle(x) + np.conj(x))


@pytest.mark.parametrize("shape, dtype", [(None, np.float64), ((3,), np.float64), ((3,), np.float32)])
@pytest.mark.parametrize("loss", [polar, from_parts], ids=lambda f: f.__name__)
def test_complex_built_from_real_inputs_through_compiler(rng, loss, shape, dtype):
    check_grad(loss, sample(rng, "positive", shape, dtype), sample(rng, "real", shape, dtype))


def test_conversions_through_compiler(rng):
    check_grad(builtin_conversion, 0.7, -1.2)
    check_grad(numpy_conversion, sample(rng, "real", (3,)))


@pytest.mark.parametrize("shape, dtype", [(None, np.float64), ((2, 3), np.float64), ((2, 3), np.float32)])
def test_real_inputs_get_real_cotangents(rng, shape, dtype):
    x = sample(rng, "nonzero", shape, dtype)
    check_grad(real_part_of_real, x)
    g = adjoint.grad(real_part_of_real)(x)
    assert not np.iscomplexobj(g) and np.result_type(g) == np.result_type(x)
    r, t = adjoint.grad(polar, wrt=(0, 1))(sample(rng, "positive", shape, dtype), sample(rng, "real", shape, dtype))
    assert not np.iscomplexobj(r) and not np.iscomplexobj(t)


@pytest.mark.parametrize("primitive", [np.angle, np.real, np.conj], ids=["np.angle", "np.real", "np.conj"])
def test_integer_input_gets_no_cotangent(primitive):
    value, back = lookup(primitive).rrule(np.array([1, -2, 3]))
    assert back(np.ones(np.shape(value))) == (None,)


def test_complex_of_an_integer_gets_no_cotangent():
    _, back = lookup(complex).rrule(3, 2.0)
    real_bar, imag_bar = back(1 - 2j)
    assert real_bar is None and imag_bar == 2.0


def test_numpy_scalar_gets_a_cotangent_of_its_type():
    # Not a 0-d array: `adj.cotangent_like` matches a NumPy scalar's type, as every rule does.
    cases = [(np.real, np.complex64(1 - 2j)), (np.imag, np.float32(1.5)), (np.complex64, np.float32(0.5)),
             (np.float64, np.float32(0.5)), (np.sum, np.float32(1.5))]
    for primitive, x in cases:
        _, back = lookup(primitive).rrule(x)
        x_bar = back(np.complex64(2 + 1j))[0]
        assert type(x_bar) is type(x), primitive


def real_part_times_complex(z):
    t = np.real(z)  # a Python float for a Python complex `z`
    return np.imag(t * (1 + 1j))


def test_python_float_between_complex_values_gets_real_cotangent():
    check_grad(real_part_times_complex, 1 + 2j)


def test_real_array_between_complex_values_gets_real_cotangent():
    check_grad(real_part_times_complex, np.array(1 + 2j))


# ---- the convention: dL/dx - i dL/dy ------------------------------------------------------------

def readme_example():
    # The README's example, as written there.
    g = adjoint.grad(lambda z: np.abs(z) ** 2)(1 + 2j)
    return g


def test_readme_example_gradient_is_twice_the_conjugate():
    assert readme_example() == 2 - 4j  # 2 * conj(1 + 2j)


def distance_to_target(z):
    return np.abs(z - (3 - 1j)) ** 2


def test_gradient_step_along_the_conjugate_descends():
    z = 0.0 + 0.0j
    for _ in range(50):
        z -= 0.1 * np.conj(adjoint.grad(distance_to_target)(z))
    np.testing.assert_allclose(z, 3 - 1j, atol=1e-4)


WEIGHTS = np.array([0.5 - 1j, 2 + 0.25j, -1 + 1j])


def real_part_of_product(z):
    return np.sum(np.real(z * WEIGHTS))


def sum_of_angles(z):
    return np.sum(np.angle(z))


def expected_gradient(loss, z, eps=1e-6):
    """dL/dx - i dL/dy, each by central differences moving one entry's real or imaginary part."""
    dx, dy = np.zeros(z.shape), np.zeros(z.shape)
    for i in range(z.size):
        step = np.zeros(z.shape)
        step.flat[i] = eps
        dx.flat[i] = (loss(z + step) - loss(z - step)) / (2 * eps)
        dy.flat[i] = (loss(z + 1j * step) - loss(z - 1j * step)) / (2 * eps)
    return dx - 1j * dy


@pytest.mark.parametrize("loss", [squared_modulus, real_part_of_product, sum_of_angles], ids=lambda f: f.__name__)
def test_gradient_of_real_loss_is_dx_minus_i_dy(rng, loss):
    z = sample(rng, "complex", (3,))
    np.testing.assert_allclose(adjoint.grad(loss)(z), expected_gradient(loss, z), rtol=1e-6, atol=1e-8)


# ---- keywords out of scope --------------------------------------------------------------------------

def conj_where(z):
    return np.sum(np.real(np.conj(z, where=np.array([True, False, True]))))


def test_conj_refuses_where_keyword(rng):
    with pytest.raises(adjoint.AdjointError, match="where="):
        adjoint.grad(conj_where)(sample(rng, "complex", (3,)))
