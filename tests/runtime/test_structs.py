"""adjoint/runtime/structs.py: `Tangent`, an object's fields, the cotangents of field reads;
with the namedtuple/`Tangent` cases of `cotangents.zeros_like`/`add`,
`indexing.unindex`/`unpack_bar`/`from_buffer`, and the object cases of the call helpers
(`closure_vjp`, `method_vjp`, `star_vjp`).
"""

import dataclasses
import functools

import numpy as np
import pytest

import adjoint
from adjoint import runtime as adj
from adjoint.runtime.cotangents import add, zeros_like
from adjoint.runtime.indexing import buffer_like, from_buffer, scatter_add, unindex, unpack_bar
from support import Dense, FrozenDense, Plain, Point, Slotted
from adjoint.runtime.structs import (
    Tangent, field_bar, fields_of, is_namedtuple, is_struct, item_bar, tangent_fields, tangent_type,
)

class SlottedChild(Slotted):
    __slots__ = "extra"  # a single string is one slot name


class Stored:
    """Stores its argument, and also computes a float field of its own."""

    def __init__(self, W):
        self.W = W
        self.norm = float(np.sum(W))


class Model:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return x @ self.W + self.b

    def loss(self, x):
        return np.sum(self(x) ** 2)

    @property
    def total(self):
        return np.sum(self.W * self.W)


W = np.array([[1.0, 2.0], [3.0, -1.0]])
B = np.array([0.5, -0.5])
X = np.array([1.0, -2.0])


# ---- Tangent ---------------------------------------------------------------------------------


def test_tangent_exposes_its_fields_as_attributes_and_is_sparse():
    g = Tangent(Dense, {"W": np.ones(2)}, size=None)
    np.testing.assert_array_equal(g.W, np.ones(2))
    assert g.size is None
    with pytest.raises(AttributeError, match="'b'"):
        g.b  # noqa: B018  (absent, not None: a field nothing flowed into is not there at all)
    assert not hasattr(g, "b")
    assert getattr(g, "b", "absent") == "absent"


def test_tangent_keywords_override_the_fields_dict():
    g = Tangent(Dense, {"W": 1.0, "b": 2.0}, W=5.0)
    assert (g.W, g.b) == (5.0, 2.0)


def test_tangent_fields_may_be_named_like_its_positional_parameters():
    g = Tangent(Dense, primal_type=1.0, fields=2.0)
    assert g.primal_type == 1.0 and g.fields == 2.0
    assert tangent_type(g) is Dense
    assert tangent_fields(g) == {"primal_type": 1.0, "fields": 2.0}


def test_tangent_repr_names_the_primal_type_and_fields_in_order():
    assert repr(Tangent(Dense, W=2.0, size=None)) == "Tangent[Dense](W=2.0, size=None)"
    assert repr(Tangent(Plain)) == "Tangent[Plain]()"
    nested = Tangent(Model, layer=Tangent(Dense, W=1.0))
    assert repr(nested) == "Tangent[Model](layer=Tangent[Dense](W=1.0))"


def test_tangent_attributes_can_be_set_like_a_users_value():
    g = Tangent(Dense, W=np.ones(2))
    g.W *= 0.5
    g.b = 3.0
    np.testing.assert_array_equal(g.W, [0.5, 0.5])
    assert g.b == 3.0
    assert sorted(dir(g)) == ["W", "b"]


def test_tangent_type_and_fields_are_not_shadowed_by_field_names():
    g = Tangent(Dense, _Tangent__type=1.0)
    assert tangent_type(g) is Dense
    assert tangent_fields(g) == {"_Tangent__type": 1.0}


def test_tangents_add_field_by_field_an_absent_field_counting_as_zero():
    a = Tangent(Dense, W=np.array([1.0, 2.0]), b=None)
    b = Tangent(Dense, W=np.array([10.0, 20.0]), b=3.0, size=None)
    total = a + b
    assert isinstance(total, Tangent) and tangent_type(total) is Dense
    np.testing.assert_array_equal(total.W, [11.0, 22.0])
    assert total.b == 3.0 and total.size is None
    assert set(tangent_fields(total)) == {"W", "b", "size"}


def test_tangent_addition_does_not_change_its_operands():
    a = Tangent(Dense, W=np.array([1.0]))
    b = Tangent(Dense, b=2.0)
    _ = a + b
    assert tangent_fields(a) == {"W": np.array([1.0])} and tangent_fields(b) == {"b": 2.0}


def test_nested_tangents_add_recursively():
    a = Tangent(Model, layer=Tangent(Dense, W=1.0), k=None)
    b = Tangent(Model, layer=Tangent(Dense, W=2.0, b=5.0), k=4.0)
    total = a + b
    assert isinstance(total.layer, Tangent)
    assert (total.layer.W, total.layer.b, total.k) == (3.0, 5.0, 4.0)


def test_a_tangent_does_not_add_to_other_values():
    with pytest.raises(TypeError):
        Tangent(Dense, W=1.0) + 1.0  # noqa: B018
    with pytest.raises(TypeError):
        Tangent(Dense, W=1.0) + {"W": 1.0}  # noqa: B018


# ---- cotangents.zeros_like / add with namedtuples and Tangents ---------------------------------


def test_zeros_like_of_a_namedtuple_is_the_same_namedtuple_of_zeros():
    zero = zeros_like(Point(np.ones(2, dtype=np.float32), 3))
    assert type(zero) is Point
    assert zero.x.dtype == np.float32 and not zero.x.any()
    assert zero.y is None


def test_zeros_like_of_an_object_or_a_tangent_is_none():
    assert zeros_like(Plain(np.ones(2))) is None
    assert zeros_like(Tangent(Plain, W=np.ones(2))) is None


def test_add_namedtuples_field_by_field_with_none_as_zero():
    total = add(Point(1.0, None), Point(2.0, np.array([3.0])))
    assert type(total) is Point
    assert total.x == 3.0
    np.testing.assert_array_equal(total.y, [3.0])


def test_add_tangents_and_none():
    g = Tangent(Dense, W=1.0)
    assert add(g, None) is g and add(None, g) is g
    total = add(g, Tangent(Dense, W=2.0))
    assert isinstance(total, Tangent) and total.W == 3.0


def test_add_dicts_of_tangents():
    total = add({"m": Tangent(Dense, W=1.0)}, {"m": Tangent(Dense, b=2.0), "k": 1.0})
    assert (total["m"].W, total["m"].b, total["k"]) == (1.0, 2.0, 1.0)


# ---- indexing with dicts and namedtuples -------------------------------------------------------


def test_unindex_of_a_dict_holds_only_the_key_read():
    params = {"W": np.ones((100, 100)), "b": np.ones(3), "n": 4}
    g = np.full(3, 2.0)
    assert unindex(g, params, "b").keys() == {"b"}
    assert unindex(g, params, "b")["b"] is g
    assert unindex(None, params, "b") == {}


def test_unindex_of_a_namedtuple_is_the_namedtuple():
    bar = unindex(2.0, Point(1.0, np.ones(2)), 0)
    assert type(bar) is Point
    assert bar.x == 2.0 and bar.y is None  # None: zero, for a field nothing flowed into


def test_unpack_bar_of_a_namedtuple_fills_missing_parts_with_zeros():
    bar = unpack_bar([None, np.array([1.0, 2.0])], Point(3.0, np.zeros(2)))
    assert type(bar) is Point
    assert bar.x == 0.0
    np.testing.assert_array_equal(bar.y, [1.0, 2.0])


def test_unpack_bar_of_a_float32_array_keeps_its_dtype():
    x = np.ones((2, 3), dtype=np.float32)
    bar = unpack_bar([np.ones(3), None], x)
    assert bar.dtype == np.float32
    np.testing.assert_array_equal(bar, [[1, 1, 1], [0, 0, 0]])


def test_from_buffer_makes_a_namedtuple_for_a_namedtuple():
    buffer = buffer_like(Point(1.0, 2.0))
    scatter_add(buffer, 1, 5.0)
    scatter_add(buffer, 1, 1.0)
    bar = from_buffer(buffer, Point(1.0, 2.0))
    assert bar == Point(None, 6.0) and type(bar) is Point


# ---- is_struct, is_namedtuple, fields_of --------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [Dense(W, B), FrozenDense(W, B), Slotted(W, 1.0), Plain(W)],
    ids=["dataclass", "frozen-dataclass", "slots", "plain"],
)
def test_objects_of_user_classes_are_structs(value):
    assert is_struct(value)


@pytest.mark.parametrize(
    "value",
    [
        1.0, 3, "s", b"b", None, np.ones(2), np.float64(1.0), [1.0], (1.0,), {"a": 1.0}, Point(1.0, 2.0),
        Dense, len, test_objects_of_user_classes_are_structs, functools.partial(max, 1), np,
        Model(W, B).loss, Tangent(Dense, W=1.0), object(),
    ],
    ids=lambda v: type(v).__name__,
)
def test_values_that_are_not_structs(value):
    assert not is_struct(value)


def test_is_namedtuple():
    assert is_namedtuple(Point(1, 2))
    assert not is_namedtuple((1, 2))
    assert not is_namedtuple(Point)  # the class, not an instance
    assert not is_namedtuple(Dense(W, B))


def test_fields_of_a_dataclass_in_declaration_order_then_extra_attributes():
    d = Dense(W, B)
    d.extra = "note"
    assert list(fields_of(d)) == ["W", "b", "size", "extra"]
    assert fields_of(d)["W"] is W


def test_fields_of_a_class_with_slots_including_inherited_and_unset_slots():
    s = SlottedChild(W, 2.0)
    assert fields_of(s) == {"W": W, "scale": 2.0}  # `extra` is unset: no field
    s.extra = "x"
    assert fields_of(s) == {"W": W, "scale": 2.0, "extra": "x"}


def test_fields_of_a_dataclass_with_slots():
    @dataclasses.dataclass(slots=True)
    class Small:
        a: float
        n: int

    assert fields_of(Small(1.5, 2)) == {"a": 1.5, "n": 2}
    assert is_struct(Small(1.5, 2))


def test_fields_of_a_plain_object_holds_ints_strings_functions_and_none():
    p = Plain(W)
    p.act, p.nothing, p.count = np.tanh, None, 3
    assert fields_of(p) == {"W": W, "name": "p", "act": np.tanh, "nothing": None, "count": 3}


def test_fields_of_an_object_referring_to_itself():
    p = Plain(W)
    p.me = p
    assert fields_of(p)["me"] is p


# ---- field_bar --------------------------------------------------------------------------------


def test_field_bar_gives_a_tangent_holding_only_the_field_read():
    g = np.ones((2, 2))
    bar = field_bar(g, Dense(W, B), "W")
    assert isinstance(bar, Tangent) and tangent_type(bar) is Dense
    assert tangent_fields(bar) == {"W": g}
    assert bar.W is g


def test_field_bar_of_none_is_none():
    assert field_bar(None, Dense(W, B), "W") is None


def test_field_bar_of_a_namedtuple_is_the_namedtuple_with_none_elsewhere():
    bar = field_bar(2.0, Point(1.0, 3.0), "y")
    assert type(bar) is Point and bar == Point(None, 2.0)


def test_field_bar_of_a_method_is_the_methods_cotangent_itself():
    g = Tangent(Model, W=np.ones(2))
    assert field_bar(g, Model(W, B), "loss") is g


def test_field_bar_of_a_property_differentiates_its_getter():
    m = Model(W, B)
    bar = field_bar(3.0, m, "total")  # total = sum(W * W): d/dW = 2 W
    assert isinstance(bar, Tangent)
    np.testing.assert_allclose(bar.W, 3.0 * 2 * W)
    assert getattr(bar, "b", None) is None or not np.any(bar.b)


def test_field_bar_of_a_frozen_dataclass_and_slots():
    assert field_bar(1.0, FrozenDense(W, B), "b").b == 1.0
    assert tangent_type(field_bar(1.0, Slotted(W, 2.0), "scale")) is Slotted


# ---- item_bar --------------------------------------------------------------------------------


def test_item_bar_reads_dicts_tangents_and_sequences():
    part = np.array([5.0, 6.0])
    assert item_bar({"W": part}, "W", B) is part
    assert item_bar(Tangent(Dense, W=part), "W", B) is part
    assert item_bar((1.0, part), 1, B) is part
    assert item_bar([1.0, part], 0, 9.0) == 1.0


@pytest.mark.parametrize("g", [None, {}, Tangent(Dense), Tangent(Dense, W=None), 3.0], ids=str)
def test_item_bar_gives_zeros_shaped_like_the_value_when_absent(g):
    zero = item_bar(g, "W", np.ones(3, dtype=np.float32))
    assert zero.shape == (3,) and zero.dtype == np.float32 and not zero.any()
    assert item_bar(g, "W", 2.5) == 0.0 and type(item_bar(g, "W", 2.5)) is float
    assert item_bar(g, "W", 7) is None  # an int has no cotangent


# ---- call helpers on objects --------------------------------------------------------------------


def test_closure_vjp_of_a_callable_object_gives_it_a_tangent():
    m = Model(W, B)
    value, back = adj.closure_vjp((0, 1), m, X)
    np.testing.assert_allclose(value, X @ W + B)
    g = np.array([1.0, 2.0])
    m_bar, x_bar = back(g)
    assert isinstance(m_bar, Tangent) and tangent_type(m_bar) is Model
    np.testing.assert_allclose(m_bar.W, np.outer(X, g))
    np.testing.assert_allclose(m_bar.b, g)
    np.testing.assert_allclose(x_bar, W @ g)


def test_closure_vjp_of_a_bound_method_gives_the_receiver_a_tangent():
    m = Model(W, B)
    value, back = adj.closure_vjp((0, 1), m.loss, X)
    y = X @ W + B
    assert value == pytest.approx(np.sum(y**2))
    m_bar, x_bar = back(1.0)
    np.testing.assert_allclose(m_bar.W, np.outer(X, 2 * y))
    np.testing.assert_allclose(m_bar.b, 2 * y)
    np.testing.assert_allclose(x_bar, W @ (2 * y))


def test_closure_vjp_of_a_callable_object_not_in_wrt_gives_it_none():
    _, back = adj.closure_vjp((1,), Model(W, B), X)
    m_bar, x_bar = back(np.ones(2))
    assert m_bar is None
    np.testing.assert_allclose(x_bar, W @ np.ones(2))


def test_method_vjp_of_an_objects_method_gives_the_object_a_tangent():
    m = Model(W, B)
    value, back = adj.method_vjp((0, 1), m, "loss", X)
    y = X @ W + B
    m_bar, x_bar = back(2.0)
    np.testing.assert_allclose(m_bar.b, 4 * y)
    np.testing.assert_allclose(x_bar, W @ (4 * y))


def test_method_vjp_of_a_callable_field_puts_its_cotangent_in_that_field():
    class Net:
        def __init__(self, layer):
            self.layer = layer

    net = Net(Model(W, B))
    value, back = adj.method_vjp((0, 1), net, "layer", X)
    g = np.array([1.0, -1.0])
    net_bar, x_bar = back(g)
    assert tangent_type(net_bar) is Net and set(tangent_fields(net_bar)) == {"layer"}
    assert tangent_type(net_bar.layer) is Model
    np.testing.assert_allclose(net_bar.layer.W, np.outer(X, g))
    np.testing.assert_allclose(x_bar, W @ g)


def test_method_vjp_of_a_field_holding_a_closure_gives_its_captures():
    def make(scale):
        return lambda h: h * scale

    class Net:
        def __init__(self):
            self.activation = make(np.array([2.0, 3.0]))

    value, back = adj.method_vjp((0, 1), Net(), "activation", X)
    np.testing.assert_allclose(value, X * [2.0, 3.0])
    net_bar, x_bar = back(np.ones(2))
    np.testing.assert_allclose(net_bar.activation["scale"], X)
    np.testing.assert_allclose(x_bar, [2.0, 3.0])


def test_method_vjp_of_a_property_returning_a_closure():
    class Gate:
        def __init__(self, k):
            self.k = k

        @property
        def fn(self):
            k = self.k
            return lambda h: h * k

    value, back = adj.method_vjp((0, 1), Gate(np.array([2.0, 3.0])), "fn", X)
    gate_bar, x_bar = back(np.ones(2))
    np.testing.assert_allclose(value, X * [2.0, 3.0])
    np.testing.assert_allclose(gate_bar.k, X)
    np.testing.assert_allclose(x_bar, [2.0, 3.0])


def test_star_vjp_constructs_a_dataclass_from_keywords():
    value, back = adj.star_vjp((0,), Dense, (), (), {"W": W, "b": B})
    assert isinstance(value, Dense) and value.W is W
    bars = back(Tangent(Dense, W=np.ones_like(W)))
    assert len(bars) == 1
    np.testing.assert_array_equal(bars[0]["W"], np.ones_like(W))
    np.testing.assert_array_equal(bars[0]["b"], np.zeros(2))


def test_star_vjp_constructs_from_unpacked_positional_parts():
    value, back = adj.star_vjp((0,), Point, ([1.0, 2.0],), (0,), None)
    assert value == Point(1.0, 2.0)
    assert back(Point(3.0, None)) == ([3.0, 0.0], None)


def test_keyword_construction_in_differentiated_code():
    @dataclasses.dataclass
    class State:
        h: np.ndarray
        steps: int = 0

    def f(x):
        s = State(h=x * 2.0, steps=3)
        return np.sum(s.h**2) * s.steps

    np.testing.assert_allclose(adjoint.grad(f)(X), 3 * 8 * X)


def test_building_and_reading_a_namedtuple_in_differentiated_code():
    def f(a, b):
        p = Point(a, y=b)
        return p.x * p[1] + p.y

    assert adjoint.gradient(f, 2.0, 3.0) == (3.0, 3.0)


# ---- what is remembered per class ---------------------------------------------------------------


def test_a_class_registered_as_a_number_since_is_no_longer_a_struct():
    import numbers

    class Quantity:
        def __init__(self, value):
            self.value = value

    assert is_struct(Quantity(1.0))
    numbers.Number.register(Quantity)
    assert not is_struct(Quantity(1.0))


def test_an_object_whose_class_decides_its_dict_per_object_is_asked_each_time():
    with_dicts = set()  # ids of the objects that say they have a `__dict__`

    class Lazy:
        __slots__ = ()

        def __getattr__(self, name):
            if name == "__dict__" and id(self) in with_dicts:
                return {}
            raise AttributeError(name)

    with_dict, without = Lazy(), Lazy()
    with_dicts.add(id(with_dict))
    assert [is_struct(with_dict), is_struct(without), is_struct(with_dict)] == [True, False, True]


def test_field_bar_of_an_instance_field_then_of_a_property_defined_over_it_since():
    class Holder:
        def __init__(self, W):
            self.W = W

    holder = Holder(np.array([1.0, 2.0]))
    assert tangent_fields(field_bar(1.0, holder, "W")) == {"W": 1.0}
    Holder.W = property(lambda self: self.V * 3.0)  # (the instance entry `W` is now hidden)
    holder.V = np.array([1.0, 2.0])
    np.testing.assert_allclose(field_bar(np.ones(2), holder, "W").V, [3.0, 3.0])


def test_field_bar_of_a_field_holding_the_objects_own_bound_method_is_the_methods_cotangent():
    model = Model(W, B)
    model.fn = model.loss
    g = Tangent(Model, W=np.ones((2, 2)))
    assert field_bar(g, model, "fn") is g


# ---- field_bars: several fields' cotangents at once --------------------------------------------


class Bound:
    """A field holding a bound method of the object, a property, and a class attribute."""

    offset = np.array([0.25, 0.5])

    def __init__(self, W):
        self.W = W
        self.fn = self.forward

    def forward(self, x):
        return x * self.W

    @property
    def doubled(self):
        return 2.0 * self.W


def added_field_bars(gs, obj):
    total = None
    for name, g in gs.items():
        total = add(total, field_bar(g, obj, name))
    return total


def assert_same_cotangent(a, b):
    if isinstance(a, Tangent):
        assert isinstance(b, Tangent) and tangent_type(a) is tangent_type(b)
        assert tangent_fields(a).keys() == tangent_fields(b).keys()
        for name, part in tangent_fields(a).items():
            assert_same_cotangent(part, tangent_fields(b)[name])
    elif isinstance(a, tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_cotangent(x, y)
    elif a is None:
        assert b is None
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("obj, gs", [
    (Dense(W, B), {"W": np.ones((2, 2)), "b": np.ones(2)}),
    (Dense(W, B), {"W": np.ones((2, 2)), "b": None}),
    (Dense(W, B), {"W": None}),
    (FrozenDense(W, B), {"b": np.ones(2), "W": 2 * np.ones((2, 2))}),
    (Slotted(W, 1.5), {"W": np.ones((2, 2)), "scale": 2.0}),
    (Plain(W), {"W": np.ones((2, 2)), "name": None}),
    (Point(1.0, 2.0), {"x": 3.0, "y": 4.0}),
    (Bound(W), {"W": np.ones((2, 2)), "offset": np.ones(2)}),  # a class attribute read through the object
    (Bound(W), {"W": np.ones((2, 2)), "doubled": np.ones((2, 2))}),  # a property: its getter's cotangent
    (Bound(W), {"fn": Tangent(Bound, W=np.ones((2, 2))), "W": np.ones((2, 2))}),  # a bound method's: the object's
], ids=["dataclass", "one-none", "all-none", "frozen-dataclass", "slots", "plain", "namedtuple", "class-attribute",
        "property", "bound-method"])
def test_field_bars_is_the_sum_of_the_field_bars(obj, gs):
    assert_same_cotangent(adj.field_bars(gs, obj), added_field_bars(gs, obj))


def test_field_bars_does_not_keep_the_dict_it_is_given():
    gs = {"W": np.ones((2, 2)), "b": np.ones(2)}
    bar = adj.field_bars(gs, Dense(W, B))
    bar.W = None  # a gradient is the user's to change
    assert gs["W"] is not None


def test_field_bars_sees_a_class_attribute_given_since():
    class Layer:
        def __init__(self, W, b):
            self.W, self.b = W, b

    layer = Layer(W, B)
    before = adj.field_bars({"W": np.ones((2, 2)), "b": np.ones(2)}, layer)
    assert tangent_fields(before).keys() == {"W", "b"}
    Layer.b = property(lambda self: 3.0 * self.W[0])  # `b` now a property computed from `W`
    gs = {"W": np.ones((2, 2)), "b": np.ones(2)}
    after = adj.field_bars(gs, layer)
    assert_same_cotangent(after, added_field_bars(gs, layer))
    np.testing.assert_array_equal(after.W, [[4.0, 4.0], [1.0, 1.0]])
