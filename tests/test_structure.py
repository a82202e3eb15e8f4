"""adjoint/arguments.py: `structure` (completing a structural gradient at the API's edge) and
`carries_gradient` (which arguments get one)."""

import collections
import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, Tangent, runtime
from adjoint.arguments import carries_gradient
from adjoint.structure import structure
import adjoint.structure as plain_path
from adjoint.runtime.structs import tangent_fields, tangent_type

Pair = collections.namedtuple("Pair", "W b")


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    size: int = 2
    name: str = "dense"
    act: object = np.tanh


@dataclasses.dataclass(frozen=True)
class FrozenDense:
    W: np.ndarray
    scale: float


class Slotted:
    __slots__ = ("W", "n")

    def __init__(self, W, n):
        self.W, self.n = W, n


class Seq:
    def __init__(self, layers):
        self.layers = layers


class WithClassAttribute:
    bias = 1.0  # a class attribute: not a field

    def __init__(self, W):
        self.W = W


def f(*args):
    return 0.0


# ---- structure: leaves ---------------------------------------------------------------------------


def test_a_float_leaf_gets_its_projected_cotangent():
    assert structure(2.0, np.float64(3.0)) == 3.0 and type(structure(2.0, np.float64(3.0))) is float
    assert structure(2.0, None) == 0.0
    g = structure(np.ones(2, dtype=np.float32), np.array([1.0, 2.0]))
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [1.0, 2.0])


def test_an_array_leaf_without_cotangent_gets_zeros_of_its_dtype():
    g = structure(np.ones((2, 2), dtype=np.float32), None)
    assert g.dtype == np.float32 and g.shape == (2, 2) and not g.any()


# ---- structure: containers ----------------------------------------------------------------------------


def test_a_dict_is_mirrored_with_zeros_for_float_leaves_and_none_for_the_rest():
    arg = {"W": np.ones(2), "b": 1.5, "n": 3, "name": "x", "act": len, "none": None}
    g = structure(arg, {"W": np.array([1.0, 2.0])})
    assert list(g) == list(arg)
    np.testing.assert_array_equal(g["W"], [1.0, 2.0])
    assert g["b"] == 0.0 and type(g["b"]) is float
    assert g["n"] is None and g["name"] is None and g["act"] is None and g["none"] is None


def test_a_cotangent_of_none_is_completed_to_zeros():
    g = structure({"W": np.ones(2), "inner": [1.5, (np.zeros(1),)]}, None)
    assert not g["W"].any() and g["inner"][0] == 0.0
    assert type(g["inner"]) is list and type(g["inner"][1]) is tuple
    assert not g["inner"][1][0].any()


def test_a_subtree_without_floats_is_none():
    g = structure({"W": np.ones(2), "config": {"n": 3, "tags": ["a"]}}, None)
    assert g["config"] is None


def test_a_tree_without_floats_or_empty_is_none():
    assert structure({"n": 3}, None) is None
    assert structure({}, None) is None
    assert structure([], None) is None


def test_a_namedtuple_is_mirrored_as_the_same_namedtuple():
    g = structure(Pair(np.ones(2), 3), Pair(np.array([1.0, 1.0]), None))
    assert type(g) is Pair and g.b is None
    np.testing.assert_array_equal(g.W, [1.0, 1.0])


def test_sequence_cotangents_shorter_than_the_value_count_as_zero():
    g = structure([1.0, 2.0, 3.0], [5.0])
    assert g == [5.0, 0.0, 0.0]


# ---- structure: objects -------------------------------------------------------------------------------


def test_an_object_gets_a_tangent_with_every_field_completed():
    d = Dense(np.ones(2), np.ones(2))
    g = structure(d, Tangent(Dense, W=np.array([1.0, 2.0])))
    assert isinstance(g, Tangent) and tangent_type(g) is Dense
    assert list(tangent_fields(g)) == ["W", "b", "size", "name", "act"]
    np.testing.assert_array_equal(g.W, [1.0, 2.0])
    np.testing.assert_array_equal(g.b, [0.0, 0.0])
    assert g.size is None and g.name is None and g.act is None


def test_a_frozen_dataclass_and_slots_get_tangents_with_python_floats_kept_as_floats():
    g = structure(FrozenDense(np.ones(1), 2.0), Tangent(FrozenDense, scale=np.float64(4.0)))
    assert tangent_type(g) is FrozenDense and g.scale == 4.0 and type(g.scale) is float
    assert not g.W.any()
    g = structure(Slotted(np.ones(1), 3), None)
    assert tangent_type(g) is Slotted and g.n is None


def test_float32_fields_keep_their_dtype():
    d = Dense(np.ones(2, dtype=np.float32), np.ones(2, dtype=np.float32))
    g = structure(d, Tangent(Dense, W=np.array([1.0, 2.0]), b=np.float64(1.0) * np.ones(2)))
    assert g.W.dtype == np.float32 and g.b.dtype == np.float32


def test_nested_objects_get_nested_tangents():
    model = Seq([Dense(np.ones(2), np.ones(2))])
    g = structure(model, Tangent(Seq, layers=[Tangent(Dense, b=np.ones(2))]))
    assert tangent_type(g) is Seq and type(g.layers) is list
    inner = g.layers[0]
    assert tangent_type(inner) is Dense
    np.testing.assert_array_equal(inner.b, [1.0, 1.0])
    assert not inner.W.any()


def test_an_object_without_floats_is_none():
    assert structure(Slotted(np.arange(2), 3), None) is None


def test_an_object_reached_twice_is_completed_once_per_place():
    layer = Dense(np.ones(1), np.ones(1))
    g = structure(Seq([layer, layer]), Tangent(Seq, layers=[Tangent(Dense, W=np.array([1.0])), None]))
    first, second = g.layers
    assert first is not second
    np.testing.assert_array_equal(first.W, [1.0])
    np.testing.assert_array_equal(second.W, [0.0])


def test_a_cycle_back_to_an_object_being_completed_terminates():
    class Node:
        def __init__(self, w):
            self.w = w
            self.me = self

    node = Node(np.ones(2))
    g = structure(node, Tangent(Node, w=np.array([1.0, 2.0])))
    np.testing.assert_array_equal(g.w, [1.0, 2.0])


def test_a_gradient_for_an_attribute_neither_field_nor_class_attribute_is_refused():
    # what `__getattr__` computes cannot take a gradient back; a class attribute is a constant
    with pytest.raises(AdjointError, match=r"`WithClassAttribute\.computed`, which is not a field"):
        structure(WithClassAttribute(np.ones(1)), Tangent(WithClassAttribute, computed=1.0))
    g = structure(WithClassAttribute(np.ones(1)), Tangent(WithClassAttribute, bias=1.0, computed=None))
    assert set(tangent_fields(g)) == {"W"}


def test_a_class_attribute_read_through_the_object_is_a_constant():
    # shared by every instance, like a module-level constant: no gradient, and none refused
    m = WithClassAttribute(np.ones(2))
    g = adjoint.grad(lambda m: np.sum(m.W) * m.bias)(m)
    np.testing.assert_array_equal(g.W, np.full(2, WithClassAttribute.bias))
    assert set(tangent_fields(g)) == {"W"}


# ---- structure: frozen paths ---------------------------------------------------------------------------


def test_frozen_paths_get_none():
    model = {"enc": Dense(np.ones(1), np.ones(1)), "dec": [np.ones(1), 2.0]}
    g = structure(model, None, frozenset({"['enc'].W", "['dec'][1]"}))
    assert g["enc"].W is None and not g["enc"].b.any()
    assert g["dec"][1] is None and not g["dec"][0].any()


def test_a_frozen_subtree_gets_none_even_if_a_cotangent_reached_it():
    model = {"enc": {"W": np.ones(1)}, "b": np.ones(1)}
    g = structure(model, {"enc": {"W": np.array([5.0])}, "b": np.array([1.0])}, frozenset({"['enc']"}))
    assert g["enc"] is None
    np.testing.assert_array_equal(g["b"], [1.0])


def test_everything_frozen_still_mirrors_the_argument():
    # so `g["W"]` (or `g.layers`) can be read, and is None
    assert structure({"W": np.ones(1), "n": 2}, None, frozenset({"['W']"})) == {"W": None, "n": None}


# ---- carries_gradient -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arg",
    [1.5, np.float32(1.0), np.ones(2), np.ones(2, dtype=np.float16), {"W": np.ones(1)}, [1, (2, 0.5)],
     Dense(np.ones(1), np.ones(1)), Pair(np.arange(2), 1.0), Tangent(Dense, W=1.0)],
    ids=lambda a: type(a).__name__,
)
def test_arguments_that_carry_gradients(arg):
    assert carries_gradient(arg, 0, f) is True


@pytest.mark.parametrize(
    "arg",
    [3, True, "s", None, np.arange(3), np.array([True]), {}, [], {"n": 3}, Slotted(np.arange(2), 3), len, Dense],
    ids=lambda a: type(a).__name__,
)
def test_arguments_that_carry_none(arg):
    assert carries_gradient(arg, 0, f) is False


def test_carries_gradient_terminates_on_a_cycle():
    class Node:
        def __init__(self):
            self.me = self
            self.n = 3

    assert carries_gradient(Node(), 0, f) is False


@pytest.mark.parametrize("arg", [1j, np.ones(2, dtype=complex), np.complex64(1), {"z": 1j}],
                         ids=["complex", "array", "np-scalar", "in-a-dict"])
def test_complex_arguments_carry_gradients(arg):
    assert carries_gradient(arg, 2, f) is True


def test_grad_of_a_model_returns_its_completed_structure():
    model = {"layer": Dense(np.array([1.0, 2.0]), np.zeros(2)), "scale": 2.0, "steps": 10}
    g = adjoint.grad(lambda m: np.sum(m["layer"].W) * m["scale"])(model)
    np.testing.assert_array_equal(g["layer"].W, [2.0, 2.0])
    np.testing.assert_array_equal(g["layer"].b, [0.0, 0.0])
    assert g["scale"] == 3.0 and g["steps"] is None and g["layer"].size is None


# ---- plain_gradients: the API's common path -----------------------------------------------------

def test_a_fresh_cotangent_only_the_results_hold_is_handed_back_as_it_is():
    assert plain_path._HELD_ONCE is not None  # (else the common case is never taken on this interpreter)
    cotangents = (np.ones(3),)
    made = id(cotangents[0])  # (an id holds no reference)
    (g,) = plain_path.plain_gradients((np.zeros(3),), cotangents, (0,), None)
    assert id(g) == made


def test_cotangents_that_share_memory_are_copied_whoever_holds_them():
    x, y = np.zeros(3), np.zeros(2)
    whole = np.arange(3.0)
    cotangents = (whole, whole[:2])
    del whole  # only the results hold it, and its view
    gx, gy = plain_path.plain_gradients((x, y), cotangents, (0, 1), None)
    assert not np.shares_memory(gx, gy)
    np.testing.assert_array_equal(gy, [0.0, 1.0])
    same = np.ones(3)
    g0, g1 = plain_path.plain_gradients((x, x), (same, same), (0, 1), None)
    assert g0 is not g1 and not np.shares_memory(g0, g1)
    held = np.ones(3)  # the caller's seed: never handed back as a gradient
    (g,) = plain_path.plain_gradients((x,), (held,), (0,), held)
    assert not np.shares_memory(g, held)


def test_after_a_cotangent_that_is_not_the_common_case_each_later_one_is_projected():
    x, y = np.zeros(2), np.zeros(3, dtype=np.float32)
    shared = np.ones(3, dtype=np.float32)
    cotangents = (np.full(2, 2.0), np.float64(4.0), shared, np.ones(3))
    gx, ga, gy, gz = plain_path.plain_gradients((x, 1.5, y, y), cotangents, (0, 1, 2, 3), None)
    assert type(ga) is float and ga == 4.0
    assert gy is shared and gz.dtype == np.float32  # (held by this test too, but nothing returned shares it)
    np.testing.assert_array_equal(gx, [2.0, 2.0])


def test_a_read_only_cotangent_only_the_results_hold_comes_back_writeable():
    made = np.ones(3)
    made.flags.writeable = False
    cotangents = (made,)
    del made
    (g,) = plain_path.plain_gradients((np.zeros(3),), cotangents, (0,), None)
    g += 1.0
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


def test_tangents_of_gradients_are_made_like_their_arguments_first():
    x = np.zeros((2, 3), dtype=np.float32)
    (t,) = plain_path.plain_gradients((x,), (np.array([1.0, 2.0, 3.0]),), (0,), None, runtime.tangent_like)
    assert t.dtype == np.float32 and t.shape == (2, 3)
    np.testing.assert_array_equal(t[1], [1.0, 2.0, 3.0])


def test_a_gradient_reaching_a_stored_function_through_its_default_is_refused():
    class Scale:
        def __init__(self, w):
            self.w = w

    class Layer:
        def __init__(self, W, act):
            self.W, self.act = W, act

        def __call__(self, x):
            return self.act(x @ self.W)

    def make_act(scale):
        def act(z, s=scale):
            return z * s.w

        return act

    layer = Layer(np.ones((2, 2)), make_act(Scale(np.array([2.0, 3.0]))))
    for _ in range(2):  # planned, then found again
        with pytest.raises(adjoint.AdjointError, match="a gradient reached `act`"):
            adjoint.grad(lambda model, x: np.sum(model(x)))(layer, np.array([[1.0, 2.0]]))
