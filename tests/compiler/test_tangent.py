"""compiler.tangent and compiler.tangent_calls: the generated JVP code, read as a user reads it.

Each test checks the shape of `adjoint.source(f, mode="jvp")` and that the code computes the
right tangent (`check_jvp`, against finite differences).
"""

import math

import numpy as np
import pytest

import adjoint
from adjoint import TransformError
from adjoint.testing import check_jvp

X = np.array([0.5, -1.0, 2.0])
M = np.arange(6.0).reshape(2, 3) / 5


def jvp_source(f, wrt=None):
    return adjoint.source(f, wrt, mode="jvp")


def elementwise(x):
    return np.tanh(x) * x


def test_elementwise_partials_are_written_in():
    text = jvp_source(elementwise)
    assert "def elementwise_jvp(elementwise_tangents, x):" in text
    assert "dx = elementwise_tangents[0]" in text
    assert "delementwise_tanh = dx * (1 - elementwise_tanh ** 2)" in text
    assert "delementwise = delementwise_tanh * x + dx * elementwise_tanh" in text
    check_jvp(elementwise, X)


def reduction(x):
    return np.sum(x, axis=1)


def test_a_linear_rule_is_the_call_again_on_the_tangent():
    assert "dreduction = np.sum(dx, axis=1)" in jvp_source(reduction)
    check_jvp(reduction, M)


def product(a, b):
    return a @ b


def test_a_product_is_a_sum_of_one_tangent_each():
    assert "dproduct = da @ b + a @ db" in jvp_source(product)
    assert "dproduct = da @ b\n" in jvp_source(product, wrt=0)
    check_jvp(product, M, M.T)


def factor(A):
    return np.sum(np.linalg.cholesky(A))


def test_any_other_rule_is_called_with_primals_and_tangents():
    text = jvp_source(factor)
    assert "factor_cholesky, dfactor_cholesky = cholesky_frule((A,), (dA,))" in text
    check_jvp(factor, np.eye(3) * 2 + 0.1)


def broadcast_against_a_constant(x):
    return np.sum((x + M) ** 2)


def test_a_tangent_is_broadcast_to_its_value_where_a_constant_operand_broadcasts_it():
    assert "adj.tangent_like(dx, broadcast_against_a_constant_add)" in jvp_source(broadcast_against_a_constant)
    check_jvp(broadcast_against_a_constant, X)


def branch_with_constant(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = 1.0
    return np.sum(y)


def test_a_constant_in_one_arm_gets_a_zero_tangent():
    text = jvp_source(branch_with_constant)
    assert "dy = adj.zero_tangent(y)" in text
    check_jvp(branch_with_constant, X)
    check_jvp(branch_with_constant, -X)


def items(xs):
    total = 0.0
    for x in xs:
        total = total + x * x
    return total


def test_a_loop_item_gets_its_tangent_from_the_sequence_by_position():
    text = jvp_source(items)
    assert "for index, x in enumerate(xs):" in text
    assert "dx = dxs[index]" in text
    check_jvp(items, [0.5, 2.0, -1.0])
    check_jvp(items, M)


def closes_over(x, w):
    scale = lambda t: t * w
    return np.sum(scale(x))


def test_a_closure_carries_the_tangents_of_what_it_closes_over():
    text = jvp_source(closes_over)
    assert "dscale = {'w': dw}" in text
    assert "adj.closure_jvp(scale, dscale, (x,), (dx,))" in text
    check_jvp(closes_over, X, X[::-1].copy())


def helper(x, w):
    return x * w


def calls_a_helper(x, w):
    return np.sum(helper(x, w=w))


def test_a_function_call_goes_through_adj_jvp_with_keywords_moved_to_positions():
    assert "adj.jvp(helper, (x, w), (dx, dw))" in jvp_source(calls_a_helper)
    check_jvp(calls_a_helper, X, 2.0)


def starred(x, *rest):
    return x * sum(rest)


def calls_starred(x, ys):
    return starred(x, *ys)


def test_a_starred_call_passes_the_tangents_the_same_way():
    assert "adj.jvp(starred, (x, *ys), (dx, *dys))" in jvp_source(calls_starred)
    check_jvp(calls_starred, 1.5, (2.0, 3.0))


def kwargs_sink(x, **options):
    return x * options["scale"]


def keyword_into_kwargs(x, s):
    return kwargs_sink(x, scale=s)


def test_a_varied_keyword_into_kwargs_goes_through_keywords_jvp():
    assert "adj.keywords_jvp(kwargs_sink, (x,), (dx,), {'scale': s}, {'scale': ds})" in jvp_source(keyword_into_kwargs)
    check_jvp(keyword_into_kwargs, 1.5, 2.0)


def method_call(x):
    return x.sum(axis=0)


def method_of_an_item(xs):
    first = xs[0]
    return first.sum(axis=0)


def test_a_method_is_dispatched_on_the_receiver_at_run_time():
    text = adjoint.source(method_of_an_item, args=([M, M],), mode="jvp")
    assert "adj.method_jvp(first, dfirst, 'sum', (), (), axis=0)" in text  # an item of a list may be anything
    check_jvp(method_of_an_item, [M, M])


def sum_from_an_initial_value(x):
    return x.sum(initial=3.0)


def test_a_sum_with_an_initial_value_is_not_written_as_a_linear_one():
    assert "dx.sum(initial" not in jvp_source(sum_from_an_initial_value)
    try:
        _, tangent = adjoint.jvp(sum_from_an_initial_value, (M,), (np.ones_like(M),))
    except adjoint.AdjointError:
        return  # refused, as in reverse mode
    assert tangent == pytest.approx(M.size)


def test_a_linear_method_of_an_array_is_written_inline():
    assert "dx.sum(axis=0)" in jvp_source(method_call) and "method_jvp" not in jvp_source(method_call)
    check_jvp(method_call, M)


def unused_copy(x):
    y = x
    for _ in range(3):
        y = y * 2.0
    return y


def test_join_copies_that_nothing_reads_are_dropped_with_their_tangents():
    text = jvp_source(unused_copy)
    assert text.count("dy_") >= 1
    check_jvp(unused_copy, X)


def with_manager(x):
    with np.errstate(divide="ignore"):
        y = np.log(x)
    return y


def test_a_context_manager_is_kept_around_the_tangents():
    assert "with np.errstate(divide='ignore'):" in jvp_source(with_manager)
    check_jvp(with_manager, np.abs(X) + 0.1)


def scalar_math(x, y):
    return math.atan2(x, y) + math.hypot(x, y)


def test_python_floats_and_math_functions():
    check_jvp(scalar_math, 0.3, -1.2)


def starred_rule_call(xs):
    return np.maximum(*xs)


def test_a_starred_call_of_a_rule_calls_its_forward_rule():
    assert "maximum_frule((*xs,), (*dxs,))" in jvp_source(starred_rule_call)
    check_jvp(starred_rule_call, [X, X[::-1].copy()])


def varied_default(x, w):
    f = lambda t, s=w: t * s
    return f(x)


def keyword_into_a_closure(x, w):
    f = lambda t, scale=1.0: t * scale * w
    return f(x, scale=w)


@pytest.mark.parametrize("f, args, tangents, message", [
    (varied_default, (X, 2.0), (X, 1.0), "a default value cannot carry a derivative in forward mode"),
    (keyword_into_a_closure, (X, 2.0), (X, 1.0), "keyword arguments into a function that carries derivatives itself"),
])
def test_refusals_name_the_users_line(f, args, tangents, message):
    with pytest.raises(TransformError) as caught:
        adjoint.jvp(f, args, tangents)
    text = str(caught.value)
    assert message in text
    assert "test_tangent.py:" in text


# ---- regressions from review --------------------------------------------------------------------

def plus_zeros(s):
    return np.sum(np.zeros(3) + s)


def plus_data(b, X):
    return np.sum(np.tanh(X) + b)


def returned_broadcast(b):
    return np.linspace(0.0, 1.0, 5) + b


def test_a_scalar_tangent_is_broadcast_against_arrays_made_inside_or_held_constant():
    assert adjoint.jvp(plus_zeros, (0.5,), (1.0,))[1] == pytest.approx(3.0)
    assert adjoint.jvp(plus_data, (0.5, M), (1.0, None))[1] == pytest.approx(6.0)
    assert adjoint.jvp(returned_broadcast, (0.5,), (1.0,))[1].shape == (5,)
    check_jvp(lambda b: plus_data(b, M) ** 2, 0.5)


def closure_with_star_args(x, w):
    def inner(*args):
        return np.sum(args[0] * w)

    return inner(x)


def star_and_kwargs(v, *args, **kw):
    return v + sum(args) + kw["z"]


def calls_star_and_kwargs(x, w):
    return star_and_kwargs(x, w, z=x)


def test_star_args_tangents_come_before_closure_and_keyword_tangents():
    check_jvp(closure_with_star_args, X, X[::-1].copy())
    check_jvp(calls_star_and_kwargs, X, 0.5)


def test_a_tangent_takes_its_arguments_precision_and_a_real_argument_refuses_a_complex_one():
    x32 = X.astype(np.float32)
    value, tangent = adjoint.jvp(np.sin, (x32,), (np.ones(3),))
    assert tangent.dtype == np.float32
    with pytest.raises(adjoint.AdjointError, match="must be real"):
        adjoint.jvp(np.sin, (X,), (X * 1j,))


def softmax_loss(W, x, y):
    z = np.tanh(x @ W)
    m = np.max(z, axis=1, keepdims=True)
    return -np.sum(y * (z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))))


def test_forward_mode_over_a_pullback_writes_its_elementwise_rules_inline():
    from adjoint.compiler import pipeline

    rng = np.random.default_rng(0)
    W, x, y = rng.normal(size=(3, 4)), rng.normal(size=(5, 3)), np.eye(4)[[0, 1, 2, 3, 0]]
    with pipeline.recording() as texts:
        _, product = adjoint.jvp(adjoint.grad(softmax_loss), (W, x, y), (np.ones_like(W), None, None))
    pullback_jvp = next(t for t in texts if "_gradient_jvp" in t)
    assert "mul_frule" not in pullback_jvp and "add_frule" not in pullback_jvp  # the forward's values are numbers
    eps = 1e-6
    plus = adjoint.grad(softmax_loss)(W + eps, x, y)
    minus = adjoint.grad(softmax_loss)(W - eps, x, y)
    np.testing.assert_allclose(product, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-7)


def scaled_and_nothing(x):
    return (2.0 * x, None)


def test_a_none_written_in_the_result_has_none_for_its_tangent():
    text = jvp_source(scaled_and_nothing)
    assert "zero_tangent" not in text and "dscaled_and_nothing = (dscaled_and_nothing_mul, None)" in text
    value, tangent = adjoint.jvp(scaled_and_nothing, (X,), (np.ones(3),))
    assert value[1] is None and tangent[1] is None
    np.testing.assert_array_equal(tangent[0], 2.0 * np.ones(3))
