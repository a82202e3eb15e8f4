"""compiler.frozen: reads of frozen argument paths are marked, and activity treats them as constants."""

import dataclasses

import numpy as np

import adjoint
from adjoint.compiler import annotations as anno
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower


def encode(m, x):
    e = m.encoder
    W = e.W
    h = x @ W
    y = m.decoder(h)
    return np.sum(y * m.b) + np.sum(m.encoder_extra)


def layered(m, x):
    layers = m.layers
    first = layers[0]
    W = first.W
    V = layers[1].W
    return np.sum(x @ W) + np.sum(x @ V)


def dynamic(m, x, i):
    layer = m.layers[i]
    return np.sum(x @ layer.W)


def by_key(params, x):
    return np.sum(params["W1"] * x) + np.sum(params["W2"] * x) + np.sum(params[0] * x)


def second(x, m):
    return np.sum(x * m.W)


def frozen_lines(fn, frozen, wrt=(0, 1)):
    """The statements `frozen` marked FROZEN (as source), and the calls marked FROZEN."""
    node, _ = lower(fn, wrt, until="frozen", frozen=frozen)
    statements, calls = [], []
    for stmt in node.body:
        if anno.get(stmt, anno.FROZEN):
            statements.append(syntax.unparse(stmt).strip())
        value = getattr(stmt, "value", None)
        if value is not None and anno.get(value, anno.FROZEN):
            calls.append(syntax.unparse(stmt).strip())
    return statements, calls


def varied(fn, frozen, wrt=(0, 1)):
    node, _ = lower(fn, wrt, until="activity", frozen=frozen)
    return anno.get(node, anno.VARIED)


# ---- the pass ---------------------------------------------------------------------------------------


def test_nothing_is_marked_when_nothing_is_frozen():
    assert frozen_lines(encode, ()) == ([], [])


def test_a_read_of_a_frozen_field_is_marked():
    statements, calls = frozen_lines(encode, ((0, (".encoder",)),))
    assert statements == ["e = m.encoder"]
    assert calls == []


def test_a_frozen_path_is_not_a_prefix_of_a_longer_name():
    statements, _ = frozen_lines(encode, ((0, (".encoder",)),))
    assert not any("encoder_extra" in s for s in statements)
    statements, _ = frozen_lines(encode, ((0, (".enc",)),))
    assert statements == []


def test_a_method_call_on_a_frozen_field_marks_the_call():
    statements, calls = frozen_lines(encode, ((0, (".decoder",)),))
    assert statements == []
    assert calls == ["y = m.decoder(h)"]


def test_paths_are_followed_through_attributes_and_constant_indices():
    statements, _ = frozen_lines(layered, ((0, (".layers[0].W",)),))
    assert statements == ["W = first.W"]
    statements, _ = frozen_lines(layered, ((0, (".layers[1].W",)),))
    assert statements == ["V = V_item.W"]
    statements, _ = frozen_lines(layered, ((0, (".layers[1]",)),))
    assert statements == ["V_item = layers[1]"]


def test_a_frozen_subtree_marks_the_first_read_into_it():
    statements, _ = frozen_lines(layered, ((0, (".layers",)),))
    assert statements == ["layers = m.layers"]


def test_a_dynamic_index_is_not_followed():
    # `m.layers[i]` might be any layer: the read is not marked (activity stays conservative)
    statements, _ = frozen_lines(dynamic, ((0, (".layers[0].W",)),), wrt=(0, 1))
    assert statements == []


def test_dict_keys_are_told_apart_from_int_indices():
    statements, _ = frozen_lines(by_key, ((0, ("['W1']",)),))
    assert statements == ["by_key_item = params['W1']"]
    statements, _ = frozen_lines(by_key, ((0, ("[0]",)),))
    assert len(statements) == 1 and statements[0].endswith("params[0]")
    statements, _ = frozen_lines(by_key, ((0, ("['0']",)),))
    assert statements == []


def test_the_frozen_paths_of_a_later_parameter():
    statements, _ = frozen_lines(second, ((1, (".W",)),))
    assert len(statements) == 1 and statements[0].endswith("= m.W")
    statements, _ = frozen_lines(second, ((0, (".W",)),))
    assert statements == []  # `x` holds no field W: nothing to mark


def test_a_position_past_the_parameters_is_ignored():
    assert frozen_lines(second, ((5, (".W",)),)) == ([], [])


def test_several_frozen_paths_in_one_argument():
    statements, calls = frozen_lines(encode, ((0, (".encoder", ".b")),))
    assert statements[0] == "e = m.encoder" and statements[1].endswith("= m.b") and len(statements) == 2


# ---- activity -------------------------------------------------------------------------------------------


def test_what_a_frozen_read_defines_is_not_varied():
    everything = varied(encode, ())
    assert {"e", "W"} <= everything
    frozen = varied(encode, ((0, (".encoder",)),))
    assert not {"e", "W"} & frozen
    assert {"h", "y", "x"} <= frozen  # x still carries a gradient through `x @ W`


def test_a_frozen_dict_entry_is_not_varied():
    statements, _ = frozen_lines(by_key, ((0, ("['W1']",)),))
    (target,) = [s.split(" = ")[0] for s in statements]
    assert target not in varied(by_key, ((0, ("['W1']",)),))
    assert target in varied(by_key, ())


# ---- generated code ---------------------------------------------------------------------------------------


@dataclasses.dataclass
class Norm:
    scale: np.ndarray
    eps: np.ndarray = dataclasses.field(metadata={"trainable": False})


def normed(n, x):
    s = n.scale
    e = n.eps
    return np.sum(x * s + e * e)


def test_the_source_for_example_arguments_spends_no_work_on_frozen_fields():
    n = Norm(np.ones(2), np.ones(2))
    text = adjoint.source(normed, args=(n, np.ones(2)))
    assert "s_bar" in text
    assert "e_bar" not in text
    text = adjoint.source(normed, args=(n, np.ones(2)), freeze={0: ["scale"]})
    assert "s_bar" not in text and "e_bar" not in text


def test_frozen_fields_get_no_gradient_and_the_others_the_right_one():
    n = Norm(np.array([2.0, 3.0]), np.array([1.0, 1.0]))
    x = np.array([1.0, -1.0])
    gn, gx = adjoint.grad(normed, wrt=(0, 1))(n, x)
    assert gn.eps is None
    np.testing.assert_allclose(gn.scale, x)
    np.testing.assert_allclose(gx, n.scale)


class Layer:
    def __init__(self, W):
        self.W = W

    def __call__(self, h):
        return np.tanh(h @ self.W)


class Net:
    def __init__(self, encoder, decoder):
        self.encoder, self.decoder = encoder, decoder

    def __call__(self, x):
        return self.decoder(self.encoder(x))


def test_a_frozen_layers_call_still_passes_the_gradient_to_earlier_layers(rng):
    net = Net(Layer(rng.normal(size=(3, 2))), Layer(rng.normal(size=(2, 2))))
    x = rng.normal(size=3)
    full = adjoint.grad(lambda n: np.sum(n(x)))(net)
    frozen = adjoint.grad(lambda n: np.sum(n(x)), freeze=["decoder"])(net)
    assert frozen.decoder is None
    np.testing.assert_allclose(frozen.encoder.W, full.encoder.W)
    text = adjoint.source(Net.__call__, args=(net, x), freeze={0: ["decoder"]})
    assert "adj.method_vjp((1,), self, 'decoder'" in text  # the receiver is not differentiated
