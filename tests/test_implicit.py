"""adjoint/implicit.py: implicit parameters (`params`), their gradients (`Grads`), and the
collector that gathers cotangents of globals and closure variables while a gradient runs."""

import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, Grads, Params
from adjoint.implicit import Collector, collected, collecting, collector, implicit_names, params

W = np.array([1.0, 2.0])
V = np.array([[1.0], [-1.0]])


def global_loss(x):
    return np.sum(W * x) + np.sum(W * W)


def uses_nothing(x):
    return np.sum(x)


@dataclasses.dataclass
class Norm:
    scale: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": False})


class Encoder:
    __trainable__ = ("W",)

    def __init__(self, W, V):
        self.W, self.V = W, V


class Model:
    def __init__(self, W):
        self.W = W
        self.k = 2.0
        self.me = self  # a cycle

    def loss(self, x):
        return np.sum(self.me.W * x) * self.k


# ---- Params, params ------------------------------------------------------------------------------


def test_params_holds_each_array_once_in_order_and_tests_membership_by_identity():
    a, b = np.ones(2), np.zeros(3)
    ps = Params([a, b, a])
    assert len(ps) == 2 and ps[0] is a and ps[1] is b and list(ps) == [a, b]
    assert a in ps and np.ones(2) not in ps
    assert repr(ps) == "Params(2 arrays: (2,), (3,))"
    assert len(Params()) == 0


def test_params_finds_arrays_in_containers_and_objects_once():
    a, b, c = np.ones((2, 2)), np.zeros(2), np.ones(1, dtype=np.float32)
    ps = params({"W": a, "tied": a, "n": 3, "name": "x", "f": len, "none": None}, [b, (c,)], b)
    assert [id(p) for p in ps] == [id(a), id(b), id(c)]


def test_params_skips_python_floats_ints_and_non_float_arrays():
    ps = params({"f": 1.5, "s": np.float64(2.0), "i": np.arange(3), "bool": np.array([True])}, [])
    assert len(ps) == 0


def test_params_skips_fields_declared_frozen():
    norm = Norm(np.ones(2), np.ones(2))
    enc = Encoder(np.ones(2), np.ones(2))
    ps = params(norm, enc)
    assert [id(p) for p in ps] == [id(norm.scale), id(enc.W)]


def test_params_of_an_object_reached_twice_and_a_cycle():
    m = Model(np.ones(2))
    ps = params([m, m], {"m": m})
    assert len(ps) == 1 and ps[0] is m.W


def test_params_of_an_array_alone_and_of_an_empty_tree():
    assert params(W)[0] is W
    assert len(params({}, [], None)) == 0


# ---- Grads ------------------------------------------------------------------------------------------


def test_grads_are_looked_up_by_identity():
    a, b = np.ones(2), np.ones(2)
    gs = Grads(Params([a, b]), {id(a): np.array([1.0, 2.0])})
    np.testing.assert_array_equal(gs[a], [1.0, 2.0])
    np.testing.assert_array_equal(gs[b], [0.0, 0.0])  # nothing reached it
    assert len(gs) == 2 and list(gs) == [a, b] and a in gs
    assert np.ones(2) not in gs


@pytest.mark.parametrize("key", [np.ones(2), [1.0, 2.0], "W", None], ids=["equal-array", "list", "str", "none"])
def test_grads_lookup_of_a_non_parameter_raises_key_error(key):
    gs = Grads(Params([np.ones(2)]), {})
    with pytest.raises(KeyError, match="by identity"):
        gs[key]
    assert gs.get(key) is None


def test_grads_keep_each_parameters_dtype_and_shape():
    a = np.ones((2, 3), dtype=np.float32)
    gs = Grads(Params([a]), {id(a): 2.0})  # a scalar cotangent spread over the shape
    assert gs[a].dtype == np.float32 and gs[a].shape == (2, 3)
    np.testing.assert_array_equal(gs[a], np.full((2, 3), 2.0))
    gs[a][0, 0] = 5.0  # writable: not a broadcast view


def test_grads_repr():
    gs = Grads(Params([np.ones(2), np.ones((1, 3))]), {})
    assert repr(gs) == "Grads(2 arrays: (2,), (1, 3))"


# ---- Collector -----------------------------------------------------------------------------------


def test_collector_adds_cotangents_of_parameters_and_ignores_the_rest():
    a, b = np.ones(2), np.ones(2)
    c = Collector(Params([a]))
    c.add(a, np.array([1.0, 1.0]))
    c.add({"a": a, "b": b}, {"a": np.array([2.0, 3.0]), "b": np.array([9.0, 9.0])})
    c.add(a, None)
    c.add([a, 1.0], [None, 4.0])
    assert set(c.sums) == {id(a)}
    np.testing.assert_array_equal(c.sums[id(a)], [3.0, 4.0])


def test_collector_adds_through_objects_tangents_and_bound_methods():
    m = Model(np.ones(2))
    c = Collector(params(m))
    c.add(m, adjoint.Tangent(Model, W=np.array([1.0, 2.0])))
    c.add(m.loss, adjoint.Tangent(Model, W=np.array([1.0, 1.0])))  # a method's cotangent is its receiver's
    np.testing.assert_array_equal(c.sums[id(m.W)], [2.0, 3.0])


def test_collector_holds_parameter():
    a = np.ones(2)
    m = Model(a)
    c = Collector(Params([a]))
    assert c.holds_parameter(a) and c.holds_parameter({"x": [a]}) and c.holds_parameter(m)
    assert c.holds_parameter(m.loss)  # through the receiver
    assert not c.holds_parameter(np.ones(2))
    assert not c.holds_parameter(Model(np.ones(2)))  # a cycle holding no parameter: terminates
    for value in (1.0, 3, "s", None, len, global_loss, np, Model):
        assert not c.holds_parameter(value)


def test_collecting_needs_params_and_restores_the_collector():
    assert collector() is None
    with pytest.raises(AdjointError, match="adjoint.params"):
        with collecting([W]):
            pass
    with collecting(Params([W])) as c:
        assert collector() is c and isinstance(c, Collector)
        with collecting(Params([V])) as inner:
            assert collector() is inner
        assert collector() is c
    assert collector() is None


def test_collecting_restores_after_an_exception():
    with pytest.raises(ValueError):
        with collecting(Params([W])):
            raise ValueError
    assert collector() is None


def test_implicit_names_finds_globals_and_closure_variables_holding_parameters():
    U = np.ones(2)

    def closure(x):
        return np.sum(U * x) + global_loss(x) + np.sum(W)

    c = Collector(Params([W, U]))
    assert set(implicit_names(closure, (), c)) == {"U", "W"}
    assert implicit_names(closure, ("U",), c) == ("W",)
    assert implicit_names(uses_nothing, (), c) == ()
    assert implicit_names(closure, (), Collector(Params([np.ones(1)]))) == ()


def test_collected_hands_the_trailing_cotangents_to_the_collector():
    a = np.ones(2)

    def forward(x, a_value):
        def pullback(g):
            return (g * 2.0, np.array([g, g]))  # x's cotangent, then a's

        return x * 2.0, pullback

    def fn():
        return a  # `a` is a closure variable of `fn`: collected reads its current value

    generated = _with_attributes(lambda x: forward(x, a))
    c = Collector(Params([a]))
    wrapped = collected(generated, fn, ("a",), (), c)
    assert wrapped.__adjoint_arity__ == 1
    value, back = wrapped(3.0)
    assert value == 6.0
    assert back(1.5) == (3.0,)
    np.testing.assert_array_equal(c.sums[id(a)], [1.5, 1.5])
    wrapped(1.0)[1](1.0)
    np.testing.assert_array_equal(c.sums[id(a)], [2.5, 2.5])  # added up over calls


def _with_attributes(fn):
    fn.__adjoint_arity__ = 1
    fn.__adjoint_updates__ = fn.__adjoint_code__ = fn.__adjoint_compiled__ = ()
    return fn


# ---- end to end: adjoint.gradient(f, ps) ------------------------------------------------------------------


def test_gradient_of_a_global_parameter():
    x = np.array([3.0, 4.0])
    gs = adjoint.gradient(lambda: global_loss(x), adjoint.params(W))
    assert isinstance(gs, Grads)
    np.testing.assert_allclose(gs[W], x + 2 * W)


def test_gradient_of_a_closure_parameter_keeps_float32():
    U = np.array([2.0, 5.0], dtype=np.float32)

    def loss():
        return np.sum(U**2)

    gs = adjoint.gradient(loss, adjoint.params(U))
    assert gs[U].dtype == np.float32
    np.testing.assert_allclose(gs[U], [4.0, 10.0])


def test_gradient_of_a_parameter_used_in_several_places_is_the_sum():
    shared = np.array([1.0, -1.0])
    model = {"enc": shared, "dec": shared}
    x = np.array([2.0, 3.0])

    def loss():
        return np.sum(model["enc"] * x) + np.sum(model["dec"] * 2.0)

    gs = adjoint.gradient(loss, adjoint.params(model))
    assert len(gs) == 1
    np.testing.assert_allclose(gs[shared], x + 2.0)


def test_gradient_through_a_method_of_a_cyclic_model():
    m = Model(np.array([1.0, -1.0]))
    x = np.array([1.0, 2.0])
    gs = adjoint.gradient(lambda: m.loss(x), adjoint.params(m))
    np.testing.assert_allclose(gs[m.W], 2.0 * x)


def test_gradient_of_a_parameter_not_used_is_zero_and_others_are_not_parameters():
    unused = np.ones(3)
    gs = adjoint.gradient(lambda: np.sum(W * V[:, 0]), adjoint.params(W, unused))
    np.testing.assert_array_equal(gs[unused], np.zeros(3))
    np.testing.assert_allclose(gs[W], V[:, 0])
    with pytest.raises(KeyError):
        gs[V]


def test_gradient_leaves_no_collector_running():
    adjoint.gradient(lambda: global_loss(np.ones(2)), adjoint.params(W))
    assert collector() is None
    np.testing.assert_allclose(adjoint.grad(uses_nothing)(np.ones(2)), np.ones(2))


W_SOURCE = np.ones((3, 2))


def predict_with_global_weights(x):
    return np.tanh(x @ W_SOURCE)


def test_source_with_params_shows_the_code_an_implicit_gradient_runs():
    text = adjoint.source(predict_with_global_weights, wrt=(), params=adjoint.params(W_SOURCE))
    assert "W_SOURCE_bar = " in text and "return (None, W_SOURCE_bar)" in text
    assert "W_SOURCE_bar" not in adjoint.source(predict_with_global_weights, wrt=())


def test_grads_carry_the_loss_they_were_taken_at():
    W = np.array([1.0, 2.0])
    gs = adjoint.gradient(lambda: np.sum(W ** 2), adjoint.params(W))
    assert gs.value == pytest.approx(5.0)
    assert (gs + gs).value is None
