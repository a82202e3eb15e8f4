"""Language corpus: scalars and side effects.

Python floats with the `math` module, int counters, `isinstance` checks, `int()` of data, and
side effects (`print`, appending to a module-level list) in the forward pass, which must run
exactly once per differentiated call, never again when the pullback runs.
"""

import copy
import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

CALLS = []


def math_sin_cos(x, y):
    return math.sin(x) * math.cos(y) + math.cos(x * y)


def math_exp_log_sqrt(x):
    return math.exp(0.5 * x) * math.log(1.0 + x * x) + math.sqrt(x + 2.0)


def math_tanh(x, y):
    return math.tanh(x * y) - math.tanh(x) ** 2


def math_hypot_by_hand(x, y):
    return math.sqrt(x * x + y * y)


def math_in_loop(x):
    s = 0.0
    for k in range(1, 5):
        s = s + math.sin(k * x) / k
    return s


def python_floats_and_arrays(x, a):
    return a * np.sum(x) + math.exp(a) * np.sum(x ** 2) + 2.5


def float_of_array_sum(x):
    s = float(np.sum(x ** 2))
    return math.sqrt(s) * s


def builtin_abs_and_pow(x, y):
    return abs(x - y) * pow(x, 3) + abs(y) ** 0.5


def unary_minus_and_mod(x):
    return -x * (x % 1.0) + (-x) ** 2


def int_counter_scales(x):
    n = 0
    for v in x:
        if v > 0:
            n += 1
    return np.sum(x) * n


def int_counter_as_exponent(x):
    k = 0
    for _ in range(3):
        k = k + 1
    return np.sum(x ** k)


def int_of_data_as_exponent(x):
    k = int(x * 3.0)
    return x ** k + x


def len_and_shape_ints(x):
    n = len(x)
    return np.sum(x) / n + x.shape[0] * np.mean(x ** 2)


def isinstance_dispatch(x):
    if isinstance(x, float):
        return math.sin(x) * x
    return np.sum(np.sin(x) * x)


def isinstance_on_helper_argument(x, y):
    def norm(v):
        if isinstance(v, np.ndarray):
            return np.sum(v * v)
        return v * v
    return norm(x) + norm(y)


def isinstance_of_int_argument(x, k):
    if isinstance(k, int):
        return np.sum(x ** k)
    return np.sum(x)


def numpy_scalar_and_math(x):
    s = np.sum(x)
    return math.sin(s) + math.exp(np.mean(x))


def prints_in_forward(x):
    y = np.sin(x) * 2.0
    print("forward value", np.sum(y))
    return np.sum(y * x)


def records_call(x):
    CALLS.append("records_call")
    return np.sum(x ** 2)


def records_each_iteration(x):
    s = 0.0
    for i in range(3):
        CALLS.append(i)
        s = s + np.sum(x) * i
    return s


def records_in_helper(v):
    CALLS.append("helper")
    return v * v


def calls_recording_helper(x):
    return np.sum(records_in_helper(x) * x)


def records_only_in_untaken_branch(x):
    if np.sum(x) > 100.0:
        CALLS.append("never")
    return np.sum(np.tanh(x))



X = np.array([0.5, -0.3, 1.2, 0.8])

CASES = [
    case(math_sin_cos, 0.7, -0.4),
    case(math_exp_log_sqrt, 0.9),
    case(math_tanh, 0.6, 1.3),
    case(math_hypot_by_hand, 0.6, -1.3),
    case(math_in_loop, 0.8),
    case(python_floats_and_arrays, X, 0.3),
    case(float_of_array_sum, X),
    case(builtin_abs_and_pow, 1.4, 0.6),
    case(unary_minus_and_mod, 2.3),
    case(int_counter_scales, X),
    case(int_counter_as_exponent, X),
    case(int_of_data_as_exponent, 1.4),
    case(len_and_shape_ints, X),
    case(isinstance_dispatch, 0.7, label="float"),
    case(isinstance_dispatch, X, label="array"),
    case(isinstance_on_helper_argument, X, 0.7),
    case(isinstance_of_int_argument, X, 3),
    case(numpy_scalar_and_math, X),
    case(prints_in_forward, X),
    case(records_call, X),
    case(records_each_iteration, X),
    case(calls_recording_helper, X),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_int_counter_gradient():
    # three positive entries: the gradient is 3 everywhere
    np.testing.assert_allclose(adjoint.grad(int_counter_scales)(X.copy()), np.full(4, 3.0))


def test_print_runs_once_per_grad(capsys):
    adjoint.grad(prints_in_forward)(X.copy())
    out = capsys.readouterr().out
    assert out.count("forward value") == 1


def test_print_does_not_run_in_the_pullback(capsys):
    _, back = adjoint.pullback(prints_in_forward, X.copy())
    assert capsys.readouterr().out.count("forward value") == 1
    back(1.0)
    back(1.0)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("run", [
    pytest.param(lambda f, x: adjoint.grad(f)(x), id="grad"),
    pytest.param(lambda f, x: adjoint.value_and_grad(f)(x), id="value_and_grad"),
    pytest.param(lambda f, x: adjoint.gradient(f, x), id="gradient"),
    pytest.param(lambda f, x: adjoint.pullback(f, x)[1](1.0), id="pullback-and-back"),
])
def test_side_effect_runs_exactly_once_per_call(run):
    before = len(CALLS)
    run(records_call, X.copy())
    assert len(CALLS) == before + 1
    run(records_call, X.copy())
    assert len(CALLS) == before + 2


def test_side_effect_not_repeated_when_pullback_is_called_again():
    before = len(CALLS)
    _, back = adjoint.pullback(records_call, X.copy())
    back(1.0)
    back(2.0)
    assert len(CALLS) == before + 1


def test_side_effect_in_loop_runs_once_per_iteration():
    before = len(CALLS)
    adjoint.grad(records_each_iteration)(X.copy())
    assert CALLS[before:] == [0, 1, 2]


def test_side_effect_in_called_helper_runs_once():
    before = len(CALLS)
    adjoint.grad(calls_recording_helper)(X.copy())
    assert CALLS[before:] == ["helper"]


def test_side_effect_in_untaken_branch_does_not_run():
    before = len(CALLS)
    g = adjoint.grad(records_only_in_untaken_branch)(X.copy())
    assert len(CALLS) == before
    np.testing.assert_allclose(g, 1 - np.tanh(X) ** 2)
