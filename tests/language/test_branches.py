"""Language corpus: branches on data values.

`if`/`elif`/`else` on differentiable values, conditional expressions, `and`/`or`/`not`,
nested branches, branches inside loops and loops inside branches. Every function is checked
with `check_grad` at inputs well away from the points where a branch switches, and where a
function has several branches it is checked once per branch taken.
"""

import copy
import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case


def if_scalar_positive(x):
    if x > 0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return y


def if_on_array_sum(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = x ** 2
    return np.sum(np.sin(y))


def if_elif_else_piecewise(x):
    if x < -1.0:
        y = -x * 2.0
    elif x < 1.0:
        y = x * x + 1.0
    else:
        y = math.log(x) + 2.0 * x
    return y


def if_without_else_rebinds(x):
    y = x * 1.5
    if np.max(x) > 1.0:
        y = np.tanh(y)
    return np.sum(y * x)


def if_on_array_element(x):
    if x[0] > x[1]:
        return x[0] * np.sum(x ** 2)
    return x[1] * np.sum(np.exp(x))


def if_on_intermediate(W, x):
    h = W @ x
    if h[0] > 0:
        out = np.tanh(h)
    else:
        out = h * 0.1
    return np.sum(out ** 2)


def conditional_expression_array(x):
    y = np.tanh(x) if np.mean(x) > 0 else x ** 2
    return np.sum(y)


def conditional_expression_scalar(x):
    y = x * 2.0 if x < 1.0 else math.log(x) * x
    return y * y


def nested_conditional_expressions(x, y):
    z = (x * y if x > 0 else x + y) if y > 0 else (x - y if x > 0 else -x * y)
    return z ** 2


def and_condition(x, y):
    if x > 0 and y > 0:
        return x * y
    return x + y * y


def or_condition(x, y):
    if x < 0 or y < 0:
        z = x * x - y
    else:
        z = x * y * 3.0
    return z


def not_condition(x):
    if not np.max(x) > 1.0:
        return np.sum(x ** 3)
    return np.sum(np.sin(x))


def or_value_is_first_truthy(x, y):
    z = x or y
    return z * y


def and_value_is_last_operand(x, y):
    z = x and y
    return z * x


def chained_comparison(x):
    if 0.0 < x < 1.0:
        return x * (1.0 - x)
    return x * x


def nested_branches(x, y):
    if x > 0:
        if y > 0:
            z = x * y
        else:
            z = x - y
    else:
        if y > 0:
            z = np.exp(x) * y
        else:
            z = x * x + y * y
    return z


def branch_inside_loop(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            s = s + x[i] ** 2
        else:
            s = s - np.sin(x[i])
    return s


def loop_inside_branch(x):
    if np.sum(x) > 0:
        for _ in range(3):
            x = np.tanh(x) * 1.5
    else:
        for _ in range(2):
            x = x * x - 0.5
    return np.sum(x)


def branch_on_int_argument(x, mode):
    if mode == 0:
        return np.sum(x ** 2)
    elif mode == 1:
        return np.sum(np.sin(x))
    return np.sum(np.exp(x))


def branch_on_bool_argument(x, y, use_y):
    out = x * 2.0
    if use_y:
        out = out * y
    return np.sum(out)


def branch_assigns_different_names(x):
    a = x * 0.5
    b = x + 1.0
    if np.sum(x) > 0:
        a = a * b
    else:
        b = b * a
    return np.sum(a) + np.sum(b ** 2)


def branch_with_zero_gradient_side(x, y):
    if y > 2.0:
        scale = 3.0
    else:
        scale = y
    return np.sum(x) * scale



X_POS = np.array([0.4, -0.3, 1.2, 0.7])
X_NEG = np.array([-0.9, 0.2, -1.1, -0.4])
W = np.array([[0.5, -0.2, 0.3], [0.1, 0.4, -0.6]])

CASES = [
    case(if_scalar_positive, 0.7, label="true"),
    case(if_scalar_positive, -0.6, label="false"),
    case(if_on_array_sum, X_POS, label="true"),
    case(if_on_array_sum, X_NEG, label="false"),
    case(if_elif_else_piecewise, -2.0, label="if"),
    case(if_elif_else_piecewise, 0.3, label="elif"),
    case(if_elif_else_piecewise, 2.5, label="else"),
    case(if_without_else_rebinds, X_POS, label="taken"),
    case(if_without_else_rebinds, X_NEG, label="skipped"),
    case(if_on_array_element, np.array([1.0, 0.5, -0.2]), label="true"),
    case(if_on_array_element, np.array([0.1, 0.5, -0.2]), label="false"),
    case(if_on_intermediate, W, np.array([1.0, 0.5, 0.2]), label="true"),
    case(if_on_intermediate, W, np.array([-1.0, 0.5, 0.2]), label="false"),
    case(conditional_expression_array, X_POS, label="true"),
    case(conditional_expression_array, X_NEG, label="false"),
    case(conditional_expression_scalar, 0.4, label="true"),
    case(conditional_expression_scalar, 1.7, label="false"),
    case(nested_conditional_expressions, 0.8, 1.3, label="pos-pos"),
    case(nested_conditional_expressions, -0.8, 1.3, label="neg-pos"),
    case(nested_conditional_expressions, 0.8, -1.3, label="pos-neg"),
    case(and_condition, 0.8, 1.3, label="true"),
    case(and_condition, 0.8, -1.3, label="false"),
    case(or_condition, 0.8, -1.3, label="true"),
    case(or_condition, 0.8, 1.3, label="false"),
    case(not_condition, np.array([0.1, 0.5, -0.3]), label="true"),
    case(not_condition, np.array([0.1, 1.5, -0.3]), label="false"),
    case(or_value_is_first_truthy, 1.5, 2.0),
    case(and_value_is_last_operand, 1.5, 2.0),
    case(chained_comparison, 0.3, label="inside"),
    case(chained_comparison, 1.6, label="outside"),
    case(nested_branches, 0.5, 0.7, label="pp"),
    case(nested_branches, 0.5, -0.7, label="pn"),
    case(nested_branches, -0.5, 0.7, label="np"),
    case(nested_branches, -0.5, -0.7, label="nn"),
    case(branch_inside_loop, np.array([0.5, -0.4, 1.1, -0.8, 0.3])),
    case(loop_inside_branch, X_POS, label="true"),
    case(loop_inside_branch, X_NEG, label="false"),
    case(branch_on_int_argument, X_POS, 0, label="mode0"),
    case(branch_on_int_argument, X_POS, 1, label="mode1"),
    case(branch_on_int_argument, X_POS, 2, label="mode2"),
    case(branch_on_bool_argument, X_POS, 0.7, True, label="true"),
    case(branch_on_bool_argument, X_POS, 0.7, False, label="false"),
    case(branch_assigns_different_names, X_POS, label="true"),
    case(branch_assigns_different_names, X_NEG, label="false"),
    case(branch_with_zero_gradient_side, X_POS, 0.9),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_untaken_branch_gives_no_gradient():
    g = adjoint.grad(branch_on_bool_argument, wrt=1)(X_POS.copy(), 0.7, False)
    assert g == 0.0


def test_gradient_follows_the_branch_taken():
    assert adjoint.grad(if_scalar_positive)(0.7) == pytest.approx(math.sin(0.7) + 0.7 * math.cos(0.7))
    assert adjoint.grad(if_scalar_positive)(-0.6) == pytest.approx(3 * 0.36)
