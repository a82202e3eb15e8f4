"""compiler.reverse: forward and pullback structure, symbolic zeros, accumulation."""

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, TransformError
from adjoint.testing import check_grad


def reuse(x):
    a = np.sin(x)
    return a * x + a


def constant_output(x):
    return 3.0


def unpacking(x, y):
    a, b = x * 2.0, y * 3.0
    pair = (a, b)
    first, second = pair
    return first * second


def test_uses_accumulate_without_materializing_zeros():
    text = adjoint.source(reuse)
    assert "zeros" not in text
    assert "x_bar = x_bar +" in text or "x_bar += " in text
    check_grad(reuse, np.array([0.2, 0.9]))


def test_output_not_depending_on_input_gives_zeros():
    assert adjoint.grad(constant_output)(2.0) == 0.0
    assert "adj.zeros_like(x)" in adjoint.source(constant_output)


def test_tuples_and_unpacking():
    check_grad(unpacking, 1.5, np.array([0.5, -2.0]))


def test_subscript_reads():
    def f(x):
        return np.sum(x[0, ::2] * x[1:, ::2]) + x[-1, -1] ** 2 + np.sum(x[..., None][:, 1])

    check_grad(f, np.arange(12.0).reshape(3, 4) / 7.0)


def test_integer_array_index_with_repeats_accumulates():
    def f(x, idx):
        return np.sum(x[idx] ** 2)

    x = np.array([1.0, 2.0, 3.0])
    g, _ = adjoint.gradient(f, x, np.array([0, 0, 2]))
    np.testing.assert_allclose(g, [4.0, 0.0, 6.0])


def test_identity_function():
    def f(x):
        return x

    assert adjoint.grad(f)(2.0) == 1.0


def test_augmented_assignment_on_names_does_not_mutate_the_argument():
    def f(x):
        h = x + 0.0
        h += 1.0
        h *= h
        return np.sum(h)

    x = np.array([1.0, 2.0])
    check_grad(f, x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_gradient_flows_through_a_keyword_argument_of_a_local_function():
    def scale(x, factor=1.0):
        return x * factor

    def f(x, y):
        return scale(x, factor=y)

    assert adjoint.grad(f, wrt=1)(1.0, 2.0) == pytest.approx(1.0)
    assert adjoint.grad(f, wrt=0)(1.0, 2.0) == pytest.approx(2.0)


def test_unsupported_operator_on_varied_value_is_reported():
    def f(x):
        return x << 1

    with pytest.raises(adjoint.TransformError, match="no rule"):
        adjoint.grad(f)(1.0)


def test_floor_division_carries_no_gradient():
    def f(x):
        return x // 1.0 + x

    assert adjoint.grad(f)(2.5) == 1.0



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 6. A tuple-valued parameter used twice: its cotangents are added with `+` (concatenated).
def _layer(p, x):
    W, b = p
    return np.tanh(x @ W + b)


def _net(p, x):
    h = _layer(p, x)
    return _layer(p, h)


def _net_loss(W, b, x):
    return np.sum(_net((W, b), x))


def test_tuple_parameter_used_twice():
    # expected: gradients of both layers summed; actual: silently only the second layer's
    check_grad(_net_loss, RNG.normal(size=(2, 2)), RNG.normal(size=2), RNG.normal(size=(3, 2)))


# 7. Indexing a tuple crashes in adj.unindex (np.zeros(np.shape(tuple))).
def _index_a_tuple(x, y):
    t = (x, y)
    return np.sum(t[0]) * np.sum(t[1])


def test_indexing_a_tuple():
    # expected: gradients (or a located TransformError); actual: numpy ValueError (inhomogeneous shape)
    check_grad(_index_a_tuple, RNG.normal(size=3), RNG.normal(size=2))


# 8. Unpacking an array: its cotangent is a tuple, which `* 2.0` does not accept.
def _unpack_an_array(x):
    a, b = x * 2.0
    return a * b


def test_unpacking_an_array():
    # expected: gradient [4 x1, 4 x0]; actual: TypeError can't multiply sequence by non-int of type 'float'
    check_grad(_unpack_an_array, np.array([1.0, 2.0]))


# 10. A local named `slice` shadows the builtin that the generated pullback calls for `x[0:2]`.
def _local_named_slice(x):
    slice = 2.0
    return np.sum(x[0:2]) * slice


def test_local_named_slice():
    # expected: gradient [2, 2, 0]; actual: TypeError 'float' object is not callable
    check_grad(_local_named_slice, RNG.normal(size=3))


# 11. The pullback reads module globals when back() runs, not the values the forward used.
SCALE = 2.0


def _scaled(x):
    return np.sum(x * SCALE)


def test_pullback_uses_the_globals_of_the_forward_pass():
    global SCALE
    value, back = adjoint.pullback(_scaled, np.ones(2))
    SCALE = 3.0
    try:
        (x_bar,) = back(1.0)
    finally:
        SCALE = 2.0
    # expected: [2, 2] (the gradient at the point where value was computed); actual: [3, 3]
    np.testing.assert_allclose(x_bar, [2.0, 2.0])


X = np.array([0.3, 0.7, -0.4])


# 4. Tuple concatenation was differentiated as numeric addition (unbroadcast of a tuple cotangent);
#    now each operand of `t + (z,)` gets its part of the cotangent (`adj.unconcat`).
def _tuple_concat(x, y, z):
    t = (x, y)
    u = t + (z,)
    a, b, c = u
    return a * 1.0 + b * 2.0 + c * 3.0


def test_tuple_concatenation():
    # silently wrong once (z got u[0]'s cotangent), then refused; now differentiated
    assert adjoint.gradient(_tuple_concat, 1.0, 2.0, 3.0) == (1.0, 2.0, 3.0)
    check_grad(_tuple_concat, 1.0, 2.0, 3.0)
    assert "adj.unconcat(" in adjoint.source(_tuple_concat)


def square_of_list(x):
    return np.sum(np.square([x]))


def test_elementwise_rule_on_list_operand_is_refused():
    # silently before: 1.5 (`2 * [x]` repeated the list); refused until sequences are supported
    with pytest.raises(adjoint.TransformError, match="tuple or list operand"):
        adjoint.grad(square_of_list)(1.5)


def dot_of_list(x, y, W):
    return np.sum(np.dot([x, y], W))


def test_dot_of_list_operand_is_refused():
    # crashed before with TypeError "Field elements must be 2- or 3-tuples" in runtime.dot_lhs_bar
    with pytest.raises(adjoint.TransformError, match="tuple or list operand"):
        adjoint.grad(dot_of_list, wrt=(0, 1))(1.5, 2.3, np.ones((2, 3)))


# ---- 1. a method call on an expression (not a bare name) silently gives a zero gradient --------

def mse_method_on_expression(w, X, y):
    return ((X @ w - y) ** 2).mean()


def test_method_call_on_expression_is_not_silently_zero():
    # Expected: either the correct gradient, or a TransformError like the one `x.mean()` gets
    # ("method calls with differentiable values ... call np.mean"). Actual: a gradient of all
    # zeros, silently: normalize turns `(...).mean()` into `t = (...).mean; r = t()`, and
    # activity sees a call with no arguments, so `r` does not vary and nothing flows back.
    X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    w = np.array([0.5, -0.5])
    y = np.array([1.0, 0.0, 2.0])
    expected = 2 * X.T @ (X @ w - y) / 3
    try:
        g = adjoint.grad(mse_method_on_expression)(w, X, y)
    except TransformError as error:
        assert "mean" in str(error)  # a located refusal is acceptable
        return
    np.testing.assert_allclose(g, expected)


# ---- 2. methods without a NumPy function of the same name are differentiated -------------------
# (The refusal's hint once named `np.flatten(...)`, which does not exist; methods now go through
# `adj.method_vjp` and the array method's own rule.)

def flatten_method(x):
    return np.sum(x.flatten() ** 2)


def methods_named_differently_from_functions(x):
    y = x.copy().astype(np.float64).flatten()
    return np.sum(y.clip(-1.0, 1.0) * y)


def test_method_without_a_numpy_function_of_its_name_is_differentiated():
    assert not hasattr(np, "flatten")
    x = np.arange(6.0).reshape(2, 3) / 5.0
    np.testing.assert_allclose(adjoint.grad(flatten_method)(x), 2 * x)
    assert "adj.method_vjp((0,), x, 'flatten')" in adjoint.source(flatten_method)
    check_grad(methods_named_differently_from_functions, np.array([[0.3, -1.7], [2.5, 0.1]]))


# ---- 3. keyword arguments to the user's own Python helpers are refused -------------------------

def dense(x, W, b):
    return np.tanh(x @ W + b)


def mlp_with_keywords(W1, b1, x):
    h = dense(x, W=W1, b=b1)
    return np.sum(h ** 2)


def test_keyword_arguments_to_python_helper():
    # Expected: the gradient, as for `dense(x, W1, b1)` (README: "calls with keyword arguments,
    # and calls into your other Python functions"; JAX/PyTorch users write `dense(x, W=W1, b=b1)`
    # all the time). Actual: TransformError "the gradient cannot flow through the keyword argument
    # `W=`" (reverse.py `_call`): for a PYTHON callee the keywords could be bound by signature.
    rng = np.random.default_rng(0)
    W1, b1, x = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(2, 3))
    adjoint.testing.check_grad(mlp_with_keywords, W1, b1, x)


def _pair(x):
    return (x, x * 2.0)


# ---- 1. a tuple returned by a user function, concatenated or repeated ------------------------

def _concat_callee_tuple(x):
    t = _pair(x)
    u = t + t  # tuple concatenation: u = (x, 2x, x, 2x)
    return np.sum(u[0] * u[3])  # = sum(2 x**2)


def test_tuple_from_user_call_concatenated():
    # refused at run time (silently [0, 0, 0] before) -- `t` is not known to be a sequence (kinds.sequence_names),
    # so `u = t + t` is differentiated as array addition (`t * 2` likewise).
    with pytest.raises(AdjointError, match="concatenates"):
        adjoint.grad(_concat_callee_tuple)(X)


# ---- 2. a tuple display reached through another name -----------------------------------------

def _concat_aliased_display(x):
    t = (x, x * 2.0)
    s = t  # same with `s = t[0:2]` or `s = nested[0]`, and with lists
    u = s + s
    return np.sum(u[0] * u[3])  # = sum(2 x**2)


def test_tuple_display_alias_concatenated():
    # [0, 0, 0] silently once (sequence_names did not follow `s = t`), then refused; now 4x
    np.testing.assert_allclose(adjoint.grad(_concat_aliased_display)(X), 4 * X)
    check_grad(_concat_aliased_display, X)


# ---- 3. cotangents of a callee's tuple accumulated with `+` ----------------------------------

def _callee_tuple_used_elementwise(x):
    t = _pair(x)
    z = np.add(t, 1.0)  # puts `t` among the "numeric" names; z itself is unused
    a = t[0]
    b = t[1]
    return np.sum(a * b)  # = sum(2 x**2)


def _callee_tuple_squared_and_indexed(x):
    t = _pair(x)
    s = np.sum(np.square(t))
    a = t[0]
    b = t[1]
    return np.sum(a * b) + s


def test_callee_tuple_cotangents_concatenated_silently():
    # expected: 4x; actual: 2x -- `t_bar = unindex(..) + unindex(..)` concatenates the two
    # tuple cotangents (reverse._Cotangents.accumulate uses `+` since kinds.numeric_names
    # counts `t` as numeric), and the callee's pullback reads only the first two entries.
    g = adjoint.grad(_callee_tuple_used_elementwise)(X)
    np.testing.assert_allclose(g, 4 * X)


def test_numpy_function_of_a_tuple_a_user_function_returned_fails_loudly():
    # `np.square(t)` computes on `np.asarray(t)`, but the rule's pullback math sees the tuple
    # (`2 * t` repeats it). adjoint cannot know at transform time that `t` is a tuple: the
    # pullback must fail, never return a wrong gradient (an `adj.unbroadcast` check guards
    # the operands whose kind is unknown).
    with pytest.raises((ValueError, adjoint.AdjointError)):
        check_grad(_callee_tuple_squared_and_indexed, X)
