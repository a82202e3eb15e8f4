"""adjoint/tree.py: trees of float leaves (containers and objects), and mapping over them."""

import collections
import dataclasses

import numpy as np
import pytest

import adjoint
from adjoint import AdjointError, Tangent
from adjoint.tree import child, children, is_tree_with_floats, path_of, rebuild, tree_leaves, tree_map

Pair = collections.namedtuple("Pair", "W b")


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    act: object = np.tanh
    size: int = 2
    name: str = "dense"


@dataclasses.dataclass(frozen=True)
class FrozenDense:
    W: np.ndarray
    b: np.ndarray


class Slotted:
    __slots__ = ("W", "scale", "label")

    def __init__(self, W, scale, label="s"):
        self.W, self.scale, self.label = W, scale, label


class Node:
    def __init__(self, w, parent=None):
        self.w = w
        self.parent = parent
        self.children = []


class Seq:
    def __init__(self, layers):
        self.layers = layers


def leaf_ids(tree):
    return [id(leaf) for leaf in tree_leaves(tree)]


# ---- tree_leaves ------------------------------------------------------------------------------


def test_leaves_in_key_sequence_and_field_order():
    a, b, c, d = np.zeros(1), np.zeros(2), np.zeros(3), np.zeros(4)
    tree = {"x": [a, (b, 1.5)], "y": Dense(c, d)}
    assert leaf_ids(tree)[:2] == [id(a), id(b)]
    leaves = tree_leaves(tree)
    assert leaves[2] == 1.5
    assert leaves[3] is c and leaves[4] is d and len(leaves) == 5


def test_dict_leaves_follow_insertion_order_not_sorted_keys():
    a, b = np.zeros(1), np.zeros(2)
    assert leaf_ids({"z": a, "a": b}) == [id(a), id(b)]


def test_leaves_skip_none_ints_strings_functions_and_non_float_arrays():
    tree = [None, 3, "s", len, lambda x: x, np.arange(3), np.array([True]), True, {"n": None}, b"x"]
    assert tree_leaves(tree) == []


def test_leaves_include_python_floats_numpy_scalars_float32_and_complex():
    x32 = np.ones(2, dtype=np.float32)
    leaves = tree_leaves([1.5, np.float64(2.0), np.float32(3.0), x32, 1j])
    assert leaves[:3] == [1.5, 2.0, 3.0] and leaves[3] is x32 and leaves[4] == 1j


def test_leaves_of_a_single_leaf_and_of_empty_containers():
    x = np.ones(2)
    assert tree_leaves(x)[0] is x and len(tree_leaves(x)) == 1
    assert tree_leaves(2.5) == [2.5]
    assert tree_leaves({}) == [] and tree_leaves([]) == [] and tree_leaves(()) == []
    assert tree_leaves(None) == [] and tree_leaves(Seq([])) == []


def test_leaves_of_namedtuples_slots_frozen_dataclasses_and_tangents():
    W, b = np.ones(2), np.zeros(2)
    assert leaf_ids(Pair(W, b)) == [id(W), id(b)]
    assert tree_leaves(Slotted(W, 0.5)) [1] == 0.5
    assert leaf_ids(FrozenDense(W, b)) == [id(W), id(b)]
    assert leaf_ids(Tangent(Dense, W=W, b=None)) == [id(W)]


def test_an_object_reached_twice_is_walked_once():
    layer = Dense(np.ones(2), np.zeros(2))
    leaves = tree_leaves(Seq([layer, layer]))
    assert len(leaves) == 2


def test_an_array_reached_twice_through_containers_is_a_leaf_each_time():
    # containers are not objects: only objects are deduplicated
    W = np.ones(2)
    assert leaf_ids({"a": W, "b": [W]}) == [id(W), id(W)]


def test_leaves_of_an_object_referring_to_itself():
    node = Node(np.ones(2))
    node.parent = node
    assert leaf_ids(node) == [id(node.w)]


def test_leaves_of_a_parent_child_cycle():
    root = Node(np.ones(1))
    kid = Node(np.ones(2), parent=root)
    root.children.append(kid)
    assert leaf_ids(root) == [id(root.w), id(kid.w)]


def test_tree_leaves_is_exported():
    assert adjoint.tree_leaves is tree_leaves and adjoint.tree_map is tree_map


# ---- children, child -----------------------------------------------------------------------------


def test_children_of_each_kind():
    W = np.ones(2)
    assert children({"a": 1, "b": 2}) == [("a", 1), ("b", 2)]
    assert children([W, 3]) == [(0, W), (1, 3)]
    assert children((W,)) == [(0, W)]
    assert children(Pair(W, 2.0)) == [("W", W), ("b", 2.0)]
    assert children(Tangent(Dense, W=None, b=1.0)) == [("W", None), ("b", 1.0)]
    assert children(Slotted(W, 2.0)) == [("W", W), ("scale", 2.0), ("label", "s")]
    for leaf in (W, 1.0, 3, "s", None, len):
        assert children(leaf) == []


def test_child_of_each_kind():
    W = np.ones(2)
    assert child(None, "W") is None
    assert child({"W": W}, "W") is W and child({"W": W}, "b") is None
    assert child([W, 1.0], 1) == 1.0
    assert child([W], 5) is None and child([W], "W") is None
    assert child(Pair(W, 2.0), "b") == 2.0
    assert child(Tangent(Dense, W=W), "W") is W and child(Tangent(Dense, W=W), "b") is None
    assert child(Dense(W, W), "b") is W and child(Dense(W, W), "missing") is None
    assert child(Dense(W, W), 0) is None


# ---- rebuild ------------------------------------------------------------------------------------


def test_rebuild_replaces_only_the_named_children_in_a_new_container():
    W = np.ones(2)
    d = {"a": W, "b": 2}
    new = rebuild(d, {"b": 3})
    assert new == {"a": W, "b": 3} and d["b"] == 2 and new is not d
    assert rebuild([1, 2], {1: 5}) == [1, 5]
    t = rebuild((1, 2), {0: 5})
    assert t == (5, 2) and type(t) is tuple
    p = rebuild(Pair(1.0, 2.0), {"b": 7.0})
    assert p == Pair(1.0, 7.0) and type(p) is Pair


def test_rebuild_a_frozen_dataclass_and_slots():
    W, b = np.ones(2), np.zeros(2)
    frozen = FrozenDense(W, b)
    new = rebuild(frozen, {"W": 2 * W})
    assert type(new) is FrozenDense and new is not frozen
    np.testing.assert_array_equal(new.W, [2.0, 2.0])
    assert new.b is b and frozen.W is W
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.W = W  # still frozen
    s = Slotted(W, 0.5)
    s2 = rebuild(s, {"scale": 1.5})
    assert (s2.scale, s.scale, s2.W is W, s2.label) == (1.5, 0.5, True, "s")


def test_rebuild_a_tangent():
    g = Tangent(Dense, W=1.0, b=None)
    new = rebuild(g, {"b": 2.0})
    assert isinstance(new, Tangent) and (new.W, new.b) == (1.0, 2.0)
    assert g.b is None


# ---- tree_map -------------------------------------------------------------------------------


def test_tree_map_maps_float_leaves_and_keeps_the_others():
    W = np.ones((2, 2))
    tree = {"W": W, "b": 0.5, "n": 3, "name": "x", "act": len, "none": None, "mask": np.array([1, 2])}
    out = tree_map(lambda w: w * 2, tree)
    np.testing.assert_array_equal(out["W"], 2 * W)
    assert out["b"] == 1.0
    assert out["n"] == 3 and out["name"] == "x" and out["act"] is len and out["none"] is None
    assert out["mask"] is tree["mask"]
    np.testing.assert_array_equal(W, np.ones((2, 2)))  # the input is not changed
    assert tree["b"] == 0.5


def test_tree_map_builds_a_new_frozen_dataclass():
    W, b = np.ones(2), np.zeros(2)
    model = FrozenDense(W, b)
    out = tree_map(lambda w: w + 1, model)
    assert type(out) is FrozenDense and out is not model
    np.testing.assert_array_equal(out.W, [2.0, 2.0])
    np.testing.assert_array_equal(out.b, [1.0, 1.0])
    assert model.W is W and model.b is b


def test_tree_map_with_a_sparse_tangent_gradient_keeps_leaves_without_one():
    model = FrozenDense(np.ones(2), np.zeros(2))
    grads = Tangent(FrozenDense, W=np.ones(2))  # `b` absent
    out = tree_map(lambda w, g: w - 0.5 * g, model, grads)
    np.testing.assert_array_equal(out.W, [0.5, 0.5])
    assert out.b is model.b


def test_tree_map_with_a_gradient_of_none_keeps_the_whole_tree():
    model = {"W": np.ones(2), "inner": {"b": 1.0}}
    out = tree_map(lambda w, g: w - g, model, {"W": None, "inner": None})
    assert out["W"] is model["W"] and out["inner"]["b"] == 1.0


def test_tree_map_over_several_trees():
    a = {"x": 1.0, "y": [2.0, 3.0]}
    b = {"x": 10.0, "y": [20.0, 30.0]}
    c = {"x": 100.0, "y": [200.0, None]}  # None: no counterpart, the leaf is kept
    out = tree_map(lambda p, q, r: p + q + r, a, b, c)
    assert out == {"x": 111.0, "y": [222.0, 3.0]}


def test_tree_map_refuses_a_tree_that_does_not_mirror_the_first():
    with pytest.raises(AdjointError, match="does not mirror"):
        tree_map(lambda p, q: p + q, {"y": [2.0, 3.0]}, {"y": [20.0]})
    with pytest.raises(AdjointError, match="a tuple for a Pair"):
        tree_map(lambda p, q: p + q, Pair(1.0, np.ones(1)), (1.0, np.ones(1)))


def test_tree_map_of_namedtuples_slots_and_tangents():
    out = tree_map(lambda w: w * 3, Pair(1.0, np.ones(1)))
    assert type(out) is Pair and out.W == 3.0
    s = tree_map(lambda w: w * 3, Slotted(np.ones(1), 2.0, "lbl"))
    assert type(s) is Slotted and s.scale == 6.0 and s.label == "lbl"
    g = tree_map(lambda w: -w, Tangent(Dense, W=1.0, b=None))
    assert isinstance(g, Tangent) and g.W == -1.0 and g.b is None


def test_tree_map_preserves_float32():
    model = {"W": np.ones(3, dtype=np.float32)}
    grads = {"W": np.ones(3, dtype=np.float32)}
    out = tree_map(lambda w, g: w - np.float32(0.1) * g, model, grads)
    assert out["W"].dtype == np.float32


def test_tree_map_maps_an_object_reached_twice_to_one_new_object():
    layer = Dense(np.ones(2), np.zeros(2))
    out = tree_map(lambda w: w + 1, Seq([layer, layer]))
    assert out.layers[0] is out.layers[1]
    assert out.layers[0] is not layer
    np.testing.assert_array_equal(out.layers[0].W, [2.0, 2.0])


def test_tree_map_of_empty_containers_and_leaves():
    assert tree_map(lambda w: w + 1, {}) == {} and tree_map(lambda w: w + 1, []) == []
    assert tree_map(lambda w: w + 1, 1.0) == 2.0
    assert tree_map(lambda w: w + 1, None) is None and tree_map(lambda w: w + 1, "s") == "s"


# ---- is_tree_with_floats, path_of --------------------------------------------------------------


@pytest.mark.parametrize(
    "tree, expected",
    [
        (1.0, True), (np.ones(2, dtype=np.float32), True), (3, False), (np.arange(2), False), (None, False),
        ({}, False), ({"a": [1, "s", None]}, False), ({"a": [1, (2, 0.5)]}, True),
        (Dense(np.arange(2), np.arange(2)), False), (Dense(np.arange(2), np.ones(2)), True),
        (Tangent(Dense, W=None), False), (Tangent(Dense, W=1.0), True),
    ],
)
def test_is_tree_with_floats(tree, expected):
    assert is_tree_with_floats(tree) is expected


def test_is_tree_with_floats_terminates_on_cycles():
    node = Node(np.arange(2))
    node.parent = node
    assert is_tree_with_floats(node) is False
    kid = Node(1.5, parent=node)
    node.children.append(kid)
    assert is_tree_with_floats(node) is True


def test_path_of():
    assert path_of("", {"W": 1}, "W") == "['W']"
    assert path_of(".layers", [1], 0) == ".layers[0]"
    assert path_of("", (1,), 0) == "[0]"
    assert path_of("", Pair(1, 2), "W") == ".W"
    assert path_of(".enc", Dense(1, 2), "b") == ".enc.b"
    assert path_of("", {0: 1}, 0) == "[0]"
    assert path_of("", {"0": 1}, "0") == "['0']"


def test_is_tree_with_floats_stops_at_the_first_and_terminates_on_a_list_holding_itself():
    looped = [1, "s"]
    looped.append(looped)
    assert is_tree_with_floats(looped) is False
    looped.append({"w": 0.5})
    assert is_tree_with_floats(looped) is True
    assert tree_leaves(looped) == [0.5]
