"""adjoint/runtime/calls.py: the run-time helpers for closures (`closure_vjp`, `item_bar`),
methods (`method_vjp`), starred calls (`star_vjp`) and sequence concatenation (`unconcat`).

(Named test_runtime_calls.py: tests/compiler/test_calls.py already holds the module name
`test_calls` under pytest's default import mode.)
"""

import numpy as np
import pytest

import adjoint  # noqa: F401  (installs the compiler hook that the helpers' vjp uses)
from adjoint import runtime as adj
from adjoint.runtime import RuleError
from adjoint.testing import check_grad

X = np.array([1.0, 2.0])
Y = np.array([3.0, -1.0])
W = np.array([2.0, 3.0])


def make_scaled(w, k):
    def scaled(v):
        return v * w * k

    return scaled


def make_nested(w):
    inner = make_scaled(w, 1)

    def outer(v):
        return inner(v) + w

    return outer


def scale(a, b, c=1.0):
    return a * b * c


def total(*xs):
    s = 0.0
    for v in xs:
        s = s + v
    return s


def weighted(**terms):
    return terms["a"] * 2.0 + terms["b"] * terms["c"]


def with_options(v, **options):
    return v * options["w"]


def keyword_only(a, *, c=1.0):
    return a * c


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, v):
        return np.sum(v * self.w)


# ---- closure_vjp --------------------------------------------------------------------------------


def test_closure_vjp_returns_the_cotangents_of_captured_floats_by_name():
    f = make_scaled(W, 2)
    value, back = adj.closure_vjp((0, 1), f, X)
    np.testing.assert_array_equal(value, X * W * 2)
    fn_bar, x_bar = back(np.ones(2))
    assert set(fn_bar) == {"w"}  # `k` is an int: no cotangent
    np.testing.assert_allclose(fn_bar["w"], 2 * X)
    np.testing.assert_allclose(x_bar, 2 * W)


def test_closure_vjp_without_the_function_in_wrt_gives_it_none():
    _, back = adj.closure_vjp((1,), make_scaled(W, 2), X)
    fn_bar, x_bar = back(np.ones(2))
    assert fn_bar is None
    np.testing.assert_allclose(x_bar, 2 * W)


def test_closure_vjp_of_a_function_capturing_no_floats_gives_it_none():
    _, back = adj.closure_vjp((0, 1), make_scaled(2, 3), X)
    fn_bar, x_bar = back(np.ones(2))
    assert fn_bar is None
    np.testing.assert_allclose(x_bar, [6.0, 6.0])


def test_closure_vjp_nests_the_cotangent_of_a_captured_closure():
    # outer(v) = v * w + w, through `inner` (which holds w too)
    value, back = adj.closure_vjp((0, 1), make_nested(1.5), X)
    np.testing.assert_allclose(value, X * 1.5 + 1.5)
    fn_bar, x_bar = back(np.ones(2))
    assert set(fn_bar) == {"inner", "w"}
    assert fn_bar["inner"]["w"] == pytest.approx(np.sum(X))
    assert fn_bar["w"] == pytest.approx(2.0)
    np.testing.assert_allclose(x_bar, [1.5, 1.5])


# ---- item_bar (a closure's captured values) -----------------------------------------------------------------------------------


def test_item_bar_takes_the_entry_of_the_functions_cotangent():
    part = np.array([5.0, 6.0])
    assert adj.item_bar({"w": part, "b": 1.0}, "w", W) is part


@pytest.mark.parametrize("fn_bar", [None, {}, {"w": None}, {"other": 1.0}], ids=["none", "empty", "none-entry", "other"])
def test_item_bar_is_zero_when_the_function_has_no_cotangent_for_the_name(fn_bar):
    zero = adj.item_bar(fn_bar, "w", W)
    assert zero.shape == W.shape and not zero.any()
    assert adj.item_bar(fn_bar, "w", 2.5) == 0.0


# ---- method_vjp: arrays -------------------------------------------------------------------------


def test_method_vjp_of_an_array_method_uses_its_rule_with_the_receiver_first():
    value, back = adj.method_vjp((0, 1), X, "dot", Y)
    assert value == pytest.approx(1.0)
    x_bar, y_bar = back(2.0)
    np.testing.assert_allclose(x_bar, 2 * Y)
    np.testing.assert_allclose(y_bar, 2 * X)


def test_method_vjp_passes_keywords_to_the_method():
    A = np.arange(6.0).reshape(2, 3)
    value, back = adj.method_vjp((0,), A, "sum", axis=0)
    np.testing.assert_array_equal(value, [3.0, 5.0, 7.0])
    (a_bar,) = back(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a_bar, [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])


def test_method_vjp_of_an_array_method_without_a_rule_names_it():
    with pytest.raises(RuleError, match=r"`ndarray\.tolist`.*register a rule for np\.ndarray\.tolist"):
        adj.method_vjp((0,), X, "tolist")


# ---- method_vjp: dicts --------------------------------------------------------------------------


def test_dict_get_routes_the_cotangent_to_the_entry():
    d = {"a": X, "b": 2.0}
    value, back = adj.method_vjp((0,), d, "get", "a")
    assert value is X
    d_bar = back(np.ones(2))[0]
    np.testing.assert_array_equal(d_bar["a"], [1.0, 1.0])
    assert d_bar["b"] == 0.0


def test_dict_get_of_a_missing_key_routes_the_cotangent_to_the_default():
    d = {"a": X}
    value, back = adj.method_vjp((0, 2), d, "get", "c", 4.0)
    assert value == 4.0
    d_bar, key_bar, default_bar = back(1.5)
    assert not d_bar["a"].any() and key_bar is None and default_bar == 1.5


def test_dict_values_and_items_route_each_cotangent_to_its_key():
    d = {"a": X, "b": 2.0}
    values, back = adj.method_vjp((0,), d, "values")
    assert values == [X, 2.0]
    (d_bar,) = back([np.ones(2), None])
    np.testing.assert_array_equal(d_bar["a"], [1.0, 1.0])
    assert d_bar["b"] == 0.0  # no cotangent is zero
    items, back = adj.method_vjp((0,), d, "items")
    assert items == [("a", X), ("b", 2.0)]
    (d_bar,) = back([None, (None, 3.0)])
    assert not d_bar["a"].any() and d_bar["b"] == 3.0


def test_dict_keys_carry_no_gradient():
    keys, back = adj.method_vjp((0,), {"a": X, "b": 2.0}, "keys")
    assert keys == ["a", "b"]
    assert back(None) == (None,)


ALL = tuple(range(8))  # every part, and the mapping, carries gradients


# ---- method_vjp: other objects ------------------------------------------------------------------


def test_method_of_another_object_is_differentiated_with_respect_to_its_arguments():
    model = Model(W)
    value, back = adj.method_vjp((1,), model, "loss", X)
    assert value == pytest.approx(np.sum(X * W))
    model_bar, x_bar = back(2.0)
    assert model_bar is None
    np.testing.assert_allclose(x_bar, 2 * W)


def test_method_of_an_object_gives_the_object_a_tangent():
    model = Model(W)
    value, back = adj.method_vjp((0, 1), model, "loss", X)
    model_bar, x_bar = back(2.0)
    assert isinstance(model_bar, adj.Tangent)
    np.testing.assert_allclose(model_bar.w, 2 * X)
    np.testing.assert_allclose(x_bar, 2 * W)


class Holder:
    """A field holding a function: called as `holder.fn(x)`."""

    def __init__(self, fn):
        self.fn = fn


def plain_square(x):
    return x * x


def scaled_square(x, scale=np.array([2.0, 3.0])):  # a float default: its cotangent goes to the field
    return scale * x * x


def closing_over(w):
    return lambda x: w * x


@pytest.mark.parametrize("fn, fn_bar", [
    (plain_square, None),
    (np.square, None),
    (scaled_square, {"scale": X * X}),
    (closing_over(Y), {"w": X}),
], ids=["function", "ufunc", "float-default", "closure"])
def test_a_field_holding_a_function_gets_the_cotangent_of_what_it_holds(fn, fn_bar):
    value, back = adj.method_vjp((0, 1), Holder(fn), "fn", X)
    np.testing.assert_allclose(value, fn(X))
    holder_bar, x_bar = back(np.ones(2))
    if fn_bar is None:
        assert holder_bar is None
    else:
        (name, expected), = fn_bar.items()
        np.testing.assert_allclose(holder_bar.fn[name], expected)
    expected_x_bar = adj.vjp((0,), fn, X)[1](np.ones(2))[0]
    np.testing.assert_allclose(x_bar, expected_x_bar)


def test_method_of_a_list_that_would_need_a_gradient_is_refused():
    with pytest.raises(RuleError, match="flow into the `list` whose method `copy`"):
        adj.method_vjp((0,), [X, Y], "copy")


# ---- star_vjp -----------------------------------------------------------------------------------


def test_star_vjp_gives_one_cotangent_per_part_and_a_dict_for_the_mapping():
    value, back = adj.star_vjp(ALL, scale, (2.0, [3.0]), (1,), {"c": 4.0})
    assert value == 24.0
    assert back(1.0) == (12.0, [8.0], {"c": 6.0})


def test_star_vjp_keeps_the_type_of_each_spread_part():
    _, back = adj.star_vjp(ALL, total, ((X, Y), [2.0], 1.0), (0, 1), None)
    spread_tuple, spread_list, plain, mapping_bar = back(np.ones(2))
    assert type(spread_tuple) is tuple and len(spread_tuple) == 2
    assert spread_list == [2.0] and plain == 2.0
    assert mapping_bar is None  # no `**mapping` in the call
    np.testing.assert_array_equal(spread_tuple[1], [1.0, 1.0])


def test_star_vjp_binds_mapping_keys_to_positional_parameters():
    value, back = adj.star_vjp(ALL, scale, (X,), (), {"b": Y, "c": 2.0})
    np.testing.assert_allclose(value, X * Y * 2.0)
    x_bar, d_bar = back(np.ones(2))
    np.testing.assert_allclose(x_bar, 2 * Y)
    assert set(d_bar) == {"b", "c"}
    np.testing.assert_allclose(d_bar["b"], 2 * X)
    assert d_bar["c"] == pytest.approx(np.sum(X * Y))


def test_star_vjp_named_keywords_carry_no_gradient():
    value, back = adj.star_vjp(ALL, scale, (2.0, 3.0), (), None, c=5.0)
    assert value == 30.0
    assert back(1.0) == (15.0, 10.0, None)


def test_star_vjp_reaches_a_kwargs_parameter():
    value, back = adj.star_vjp(ALL, weighted, (), (), {"a": 1.5, "b": 2.0, "c": 3.0})
    assert value == 9.0
    assert back(1.0) == ({"a": 2.0, "b": 3.0, "c": 2.0},)


def test_star_vjp_through_kwargs_next_to_positional_parameters():
    _, back = adj.star_vjp(ALL, with_options, (X,), (), {"w": Y, "tag": "label"})
    x_bar, d_bar = back(np.ones(2))
    np.testing.assert_allclose(x_bar, Y)
    np.testing.assert_allclose(d_bar["w"], X)
    assert d_bar["tag"] is None  # a string has no cotangent


def test_star_vjp_refuses_a_float_keyword_a_function_cannot_take_a_gradient_through():
    with pytest.raises(RuleError, match="`out=` cannot receive gradients through `multiply`"):
        adj.star_vjp(ALL, np.multiply, (X, 2.0), (), {"out": Y.copy()})


# ---- unconcat -----------------------------------------------------------------------------------


@pytest.mark.parametrize("g, a, b, expected", [
    ((1.0, 2.0, 3.0), (0.0,), (0.0, 0.0), ((1.0,), (2.0, 3.0))),
    ([1.0, 2.0, 3.0], [0.0, 0.0], [0.0], ([1.0, 2.0], [3.0])),
    ((1.0, 2.0), (), (0.0, 0.0), ((), (1.0, 2.0))),
    (None, (0.0,), (0.0,), (None, None)),
], ids=["tuples", "lists", "empty-left", "no-cotangent"])
def test_unconcat_splits_the_cotangent_at_the_first_operands_length(g, a, b, expected):
    result = adj.unconcat(g, a, b)
    assert result == expected
    if g is not None:
        assert type(result[0]) is type(a) and type(result[1]) is type(b)


# ---- the helpers as generated code uses them: gradients of whole functions ----------------------


def through_every_helper(x, w):
    f = make_scaled(w, 2)
    d = {"a": x, "b": w, "c": 0.5}
    parts = (x,) + (w,)
    return np.sum(f(x)) + np.sum(weighted(**d)) + x.dot(w) + np.sum(scale(*parts))


def test_helpers_give_the_gradients_check_grad_agrees_with():
    text = adjoint.source(through_every_helper)
    for helper in ("closure_vjp", "method_vjp", "star_vjp", "unconcat"):
        assert f"adj.{helper}(" in text, helper
    check_grad(through_every_helper, X, W)


# ---- method_vjp: what it remembers about a class between calls ---------------------------------


def make_scaler():
    class Scaler:
        def __init__(self, k):
            self.k = k

        def apply(self, x):
            return x * self.k

    return Scaler


def test_method_vjp_differentiates_a_method_monkeypatched_since():
    Scaler = make_scaler()
    scaler = Scaler(np.array([2.0, 3.0]))
    k_bar = adj.method_vjp((0, 1), scaler, "apply", X)[1](np.ones(2))[0].k
    np.testing.assert_allclose(k_bar, X)
    Scaler.apply = lambda self, x: x * self.k * self.k
    k_bar, x_bar = adj.method_vjp((0, 1), scaler, "apply", X)[1](np.ones(2))
    np.testing.assert_allclose(k_bar.k, 2 * X * scaler.k)
    np.testing.assert_allclose(x_bar, scaler.k ** 2)


def test_method_vjp_calls_a_property_that_replaced_a_method_since():
    Scaler = make_scaler()
    scaler = Scaler(np.array([2.0, 3.0]))
    adj.method_vjp((0, 1), scaler, "apply", X)
    Scaler.apply = property(lambda self: np.tanh)
    value, back = adj.method_vjp((0, 1), scaler, "apply", X)
    np.testing.assert_allclose(value, np.tanh(X))
    scaler_bar, x_bar = back(np.ones(2))
    assert scaler_bar is None
    np.testing.assert_allclose(x_bar, 1 - np.tanh(X) ** 2)


class Times:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return x * self.w


class Activated:
    def __init__(self, activation, w):
        self.activation, self.w = activation, w

    def scaled(self, x):
        return x * self.w


@pytest.mark.parametrize("kind", ["ufunc", "closure", "bound method", "layer"])
def test_method_vjp_of_a_field_holding_a_callable_sends_its_cotangent_to_the_field(kind):
    inner = Activated(np.tanh, np.array([2.0, 0.5]))
    activation = {
        "ufunc": np.tanh, "closure": make_scaled(W, 1.0), "bound method": inner.scaled, "layer": Times(W),
    }[kind]
    holder = Activated(activation, None)
    for _ in range(2):  # the second call is the remembered one
        value, back = adj.method_vjp((0, 1), holder, "activation", X)
        holder_bar, x_bar = back(np.ones(2))
    np.testing.assert_allclose(value, activation(X))
    if kind == "ufunc":
        assert holder_bar is None
        np.testing.assert_allclose(x_bar, 1 - np.tanh(X) ** 2)
    elif kind == "closure":
        np.testing.assert_allclose(holder_bar.activation["w"], X)
    elif kind == "bound method":
        np.testing.assert_allclose(holder_bar.activation.w, X)
    else:
        np.testing.assert_allclose(holder_bar.activation.w, X)


def test_method_vjp_of_a_field_holding_a_function_whose_default_holds_floats_sends_it_its_cotangent():
    scale = Activated(None, np.array([2.0, 0.5]))

    def act(z, s=scale):  # the model in the default is not a float, but it holds floats
        return z * s.w

    holder = Activated(act, None)
    for _ in range(2):  # the second call is the remembered one
        value, back = adj.method_vjp((0, 1), holder, "activation", X)
        holder_bar, x_bar = back(np.ones(2))
    np.testing.assert_allclose(value, X * scale.w)
    np.testing.assert_allclose(holder_bar.activation["s"].w, X)
    np.testing.assert_allclose(x_bar, scale.w)
