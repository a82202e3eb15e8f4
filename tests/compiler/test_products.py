"""compiler.products: a matrix product's cotangent reaches `adj.matmul_lhs_bar`/`matmul_rhs_bar`
unsummed, so the pullback reads the product no more and a loop's tape drops it; and (compiler.loops)
a loop over the rows of an array re-reads each row in the pullback rather than taping it. Gradients
stay right for every shape, broadcasting ones included."""

import functools

import gast
import numpy as np
import pytest

import adjoint
from adjoint import arguments, forwards, gradient_rules
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower
from adjoint.testing import check_grad

RNG = np.random.default_rng(0)


def generated(fn, wrt):
    """The forward function after every pass, and its pullback."""
    node, _ = lower(fn, wrt)
    (pullback,) = [s for s in node.body if isinstance(s, gast.FunctionDef)]
    return node, pullback


def products(node) -> set:
    """The names the forward function binds to a matrix product."""
    return {
        s.targets[0].id for s in syntax.statements(node.body)
        if isinstance(s, gast.Assign) and (
            isinstance(s.value, gast.BinOp) and isinstance(s.value.op, gast.MatMult)
            or isinstance(s.value, gast.Call) and syntax.dotted(s.value.func) == "np.matmul"
        )
    }


def tape_items(node) -> list:
    """What each `tape.append(...)` of the forward function records, as text."""
    found = []
    for s in syntax.statements(node.body):
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and getattr(s.value.func, "attr", "") == "append":
            item = s.value.args[0]
            found.append([syntax.unparse(e) for e in (item.elts if isinstance(item, gast.Tuple) else [item])])
    return found


# ---- a product's cotangent, broadcast by what the product was added to -------------------------


def added_larger(A, B, C):
    return np.sum(np.tanh(A @ B + C))


def called_larger(A, B, C):
    return np.sum(np.tanh(np.matmul(A, B) + C) ** 2)


BROADCASTING = [
    pytest.param(added_larger, (2, 3), (3, 4), (5, 2, 4), id="leading-axis"),
    pytest.param(added_larger, (1, 3), (3, 1), (4, 5), id="stretched-ones"),
    pytest.param(added_larger, (5, 2, 3), (3, 4), (6, 5, 2, 4), id="stack"),
    pytest.param(added_larger, (5, 1, 3), (3, 4), (5, 2, 4), id="stack-stretched"),
    pytest.param(added_larger, (3,), (3, 4), (2, 4), id="vector-matrix"),
    pytest.param(added_larger, (2, 3), (3,), (5, 2), id="matrix-vector"),
    pytest.param(added_larger, (3,), (3,), (4,), id="vectors"),
    pytest.param(added_larger, (2, 3), (3, 4), (4,), id="not-broadcast"),
    pytest.param(called_larger, (2, 3), (3, 4), (5, 2, 4), id="np.matmul"),
]


@pytest.mark.parametrize("fn, a_shape, b_shape, c_shape", BROADCASTING)
def test_a_broadcast_products_gradient_is_right_and_its_pullback_reads_no_product(fn, a_shape, b_shape, c_shape):
    args = RNG.normal(size=a_shape), RNG.normal(size=b_shape), RNG.normal(size=c_shape)
    node, pullback = generated(fn, (0, 1, 2))
    made = products(node)
    assert made and not made & syntax.load_names(pullback), syntax.unparse(pullback)
    check_grad(fn, *args)


def test_single_precision_operands_get_single_precision_cotangents():
    A, B = RNG.normal(size=(2, 3)).astype(np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    C = RNG.normal(size=(5, 2, 4))  # float64: the sum, and its cotangent, are float64
    A_bar, B_bar = adjoint.grad(added_larger, wrt=(0, 1))(A, B, C)
    assert A_bar.dtype == np.float32 and B_bar.dtype == np.float32
    wide = adjoint.grad(added_larger, wrt=(0, 1))(A.astype(np.float64), B.astype(np.float64), C)
    np.testing.assert_allclose(A_bar, wide[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(B_bar, wide[1], rtol=1e-4, atol=1e-5)


def read_twice(A, B, C):
    y = A @ B
    return np.sum(np.tanh(y + C)) + np.sum(y * y)


def test_a_product_whose_cotangent_others_read_too_keeps_its_unbroadcast():
    node, pullback = generated(read_twice, (0, 1, 2))
    assert "adj.unbroadcast" in syntax.unparse(pullback) and "y" in syntax.load_names(pullback)
    check_grad(read_twice, RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(5, 2, 4)))


# Reverse mode over the pullback hands `g` a cotangent in the product's shape: the reverse rules
# of `matmul_lhs_bar`/`matmul_rhs_bar` (adjoint/rules/pullback_transposes.py) broadcast it back
# up to `g`'s shape.
def test_reverse_over_reverse_of_a_broadcast_product():
    A, B, C = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(5, 2, 4))
    v = RNG.normal(size=A.shape)
    forward = forwards.forward(added_larger, (0,), (), (A, B, C))
    seed = functools.partial(arguments.unit, f=added_larger)

    def second(A, v):
        return np.sum(gradient_rules.gradient_program(forward, seed, (A, B, C))[0] * v)

    np.testing.assert_allclose(adjoint.grad(second)(A, v), adjoint.hvp(added_larger, A, v, B, C), rtol=1e-10)


def test_forward_over_reverse_of_a_broadcast_product():
    A, B, C = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=(5, 2, 4))
    v, eps = RNG.normal(size=A.shape), 1e-6
    gradient = adjoint.grad(added_larger)
    differences = (gradient(A + eps * v, B, C) - gradient(A - eps * v, B, C)) / (2 * eps)
    np.testing.assert_allclose(adjoint.hvp(added_larger, A, v, B, C), differences, rtol=1e-6, atol=1e-8)


# ---- a recurrent loop's tape -------------------------------------------------------------------


def rnn_loss(W, U, xs, h):  # as benchmarks/workloads.py
    for x in xs:
        h = np.tanh(W @ h + U @ x)
    return np.sum(h * h)


RNN_ARGS = (RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=(4, 3)) * 0.5, RNG.normal(size=(5, 3)), RNG.normal(size=4))


def test_the_rnn_tape_holds_neither_the_products_nor_the_rows():
    node, pullback = generated(rnn_loss, (0, 1, 2, 3))
    (items,) = tape_items(node)
    assert not products(node) & set(items) and "x" not in items, items
    assert sorted(items) == ["h_1", "h_2", "index"]  # tanh's output, W's operand, and xs's row number
    assert "x = xs[index]" in syntax.unparse(pullback)
    check_grad(rnn_loss, *RNN_ARGS)


def test_the_rows_of_an_array_not_differentiated_are_taped():
    node, _ = generated(rnn_loss, (0, 1, 3))  # no position to read xs again by
    (items,) = tape_items(node)
    assert "x" in items
    check_grad(lambda W, U, h: rnn_loss(W, U, RNN_ARGS[2], h), RNN_ARGS[0], RNN_ARGS[1], RNN_ARGS[3])


def test_the_items_of_a_list_are_taped():
    xs = list(RNN_ARGS[2])
    node, _ = lower(rnn_loss, (0, 1, 2, 3), frozen=((2, ()),))  # how `grad` compiles for a list argument
    (items,) = tape_items(node)
    assert "x" in items
    W, U, _, h = RNN_ARGS
    grads = adjoint.grad(rnn_loss, wrt=(0, 1, 2, 3))(W, U, xs, h)
    expected = adjoint.grad(rnn_loss, wrt=(0, 1, 2, 3))(W, U, np.array(xs), h)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(np.array(got), want, rtol=1e-12)


def rescaled_each_round(W, xs):
    s = 0.0
    for t in range(2):
        for x in xs:
            s = s + np.sum(np.tanh(W @ x))
        xs = xs * 1.5
    return s


def test_rows_of_an_array_rebound_by_an_outer_loop_are_read_from_the_outer_tape():
    node, pullback = generated(rescaled_each_round, (0, 1))
    inner = [s for s in syntax.statements(pullback.body) if isinstance(s, gast.For)][1]
    (reread,) = [s for s in inner.body if isinstance(s, gast.Assign) and isinstance(s.value, gast.Subscript)]
    sequence = reread.value.value.id
    (outer_items,) = [items for items in tape_items(node) if "tape" in items]  # it records the inner tape
    assert sequence != "xs" and sequence in outer_items, (sequence, outer_items)
    check_grad(rescaled_each_round, RNG.normal(size=(3, 2)), RNG.normal(size=(4, 2)))


def reversed_rows(W, xs):
    h = np.zeros(W.shape[0])
    for x in reversed(xs):
        h = np.tanh(W @ x + h)
    return np.sum(h)


def zipped_rows(W, xs, ys):
    s = 0.0
    for k, (x, y) in enumerate(zip(xs, ys), 2):
        s = s + k * np.sum(np.tanh(W @ x) * y)
    return s


def test_rows_read_again_through_reversed_zip_and_enumerate_are_the_right_rows():
    W, xs, ys = RNG.normal(size=(3, 2)), RNG.normal(size=(4, 2)), RNG.normal(size=(4, 3))
    for fn, args in ((reversed_rows, (W, xs)), (zipped_rows, (W, xs, ys))):
        node, pullback = generated(fn, tuple(range(len(args))))
        assert all("x" not in items for items in tape_items(node)), tape_items(node)
        check_grad(fn, *args)
