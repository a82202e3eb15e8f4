"""Language corpus: containers.

Tuple, list and dict literals holding differentiable values; list and dict comprehensions and
generator expressions; `list.append` in a loop followed by `np.stack`; indexing into lists,
tuples and dicts; updating list and dict items; starred unpacking.
"""

import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(4)


def tuple_literal_indexed(x, y):
    t = (x, y * 2.0, x * y)
    return np.sum(t[0] * t[1] + t[-1])


def list_literal_loop(x, y):
    xs = [x, np.sin(y), x * y]
    s = 0.0
    for v in xs:
        s = s + np.sum(v ** 2)
    return s


def list_negative_index(x, y):
    xs = [x * 2.0, y, x + y]
    return np.sum(xs[-1] * xs[-3])


def list_index_from_loop_counter(x, y):
    xs = [x, y, x * y]
    s = 0.0
    for i in range(len(xs)):
        s = s + (i + 1.0) * np.sum(np.tanh(xs[i]))
    return s


def list_slice(x, y):
    xs = [x, y, x * y, x - y]
    head = xs[1:3]
    return np.sum(head[0] * head[1]) + np.sum(xs[::2][1])


def list_concatenation(x, y):
    xs = [x] + [y, x * 3.0]
    return np.sum(xs[2] * xs[1])


def dict_literal_indexed(x, y):
    d = {"a": x, "b": y}
    return np.sum(d["a"] * d["b"] + d["a"] ** 2)


def dict_item_assignment(x, y):
    acc = {}
    acc["a"] = x * 2.0
    acc["b"] = acc["a"] + y
    acc["a"] = acc["a"] * acc["b"]
    return np.sum(acc["a"])


def dict_items_loop(x, y):
    params = {"first": x, "second": y}
    s = 0.0
    for name, v in params.items():
        s = s + len(name) * np.sum(np.sin(v))
    return s


def dict_values_loop(x, y):
    d = {"u": x * y, "v": np.exp(y)}
    s = 0.0
    for v in d.values():
        s = s + np.sum(v)
    return s


def list_item_assignment(x, y):
    xs = [x, y]
    xs[1] = xs[1] * xs[0]
    xs[0] = np.sin(xs[0])
    return np.sum(xs[0] + xs[1])


def list_comprehension(x):
    ys = [np.sin(x[i]) * (i + 1.0) for i in range(len(x))]
    return sum(ys)


def list_comprehension_over_rows(X, w):
    dots = [np.dot(row, w) for row in X]
    return np.sum(np.stack(dots) ** 2)


def list_comprehension_with_filter(x):
    positives = [v ** 2 for v in x if v > 0]
    return sum(positives)


def nested_list_comprehension(X):
    cells = [[X[i, j] * (i - j) for j in range(X.shape[1])] for i in range(X.shape[0])]
    return sum(sum(row) for row in cells)


def dict_comprehension(x):
    d = {k: x * k for k in (1.0, 2.0, 3.0)}
    return np.sum(d[1.0] * d[3.0] + d[2.0])


def dict_comprehension_from_zip(x, y):
    d = {name: v for name, v in zip(("x", "y"), (x, y))}
    return np.sum(d["x"] ** 2 * d["y"])


def generator_expression_zip(w0, w1, w2, x):
    ws = (w0, w1, w2)
    xs = (x[0], x[1], x[2])
    return sum(w * v for w, v in zip(ws, xs))


def generator_expression_over_array(w, x):
    return sum(a * b for a, b in zip(w, x))


def generator_expression_over_rows(X, w):
    return sum(np.tanh(np.dot(row, w)) for row in X)


def append_then_stack(x, W):
    hs = []
    h = x
    for _ in range(3):
        h = np.tanh(W @ h)
        hs.append(h)
    H = np.stack(hs)
    return np.sum(H * np.arange(1.0, 4.0)[:, None])


def append_then_stack_axis1(x):
    cols = []
    for k in range(1, 4):
        cols.append(x ** k)
    return np.sum(np.stack(cols, axis=1) @ np.array([1.0, -0.5, 0.25]))


def append_then_sum(x):
    terms = []
    for v in x:
        terms.append(np.exp(-v * v))
    return sum(terms) * terms[0]


def starred_unpacking(x, y, z):
    a, *rest = [x, y, z]
    return np.sum(a * rest[0] + rest[-1])


def starred_unpacking_middle(x):
    first, *middle, last = x
    return first * last + sum(middle) ** 2


def starred_in_list_display(x, y):
    xs = [x, y]
    ys = [*xs, x * y]
    return np.sum(ys[2] * ys[0])


def tuple_unpacking_swap(x, y):
    a, b = x, y
    for _ in range(3):
        a, b = b, a * b + 1.0
    return np.sum(a * b)


def list_of_tuples(x, y):
    pairs = [(x, 1.0), (y, 2.0), (x * y, 3.0)]
    s = 0.0
    for v, w in pairs:
        s = s + w * np.sum(v ** 2)
    return s


def container_len_and_membership(x, y):
    xs = [x, y]
    n = len(xs)
    scale = 2.0 if n == 2 else 1.0
    return np.sum(xs[0] * xs[n - 1]) * scale



X = np.array([0.5, -0.3, 1.2, 0.8])
Y = np.array([1.1, 0.4, -0.6, 0.2])
X34 = rng.normal(size=(3, 4))

CASES = [
    case(tuple_literal_indexed, X, Y),
    case(list_literal_loop, X, Y),
    case(list_negative_index, X, Y),
    case(list_index_from_loop_counter, X, Y),
    case(list_slice, X, Y),
    case(list_concatenation, X, Y),
    case(dict_literal_indexed, X, Y),
    case(dict_item_assignment, X, Y),
    case(dict_items_loop, X, Y),
    case(dict_values_loop, X, Y),
    case(list_item_assignment, X, Y),
    case(list_comprehension, X),
    case(list_comprehension_over_rows, X34, rng.normal(size=4)),
    case(list_comprehension_with_filter, X),
    case(nested_list_comprehension, X34),
    case(dict_comprehension, X),
    case(dict_comprehension_from_zip, X, Y),
    case(generator_expression_zip, 0.5, -1.5, 2.0, X),
    case(generator_expression_over_array, Y, X),
    case(generator_expression_over_rows, X34, rng.normal(size=4)),
    case(append_then_stack, X[:3], rng.normal(size=(3, 3))),
    case(append_then_stack_axis1, X),
    case(append_then_sum, X),
    case(starred_unpacking, X, Y, 0.7),
    case(starred_unpacking_middle, X),
    case(starred_in_list_display, X, Y),
    case(tuple_unpacking_swap, 0.5 * X, 0.5 * Y),
    case(list_of_tuples, X, Y),
    case(container_len_and_membership, X, Y),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_generator_expression_dot_gradient():
    gw0, gw1, gw2, gx = adjoint.gradient(generator_expression_zip, 0.5, -1.5, 2.0, X.copy())
    assert (gw0, gw1, gw2) == pytest.approx((0.5, -0.3, 1.2))
    np.testing.assert_allclose(gx, [0.5, -1.5, 2.0, 0.0])


def test_filtered_comprehension_gradient():
    np.testing.assert_allclose(adjoint.grad(list_comprehension_with_filter)(X.copy()), np.where(X > 0, 2 * X, 0.0))


def reductions_of_a_list_of_losses(x):
    losses = []
    for v in x:
        losses.append(v * v)
    return np.max(losses) + np.mean(losses) + np.std(losses) + np.prod(losses) + np.sum(losses)


def reductions_of_a_list_of_rows(X):
    rows = [np.sin(r) for r in X]
    return np.sum(rows) + np.min(rows)


def test_numpy_reductions_of_lists_reduce_the_array_they_make():
    check_grad(reductions_of_a_list_of_losses, np.array([0.5, -1.2, 0.3]))
    check_grad(reductions_of_a_list_of_rows, np.array([[0.5, -1.2], [0.3, 0.9]]))
