"""adjoint/trainable.py: fields declared frozen, freeze paths, and what a call freezes."""

import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError
from adjoint.trainable import Freezing, call_spec, frozen_fields, parse_path, pruning


@dataclasses.dataclass
class Norm:
    scale: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": False})
    count: int = dataclasses.field(default=0, metadata={"trainable": False})

    def __call__(self, x):
        return x * self.scale + self.eps


@dataclasses.dataclass
class Explicit:
    scale: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": True})


class Encoder:
    __trainable__ = ("W",)

    def __init__(self, W, V):
        self.W, self.V = W, V

    def __call__(self, x):
        return x @ self.W + x @ self.V


class OneName:
    __trainable__ = "W"  # a single name, not a tuple of characters

    def __init__(self, W, V):
        self.W, self.V = W, V


@dataclasses.dataclass
class Both:
    __trainable__ = ("a", "b")
    a: np.ndarray
    b: np.ndarray = dataclasses.field(metadata={"trainable": False})
    c: np.ndarray = None


class Plain:
    def __init__(self, W):
        self.W = W


class Net:
    def __init__(self, encoder, layers):
        self.encoder = encoder
        self.layers = layers


X = np.array([1.0, 2.0])


# ---- frozen_fields -----------------------------------------------------------------------------


def test_frozen_fields_from_dataclass_metadata():
    assert frozen_fields(Norm(np.ones(2), np.ones(2))) == {"eps", "count"}
    assert frozen_fields(Explicit(np.ones(2), np.ones(2))) == frozenset()


def test_frozen_fields_from_trainable_declaration():
    assert frozen_fields(Encoder(np.ones(2), np.ones(2))) == {"V"}
    assert frozen_fields(OneName(np.ones(2), np.ones(2))) == {"V"}


def test_frozen_fields_combines_both_declarations():
    assert frozen_fields(Both(np.ones(1), np.ones(1), np.ones(1))) == {"b", "c"}


def test_frozen_fields_includes_attributes_set_after_construction():
    e = Encoder(np.ones(2), np.ones(2))
    e.extra = np.ones(2)
    assert frozen_fields(e) == {"V", "extra"}


def test_no_declaration_freezes_nothing():
    assert frozen_fields(Plain(np.ones(2))) == frozenset()
    assert frozen_fields({"W": 1.0}) == frozenset()
    assert frozen_fields(np.ones(2)) == frozenset()


# ---- parse_path -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, steps",
    [
        ("encoder", [("attr", "encoder")]),
        ("layers[0].W", [("attr", "layers"), ("item", 0), ("attr", "W")]),
        ("['W1']", [("item", "W1")]),
        ('["W1"]["b"]', [("item", "W1"), ("item", "b")]),
        ("[0][1]", [("item", 0), ("item", 1)]),
        ("layers[-1]", [("attr", "layers"), ("item", -1)]),
        ("a.b.c", [("attr", "a"), ("attr", "b"), ("attr", "c")]),
        ("blocks['attn'].proj", [("attr", "blocks"), ("item", "attn"), ("attr", "proj")]),
    ],
)
def test_parse_path(text, steps):
    assert parse_path(text) == steps


@pytest.mark.parametrize("text", ["", "layers[", "a + b", "layers[i]", "f()", "a[0:2]", "1abc", ".W", "a..b"])
def test_parse_path_refuses_what_is_not_a_path(text):
    with pytest.raises(AdjointError, match="cannot read the freeze path"):
        parse_path(text)


# ---- Freezing -----------------------------------------------------------------------------------


def test_freezing_records_declared_frozen_fields_that_hold_floats():
    model = {"enc": Encoder(np.eye(2), np.ones((2, 2))), "norm": Norm(np.ones(2), np.ones(2)), "k": 3}
    z = Freezing(model)
    assert z.paths == {"['enc'].V", "['norm'].eps"}  # `count` holds an int: nothing to freeze


def test_freezing_records_user_paths_in_canonical_form():
    net = Net(Plain(np.ones(2)), [Plain(np.ones(2)), Plain(np.ones(2))])
    z = Freezing(net, ["layers[0].W", "encoder"])
    assert z.paths == {".layers[0].W", ".encoder"}
    assert Freezing({"W1": np.ones(2)}, ['["W1"]']).paths == {"['W1']"}


def test_freezing_a_path_that_does_not_exist_is_refused():
    net = Net(Plain(np.ones(2)), [Plain(np.ones(2))])
    with pytest.raises(AdjointError, match=r"`layers` has no item 3 \(it has 1\)"):
        Freezing(net, ["layers[3].W"])
    with pytest.raises(AdjointError, match="the argument itself has no field `decoder` \\(its fields: encoder, layers\\)"):
        Freezing(net, ["decoder"])
    with pytest.raises(AdjointError, match="has no key 'b'"):
        Freezing({"a": 1.0}, ["['b']"])


def test_freezing_nothing_prunes_nothing():
    z = Freezing(Net(Plain(np.ones(2)), []))
    assert z.paths == set() and z.pruned == frozenset()


def test_pruned_holds_what_is_reachable_only_through_frozen_paths():
    W_enc, W_layer = np.ones(2), np.ones(2)
    encoder = Plain(W_enc)
    net = Net(encoder, [Plain(W_layer)])
    z = Freezing(net, ["encoder"])
    assert id(encoder) in z.pruned and id(W_enc) in z.pruned
    assert id(W_layer) not in z.pruned and id(net) not in z.pruned


def test_a_weight_tied_to_a_trainable_place_is_not_pruned():
    shared = np.ones(2)
    net = Net(Plain(shared), [Plain(shared)])
    z = Freezing(net, ["encoder"])
    assert id(net.encoder) in z.pruned
    assert id(shared) not in z.pruned
    assert z.paths == {".encoder"}


def test_freezing_terminates_on_cycles():
    class Node:
        def __init__(self, w):
            self.w = w
            self.me = self

    node = Node(np.ones(2))
    z = Freezing(node, ["w"])
    assert z.paths == {".w"} and id(node.w) in z.pruned and id(node) not in z.pruned


# ---- pruning and call_spec ------------------------------------------------------------------------


def test_call_spec_reports_declared_frozen_fields_of_differentiated_arguments():
    norm = Norm(np.ones(2), np.ones(2))
    enc = Encoder(np.ones(2), np.ones(2))
    assert call_spec((X, norm, enc), (0, 1, 2)) == ((1, (".count", ".eps")), (2, (".V",)))
    assert call_spec((X, norm), (0,)) == ()  # `norm` not differentiated


def test_call_spec_ignores_positions_out_of_range_and_non_int_positions():
    norm = Norm(np.ones(2), np.ones(2))
    assert call_spec((norm,), (3, "**")) == ()


def test_call_spec_freezes_fields_holding_pruned_values_only_inside_pruning():
    W, V = np.ones(2), np.ones(2)
    obj = Plain(W)
    params = {"W": W, "V": V}
    nothing_frozen = ((0, ()), (1, ()))  # an entry per container or object: they are not numbers
    assert call_spec((obj, params), (0, 1)) == nothing_frozen
    with pruning(frozenset({id(W)})):
        assert call_spec((obj, params), (0, 1)) == ((0, (".W",)), (1, ("['W']",)))
    assert call_spec((obj, params), (0, 1)) == nothing_frozen
    assert call_spec((W, 2.0), (0, 1)) == ()  # arrays and floats only


def test_call_spec_sees_a_trainable_declaration_given_to_a_class_or_its_base_since():
    class Base:
        pass

    class Layer(Base):
        def __init__(self, W, b):
            self.W, self.b = W, b

    layer = Layer(np.ones(2), np.ones(2))
    assert call_spec((layer,), (0,)) == ((0, ()),)
    Base.__trainable__ = ("W",)
    assert call_spec((layer,), (0,)) == ((0, (".b",)),)
    del Base.__trainable__
    Layer.__trainable__ = ("b",)
    assert call_spec((layer,), (0,)) == ((0, (".W",)),)


def test_call_spec_asks_a_class_with_a_metaclass_of_its_own_by_getattr():
    class Declaring(type):
        __trainable__ = ("W",)  # what `getattr(cls, "__trainable__")` finds, not the class dictionaries

    class Layer(metaclass=Declaring):
        def __init__(self, W, b):
            self.W, self.b = W, b

    assert call_spec((Layer(np.ones(2), np.ones(2)),), (0,)) == ((0, (".b",)),)


def test_pruning_nests_and_restores():
    W, V = np.ones(2), np.ones(2)
    obj = Net(W, V)  # `encoder` holds W, `layers` holds V
    with pruning(frozenset({id(W)})):
        with pruning(frozenset({id(V)})):
            assert call_spec((obj,), (0,)) == ((0, (".encoder", ".layers")),)
        assert call_spec((obj,), (0,)) == ((0, (".encoder",)),)
        with pruning(frozenset()):
            assert call_spec((obj,), (0,)) == ((0, (".encoder",)),)
    assert call_spec((obj,), (0,)) == ((0, ()),)


def test_pruning_restores_after_an_exception():
    W = np.ones(2)
    with pytest.raises(ValueError):
        with pruning(frozenset({id(W)})):
            raise ValueError
    assert call_spec((Plain(W),), (0,)) == ((0, ()),)


# ---- end to end ------------------------------------------------------------------------------------


def test_grad_gives_none_for_a_dataclass_field_declared_frozen():
    norm = Norm(np.array([2.0, 3.0]), np.array([0.1, 0.1]))
    g = adjoint.grad(lambda n: np.sum(n(X) ** 2))(norm)
    assert g.eps is None and g.count is None
    np.testing.assert_allclose(g.scale, 2 * (X * norm.scale + norm.eps) * X)


def test_grad_gives_none_for_fields_outside_trainable():
    enc = Encoder(np.eye(2), np.ones((2, 2)))
    g = adjoint.grad(lambda e: np.sum(e(X)))(enc)
    assert g.V is None
    np.testing.assert_allclose(g.W, np.outer(X, np.ones(2)))


def test_grad_with_a_freeze_path_in_a_list_of_layers():
    net = Net(None, [Plain(np.array([1.0, 2.0])), Plain(np.array([3.0, 4.0]))])

    def loss(n):
        return np.sum(n.layers[0].W * n.layers[1].W)

    g = adjoint.grad(loss, freeze=["layers[0].W"])(net)
    assert g.layers[0] is None
    np.testing.assert_allclose(g.layers[1].W, [1.0, 2.0])
    assert g.encoder is None


def test_a_frozen_weight_tied_to_a_trainable_field_gets_only_the_trainable_reads():
    A = np.array([1.0, 2.0])
    tied = Norm(A, A)  # `eps` (frozen) is the same array as `scale`
    g = adjoint.grad(lambda n: np.sum(n(X)))(tied)
    np.testing.assert_allclose(g.scale, X)
    assert g.eps is None


def test_freeze_names_paths_relative_to_each_argument_when_several_are_differentiated():
    a, b = {"W": np.ones(2), "V": np.ones(2)}, {"W": np.ones(2)}

    def loss(p, q):
        return np.sum(p["W"] * q["W"] + p["V"])

    ga, gb = adjoint.grad(loss, wrt=(0, 1), freeze={0: ["['W']"]})(a, b)
    assert ga["W"] is None
    np.testing.assert_allclose(ga["V"], [1.0, 1.0])
    np.testing.assert_allclose(gb["W"], [1.0, 1.0])
    with pytest.raises(AdjointError, match="freeze={0"):
        adjoint.grad(loss, wrt=(0, 1), freeze=["['W']"])(a, b)


# ---- nothing frozen, told without the walk of ids ------------------------------------------------


def test_declares_frozen_finds_a_declaring_class_anywhere_in_the_tree():
    from adjoint.trainable import declares_frozen

    assert not declares_frozen(Net(Plain(np.ones(2)), [Plain(np.ones(2))]))
    assert declares_frozen({"layers": [Plain(np.ones(2)), Encoder(np.eye(2), np.eye(2))]})
    assert declares_frozen([Norm(np.ones(2), np.ones(2))])  # by dataclass metadata
    looped = []
    looped.append(looped)
    assert not declares_frozen(looped)


def test_a_freezing_of_nothing_frozen_still_knows_what_is_open():
    W = np.ones(2)
    net = Net(Plain(W), [])
    z = Freezing(net)
    assert z.paths == set() and z.frozen_ids == set() and z.pruned == frozenset()
    assert {id(net), id(net.encoder), id(W)} <= z.open_ids


def test_a_class_given_trainable_between_calls_is_frozen_on_the_next_call():
    class Layer:
        def __init__(self, W, V):
            self.W, self.V = W, V

    layer = Layer(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    grad = adjoint.grad(lambda m: np.sum(m.W * m.V))
    g = grad(layer)
    np.testing.assert_allclose(g.V, [1.0, 2.0])
    Layer.__trainable__ = ("W",)
    assert grad(layer).V is None
    Layer.__trainable__ = ("V",)
    g = grad(layer)
    assert g.W is None
    np.testing.assert_allclose(g.V, [1.0, 2.0])
    del Layer.__trainable__
    np.testing.assert_allclose(grad(layer).W, [3.0, 4.0])


def test_a_trainable_list_updated_in_place_between_calls_is_read_again():
    class Layer:
        __trainable__ = ["W", "V"]

        def __init__(self, W, V):
            self.W, self.V = W, V

    layer = Layer(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    grad = adjoint.grad(lambda m: np.sum(m.W * m.V))
    assert grad(layer).V is not None
    Layer.__trainable__.remove("V")
    assert grad(layer).V is None


def test_a_tied_layer_gets_none_for_its_declared_frozen_fields_at_every_place():
    class Scaled:
        __trainable__ = ("W",)

        def __init__(self, W, s):
            self.W, self.s = W, s

        def __call__(self, x):
            return x @ self.W * self.s

    layer = Scaled(np.eye(2), np.ones(2))
    net = Net(None, [layer, layer])

    def loss(n, x):
        for each in n.layers:
            x = each(x)
        return np.sum(x)

    g = adjoint.grad(loss)(net, np.ones((1, 2)))
    assert g.layers[0].s is None and g.layers[1].s is None
    np.testing.assert_allclose(g.layers[0].W, np.ones((2, 2)))


def test_values_without_a_gradient_are_not_pruned():
    class Layer:
        __trainable__ = ("W",)

        def __init__(self):
            self.W, self.act, self.n, self.eps = np.ones(2), np.tanh, 3, np.ones(1)

    layer = Layer()
    z = Freezing(layer)
    assert z.paths == {".eps"}
    assert z.pruned == frozenset({id(layer.eps)})  # not the function, nor the int
    layer.eps = None
    assert Freezing(layer).pruned == frozenset()
