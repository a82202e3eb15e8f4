"""Language corpus: loops.

`for` over ranges, array rows, lists, tuples, `enumerate`, `zip` and `reversed`; `while` loops
whose number of iterations depends on the data; nested loops; `break`, `continue` and
`for ... else`. Includes the hand-written log-sum-exp loop (Tangent returned all-zero gradients
for it), an RNN and loops accumulating into a scalar. A few loop functions also have their
gradient compared with one written by hand, and their pullback called twice.
"""

import copy
import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(1)


def sum_of_squares_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] ** 2
    return s


def python_float_power_series(x):
    total = 0.0
    for k in range(1, 6):
        total += x ** k / k
    return total


def loop_over_rows(X, w):
    s = 0.0
    for row in X:
        s = s + np.sum(np.sin(row) * w)
    return s


def loop_over_elements(x):
    p = 1.0
    for v in x:
        p = p * (1.0 + v * v)
    return p


def loop_over_list(a, b, c, x):
    h = x
    for w in [a, b, c]:
        h = np.tanh(h * w)
    return np.sum(h)


def loop_over_tuple_of_constants(x):
    y = np.zeros_like(x)
    for scale in (0.5, 1.5, 2.0):
        y = y + scale * np.sin(x * scale)
    return np.sum(y)


def loop_over_tuple_of_arrays(x, y):
    s = 0.0
    for v in (x, y, x * y):
        s = s + np.sum(v ** 2)
    return s


def loop_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s = s + (i + 1) * v ** 2
    return s


def loop_zip(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b + a * a
    return s


def loop_enumerate_zip(x, y):
    s = 0.0
    for i, (a, b) in enumerate(zip(x, y)):
        s = s + i * np.sin(a) * b
    return s


def horner_reversed(coeffs, x):
    acc = 0.0
    for c in reversed(coeffs):
        acc = acc * x + c
    return acc


def loop_reversed_range(x):
    h = 1.0
    for i in reversed(range(len(x))):
        h = h * x[i] + 1.0
    return h


def loop_range_with_step(x):
    s = 0.0
    for i in range(1, len(x), 2):
        s = s + x[i] * x[i - 1]
    return s


def loop_count_from_int_argument(x, n):
    for _ in range(n):
        x = x * np.cos(x)
    return np.sum(x)


def loop_carries_two_values(x):
    a, b = 1.0, x
    for _ in range(5):
        a, b = b, a + b * x
    return a + b


def loop_over_computed_array(X, W):
    s = 0.0
    for row in X @ W:
        s = s + np.sum(np.tanh(row))
    return s


def loop_variable_used_after_loop(x):
    v = 0.0
    for v in x:
        pass
    return v * np.sum(x)


def newton_sqrt(a):
    y = a
    while abs(y * y - a) > 1e-12 * a:
        y = 0.5 * (y + a / y)
    return y


def newton_sqrt_array(a):
    y = np.ones_like(a)
    while np.max(np.abs(y * y - a)) > 1e-12:
        y = 0.5 * (y + a / y)
    return np.sum(y)


def halve_until_small(a):
    while abs(a) > 0.1:
        a = a * 0.5
    return a


def while_with_counter(x, n):
    y = 1.0
    i = 0
    while i < n:
        y = y * x + 0.5
        i += 1
    return y


def while_with_break(x):
    y = x
    while True:
        y = y * 1.3
        if np.sum(y) > 4.0:
            break
    return np.sum(y ** 2)


def nested_loops_matvec(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s = s + A[i, j] * x[j] * x[i]
    return s


def nested_loops_triangle(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            s = s + x[i] * np.sin(x[j])
    return s


def for_with_break(x):
    for _ in range(10):
        x = x * 1.1
        if np.sum(x) > 2.0:
            break
    return np.sum(x ** 2)


def for_with_continue(x):
    s = 0.0
    for i in range(len(x)):
        if i % 2 == 0:
            continue
        s = s + x[i] ** 3
    return s


def for_else_no_break(x):
    s = np.sum(x)
    for v in x:
        if v > 10.0:
            break
    else:
        s = s * s
    return s


def for_else_with_break(x):
    s = np.sum(x)
    for v in x:
        if v > 1.0:
            s = s * v
            break
    else:
        s = s * s
    return s


def logsumexp_loop(x):
    m = np.max(x)
    s = 0.0
    for i in range(len(x)):
        s = s + np.exp(x[i] - m)
    return m + np.log(s)


def logsumexp_running_max(x):
    m = x[0]
    for i in range(1, len(x)):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for v in x:
        s = s + np.exp(v - m)
    return m + np.log(s)


def logsumexp_online(x):
    m = x[0]
    s = 1.0
    for v in x[1:]:
        if v > m:
            s = s * np.exp(m - v) + 1.0
            m = v
        else:
            s = s + np.exp(v - m)
    return m + np.log(s)


def rnn(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)



X5 = np.array([0.3, -0.7, 1.1, 0.2, -0.4])
Y5 = np.array([0.9, 0.1, -0.5, 0.6, 1.3])
X_LSE = np.array([0.5, -1.2, 2.0, 0.1, 1.4])

CASES = [
    case(sum_of_squares_loop, X5),
    case(python_float_power_series, 0.6),
    case(loop_over_rows, rng.normal(size=(4, 3)), rng.normal(size=3)),
    case(loop_over_elements, X5),
    case(loop_over_list, 0.8, -1.2, 0.5, X5),
    case(loop_over_tuple_of_constants, X5),
    case(loop_over_tuple_of_arrays, X5, Y5),
    case(loop_enumerate, X5),
    case(loop_zip, X5, Y5),
    case(loop_enumerate_zip, X5, Y5),
    case(horner_reversed, np.array([1.0, -0.5, 0.25, 2.0]), 0.7),
    case(loop_reversed_range, X5),
    case(loop_range_with_step, X5),
    case(loop_count_from_int_argument, X5, 3),
    case(loop_carries_two_values, 0.8),
    case(loop_over_computed_array, rng.normal(size=(3, 4)), rng.normal(size=(4, 2))),
    case(loop_variable_used_after_loop, X5),
    case(newton_sqrt, 2.0),
    case(newton_sqrt_array, np.array([0.5, 2.0, 3.7])),
    case(halve_until_small, 3.0),
    case(halve_until_small, -0.7, label="negative"),
    case(while_with_counter, 0.9, 4),
    case(while_with_break, np.array([0.5, 0.3, 0.4])),
    case(nested_loops_matvec, rng.normal(size=(3, 3)), rng.normal(size=3)),
    case(nested_loops_triangle, X5),
    case(for_with_break, np.array([0.5, 0.3, 0.4])),
    case(for_with_continue, X5),
    case(for_else_no_break, X5),
    case(for_else_with_break, np.array([0.4, 1.5, 0.2])),
    case(logsumexp_loop, X_LSE),
    case(logsumexp_running_max, X_LSE),
    case(logsumexp_online, X_LSE),
    case(rnn, 0.5 * rng.normal(size=(4, 4)), rng.normal(size=(4, 3)), rng.normal(size=(5, 3))),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_sum_of_squares_loop_gradient_is_2x():
    np.testing.assert_allclose(adjoint.grad(sum_of_squares_loop)(X5.copy()), 2 * X5, rtol=1e-12)


@pytest.mark.parametrize("f", [logsumexp_loop, logsumexp_running_max, logsumexp_online])
def test_logsumexp_loop_gradient_is_softmax_not_zero(f):
    g = adjoint.grad(f)(X_LSE.copy())
    np.testing.assert_allclose(g, softmax(X_LSE), rtol=1e-10)


def test_newton_sqrt_gradient():
    assert adjoint.grad(newton_sqrt)(2.0) == pytest.approx(0.5 / math.sqrt(2.0), rel=1e-9)


def test_halving_loop_gradient_is_a_power_of_one_half():
    # 3.0 is halved five times before |a| <= 0.1.
    assert adjoint.grad(halve_until_small)(3.0) == 0.5 ** 5


def test_power_series_gradient():
    x = 0.6
    expected = sum(x ** (k - 1) for k in range(1, 6))
    assert adjoint.grad(python_float_power_series)(x) == pytest.approx(expected, rel=1e-12)


def test_rnn_gradient_matches_hand_written_backprop():
    r = np.random.default_rng(5)
    W = 0.5 * r.normal(size=(4, 4))
    U = r.normal(size=(4, 3))
    xs = r.normal(size=(5, 3))
    hs = [np.zeros(4)]
    for t in range(5):
        hs.append(np.tanh(W @ hs[-1] + U @ xs[t]))
    dW, dU, dxs = np.zeros_like(W), np.zeros_like(U), np.zeros_like(xs)
    dh = 2 * hs[-1]
    for t in reversed(range(5)):
        da = dh * (1 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dU += np.outer(da, xs[t])
        dxs[t] = U.T @ da
        dh = W.T @ da
    gW, gU, gxs = adjoint.gradient(rnn, W, U, xs)
    np.testing.assert_allclose(gW, dW, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gU, dU, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gxs, dxs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, args", [
    case(sum_of_squares_loop, X5),
    case(logsumexp_online, X_LSE),
    case(while_with_break, np.array([0.5, 0.3, 0.4])),
    case(loop_over_list, 0.8, -1.2, 0.5, X5),
])
def test_pullback_of_a_loop_can_be_called_twice(f, args):
    value, back = adjoint.pullback(f, *copy.deepcopy(args))
    first = back(1.0)
    second = back(1.0)
    assert len(first) == len(second) == len(args)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    scaled = back(2.0)
    for a, b in zip(first, scaled):
        np.testing.assert_allclose(b, 2.0 * np.asarray(a), rtol=1e-12)
