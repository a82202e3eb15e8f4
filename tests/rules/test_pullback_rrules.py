"""Reverse rules of the runtime helpers that generated pullback code calls (adjoint/rules/
pullback_transposes.py), which reverse mode over a generated pullback (reverse-over-reverse) runs
through.

Each helper is checked with check_rrule (its reverse rule by finite differences, and its forward
rule) at arguments of the shapes its rules pass it, in float64 and float32. `unreduce_chosen`, whose
`ans` the rules compute from `x`, and `scatter_add`, which updates its buffer in place, are checked
through functions that call them so. End to end, reverse mode over a generated forward function
and its pullback (`gradient_rules.gradient_program`) gives a Hessian-vector product, compared with
`adjoint.hvp` and with central finite differences of `adjoint.grad`.
"""

import collections
import dataclasses
import functools

import numpy as np
import pytest

import adjoint
from adjoint import arguments, forwards, frules, gradient_rules, registry
from adjoint import runtime as adj
from adjoint.testing import check_rrule
from sampling import complex_of, distinct, normal, scalar

# The primitives the check_rrule tests below exercise (read by test_registry_coverage).
RRULE_PRIMITIVES = [
    adj.unbroadcast, adj.unbroadcast_float, adj.cotangent_like, adj.unreduce, adj.unreduce_chosen, adj.add,
    adj.add_chosen, adj.matmul_lhs_bar, adj.matmul_rhs_bar, adj.dot_lhs_bar, adj.dot_rhs_bar, adj.untranspose,
    adj.unindex, adj.buffer_like, adj.scatter_add, adj.from_buffer, adj.item_bar, adj.field_bar, adj.field_bars,
    adj.unpack_bar, adj.append_bar, adj.setitem_bar, adj.unconcat, adj.unstack, adj.unconcatenate, adj.unsplit, adj.undiagonal,
    adj.vjp,
]

DTYPES = [np.float64, np.float32]








@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray


Pair = collections.namedtuple("Pair", "W b")


def layer(x, W):
    return np.tanh(x @ W)


# ---- helpers whose arguments the rules compute from one another, or which update in place -------


def chosen_bar(g, x):
    """`np.max(x, axis=1)`'s cotangent, as its rule computes it from the maximum."""
    return adj.unreduce_chosen(g, x, np.max(x, axis=1), axis=1)


@registry.rrule(chosen_bar)
def chosen_bar_rrule(g, x):
    ans = np.max(x, axis=1)
    value, pullback = registry.lookup(adj.unreduce_chosen).rrule(g, x, ans, axis=1)

    def chosen_bar_pullback(c):
        g_bar, x_bar, ans_bar = pullback(c)
        return g_bar, x_bar + adj.unreduce_chosen(ans_bar, x, ans, axis=1)  # `ans` is read from `x`

    return value, chosen_bar_pullback


@frules.frule(chosen_bar)
def chosen_bar_frule(primals, tangents):
    (g, x), (g_dot, x_dot) = primals, tangents
    ans, ans_dot = np.max(x, axis=1), np.take_along_axis(x_dot, np.argmax(x, axis=1)[:, None], axis=1)[:, 0]
    return frules.lookup(adj.unreduce_chosen).frule((g, x, ans), (g_dot, x_dot, ans_dot), axis=1)


def chosen_added(total, g, x):
    """`total` plus `np.max(x, axis=1, keepdims=True)`'s cotangent, added into a copy of `total`
    (check_rrule refuses a call that updates its argument)."""
    return adj.add_chosen(total.copy(), g, x, np.max(x, axis=1, keepdims=True), axis=1, keepdims=True)


@registry.rrule(chosen_added)
def chosen_added_rrule(total, g, x):
    ans = np.max(x, axis=1, keepdims=True)
    value, pullback = registry.lookup(adj.add_chosen).rrule(total.copy(), g, x, ans, axis=1, keepdims=True)

    def chosen_added_pullback(c):
        total_bar, g_bar, x_bar, ans_bar = pullback(c)
        return total_bar, g_bar, x_bar + adj.unreduce_chosen(ans_bar, x, ans, axis=1, keepdims=True)

    return value, chosen_added_pullback


@frules.frule(chosen_added)
def chosen_added_frule(primals, tangents):
    (total, g, x), (total_dot, g_dot, x_dot) = primals, tangents
    ans = np.max(x, axis=1, keepdims=True)
    ans_dot = np.take_along_axis(x_dot, np.argmax(x, axis=1)[:, None], axis=1)
    return frules.lookup(adj.add_chosen).frule((total.copy(), g, x, ans), (total_dot, g_dot, x_dot, ans_dot), axis=1, keepdims=True)


def _copy(buffer):
    return dict(buffer) if isinstance(buffer, dict) else list(buffer) if isinstance(buffer, list) else buffer.copy()


def scattered(buffer, index, value):
    """`scatter_add` into a copy of `buffer`: check_rrule refuses a call that updates its argument."""
    return adj.scatter_add(_copy(buffer), index, value)


@registry.rrule(scattered)
def scattered_rrule(buffer, index, value):
    return registry.lookup(adj.scatter_add).rrule(_copy(buffer), index, value)


@frules.frule(scattered)
def scattered_frule(primals, tangents):
    (buffer, index, value), (buffer_dot, _, value_dot) = primals, tangents
    buffer_dot = adj.buffer_like(buffer) if buffer_dot is None else _copy(buffer_dot)
    return frules.lookup(adj.scatter_add).frule((_copy(buffer), index, value), (buffer_dot, None, value_dot))


# (id, build): build(rng, dtype) -> (helper, args, kwargs), as the rules and generated code call the helper.
def cases():
    n, c = normal, complex_of
    return [
        # cotangents
        ("unbroadcast", lambda r, t: (adj.unbroadcast, (n(r, t, 4, 2, 3), n(r, t, 1, 3)), {})),
        ("unbroadcast-same", lambda r, t: (adj.unbroadcast, (n(r, t, 2, 3), n(r, t, 2, 3)), {})),
        ("unbroadcast-scalar", lambda r, t: (adj.unbroadcast, (n(r, t, 3), scalar(r, t)), {})),
        ("unbroadcast-float", lambda r, t: (adj.unbroadcast, (1.5, 0.5), {})),
        ("unbroadcast-complex", lambda r, t: (adj.unbroadcast, (n(r, c(t), 2, 3), n(r, t, 3)), {})),
        ("unbroadcast-fewer-axes", lambda r, t: (adj.unbroadcast, (n(r, t, 3), n(r, t, 1, 3)), {})),
        ("unbroadcast_float", lambda r, t: (adj.unbroadcast_float, (n(r, t, 2, 3), n(r, t, 3)), {})),
        ("unbroadcast_float-list", lambda r, t: (adj.unbroadcast_float, (n(r, t, 2, 2), [0.5, 1]), {})),
        ("cotangent_like", lambda r, t: (adj.cotangent_like, (n(r, t, 1, 6), n(r, t, 6)), {})),
        ("cotangent_like-list", lambda r, t: (adj.cotangent_like, (n(r, t, 2), [0.5, 1.5]), {})),
        ("cotangent_like-complex", lambda r, t: (adj.cotangent_like, (n(r, c(t), 3), n(r, t, 3)), {})),
        ("unreduce", lambda r, t: (adj.unreduce, (n(r, t, 2), n(r, t, 2, 3)), {"axis": 1})),
        ("unreduce-all", lambda r, t: (adj.unreduce, (scalar(r, t), n(r, t, 2, 3)), {})),
        ("unreduce-keepdims", lambda r, t: (adj.unreduce, (n(r, t, 2, 1), n(r, t, 2, 3)), {"axis": 1, "keepdims": True})),
        ("unreduce-axes", lambda r, t: (adj.unreduce, (n(r, t, 3), n(r, t, 2, 3, 4)), {"axis": (0, 2)})),
        ("unreduce-list", lambda r, t: (adj.unreduce, (scalar(r, t), [n(r, t, 2), n(r, t, 2)]), {})),
        ("unreduce-float", lambda r, t: (adj.unreduce, (1.5, 0.5), {})),
        ("unreduce-complex", lambda r, t: (adj.unreduce, (n(r, c(t), 2), n(r, c(t), 2, 3)), {"axis": 1})),
        ("unreduce_chosen", lambda r, t: (chosen_bar, (n(r, t, 2), distinct(r, t, 2, 3)), {})),
        ("add_chosen", lambda r, t: (chosen_added, (n(r, t, 2, 3), n(r, t, 2, 1), distinct(r, t, 2, 3)), {})),
        ("add", lambda r, t: (adj.add, (n(r, t, 2, 3), n(r, t, 2, 3)), {})),
        ("add-broadcast", lambda r, t: (adj.add, (n(r, t, 2, 3), scalar(r, t)), {})),
        ("add-tuple", lambda r, t: (adj.add, ((n(r, t, 2), None), (n(r, t, 2), n(r, t, 3))), {})),
        ("add-dict", lambda r, t: (adj.add, ({"w": n(r, t, 2)}, {"w": n(r, t, 2), "b": 1.0}), {})),
        ("add-none", lambda r, t: (adj.add, (None, n(r, t, 2)), {})),
        # products and layouts
        ("matmul_lhs_bar", lambda r, t: (adj.matmul_lhs_bar, (n(r, t, 2, 4), n(r, t, 2, 3), n(r, t, 3, 4)), {})),
        ("matmul_lhs_bar-vector", lambda r, t: (adj.matmul_lhs_bar, (n(r, t, 4), n(r, t, 3), n(r, t, 3, 4)), {})),
        ("matmul_lhs_bar-matrix-vector", lambda r, t: (adj.matmul_lhs_bar, (n(r, t, 2), n(r, t, 2, 3), n(r, t, 3)), {})),
        ("matmul_rhs_bar-matrix-vector", lambda r, t: (adj.matmul_rhs_bar, (n(r, t, 2), n(r, t, 2, 3), n(r, t, 3)), {})),
        ("matmul_lhs_bar-vectors", lambda r, t: (adj.matmul_lhs_bar, (scalar(r, t), n(r, t, 3), n(r, t, 3)), {})),
        ("matmul_lhs_bar-batch", lambda r, t: (adj.matmul_lhs_bar, (n(r, t, 5, 2, 4), n(r, t, 2, 3), n(r, t, 5, 3, 4)), {})),
        ("matmul_lhs_bar-complex", lambda r, t: (adj.matmul_lhs_bar, (n(r, c(t), 2, 4), n(r, t, 2, 3), n(r, c(t), 3, 4)), {})),
        ("matmul_rhs_bar", lambda r, t: (adj.matmul_rhs_bar, (n(r, t, 2, 4), n(r, t, 2, 3), n(r, t, 3, 4)), {})),
        ("matmul_rhs_bar-vector", lambda r, t: (adj.matmul_rhs_bar, (n(r, t, 2), n(r, t, 2, 3), n(r, t, 3)), {})),
        ("matmul_rhs_bar-batch", lambda r, t: (adj.matmul_rhs_bar, (n(r, t, 5, 2, 4), n(r, t, 5, 2, 3), n(r, t, 3, 4)), {})),
        ("dot_lhs_bar", lambda r, t: (adj.dot_lhs_bar, (n(r, t, 2), n(r, t, 2, 3), n(r, t, 3)), {})),
        ("dot_lhs_bar-scalar", lambda r, t: (adj.dot_lhs_bar, (n(r, t, 2), 3.0, n(r, t, 2)), {})),
        ("dot_rhs_bar", lambda r, t: (adj.dot_rhs_bar, (n(r, t, 2), n(r, t, 2, 3), n(r, t, 3)), {})),
        ("dot_rhs_bar-matrices", lambda r, t: (adj.dot_rhs_bar, (n(r, t, 2, 4), n(r, t, 2, 3), n(r, t, 3, 4)), {})),
        ("untranspose", lambda r, t: (adj.untranspose, (n(r, t, 4, 2, 3), (2, 0, 1)), {})),
        ("untranspose-reversed", lambda r, t: (adj.untranspose, (n(r, t, 3, 2),), {})),
        # items, buffers and containers
        ("unindex", lambda r, t: (adj.unindex, (n(r, t, 2), n(r, t, 3), [0, 0]), {})),
        ("unindex-row", lambda r, t: (adj.unindex, (n(r, t, 3), n(r, t, 4, 3), 1), {})),
        ("unindex-slice", lambda r, t: (adj.unindex, (n(r, t, 2, 3), n(r, t, 4, 3), slice(1, 3)), {})),
        ("unindex-tuple", lambda r, t: (adj.unindex, (n(r, t, 2), (n(r, t, 2), 1.5), 0), {})),
        ("unindex-tuple-slice", lambda r, t: (adj.unindex, ((n(r, t, 2), 0.5), (1.5, n(r, t, 2), 2.5), slice(1, None)), {})),
        ("unindex-dict", lambda r, t: (adj.unindex, (n(r, t, 2), {"a": 1.0, "b": n(r, t, 2)}, "b"), {})),
        ("buffer_like", lambda r, t: (adj.buffer_like, (n(r, t, 3, 2),), {})),
        ("buffer_like-tuple", lambda r, t: (adj.buffer_like, ((n(r, t, 2), 1.5, 3),), {})),
        ("scatter_add", lambda r, t: (scattered, (n(r, t, 3, 2), 1, n(r, t, 2)), {})),
        ("scatter_add-repeated", lambda r, t: (scattered, (n(r, t, 3, 2), [2, 2], n(r, t, 2, 2)), {})),
        ("scatter_add-broadcast", lambda r, t: (scattered, (n(r, t, 3, 2), slice(0, 2), n(r, t, 2)), {})),
        ("scatter_add-item", lambda r, t: (scattered, (n(r, t, 3), 1, 2.0), {})),
        ("scatter_add-list", lambda r, t: (scattered, ([None, n(r, t, 2), 1.5], 1, n(r, t, 2)), {})),
        ("scatter_add-list-slice", lambda r, t: (scattered, ([None, n(r, t, 2), 1.5], slice(1, 3), [n(r, t, 2), 0.5]), {})),
        ("scatter_add-dict", lambda r, t: (scattered, ({"w": 1.0, "b": n(r, t, 2)}, "b", n(r, t, 2)), {})),
        ("from_buffer", lambda r, t: (adj.from_buffer, (n(r, t, 3), n(r, t, 3)), {})),
        ("from_buffer-tuple", lambda r, t: (adj.from_buffer, ([1.0, n(r, t, 2)], (0.5, n(r, t, 2))), {})),
        ("from_buffer-scalar", lambda r, t: (adj.from_buffer, (np.asarray(scalar(r, t)), scalar(r, t)), {})),
        ("item_bar", lambda r, t: (adj.item_bar, ((n(r, t, 2), n(r, t, 3)), 1, n(r, t, 3)), {})),
        ("item_bar-dict", lambda r, t: (adj.item_bar, ({"W": n(r, t, 2)}, "W", n(r, t, 2)), {})),
        ("item_bar-absent", lambda r, t: (adj.item_bar, ({"W": n(r, t, 2)}, "b", n(r, t, 3)), {})),
        ("item_bar-array", lambda r, t: (adj.item_bar, (n(r, t, 2, 3), 1, n(r, t, 3)), {})),
        ("field_bar", lambda r, t: (adj.field_bar, (n(r, t, 2), Dense(n(r, t, 2), n(r, t, 3)), "W"), {})),
        ("field_bar-namedtuple", lambda r, t: (adj.field_bar, (n(r, t, 3), Pair(n(r, t, 2), n(r, t, 3)), "b"), {})),
        ("field_bars", lambda r, t: (adj.field_bars, ({"W": n(r, t, 2), "b": n(r, t, 3)}, Dense(n(r, t, 2), n(r, t, 3))), {})),
        ("field_bars-namedtuple", lambda r, t: (adj.field_bars, ({"W": n(r, t, 2), "b": None}, Pair(n(r, t, 2), n(r, t, 3))), {})),
        ("unpack_bar", lambda r, t: (adj.unpack_bar, ([n(r, t, 2), None], n(r, t, 2, 2)), {})),
        ("unpack_bar-tuple", lambda r, t: (adj.unpack_bar, ([1.0, None], (0.5, 3)), {})),
        ("append_bar", lambda r, t: (adj.append_bar, ([n(r, t, 2), n(r, t, 2), n(r, t, 2)], n(r, t, 2)), {})),
        ("append_bar-none", lambda r, t: (adj.append_bar, ([n(r, t, 2), None], n(r, t, 2)), {})),
        ("setitem_bar", lambda r, t: (adj.setitem_bar, (n(r, t, 3), n(r, t, 3), slice(0, 2), 0.0), {})),
        ("setitem_bar-array", lambda r, t: (adj.setitem_bar, (n(r, t, 4, 2), n(r, t, 4, 2), [0, 3], n(r, t, 2)), {})),
        ("setitem_bar-list", lambda r, t: (adj.setitem_bar, ([1.0, 2.0, 3.0], [0.0, 0.0, 0.0], 1, 5.0), {})),
        ("setitem_bar-run", lambda r, t: (adj.setitem_bar, ([1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0], slice(0, 2), [5.0, 6.0, 7.0]), {})),
        ("setitem_bar-dict", lambda r, t: (adj.setitem_bar, ({"a": 1.0, "b": n(r, t, 2)}, {"a": 0.0}, "b", n(r, t, 2)), {})),
        ("unconcat", lambda r, t: (adj.unconcat, ((1.0, 2.0, 3.0), (0.0,), (0.0, 0.0)), {})),
        # joins, cuts and diagonals
        ("unstack", lambda r, t: (adj.unstack, (n(r, t, 2, 2), (n(r, t, 2), n(r, t, 2))), {"axis": 1})),
        ("unstack-array", lambda r, t: (adj.unstack, (n(r, t, 3, 2), n(r, t, 3, 2)), {})),
        ("unconcatenate", lambda r, t: (adj.unconcatenate, (n(r, t, 5), [n(r, t, 2), n(r, t, 3)]), {})),
        ("unconcatenate-flat", lambda r, t: (adj.unconcatenate, (n(r, t, 3), (1.0, n(r, t, 1, 2))), {"axis": None})),
        ("unconcatenate-vstack", lambda r, t: (adj.unconcatenate, (n(r, t, 3, 2), (n(r, t, 2), n(r, t, 2, 2))), {"axis": 0, "promote": np.atleast_2d})),
        ("unsplit", lambda r, t: (adj.unsplit, ([None, n(r, t, 1)], [n(r, t, 2), n(r, t, 1)], n(r, t, 3)), {})),
        ("unsplit-axis", lambda r, t: (adj.unsplit, ([n(r, t, 2, 1), n(r, t, 2, 2)], [n(r, t, 2, 1), n(r, t, 2, 2)], n(r, t, 2, 3)), {"axis": 1})),
        ("undiagonal", lambda r, t: (adj.undiagonal, (n(r, t, 2), n(r, t, 2, 3), 1), {})),
        ("undiagonal-trace", lambda r, t: (adj.undiagonal, (n(r, t, 1), n(r, t, 3, 3)), {})),
        # calls into other functions: the value is the function's value and pullback
        ("vjp", lambda r, t: (adj.vjp, ((0, 1), layer, n(r, t, 2, 3), n(r, t, 3, 4)), {})),
        ("vjp-some", lambda r, t: (adj.vjp, ((1,), layer, n(r, t, 2, 3), n(r, t, 3, 4)), {})),
    ]




CASES = cases()


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("build", [b for _, b in CASES], ids=[name for name, _ in CASES])
def test_reverse_rule_of_helper(build, dtype):
    helper, args, kwargs = build(np.random.default_rng(0), dtype)
    check_rrule(helper, *args, **kwargs)


def test_every_rule_of_the_module_is_checked_here():
    from adjoint.rules import pullback_transposes

    registered = {id(p) for key, (p, rule) in registry._RULES.items() if rule.definition.__module__ == pullback_transposes.__name__}
    assert registered == {id(p) for p in RRULE_PRIMITIVES}


# ---- what check_rrule does not see -------------------------------------------------------------------


def test_scatter_add_updates_the_buffer_in_place_and_passes_its_cotangent_through():
    buffer = adj.buffer_like(np.ones(3))
    value, back = registry.lookup(adj.scatter_add).rrule(buffer, [0, 0, 2], np.array([1.0, 2.0, 5.0]))
    assert value is buffer
    np.testing.assert_array_equal(buffer, [3.0, 0.0, 5.0])
    c = np.array([1.0, 2.0, 3.0])
    buffer_bar, index_bar, value_bar = back(c)
    assert buffer_bar is c and index_bar is None
    np.testing.assert_array_equal(value_bar, [1.0, 1.0, 3.0])


def test_a_loops_buffer_takes_the_cotangent_back_to_each_value_read():
    """`buf = buffer_like(xs); buf = scatter_add(buf, i, v_i) ...; xs_bar = from_buffer(buf, xs)`:
    linear in the values, so each value's cotangent is the read-out cotangent's entries at its index."""
    xs = (1.0, np.zeros(2), 3)
    buffer, buffer_back = registry.lookup(adj.buffer_like).rrule(xs)
    backs = []
    for index, v in [(0, 2.0), (1, np.ones(2)), (0, 0.5)]:
        buffer, back = registry.lookup(adj.scatter_add).rrule(buffer, index, v)
        backs.append(back)
    xs_bar, read_back = registry.lookup(adj.from_buffer).rrule(buffer, xs)
    assert xs_bar[0] == 2.5 and xs_bar[2] is None
    c, x_bar = read_back((4.0, np.array([5.0, 6.0]), None))  # the buffer's cotangent: a list, as the buffer is
    assert type(c) is list and c[0] == 4.0 and c[2] is None and x_bar is None
    values_bar = [back(c)[2] for back in reversed(backs)]
    assert values_bar[0] == 4.0 and values_bar[2] == 4.0
    np.testing.assert_array_equal(values_bar[1], [5.0, 6.0])
    assert buffer_back(c) == (None,)  # a fresh buffer of zeros, whatever xs holds


def test_add_of_object_cotangents_gives_each_its_fields():
    a, b = adj.Tangent(Dense, W=np.ones(2)), adj.Tangent(Dense, W=np.ones(2), b=np.zeros(3))
    value, back = registry.lookup(adj.add).rrule(a, b)
    c = adj.Tangent(adj.Tangent, W=np.array([1.0, 2.0]), b=np.array([3.0, 4.0, 5.0]))
    a_bar, b_bar = back(c)
    assert set(adj.structs.tangent_fields(a_bar)) == {"W"}
    np.testing.assert_array_equal(a_bar.W, [1.0, 2.0])
    np.testing.assert_array_equal(b_bar.b, [3.0, 4.0, 5.0])


def test_a_property_read_is_refused_clearly():
    class Scaled:
        def __init__(self, w):
            self.w = w

        @property
        def doubled(self):
            return 2 * self.w

    value, back = registry.lookup(adj.field_bar).rrule(1.0, Scaled(np.ones(2)), "doubled")
    with pytest.raises(adj.RuleError, match="property `Scaled.doubled`"):
        back(adj.Tangent(Scaled, w=np.ones(2)))


@pytest.mark.parametrize("fn", [functools.partial(layer, np.ones((2, 3))), np.sin, Dense],
                         ids=["partial", "rule", "constructor"])
def test_calls_other_than_of_python_functions_are_refused_clearly(fn):
    with pytest.raises(adj.RuleError, match="cannot differentiate again the pullback of"):
        registry.lookup(adj.vjp).rrule((0,), fn, np.ones((3, 4)))


# ---- reverse mode over generated code ------------------------------------------------------------


def reverse_over_reverse(f, x, v, *rest):
    """The gradient at `x` of `<grad f(x, *rest), v>`, by reverse mode over the generated forward
    function and its pullback: the Hessian of `f` times `v`."""
    forward = forwards.forward(f, (0,), (), (x, *rest))
    seed = functools.partial(arguments.unit, f=f)

    def second(x, v):
        return np.sum(gradient_rules.gradient_program(forward, seed, (x, *rest))[0] * v)

    return adjoint.grad(second)(x, v)


def assert_hessian_vector_product(f, x, v, *rest, rtol=1e-7, atol=1e-9):
    hv = reverse_over_reverse(f, x, v, *rest)
    np.testing.assert_allclose(hv, adjoint.hvp(f, x, v, *rest), rtol=1e-10, atol=1e-12)
    eps, gradient = 1e-6, adjoint.grad(f)
    differences = (gradient(x + eps * v, *rest) - gradient(x - eps * v, *rest)) / (2 * eps)
    np.testing.assert_allclose(hv, differences, rtol=rtol, atol=atol)


def sines(x):
    y = x
    for k in range(3):
        y = np.sin(y) * x
    return np.sum(y)


def mlp_loss(W, b, x):
    return np.mean(np.tanh(x @ W + b) ** 2)


def rows(xs):
    total = 0.0
    for x in xs:  # the pullback gathers xs's cotangent in a buffer, row by row
        total = total + np.sum(np.sin(x) * x)
    return total


def rnn(xs, W):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(W @ h + x)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def net(W, x):
    return np.sum(layer(x, W) ** 2)  # `adj.vjp` of `layer` in the forward function, its pullback called later


def two_layers(W1, W2, x):
    return np.sum(layer(layer(x, W1), W2) ** 2)


def maxima(x):
    return np.sum(np.max(x * x, axis=1)) + np.sum(np.mean(np.sin(x), axis=0))


def writes(x):
    y = np.zeros(4)
    y[1:3] = np.sin(x[:2])
    y[0] = x[2] ** 2
    return np.sum(y ** 2 * np.cos(y))


def joins(x, W):
    z = np.concatenate([x, np.sin(x)])
    return np.sum(np.tanh(np.dot(W.T, z)) ** 2) + np.trace(np.outer(x, x))


def parameters(x, p):
    return np.sum(np.tanh(x @ p["W"] + p["b"]) ** 2)


def scalars(a, b):
    total = 0.0
    for k in range(3):
        total = total + a * np.sin(b * total + a)
    return total


def test_the_brief_example():
    assert_hessian_vector_product(sines, np.array([0.3, 0.8]), np.array([1.0, -0.5]))


@pytest.mark.parametrize("f, shapes", [
    (mlp_loss, [(3, 4), (4,), (5, 3)]),
    (rows, [(3, 2)]),
    (rnn, [(3, 2), (2, 2)]),
    (net, [(3, 2), (4, 3)]),
    (two_layers, [(3, 4), (4, 2), (5, 3)]),
    (maxima, [(3, 4)]),
    (writes, [(3,)]),
    (joins, [(3,), (6, 2)]),
], ids=["mlp_loss", "rows", "rnn", "helper_call", "two_helper_calls", "maxima", "writes", "joins"])
def test_reverse_over_reverse_is_the_hessian_vector_product(f, shapes):
    rng = np.random.default_rng(0)
    x, *rest = [0.5 * rng.normal(size=shape) for shape in shapes]
    assert_hessian_vector_product(f, x, rng.normal(size=x.shape), *rest)


def test_reverse_over_reverse_with_dict_parameters_and_python_floats():
    rng = np.random.default_rng(1)
    p = {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}
    assert_hessian_vector_product(parameters, rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), p)
    assert_hessian_vector_product(scalars, 0.7, 1.0, 1.3)


def test_reverse_over_reverse_in_float32():
    rng = np.random.default_rng(2)
    x, v = rng.normal(size=(3, 2)).astype(np.float32), rng.normal(size=(3, 2)).astype(np.float32)
    hv = reverse_over_reverse(rows, x, v)
    assert hv.dtype == np.float32
    np.testing.assert_allclose(hv, adjoint.hvp(rows, x, v), rtol=1e-4, atol=1e-5)


def test_a_call_of_a_callable_object_is_refused_clearly():
    def loss(x, m):
        return np.sum(m(x) ** 2)

    class Layer:
        def __init__(self, W):
            self.W = W

        def __call__(self, x):
            return np.tanh(x @ self.W)

    with pytest.raises(adj.RuleError, match="cannot differentiate again the pullback of `Layer`"):
        reverse_over_reverse(loss, np.ones((2, 3)), np.ones((2, 3)), Layer(np.ones((3, 2))))
