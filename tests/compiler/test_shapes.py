"""compiler.shapes: which names certainly share a shape and dtype, so that elementwise adjoints
skip `adj.unbroadcast` where nothing was broadcast, and nowhere else."""

import dataclasses
import math
import textwrap

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import kinds, shapes, syntax
from adjoint.compiler.pipeline import lower
from adjoint.testing import check_grad

rng = np.random.default_rng(0)


def classes(fn, wrt=(0,)):
    node, ctx = lower(fn, wrt, until="inplace")
    params = [a.id for a in node.args.args]
    return shapes.classes(node, kinds.certain_numbers(node.body, ctx.numeric_parameters(params)))


def log_sum_exp(X, b):
    Z = X + b
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=1, keepdims=True)) + m)


def test_elementwise_results_share_their_operands_class_and_keepdims_reductions_are_kept():
    found = classes(log_sum_exp, (0, 1))
    assert found["Z"] == shapes.Like("Z")  # `X + b` may broadcast either: a class of its own
    assert found["m"] == shapes.Kept("Z", (1,))
    assert found["log_sum_exp_sub"] == shapes.Like("Z")
    assert sum(kind == shapes.Like("Z") for kind in found.values()) == 3  # Z, Z - m, and its exp
    assert found["log_sum_exp_add"] == shapes.Kept("Z", (1,))  # log of a kept sum, plus a kept max


def centered(X, b):
    Z = X + b
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.tanh(Z - m)) + np.sum(m)


def test_generated_code_sums_over_kept_axes_and_skips_unbroadcast_where_shapes_match():
    text = adjoint.source(centered, wrt=(0, 1))
    assert "m_bar = m_bar - centered_sub_bar.sum(axis=1, keepdims=True)" in text  # `m`'s share of `Z - m`
    assert "adj.unbroadcast(centered_sub_bar" not in text  # `Z`'s share: nothing to undo
    assert "adj.unbroadcast(Z_bar, X)" in text and "adj.unbroadcast(Z_bar, b)" in text  # X + b may broadcast
    check_grad(centered, rng.normal(size=(3, 4)), rng.normal(size=4))


def python_numbers(x, n):
    k = x.shape[0]
    s = 0.0
    return np.sum(x * k) / len(x) + s * n


def test_python_numbers_come_from_literals_lengths_and_shape_items():
    found = classes(python_numbers)
    assert found["k"] == found["s"] == shapes.PYTHON_NUMBER
    assert found["n"] == shapes.Like("n")  # a parameter may be an array


def grows(h, w):
    for _ in range(2):
        h = h * w  # (1,) times (3,): `h` changes shape in the loop
    return np.sum(h)


def test_a_loop_carried_value_whose_shape_changes_is_opaque():
    found = classes(grows)
    carried = [name for name in found if name.startswith("h_")]
    assert any(found[name] == shapes.OPAQUE for name in carried)
    check_grad(grows, np.array([0.5]), rng.normal(size=3))


def stale(h, w):
    u = h
    for _ in range(2):
        u = h * 2.0  # the shape `h` had at the start of this iteration
        h = h * w
    return np.sum(u + h)  # `u` was broadcast against the grown `h`


def test_a_value_computed_before_its_root_changed_is_not_taken_to_share_its_shape():
    check_grad(stale, np.array([0.5]), rng.normal(size=3))


def shrinking_newton(a):
    x = a
    for _ in range(3):
        x = 0.5 * (x + a / x)
    return np.sum(x)


def test_a_loop_that_keeps_its_shape_needs_no_unbroadcast():
    assert "adj.unbroadcast" not in adjoint.source(shrinking_newton)
    check_grad(shrinking_newton, rng.uniform(1.0, 2.0, size=4))


def centred(x, axis_sum):
    mean = np.mean(x, axis=(0, 2), keepdims=True)
    spread = np.sum(x, axis=-1, keepdims=True)
    return np.sum((x - mean) ** 2 * axis_sum) + np.sum(np.tanh(x / spread))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tuple_and_negative_axes_and_float32_keep_their_dtype(dtype):
    x = rng.uniform(1.0, 2.0, size=(2, 3, 4)).astype(dtype)
    check_grad(centred, x, dtype(1.5))
    gradient = adjoint.grad(centred)(x, dtype(1.5))
    assert gradient.dtype == dtype and gradient.shape == x.shape


def complex_mix(x, z):
    w = x * z  # a real `x` times a complex `z`: `x`'s cotangent is the real part
    return np.sum(np.abs(w - np.max(x, axis=0, keepdims=True)) ** 2)


def test_a_real_operand_of_a_complex_product_keeps_its_unbroadcast():
    x = rng.normal(size=(3, 2))
    z = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    check_grad(complex_mix, x, z)
    assert adjoint.grad(complex_mix)(x, z).dtype == np.float64


def square_with_broadcast(x, b):
    y = x * x + b
    return np.sum(y * y)


def test_a_value_times_itself_needs_no_unbroadcast_but_its_broadcast_partner_does():
    text = adjoint.source(square_with_broadcast, wrt=(0, 1))
    assert "adj.unbroadcast(y_add_bar, b)" in text or "adj.unbroadcast(y_bar, b)" in text
    check_grad(square_with_broadcast, rng.normal(size=(2, 3)), rng.normal(size=3))
    check_grad(square_with_broadcast, rng.normal(size=3), rng.normal(size=(2, 3)))


def global_scale(x):
    return np.sum(x * SCALE)


SCALE = np.ones((2, 3))


def test_a_global_array_is_not_taken_to_share_a_parameters_shape():
    assert "adj.unbroadcast" in adjoint.source(global_scale)
    check_grad(global_scale, rng.normal(size=3))



def test_a_name_bound_again_in_a_nested_default_is_not_taken_to_be_defined_once():
    source = textwrap.dedent("""
        def f(x, w):
            y = x * 2.0
            def inner(v=(y := w)):
                z = v
                return z
            return y * x
    """)
    found = shapes.classes(gast.parse(source).body[0])
    assert found["y"] == shapes.OPAQUE  # bound twice: `y = x * 2.0`, then the default's `:=`
    assert "z" not in found  # the nested function's own name


@dataclasses.dataclass
class Box:
    size: np.ndarray


def field_named_size(x, box):
    return np.sum(x * box.size)


def product_of_rows(X):
    return np.sum(math.prod(X) * X[0])


def test_a_field_named_size_and_math_prod_of_arrays_are_not_taken_for_numbers():
    assert shapes.PYTHON_NUMBER not in classes(field_named_size, (0,)).values()  # `box.size` is an array
    check_grad(lambda x: field_named_size(x, Box(np.ones((2, 3)))), rng.normal(size=3))
    check_grad(product_of_rows, rng.uniform(1.0, 2.0, size=(2, 3)))


def scalar_loop(a, b):
    s = 0.0
    for i in range(20):
        s = s + math.sin(a * i) * b + math.exp(-b * s * 1e-3)
    return s


def scaled_sum(a, X):
    return np.sum(np.tanh(a * X) * a)


def test_code_for_python_floats_is_specialised_without_unbroadcast():
    assert "adj.unbroadcast" not in adjoint.source(scalar_loop, wrt=(0, 1), args=(0.3, 0.7))
    assert "adj.unbroadcast" in adjoint.source(scalar_loop, wrt=(0, 1))  # arrays may broadcast
    assert "adj.unbroadcast(" in adjoint.source(scaled_sum, wrt=(0, 1), args=(0.5, np.ones(3)))  # `a` times an array


def numpy_loop(a, b):
    s = 0.0
    for i in range(5):
        s = s + np.sin(a * i) * b + np.exp(-b * s * 1e-3)
    return np.sum(s)


def test_specialised_and_general_code_alternate_with_the_arguments_kinds():
    gradient = adjoint.grad(numpy_loop, wrt=(0, 1))
    for a, b in [(0.3, 0.7), (np.array([0.3, 0.4]), 0.7), (0.3, np.array([[0.7], [0.2]])), (0.5, 0.1)]:
        check_grad(numpy_loop, a, b)
        got = gradient(a, b)
        _, back = adjoint.pullback(numpy_loop, a, b)  # checked against finite differences just above
        for g, want in zip(got, back(1.0)):
            np.testing.assert_allclose(g, want)
        assert [np.shape(g) for g in got] == [np.shape(a), np.shape(b)]
        assert all(type(g) is float for g, arg in zip(got, (a, b)) if type(arg) is float)
    check_grad(scaled_sum, 0.5, rng.normal(size=(2, 3)))


def power_of_a_float(a, V):
    c = a ** 0.5  # complex for a negative `a`
    W = np.real(V * c)
    return np.sum(np.real(W * c))


class Float(float):
    pass


def test_a_python_floats_power_may_be_complex_and_a_float_subclass_is_a_float():
    check_grad(power_of_a_float, -2.0, np.array([1.0, 2.0]))
    check_grad(power_of_a_float, 2.0, np.array([1.0, 2.0]))
    got = adjoint.grad(scalar_loop, wrt=(0, 1))(Float(0.3), Float(0.7))
    np.testing.assert_allclose(got, adjoint.grad(scalar_loop, wrt=(0, 1))(0.3, 0.7))


@pytest.mark.parametrize("text, plain", [
    ("def f(x):\n    y = x + 1\n    for i in range(3):\n        y = (z := y * 2)\n    return [w for w in y]", True),
    ("def f(x):\n    g = lambda t: t\n    return g(x)", False),
    ("def f(x):\n    def g(t):\n        return t\n    return g(x)", False),
    ("def f(x):\n    global G\n    G = x", False),
    ("def f(x: float):\n    return x", False),
    ("def f(x):\n    match x:\n        case [a]:\n            return a", False),
])
def test_the_names_of_a_function_where_only_names_bind_are_read_in_walk_order(text, plain):
    node = gast.parse(text).body[0]
    names = shapes._plain_names(node)
    if plain:
        assert names == [n for n in syntax.walk(node) if isinstance(n, gast.Name)]
    else:
        assert names is None
    assert list(shapes._definitions(node)) == list(_definitions_from_a_walk(node))


def _definitions_from_a_walk(node):
    """The names binding in `node`, in `walk`'s order (as `shapes` ordered them before it read names only)."""
    shared, stores = set(), {}
    everything = syntax.walk(node)
    if any(type(c) in shapes._SCOPE_KINDS and c is not node for c in everything):
        everything = shapes._in_this_scope(node, shared)
    for child in everything:
        bound = shapes._bound_by(child) if child is not node else None
        if bound:
            stores[bound] = stores.get(bound, 0) + 1
    args = node.args
    for param in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
        stores[param.id] = stores.get(param.id, 0) + 1
    return stores
