"""compiler.calls: calls whose differentiation is left to run time. Local functions that close
over differentiable values go through `adj.closure_vjp`, methods through `adj.method_vjp`,
starred calls through `adj.star_vjp` (which also reaches `**kwargs` parameters); the calls
adjoint cannot follow yet are refused with a located problem."""

import math

import numpy as np
import pytest

import adjoint
from adjoint import runtime as adj
from adjoint.testing import check_grad

X = np.array([0.4, -0.7, 1.1])
Y = np.array([0.9, 0.3, -0.5])


# ---- module-level callees -----------------------------------------------------------------------


def scale(a, b, c=1.0):
    return a * b * c


def total_of_squares(*xs):
    s = 0.0
    for v in xs:
        s = s + np.sum(v ** 2)
    return s


def weighted(**terms):
    return terms["a"] * 2.0 + terms["b"] * terms["c"]


def with_options(x, **options):
    return x * options["w"] + options.get("b", 0.0)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(np.tanh(x * self.w))


MODEL = Model(np.array([0.5, 1.5, -1.0]))


# ---- closures -----------------------------------------------------------------------------------


def closure_over_parameter(x, w):
    def f(v):
        return np.sin(v) * w

    return np.sum(f(x))


def closure_over_intermediate(x):
    w = np.exp(x)

    def f(v):
        return v * w

    return np.sum(f(x) ** 2)


def lambda_closure(x, w):
    g = lambda v: v * w  # noqa: E731
    return np.sum(g(x) * g(x))


def closure_calling_a_closure(x, w):
    def inner(v):
        return v * w

    def outer(v):
        return inner(v) + w

    return np.sum(outer(x))


def closure_without_differentiable_captures(x):
    k = 3

    def f(v):
        return v ** k

    return np.sum(f(x))


@pytest.mark.parametrize("fn, args", [
    (closure_over_parameter, (X, Y)),
    (closure_over_intermediate, (X,)),
    (lambda_closure, (X, 0.7)),
    (closure_calling_a_closure, (X, Y)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_closure_over_differentiable_values(fn, args):
    check_grad(fn, *args)
    text = adjoint.source(fn)
    assert "adj.closure_vjp(" in text
    assert "adj.item_bar(" in text  # the closure's cotangent routed to what it captured


def test_closure_gradient_reaches_the_captured_value():
    # d/dw sum(sin(x) * w) = sin(x)
    np.testing.assert_allclose(adjoint.grad(closure_over_parameter, wrt=1)(X, Y), np.sin(X))


def test_closure_capturing_only_constants_is_an_ordinary_call():
    check_grad(closure_without_differentiable_captures, X)
    text = adjoint.source(closure_without_differentiable_captures)
    assert "closure_vjp" not in text and "adj.vjp(" in text


# ---- methods ------------------------------------------------------------------------------------


def array_methods(x):
    return x.sum() + x.mean() * (x.reshape(3, 1) ** 2).sum()


def method_on_expression(w, A, y):
    return ((A @ w - y) ** 2).mean()


def dict_methods(x, y):
    d = {"a": x, "b": y}
    return np.sum(d.get("a") * d["b"]) + sum(np.sum(v) for v in d.values())


def object_method_with_differentiable_argument(x, m):
    return m.loss(x)


def global_object_method(x):
    return MODEL.loss(x)


@pytest.mark.parametrize("fn, args", [
    (array_methods, (X,)),
    (dict_methods, (X, Y)),
    (object_method_with_differentiable_argument, (X, MODEL)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_method_call_goes_through_method_vjp(fn, args):
    check_grad(fn, *args)
    assert "adj.method_vjp(" in adjoint.source(fn, wrt=0)


def test_method_vjp_names_the_receiver_the_method_and_what_varies():
    text = adjoint.source(array_methods)
    assert "adj.method_vjp((0,), x, 'sum')" in text
    assert "adj.method_vjp((0,), x, 'reshape', 3, 1)" in text


def test_method_of_a_global_object_is_called_on_it_as_a_receiver():
    # a global model is a receiver like any other: with respect to x only, it is a constant
    check_grad(global_object_method, X)
    text = adjoint.source(global_object_method)
    assert "model = MODEL" in text and "adj.method_vjp((1,), model, 'loss', x)" in text


def test_method_on_expression_gradient():
    A, y = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([1.0, 0.0, 2.0])
    w = np.array([0.5, -0.5])
    np.testing.assert_allclose(adjoint.grad(method_on_expression)(w, A, y), 2 * A.T @ (A @ w - y) / 3)
    assert "method_vjp" not in adjoint.source(method_on_expression)  # of an array a product made: `np.mean`'s rule
    check_grad(method_on_expression, X, np.arange(6.0).reshape(2, 3) / 4.0, Y[:2].copy())


# ---- starred calls and **kwargs -----------------------------------------------------------------


def star_tuple(x, y):
    args = (x, y)
    return np.sum(scale(*args))


def star_list_then_positional(x, y):
    args = [x, y]
    return np.sum(scale(*args, 2.0))


def star_varargs(x, y):
    parts = (x, y, x * y)
    return total_of_squares(x, *parts)


def double_star_positional_parameters(x, y):
    d = {"b": y, "c": x}
    return np.sum(scale(x, **d))


def double_star_into_kwargs(x, y):
    d = {"a": x, "b": y, "c": x * y}
    return np.sum(weighted(**d))


def double_star_into_kwargs_with_positional(x, y):
    d = {"w": y}
    return np.sum(with_options(x, **d))


@pytest.mark.parametrize("fn", [
    star_tuple, star_list_then_positional, star_varargs, double_star_positional_parameters,
    double_star_into_kwargs, double_star_into_kwargs_with_positional,
], ids=lambda f: f.__name__)
def test_starred_call_goes_through_star_vjp(fn):
    check_grad(fn, X, Y)
    assert "adj.star_vjp(" in adjoint.source(fn)


def test_star_vjp_gets_the_parts_and_which_are_spread():
    text = adjoint.source(star_list_then_positional)
    assert "adj.star_vjp((0,), scale, (args, 2.0), (0,), None)" in text
    text = adjoint.source(double_star_positional_parameters)
    assert "adj.star_vjp((0, 1), scale, (x,), (), d)" in text


def test_kwargs_gradient_reaches_the_dict_entries():
    # weighted(**d) = 2a + b c with a = x, b = y, c = x y:  d/dx = 2 + y^2, d/dy = 2 x y
    gx, gy = adjoint.gradient(double_star_into_kwargs, X, Y)
    np.testing.assert_allclose(gx, 2.0 + Y ** 2)
    np.testing.assert_allclose(gy, 2 * X * Y)


def test_differentiable_keyword_arguments_can_go_by_position():
    def f(x, y):
        return np.sum(scale(x, b=y, c=2.0))

    check_grad(f, X, Y)


# ---- refused ------------------------------------------------------------------------------------


def starred_call_of_a_closure(x, w):
    def f(a, b):
        return a * b * w

    args = (x, x)
    return np.sum(f(*args))


def starred_method_call(x):
    axes = (0,)
    return np.sum(x.sum(*axes))


def two_double_stars(x, y):
    d1 = {"b": y}
    d2 = {"c": x}
    return np.sum(scale(x, **d1, **d2))


def differentiable_keyword_next_to_double_star(x, y):
    d = {"b": y}
    return np.sum(scale(x, **d, c=x))


def differentiable_keyword_into_kwargs(x):
    return np.sum(weighted(a=x, b=1.0, c=2.0))


@pytest.mark.parametrize("fn, message, line", [
    (starred_call_of_a_closure, "a starred call of a function that closes over differentiable values", 5),
    (two_double_stars, "the gradient cannot flow through these keyword arguments", 3),
    (differentiable_keyword_next_to_double_star, "the gradient cannot flow through these keyword arguments", 2),
], ids=lambda v: getattr(v, "__name__", ""))
def test_call_adjoint_cannot_follow_is_refused_at_its_line(fn, message, line):
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.gradient(fn, *(X, Y)[: fn.__code__.co_argcount])
    (problem,) = info.value.problems
    assert problem.message.startswith(message)
    assert problem.line == fn.__code__.co_firstlineno + line


def weighted_terms(**terms):
    return sum(v * 2.0 for v in terms.values())


def keywords_into_kwargs(x, y):
    return np.sum(weighted_terms(a=x, b=y))


def count_in_a_list(x, y):
    items = [x, y]
    return x * items.count(y)


def keyword_only(a, *, c=1.0):
    return a * c


def constant_keyword_only_through_mapping(x, y):
    d = {"c": 3.0}
    return np.sum(keyword_only(x, **d) * y)


def test_differentiable_keywords_reach_a_kwargs_parameter():
    check_grad(keywords_into_kwargs, X, Y)
    assert "weighted_terms_keywords = {'a': x, 'b': y}" in adjoint.source(keywords_into_kwargs)


def test_a_method_whose_result_carries_no_gradient_on_a_list_of_floats():
    check_grad(count_in_a_list, 0.5, 0.25)


def test_a_differentiable_keyword_next_to_constant_ones_into_kwargs():
    check_grad(differentiable_keyword_into_kwargs, X)


def test_a_constant_keyword_only_argument_through_a_mapping():
    check_grad(constant_keyword_only_through_mapping, X, Y)


def test_starred_method_calls_go_through_the_methods_function():
    # `x.sum(*axes)` and `self.forward(*args, **kwargs)`: the function, with the receiver first
    check_grad(starred_method_call, np.arange(6.0).reshape(2, 3))
    assert "adj.method_function(x, 'sum')" in adjoint.source(starred_method_call)


class _Dense:
    def __init__(self, W):
        self.W = W

    def __call__(self, x):
        return np.tanh(x @ self.W)


def _chain_loss(layers, x):
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2)


def test_a_value_a_loop_carries_from_data_is_not_differentiated_on_the_first_iteration(monkeypatch):
    # a model's first layer spends no work on the gradient of the data it was given
    layers = [_Dense(np.full((3, 3), 0.2)), _Dense(np.full((3, 3), 0.1)), _Dense(np.full((3, 2), 0.3))]
    x = np.ones((4, 3))
    check_grad(_chain_loss, layers, x)
    calls = []
    original = adj.matmul_lhs_bar
    monkeypatch.setattr(adj, "matmul_lhs_bar", lambda *a: calls.append(1) or original(*a))
    adjoint.grad(_chain_loss)(layers, x)
    assert len(calls) == 2  # the input gradients of layers 2 and 3 only
    assert "(0, 1) if x_1 is not x else (0,)" in adjoint.source(_chain_loss, wrt=0)


# ---- a differentiable keyword argument of a rule moves to its position ---------------------------

from scipy.special import logsumexp  # noqa: E402  (scipy is in the test extra)


def weighted_average_by_keyword(a, w):
    return np.average(a, weights=w) + np.sum(np.average(a, axis=0, weights=w[:2]))


def logsumexp_scaled_by_keyword(x, w):
    return logsumexp(x, b=w)


def select_with_a_differentiable_default(a, d):
    return np.sum(np.select([a > 0.5], [a], default=d * 0.5))


def clip_above_by_keyword(x, high):
    return np.sum(np.clip(x, 0.0, a_max=high))


def clip_above_by_keyword_only_max(x, high):
    return np.sum(np.clip(x, max=high))


@pytest.mark.parametrize("f, shapes", [
    (weighted_average_by_keyword, [(2, 2), (2, 2)]),
    (logsumexp_scaled_by_keyword, [(4,), (4,)]),
    (select_with_a_differentiable_default, [(2, 2), (2, 2)]),
    (clip_above_by_keyword, [(3,), (3,)]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_a_differentiable_keyword_of_a_rule_gets_its_gradient(f, shapes):
    rng = np.random.default_rng(3)
    check_grad(f, *[rng.uniform(0.2, 1.0, size=s) for s in shapes])


def test_the_keyword_moves_to_its_position_in_the_generated_code():
    text = adjoint.source(weighted_average_by_keyword, wrt=(0, 1))
    assert "np.average(a, None, w)" in text and "np.average(a, 0, " in text


def test_a_keyword_only_parameter_still_gets_no_gradient():
    with pytest.raises(adjoint.TransformError, match="keyword argument `max=`"):
        adjoint.grad(clip_above_by_keyword_only_max, wrt=(0, 1))(np.ones(3), np.ones(3))


def where_with_positional_only_keywords(x, w):
    return np.sum(np.where(x > 0.5, x=x, y=w) ** 2)  # NumPy takes `x`, `y` by position only


def clip_with_a_max_but_no_a_min(x, high):
    return np.sum(np.clip(x, a_max=high))  # NumPy's `a_min` has no default to fill in


def average_through_an_alias(x, w):
    avg = np.average
    return avg(x, weights=w)


def test_a_keyword_numpy_would_refuse_is_not_moved_into_a_call_it_accepts():
    for f in (where_with_positional_only_keywords, clip_with_a_max_but_no_a_min):
        with pytest.raises(adjoint.TransformError, match="keyword argument"):
            adjoint.value_and_grad(f, wrt=1)(np.array([0.2, 0.9]), np.array([1.0, 2.0]))


def test_a_differentiable_keyword_reaches_a_rule_called_through_an_alias():
    check_grad(average_through_an_alias, np.array([0.2, 0.5, 0.9]), np.array([1.0, 2.0, 3.0]))


def sum_of_squares_by_fsum(x):
    return math.fsum(x[i] ** 2 for i in range(3)) + math.prod(x[i] + 1.0 for i in range(3))


def test_math_fsum_and_prod_consume_a_generator():
    check_grad(sum_of_squares_by_fsum, np.array([0.2, 0.5, 0.9]))


def sine_of(x, M):
    return np.sin(M @ x)


def varied_on_one_path(a, W):
    h = W @ adjoint.stop_gradient(a)
    if np.sum(a) > 0.0:
        h = sine_of(h, W)  # `h` carries no derivative here, only on the other path
    else:
        h = h + a
    return h @ a


def test_a_call_with_no_varied_operand_on_its_path_is_a_plain_call():
    a, W = np.array([0.3, -0.2]), np.array([[0.5, 0.1], [-0.3, 0.8]])
    code = adjoint.source(varied_on_one_path, wrt=0)
    assert "h_1 = sine_of(h, W)" in code and "sine_of_pullback" not in code
    np.testing.assert_allclose(adjoint.hvp(varied_on_one_path, a, np.ones(2), W), np.zeros(2))
    np.testing.assert_allclose(adjoint.grad(varied_on_one_path)(a, W), np.sin(W @ W @ a))  # `h` held still
