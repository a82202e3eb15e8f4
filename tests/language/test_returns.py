"""Language corpus: returns anywhere.

Early returns, several returns, returns inside loops, and non-scalar outputs: tuples (which
`check_grad` handles), lists, and dicts (checked through `adjoint.pullback` with a dict
cotangent, and through a scalar function that indexes the dict).
"""

import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case


def early_return(x):
    if x < 0:
        return x ** 2
    y = np.sin(x) * 3.0
    return y + x


def several_returns(x):
    s = np.sum(x)
    if s > 2.0:
        return np.sum(np.sqrt(x * x + 1.0))
    elif s > 0.0:
        return np.sum(x ** 3)
    else:
        return np.sum(np.exp(x))


def return_inside_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] ** 2
        if s > 1.0:
            return s * x[i]
    return s * 2.0


def return_inside_while(x):
    y = x
    while True:
        y = y * 1.5 + 0.1
        if y > 3.0:
            return y * x


def return_from_nested_loops(X):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] > 1.0:
                return X[i, j] * np.sum(X[i])
    return np.sum(X)


def return_in_for_else(x):
    for v in x:
        if v > 5.0:
            return v
    else:
        return np.sum(x ** 2)


def return_tuple(x, y):
    return np.sin(x), x * y


def return_tuple_with_float(x, y):
    return np.sum(x * y), y * y, np.cos(x)


def return_nested_tuple(x, y):
    return (x * 2.0, (np.tanh(x), x * y)), y ** 3


def return_tuple_with_int(x):
    return np.sum(x ** 2), len(x)


def return_list(x, y):
    return [x * y, np.exp(x), y + 1.0]


def return_tuple_from_branch(x):
    if np.sum(x) > 0:
        return x * 2.0, np.sum(x)
    return x ** 2, np.sum(np.sin(x))


def split_stats(x):
    return np.sum(x), np.sum(x ** 2)


def uses_tuple_returned_by_helper(x):
    s, s2 = split_stats(x)
    n = len(x)
    return s2 / n - (s / n) ** 2


def helper_with_early_return(v):
    if v > 0:
        return v * v
    return -v


def calls_helper_with_early_return(x):
    s = 0.0
    for v in x:
        s = s + helper_with_early_return(v)
    return s


def return_dict(x):
    return {"total": np.sum(x), "squares": x ** 2}


def scalar_from_dict(x):
    d = return_dict(x)
    return d["total"] * np.sum(d["squares"])


def return_dict_from_loop(x):
    out = {}
    for name, k in (("a", 1.0), ("b", 2.0)):
        out[name] = np.sum(np.sin(k * x))
    return out


def scalar_from_loop_dict(x):
    d = return_dict_from_loop(x)
    return d["a"] * d["b"]



X = np.array([0.3, -0.8, 0.6, 1.2])
Y = np.array([1.1, 0.4, -0.5, 0.9])

CASES = [
    case(early_return, -0.6, label="early"),
    case(early_return, 0.9, label="late"),
    case(several_returns, np.array([1.0, 1.5, 0.7]), label="first"),
    case(several_returns, np.array([0.5, 0.4, -0.3]), label="second"),
    case(several_returns, np.array([-0.5, 0.4, -0.3]), label="third"),
    case(return_inside_loop, X, label="early"),
    case(return_inside_loop, 0.2 * X, label="after-loop"),
    case(return_inside_while, 0.7),
    case(return_from_nested_loops, np.array([[0.2, 0.3], [1.4, 0.1]]), label="early"),
    case(return_from_nested_loops, np.array([[0.2, 0.3], [0.4, 0.1]]), label="after-loops"),
    case(return_in_for_else, X),
    case(return_tuple, X, Y),
    case(return_tuple_with_float, X, 0.7),
    case(return_nested_tuple, X, 0.7),
    case(return_tuple_with_int, X),
    case(return_list, X, Y),
    case(return_tuple_from_branch, X, label="true"),
    case(return_tuple_from_branch, -X, label="false"),
    case(uses_tuple_returned_by_helper, X),
    case(calls_helper_with_early_return, X),
    case(scalar_from_dict, X),
    case(scalar_from_loop_dict, X),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_dict_output_takes_a_dict_cotangent():
    x = X.copy()
    value, back = adjoint.pullback(return_dict, x)
    assert set(value) == {"total", "squares"}
    np.testing.assert_allclose(value["squares"], X ** 2)
    c = np.array([1.0, -2.0, 0.5, 3.0])
    (gx,) = back({"total": 2.0, "squares": c})
    np.testing.assert_allclose(gx, 2.0 + 2 * X * c)
    np.testing.assert_array_equal(x, X)


def test_tuple_output_pullback_matches_hand_written():
    _, back = adjoint.pullback(return_tuple, X.copy(), Y.copy())
    a, b = np.ones(4), np.full(4, 2.0)
    gx, gy = back((a, b))
    np.testing.assert_allclose(gx, np.cos(X) * a + Y * b)
    np.testing.assert_allclose(gy, X * b)


def test_early_return_skips_the_rest():
    assert adjoint.grad(early_return)(-0.6) == pytest.approx(-1.2)
    assert adjoint.grad(early_return)(0.9) == pytest.approx(3.0 * np.cos(0.9) + 1.0)


def test_return_inside_loop_gradient_stops_at_the_returning_iteration():
    # s = 0.09 + 0.64 + 0.36 = 1.09 > 1 at i = 2, so the value is s * x[2].
    g = adjoint.grad(return_inside_loop)(X.copy())
    s = 0.09 + 0.64 + 0.36
    expected = np.array([2 * 0.3 * 0.6, 2 * -0.8 * 0.6, 2 * 0.6 * 0.6 + s, 0.0])
    np.testing.assert_allclose(g, expected)
