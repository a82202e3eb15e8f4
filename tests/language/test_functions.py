"""Language corpus: functions.

Nested defs and closures whose captured values carry gradient, lambdas (assigned, and passed
to a higher-order function defined here), functions passed as arguments, recursion on an int
depth, `*args` / `**kwargs` on both sides of a call, and default and keyword-only arguments.
"""

import copy
import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad
from support import case

rng = np.random.default_rng(2)

SHIFT = np.array([0.1, -0.2, 0.3])


# ---- helpers called by the corpus (module level, so adjoint can read their source) ----

def apply_n_times(fn, x, n):
    for _ in range(n):
        x = fn(x)
    return x


def compose(f, g):
    return lambda v: f(g(v))


def make_affine(a, b):
    def affine(v):
        return a * v + b
    return affine


def power_by_recursion(x, n):
    if n == 0:
        return 1.0
    return x * power_by_recursion(x, n - 1)


def fast_power(x, n):
    if n == 0:
        return 1.0
    if n % 2 == 0:
        half = fast_power(x, n // 2)
        return half * half
    return x * fast_power(x, n - 1)


def tanh_tower(x, depth):
    if depth == 0:
        return x
    return np.tanh(1.2 * tanh_tower(x, depth - 1))


def is_even_depth(x, n):
    if n == 0:
        return x
    return is_odd_depth(np.sin(x), n - 1)


def is_odd_depth(x, n):
    if n == 0:
        return -x
    return is_even_depth(x * 1.5, n - 1)


def sum_of_squares(*xs):
    s = 0.0
    for v in xs:
        s = s + np.sum(v ** 2)
    return s


def weighted_terms(**terms):
    return terms["a"] * 2.0 + terms["b"] * terms["c"]


def mixed_signature(x, *rest, scale=1.0, **options):
    out = x * scale
    for r in rest:
        out = out + r
    if options.get("square", False):
        out = out * out
    return out


def scaled(x, k=2.0):
    return x * k


def softplus(v, beta=1.0):
    return np.log(1.0 + np.exp(beta * v)) / beta


def shifted_by_module_constant(v):
    return v + SHIFT


# ---- the corpus ----

def nested_def(x):
    def g(y):
        return np.sin(y) * y
    return np.sum(g(x) + g(2.0 * x))


def closure_over_argument(x, w):
    def scale(v):
        return v * w
    return np.sum(scale(x) ** 2)


def closure_over_intermediate(x):
    h = np.tanh(x)

    def mix(v):
        return v * h + h ** 2
    return np.sum(mix(x) + mix(h))


def nested_closures(x, a):
    def outer(v):
        b = a * 2.0

        def inner(u):
            return u * a + b
        return inner(v) * v
    return np.sum(outer(x))


def closure_defined_in_loop(x, w):
    total = 0.0
    for k in range(1, 4):
        def term(v):
            return np.sin(k * v * w)
        total = total + np.sum(term(x))
    return total


def closure_made_by_module_function(x, a, b):
    affine = make_affine(a, b)
    return np.sum(affine(x) ** 2)


def lambda_assigned(x):
    sq = lambda v: v * v + x  # noqa: E731
    return np.sum(sq(x) * sq(2.0))


def lambda_passed_to_higher_order(x, w):
    y = apply_n_times(lambda v: np.tanh(v * w), x, 3)
    return np.sum(y)


def lambda_composed(x):
    f = compose(np.sin, lambda v: v * v)
    return np.sum(f(x))


def function_as_argument(act, x):
    return np.sum(act(x) * x)


def user_function_through_higher_order(x):
    y = apply_n_times(softplus, x, 2)
    return np.sum(y)


def recursive_power(x, n):
    return power_by_recursion(x, n)


def recursive_fast_power(x, n):
    return fast_power(x, n)


def recursive_on_array(x, depth):
    return np.sum(tanh_tower(x, depth))


def mutual_recursion(x, n):
    return np.sum(is_even_depth(x, n))


def star_args_call(x, y):
    parts = (x, y, x * y)
    return sum_of_squares(*parts)


def star_args_call_from_list(x, y):
    parts = [x]
    parts.append(np.sin(y))
    return sum_of_squares(x, *parts)


def double_star_call(x, y):
    d = {"a": x, "b": y, "c": x * y}
    return np.sum(weighted_terms(**d))


def mixed_star_call(x, y):
    opts = {"square": True}
    return np.sum(mixed_signature(x, y, 0.5, scale=3.0, **opts))


def varargs_function(*xs):
    total = 0.0
    for i, v in enumerate(xs):
        total = total + (i + 1.0) * np.sum(np.sin(v))
    return total


def default_argument_used(x, y):
    return np.sum(scaled(x) + scaled(x, k=y) + scaled(y, 0.5))


def default_argument_in_corpus_function(x, k=3.0):
    return np.sum(np.tanh(x * k))


def keyword_only_arguments(x, *, power=3, bias=0.5):
    return np.sum((x + bias) ** power)


def keyword_argument_to_user_function(x, beta):
    return np.sum(softplus(x, beta=beta))


def reads_module_level_array(x):
    return np.sum(shifted_by_module_constant(x) ** 2)


def math_function_as_argument_in_loop(x):
    total = 0.0
    for fn in (math.sin, math.cos, math.exp):
        total = total + fn(x) * x
    return total



X = np.array([0.4, -0.7, 1.1])
Y = np.array([0.9, 0.3, -0.5])

CASES = [
    case(nested_def, X),
    case(closure_over_argument, X, 0.7),
    case(closure_over_intermediate, X),
    case(nested_closures, X, 0.6),
    case(closure_defined_in_loop, X, 0.8),
    case(closure_made_by_module_function, X, 1.3, -0.4),
    case(lambda_assigned, X),
    case(lambda_passed_to_higher_order, X, 1.4),
    case(lambda_composed, X),
    case(function_as_argument, np.tanh, X, label="tanh"),
    case(function_as_argument, softplus, X, label="user-function"),
    case(function_as_argument, lambda v: v * np.exp(-v), X, label="lambda"),
    case(user_function_through_higher_order, X),
    case(recursive_power, 1.3, 5),
    case(recursive_power, X, 3, label="array"),
    case(recursive_fast_power, 1.1, 6),
    case(recursive_on_array, X, 3),
    case(mutual_recursion, X, 4),
    case(star_args_call, X, Y),
    case(star_args_call_from_list, X, Y),
    case(double_star_call, X, Y),
    case(mixed_star_call, X, Y),
    case(varargs_function, X, Y, 0.3),
    case(default_argument_used, X, 1.5),
    case(default_argument_in_corpus_function, X),
    case(default_argument_in_corpus_function, X, 0.5, label="given"),
    case(keyword_only_arguments, X),
    case(keyword_argument_to_user_function, X, 1.7),
    case(reads_module_level_array, X),
    case(math_function_as_argument_in_loop, 0.6),
]


@pytest.mark.parametrize("f, args", CASES)
def test_gradient_matches_finite_differences(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_gradient_flows_into_closed_over_value():
    x = X.copy()
    # d/dw sum((x w)^2) = 2 w sum(x^2)
    assert adjoint.grad(closure_over_argument, wrt=1)(x, 0.7) == pytest.approx(2 * 0.7 * np.sum(X ** 2))


def test_recursive_power_gradient():
    assert adjoint.grad(recursive_power)(1.3, 5) == pytest.approx(5 * 1.3 ** 4, rel=1e-12)


def test_grad_of_varargs_function_gives_one_gradient_per_argument():
    gx, gy, gz = adjoint.gradient(varargs_function, X.copy(), Y.copy(), 0.3)
    np.testing.assert_allclose(gx, np.cos(X))
    np.testing.assert_allclose(gy, 2 * np.cos(Y))
    assert gz == pytest.approx(3 * math.cos(0.3))


def test_keyword_arguments_are_constants():
    g = adjoint.grad(keyword_only_arguments)(X.copy(), power=2, bias=0.25)
    np.testing.assert_allclose(g, 2 * (X + 0.25))


def late_bound_capture(x, w):
    f = lambda t: t * w
    w = w * 2.0
    return np.sum(f(x))


def capture_reassigned_after_last_call(x, w):
    f = lambda t: t * w
    y = f(x)
    w = w * 2.0
    return np.sum(y) + np.sum(w)


def closures_kept_from_a_loop(x, w):
    fs = []
    for k in range(3):
        v = w * k
        fs.append(lambda t: t * v)
    return np.sum(fs[0](x))


@pytest.mark.parametrize("f", [late_bound_capture, closures_kept_from_a_loop])
def test_closure_that_would_see_a_later_value_is_refused(f):
    # Python binds late: the closure reads the name's value when it runs, not when it was made.
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(f)(np.ones(2), np.ones(2))
    assert "assigned again" in info.value.problems[0].message


def test_capture_reassigned_after_its_last_call_is_differentiated():
    check_grad(capture_reassigned_after_last_call, np.array([0.5, -1.0]), np.array([2.0, 0.3]))


def keyword_only_default_rebound(x):
    a = x * 1.0
    a = a * 3.0

    def g(v, *, s=a):
        return v * s

    return np.sum(g(x))


def keyword_only_default_of_a_constant(x):
    def g(v, *, s=3.0):
        return v * s

    return np.sum(g(x))


def test_keyword_only_default_reads_the_binding_at_the_def():
    # The default is the value `a` has when `g` is defined (3x), not its first binding.
    with pytest.raises(adjoint.TransformError, match="keyword-only parameter"):
        adjoint.grad(keyword_only_default_rebound)(np.array([1.0, 2.0]))
    check_grad(keyword_only_default_of_a_constant, np.array([1.0, 2.0]))
