"""adjoint/plans.py: the API's edge for a model as straight-line code per shape of model. A plan
must give what the general path gives (`structure.structure` then `structure.unshare`), and must
stop matching as soon as the model, or one of its classes, is no longer what it was made for."""

import dataclasses
import gc
import weakref

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, Tangent, layouts, plans, structure
from adjoint.layouts import layout_of


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    activation: object = np.tanh

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


class Chain:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def identity(z):
    return z


X = np.array([[0.5, -1.0], [1.5, 2.0]])


def _chain(rng=np.random.default_rng(0)):
    return Chain(Dense(rng.normal(size=(2, 3)), rng.normal(size=3)), Dense(rng.normal(size=(3, 1)), rng.normal(size=1), identity))


def _loss(model, x):
    return np.sum(model(x) ** 2)


def _plan(model):
    """A new plan for `model` (`plan_for` would not make one for a root type whose shapes have
    kept changing: `dict`, across this test suite)."""
    return plans._Builder().plan(model)


def _general(arg, cotangent):
    return structure.unshare(structure.structure(arg, cotangent), set())


def _same(a, b):
    """Whether two gradients are equal, kind for kind and leaf for leaf."""
    if isinstance(a, np.ndarray):
        return type(b) is np.ndarray and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, Tangent):
        return isinstance(b, Tangent) and repr(a) == repr(b) and all(
            _same(getattr(a, k), getattr(b, k)) for k in dir(a)
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


class Config:
    def __init__(self):
        self.rate, self.name, self.steps = 0.1, "cfg", np.arange(3)


MODELS = [
    pytest.param(lambda: _chain(), lambda m: Tangent(Chain, layers=[Tangent(Dense, W=np.ones((2, 3))), None]), id="chain"),
    pytest.param(lambda: {"W": np.ones(2), "b": 0.5, "n": 3}, lambda m: {"W": np.array([1.0, 2.0])}, id="dict"),
    pytest.param(lambda: [np.ones(2), (np.float32(1.0), None), []], lambda m: [None, (np.float32(2.0),)], id="list"),
    pytest.param(lambda: (np.ones(2, dtype=np.float32), {}, Config()), lambda m: None, id="tuple"),
    pytest.param(lambda: {"enc": Config(), "w": 2j}, lambda m: {"w": 1j}, id="complex"),
]


@pytest.mark.parametrize("make, cotangent", MODELS)
def test_a_plan_completes_as_the_general_path_does(make, cotangent):
    model = make()
    plan = plans._Builder().plan(model)
    assert plan is not None and plan.matches(model)
    assert _same(plan.complete(model, cotangent(model), set()), _general(model, cotangent(model)))


def test_the_gradient_of_a_chain_takes_the_plan(monkeypatch):
    model = _chain()
    expected = adjoint.grad(_loss)(model, X)
    made = []
    monkeypatch.setattr(plans._Builder, "plan", lambda self, arg, plan=plans._Builder.plan: made.append(arg) or plan(self, arg))
    calls = []
    general = structure.structure
    monkeypatch.setattr(structure, "structure", lambda *args, **kwargs: calls.append(args) or general(*args, **kwargs))
    g = adjoint.grad(_loss)(model, X)
    assert made == [] and calls == []  # the plan made on the first call, and no general completion
    assert _same(g, expected)
    assert g.layers[1].activation is None


def test_a_layer_appended_between_calls_is_completed():
    model = _chain()
    grad = adjoint.grad(lambda m, x: np.sum(m(x)))
    assert len(grad(model, X).layers) == 2
    model.layers.append(Dense(np.ones((1, 1)), np.zeros(1), identity))
    g = grad(model, X)
    assert len(g.layers) == 3
    np.testing.assert_allclose(g.layers[2].W, [[np.sum(Chain(*model.layers[:2])(X))]])


def test_a_field_changing_kind_between_calls_is_completed():
    model = {"w": np.array([1.0, 2.0]), "s": np.array([3, 4])}
    grad = adjoint.grad(lambda p: np.sum(p["w"] * p["s"]))
    assert grad(model)["s"] is None
    model["s"] = np.array([3.0, 4.0])  # an int array (no gradient) becomes a float one
    np.testing.assert_allclose(grad(model)["s"], [1.0, 2.0])
    model["s"] = 2.0
    assert grad(model)["s"] == 3.0


def test_back_completes_against_the_model_as_it_is_when_it_runs():
    # as the general path does: the plan is checked again when `back` runs
    layer = Dense(np.ones((2, 1)), np.zeros(1), identity)
    value, back = adjoint.pullback(lambda m, x: np.sum(m(x)), layer, X)
    layer.extra = np.ones(3)
    g = back(1.0)[0]
    assert sorted(dir(g)) == ["W", "activation", "b", "extra"]
    np.testing.assert_array_equal(g.extra, np.zeros(3))
    np.testing.assert_allclose(g.W, X.sum(axis=0, keepdims=True).T)


def test_a_tied_layer_gets_an_entry_per_place_sharing_no_memory():
    d = Dense(np.eye(2), np.zeros(2), identity)
    model = Chain(d, d)
    g = adjoint.grad(lambda m, x: np.sum(m(x)))(model, X)
    assert g.layers[0] is not g.layers[1]
    assert not np.shares_memory(g.layers[0].W, g.layers[1].W)


def test_a_tied_array_gets_a_gradient_per_place_sharing_no_memory():
    W = np.array([1.0, 2.0])
    model = {"a": W, "b": W}
    plan = _plan(model)
    shared = np.array([5.0, 6.0])
    g = plan.gradient(model, {"a": shared, "b": shared}, set())
    assert g["a"] is shared and not np.shares_memory(g["a"], g["b"])
    np.testing.assert_array_equal(g["b"], shared)


def test_a_gradient_sharing_memory_with_the_seed_is_copied():
    model = {"W": np.ones(2)}
    seed = np.ones(2)
    g = _plan(model).gradient(model, {"W": seed}, structure.seed_roots(seed))
    assert not np.shares_memory(g["W"], seed)


def test_a_cycle_has_no_plan_and_takes_the_general_path():
    class Node:
        def __init__(self, w):
            self.w, self.parent = w, None

    node = Node(np.array([2.0]))
    node.parent = node
    assert plans._Builder().plan(node) is None
    g = adjoint.grad(lambda n: np.sum(n.parent.w ** 2))(node)
    np.testing.assert_allclose(g.w, [4.0])


def test_a_cotangent_of_another_kind_is_completed_by_the_general_path():
    model = _chain()
    plan = _plan(model)
    odd = Tangent(Chain, layers=np.array([0.0, 0.0]))  # an array where a list's cotangent was expected
    with pytest.raises(plans.Unplanned):
        plan.complete(model, odd, set())
    seen = {12345}
    g = plan.gradient(model, odd, seen)
    assert _same(g, _general(model, odd)) and 12345 in seen


def test_refusals_are_those_of_the_general_path():
    model = {"f": lambda x: x, "W": np.ones(2)}
    plan = _plan(model)
    with pytest.raises(AdjointError, match=r"a gradient reached `\['f'\]`, a function"):
        plan.gradient(model, {"f": np.ones(2)}, set())
    layer = Dense(np.ones(2), np.ones(2))
    with pytest.raises(AdjointError, match=r"`Dense.extra`, which is not a field"):
        _plan(layer).gradient(layer, Tangent(Dense, extra=np.ones(1)), set())


def test_frozen_classes_and_other_objects_have_no_plan():
    @dataclasses.dataclass
    class Norm:
        scale: np.ndarray
        eps: np.ndarray = dataclasses.field(default=None, metadata={"trainable": False})

    class Slotted:
        __slots__ = ("W",)

        def __init__(self):
            self.W = np.ones(1)

    for model in ([Norm(np.ones(1), np.ones(1))], {"s": Slotted()}, {(1, 2): np.ones(1)}, {"n": 3}):
        assert plans._Builder().plan(model) is None
    assert plans.plan_for(2.0) is None and plans.plan_for(np.ones(2)) is None  # leaves: no tree to plan


def test_a_class_given_trainable_after_a_plan_was_made_no_longer_matches():
    class Layer:
        def __init__(self):
            self.W, self.V = np.ones(2), np.ones(2)

    layer = Layer()
    plan = plans.plan_for(layer)
    assert plan.matches(layer)
    Layer.__trainable__ = ("W",)
    assert not plan.matches(layer)
    assert plans.plan_for(layer) is None  # frozen fields: `trainable` works them out


def test_a_plan_keeps_no_class_alive():
    def make():
        class Layer:
            def __init__(self):
                self.W = np.ones(2)

        return Layer

    Outer, Inner = make(), make()
    model = Outer()
    model.inner = Inner()
    plan = plans.plan_for(model)
    assert plan.matches(model)
    inner_alive = weakref.ref(Inner)
    del model, Inner
    gc.collect()
    assert inner_alive() is None
    probe = Outer()
    probe.inner = make()()  # a new class, perhaps where the old one was
    assert not plan.matches(probe)


def test_a_shape_that_keeps_changing_stops_being_planned():
    class Growing:
        def __init__(self):
            self.ws = []

    model = Growing()
    grad = adjoint.grad(lambda m: sum(np.sum(w) for w in m.ws) if m.ws else 0.0)
    for step in range(40):
        model.ws.append(np.ones(1))
        g = grad(model)
        assert len(g.ws) == step + 1 and all(w[0] == 1.0 for w in g.ws)
    layout = layout_of(Growing)
    assert layout.plan_builds < 16 and len(layout.plans) <= plans._KEPT
    assert layout.kind is layouts.OBJECT


def test_a_base_class_given_trainable_after_a_plan_was_made_no_longer_matches():
    class Base:
        pass

    class Layer(Base):
        def __init__(self):
            self.W, self.V = np.array([1.0, 2.0]), np.array([3.0, 4.0])

    layer = Layer()
    plan = _plan(layer)
    assert plan.matches(layer)
    grad = adjoint.grad(lambda m: np.sum(m.W * m.V))
    np.testing.assert_allclose(grad(layer).V, [1.0, 2.0])
    Base.__trainable__ = ("W",)  # inherited by Layer
    assert not plan.matches(layer)
    with pytest.raises(plans.Unplanned):
        plan.complete(layer, None, set())
    assert grad(layer).V is None


def test_a_model_changed_after_its_first_leaves_were_completed_takes_the_general_path():
    model = {"a": np.ones(2), "b": {"c": np.ones(2)}}
    plan = _plan(model)
    model["b"] = {"c": np.ones(2), "d": 1.5}  # the plan gives up after completing `a`
    shared = np.array([3.0, 4.0])
    seen = set()
    g = plan.gradient(model, {"a": shared, "b": {"c": shared}}, seen)
    assert g["a"] is shared and not np.shares_memory(g["a"], g["b"]["c"]) and g["b"]["d"] == 0.0
    assert seen == {id(shared)}  # as the general path alone leaves it


def test_a_model_past_the_size_limit_takes_the_general_path():
    assert _plan([1.0] * (plans._Builder._MAX_NODES - 1)) is not None  # and the list: the limit
    big = [1.0] * plans._Builder._MAX_NODES
    assert _plan(big) is None
    assert adjoint.grad(lambda xs: xs[0] * xs[-1])(big) == [1.0] + [0.0] * (len(big) - 2) + [1.0]


def test_a_tree_past_the_depth_limit_takes_the_general_path():
    def nested(depth):
        tree = {"w": 1.0}
        for _ in range(depth):
            tree = {"w": 1.0, "next": tree}
        return tree

    assert _plan(nested(plans._Builder._MAX_DEPTH - 1)) is not None  # the root and its chain: the limit
    deep = nested(plans._Builder._MAX_DEPTH)
    assert _plan(deep) is None
    assert adjoint.grad(lambda t: t["w"] * t["next"]["w"])(deep)["next"]["w"] == 1.0
