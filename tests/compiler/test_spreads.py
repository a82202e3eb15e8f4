"""compiler.spreads: a sum's cotangent multiplied straight into the exponential it summed."""

import numpy as np

import adjoint
from adjoint.testing import check_grad

Z = np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]])


def log_sum_exp_kept(z):
    return np.sum(np.log(np.sum(np.exp(z), axis=1, keepdims=True)))


def test_a_kept_sums_cotangent_is_multiplied_in_unspread():
    text = adjoint.source(log_sum_exp_kept)
    assert "log_sum_exp_kept_exp_bar" not in text  # (the outer sum's spread stays: a log's rule divides)
    assert "z_bar = log_sum_exp_kept_sum_bar * log_sum_exp_kept_exp" in text
    check_grad(log_sum_exp_kept, Z)


def full_sum(z):
    return np.log(np.sum(np.exp(z)))


def test_a_full_sums_cotangent_is_multiplied_in_unspread():
    assert "unreduce" not in adjoint.source(full_sum)
    check_grad(full_sum, Z)


def sum_dropping_its_axis(z):
    return np.sum(np.log(np.sum(np.exp(z), axis=1)))


def test_a_sum_that_drops_its_axis_is_spread_first():
    text = adjoint.source(sum_dropping_its_axis)
    assert "sum_dropping_its_axis_exp_bar = adj.unreduce(" in text  # (`g` would broadcast along the wrong axis)
    check_grad(sum_dropping_its_axis, Z)


def exponential_read_twice(z):
    e = np.exp(z)
    return np.sum(np.log(np.sum(e, axis=1, keepdims=True))) + np.sum(e * z)


def test_an_exponential_whose_cotangent_has_other_parts_keeps_its_spread():
    assert "e_bar += adj.unreduce(exponential_read_twice_sum_bar, e, axis=1" in adjoint.source(exponential_read_twice)
    check_grad(exponential_read_twice, Z)


def test_float32_keeps_a_float32_gradient():
    z32 = Z.astype(np.float32)
    g = adjoint.grad(log_sum_exp_kept)(z32)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, adjoint.grad(log_sum_exp_kept)(Z), rtol=1e-5)
