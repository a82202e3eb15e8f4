"""adjoint/runtime/linear.py: a matrix product's cotangent helpers take a cotangent broadcast
beyond the product's shape (`(a @ b) + c`, `c` larger) and sum it down themselves, on the fast
paths (matrices, a matrix times a vector) and the general one (vectors, stacks) alike."""

import numpy as np
import pytest

from adjoint.runtime.linear import matmul_lhs_bar, matmul_rhs_bar, product_shape

RNG = np.random.default_rng(0)

# (a's shape, b's shape, g's shape, the axes of g to sum (keeping them) to reach a @ b's shape,
#  then how many leading axes to drop)
BROADCAST = [
    pytest.param((2, 3), (3, 4), (5, 2, 4), (0,), 1, id="matrices-leading-axis"),
    pytest.param((1, 3), (3, 1), (4, 5), (0, 1), 0, id="matrices-stretched-ones"),
    pytest.param((2, 3), (3, 1), (2, 6), (1,), 0, id="matrices-stretched-columns"),
    pytest.param((1, 3), (3, 4), (6, 4), (0,), 0, id="matrices-stretched-rows"),
    pytest.param((2, 3), (3,), (5, 2), (0,), 1, id="matrix-vector"),
    pytest.param((1, 3), (3,), (4,), (0,), 0, id="matrix-vector-stretched"),
    pytest.param((3,), (3, 4), (2, 4), (0,), 1, id="vector-matrix"),
    pytest.param((3,), (3,), (4,), (0,), 1, id="vectors"),
    pytest.param((5, 1, 3), (3, 4), (6, 5, 2, 4), (0, 2), 1, id="stack-leading-and-stretched"),
    pytest.param((1, 2, 3), (5, 3, 4), (7, 5, 2, 4), (0,), 1, id="broadcast-batch"),
]


def summed_by_hand(g, axes, dropped):
    g = np.sum(g, axis=axes, keepdims=True)
    return g.reshape(g.shape[dropped:])


@pytest.mark.parametrize("a_shape, b_shape, g_shape, axes, dropped", BROADCAST)
def test_a_broadcast_cotangent_is_summed_down_to_the_product_first(a_shape, b_shape, g_shape, axes, dropped):
    a, b, g = RNG.normal(size=a_shape), RNG.normal(size=b_shape), RNG.normal(size=g_shape)
    product = a @ b
    summed = summed_by_hand(g, axes, dropped)
    assert np.broadcast_shapes(product.shape, g.shape) == g.shape and summed.shape == product.shape
    lhs, rhs = matmul_lhs_bar(g, a, b), matmul_rhs_bar(g, a, b)
    assert lhs.shape == a.shape and rhs.shape == b.shape
    np.testing.assert_allclose(lhs, matmul_lhs_bar(summed, a, b), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rhs, matmul_rhs_bar(summed, a, b), rtol=1e-12, atol=1e-12)
    # and the adjoint identity with the summed cotangent: <g, da @ b + a @ db> for directions da, db
    da, db = RNG.normal(size=a_shape), RNG.normal(size=b_shape)
    expected = np.sum(summed * (da @ b + a @ db))
    np.testing.assert_allclose(np.sum(lhs * da) + np.sum(rhs * db), expected, rtol=1e-10)


@pytest.mark.parametrize("rows, inner, columns", [(2, 3, 4), (64, 40, 30)])  # small and large: `np.dot`, `@`
def test_a_cotangent_of_the_products_shape_gives_the_transposed_products(rows, inner, columns):
    a, b, g = RNG.normal(size=(rows, inner)), RNG.normal(size=(inner, columns)), RNG.normal(size=(rows, columns))
    np.testing.assert_allclose(matmul_lhs_bar(g, a, b), g @ b.T)
    np.testing.assert_allclose(matmul_rhs_bar(g, a, b), a.T @ g)
    v = RNG.normal(size=3)
    np.testing.assert_allclose(matmul_lhs_bar(g[:, 0], a, v), np.outer(g[:, 0], v))
    np.testing.assert_allclose(matmul_rhs_bar(g[:, 0], a, v), a.T @ g[:, 0])


def test_a_wider_cotangent_is_cast_to_each_operands_precision():
    a, b = RNG.normal(size=(2, 3)).astype(np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    for g in (RNG.normal(size=(2, 4)), RNG.normal(size=(5, 2, 4)), RNG.normal(size=(2, 4)) + 1j):
        assert matmul_lhs_bar(g, a, b).dtype == np.float32 and matmul_rhs_bar(g, a, b).dtype == np.float32
    g = RNG.normal(size=(5, 2, 4)) + 1j * RNG.normal(size=(5, 2, 4))  # a real product's complex cotangent: its real part
    np.testing.assert_allclose(matmul_lhs_bar(g, a, b), np.sum(g.real, axis=0) @ b.T, rtol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)), ((5, 2, 3), (3, 4)),
    ((1, 2, 3), (6, 3, 4)), ((4, 1, 2, 3), (5, 3, 1)), ((3,), (7, 3, 2)), ((7, 2, 3), (3,)),
])
def test_product_shape_is_the_shape_matmul_gives(a_shape, b_shape):
    assert product_shape(np.ones(a_shape), np.ones(b_shape)) == np.matmul(np.ones(a_shape), np.ones(b_shape)).shape
