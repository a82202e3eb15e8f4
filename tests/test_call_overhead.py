"""The cheap path of a cached call (`forwards.PlainCalls`): `grad`, `value_and_grad`,
`pullback` and `gradient` of a Python function at float and float-array arguments skip the
general path's work, and must still behave exactly as it does. No timings here: what the
fast path does, when it is taken, and that it is not taken where it would be wrong."""

import gc
import sys
import threading
import types
import weakref

import numpy as np
import pytest

import adjoint
import adjoint.api
from adjoint.testing import check_grad

X = np.array([0.3, -0.7, 1.1])
Y = np.array([0.5, 2.0, -1.5])


def _sin_dot(x, y):
    return np.sum(np.sin(x) * y)


@pytest.fixture
def general_path(monkeypatch):
    """Counts the calls that take the general path (`api._pullback`)."""
    calls = []
    general = adjoint.api._pullback

    def counted(*args, **kwargs):
        calls.append(args[0])
        return general(*args, **kwargs)

    monkeypatch.setattr(adjoint.api, "_pullback", counted)
    return calls


# ---- when the fast path is taken -----------------------------------------------------------

def test_floats_and_float_arrays_take_the_fast_path(general_path):
    gx, gy = adjoint.grad(_sin_dot, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, np.cos(X) * Y)
    np.testing.assert_allclose(gy, np.sin(X))
    value, g = adjoint.value_and_grad(lambda a, b: a * b)(2.0, 5.0)
    assert (value, g) == (10.0, 5.0)
    _, back = adjoint.pullback(_sin_dot, X, Y)
    back(1.0)
    adjoint.gradient(_sin_dot, X, Y)
    assert general_path == []


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda: adjoint.grad(_sin_dot, wrt=(0, 1))(X, np.arange(3)), id="an int array at a wrt position"),
        pytest.param(lambda: adjoint.grad(lambda n, x: n * np.sum(x), wrt=(0, 1))(2, X), id="an int at a wrt position"),
        pytest.param(lambda: adjoint.grad(_sin_dot, wrt=(1, 0))(X, Y), id="wrt not ascending"),
        pytest.param(lambda: adjoint.grad(_sin_dot, wrt=(0, 0))(X, Y), id="wrt repeated"),
        pytest.param(lambda: adjoint.grad(lambda d: np.sum(d["x"] ** 2))({"x": X}), id="a container"),
        pytest.param(lambda: adjoint.grad(lambda x: np.sum(x ** 2), freeze=[])(X), id="freeze given"),
        pytest.param(lambda: adjoint.grad(lambda z: abs(z) ** 2)(1.0 + 2.0j), id="a complex number"),
        pytest.param(lambda: adjoint.grad(lambda z: np.sum(np.abs(z) ** 2))(X + 0j), id="a complex array"),
        pytest.param(lambda: adjoint.grad(np.sum)(X), id="a primitive with a rule"),
    ],
)
def test_other_calls_take_the_general_path(call, general_path):
    try:
        call()
    except adjoint.AdjointError:
        pass  # refused there, as before
    assert general_path


def test_an_argument_updated_in_place_takes_the_general_path_and_is_refused_when_shared(general_path):
    def scaled(x, y):
        x *= 2.0
        return np.sum(x * y)

    a = X.copy()
    np.testing.assert_allclose(adjoint.grad(scaled)(a, Y), 2.0 * Y)
    np.testing.assert_array_equal(a, X)  # the caller's array is not updated
    with pytest.raises(adjoint.AdjointError, match="shares its memory"):
        adjoint.grad(scaled)(a, a)
    assert general_path


# ---- what it hands back ---------------------------------------------------------------------

def _add(x, y):
    return np.sum(x + y)


def test_gradients_the_pullback_shares_between_arguments_are_copied():
    # the generated pullback hands the same array to both arguments
    gx, gy = adjoint.grad(_add, wrt=(0, 1))(X, Y)
    np.testing.assert_array_equal(gx, np.ones(3))
    np.testing.assert_array_equal(gy, np.ones(3))
    assert not np.shares_memory(gx, gy)
    _, back = adjoint.pullback(_add, X, Y)
    gx, gy = back(1.0)
    assert not np.shares_memory(gx, gy)


def _identity(x):
    return x


def test_the_callers_cotangent_is_never_handed_back():
    _, back = adjoint.pullback(_identity, X.copy())
    seed = np.array([1.0, 2.0, 3.0])
    (g,) = back(seed)
    np.testing.assert_array_equal(g, [1.0, 2.0, 3.0])
    assert not np.shares_memory(g, seed)


def test_a_read_only_broadcast_cotangent_comes_back_writeable():
    _, back = adjoint.pullback(_identity, X.copy())
    seed = np.broadcast_to(np.array([2.0]), (3,))
    (g,) = back(seed)
    g *= 0.5  # a user's update step
    np.testing.assert_array_equal(g, np.ones(3))


def _doubled(x):
    return 2.0 * x


@adjoint.rrule(_doubled)
def _doubled_rule(x):
    def doubled_pullback(g):
        cotangent = 2.0 * np.asarray(g)
        cotangent.flags.writeable = False  # a rule may hand back an array it keeps
        return (cotangent,)

    return _doubled(x), doubled_pullback


def test_a_read_only_cotangent_from_a_rule_comes_back_writeable():
    g = adjoint.grad(lambda x: np.sum(_doubled(x)))(X)
    g *= 0.5
    np.testing.assert_array_equal(g, np.ones(3))


def test_gradients_have_their_arguments_dtypes():
    x32 = X.astype(np.float32)
    gx, gy = adjoint.grad(_sin_dot, wrt=(0, 1))(x32, Y)
    assert gx.dtype == np.float32 and gy.dtype == np.float64
    np.testing.assert_allclose(gx, np.cos(x32) * Y, rtol=1e-6)
    (g,) = adjoint.pullback(_identity, x32)[1](np.ones(3))  # a float64 cotangent
    assert g.dtype == np.float32
    g = adjoint.grad(lambda a, x: a * np.sum(x))(2.0, X)
    assert type(g) is float and g == pytest.approx(np.sum(X))


def test_a_float_arguments_gradient_is_a_float():
    ga, gb = adjoint.grad(lambda a, b: np.sin(a) * b, wrt=(0, 1))(0.5, 3.0)
    assert type(ga) is float and type(gb) is float
    assert (ga, gb) == (pytest.approx(np.cos(0.5) * 3.0), pytest.approx(np.sin(0.5)))


def test_fast_path_results_match_finite_differences():
    check_grad(_sin_dot, X, Y)
    check_grad(lambda a, x: np.sum(np.tanh(a * x)), 0.7, X)
    check_grad(_sin_dot, X.astype(np.float32), Y.astype(np.float32))


def test_keyword_arguments_are_constants():
    def scaled(x, scale=1.0):
        return scale * np.sum(x ** 2)

    np.testing.assert_allclose(adjoint.grad(scaled)(X, scale=3.0), 6.0 * X)
    np.testing.assert_allclose(adjoint.grad(scaled)(X), 2.0 * X)


def test_value_and_grad_with_aux():
    def loss(x):
        return np.sum(x ** 2), "aux"

    (value, aux), g = adjoint.value_and_grad(loss, has_aux=True)(X)
    assert value == pytest.approx(np.sum(X ** 2)) and aux == "aux"
    np.testing.assert_allclose(g, 2 * X)
    with pytest.raises(adjoint.AdjointError, match="must return a pair"):
        adjoint.value_and_grad(lambda x: np.sum(x), has_aux=True)(X)


def test_gradient_returns_one_per_argument():
    gx, gy = adjoint.gradient(_sin_dot, X, Y)
    np.testing.assert_allclose(gx, np.cos(X) * Y)
    np.testing.assert_allclose(gy, np.sin(X))


# ---- refusals, as on the general path -------------------------------------------------------

def test_a_non_scalar_output_is_refused_with_the_same_message():
    refusal = r"return a float scalar, but it returned an array of shape \(3,\)"
    with pytest.raises(adjoint.AdjointError, match=refusal) as fast:
        adjoint.grad(lambda x: np.sin(x))(X)
    with pytest.raises(adjoint.AdjointError) as general:
        adjoint.grad(lambda x: np.sin(x), freeze=[])(X)
    assert str(fast.value) == str(general.value)


def test_a_tuple_output_points_to_has_aux():
    with pytest.raises(adjoint.AdjointError, match="has_aux=True"):
        adjoint.grad(lambda x: (np.sum(x), 1))(X)
    with pytest.raises(adjoint.AdjointError, match="has_aux=True"):  # (NumPy cannot read it as one array)
        adjoint.grad(lambda x: (np.sum(x), x))(X)


# ---- what it must notice between calls --------------------------------------------------------

def _helper(x):
    return np.sin(x)


def _uses_helper(x):
    return np.sum(_helper(x))


_activation = np.sin  # a NumPy function under another name: its rule is written into the code


def _uses_activation(x):
    return np.sum(_activation(x))


@pytest.mark.parametrize("f, name", [(_uses_helper, "_helper"), (_uses_activation, "_activation")])
def test_a_monkeypatched_helper_is_picked_up(f, name, monkeypatch):
    g = adjoint.grad(f)
    np.testing.assert_allclose(g(X), np.cos(X))
    monkeypatch.setattr(sys.modules[__name__], name, np.tanh)
    np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2)
    _, back = adjoint.pullback(f, X)
    np.testing.assert_allclose(back(1.0)[0], 1 - np.tanh(X) ** 2)


def test_a_monkeypatched_numpy_function_is_picked_up(monkeypatch):
    g = adjoint.grad(lambda x: np.sum(np.exp(x)))
    np.testing.assert_allclose(g(X), np.exp(X))
    monkeypatch.setattr(np, "exp", np.sin)
    np.testing.assert_allclose(g(X), np.cos(X))


def test_a_rebound_closure_variable_is_picked_up():
    ops = np  # `ops.sin` is resolved through the closure cell

    def f(x):
        return np.sum(ops.sin(x))

    g = adjoint.grad(f)
    np.testing.assert_allclose(g(X), np.cos(X))
    ops = types.SimpleNamespace(sin=np.tanh)  # noqa: F841  (read by `f` through its cell)
    np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2)


def _cube(x):
    return x ** 3


def test_a_rule_registered_later_is_used():
    g = adjoint.grad(_cube)
    assert g(2.0) == pytest.approx(12.0)

    @adjoint.rrule(_cube)
    def marked_cube_rule(x):  # a wrong derivative on purpose, to be seen
        return _cube(x), lambda c: (100.0 * c,)

    assert g(2.0) == pytest.approx(100.0)


def test_replaced_code_is_picked_up():
    def f(x):
        return np.sum(x ** 2)

    def other(x):
        return np.sum(3.0 * x)

    g = adjoint.grad(f)
    np.testing.assert_allclose(g(X), 2 * X)
    f.__code__ = other.__code__
    np.testing.assert_allclose(g(X), np.full(3, 3.0))


# ---- the differentiated call around it ------------------------------------------------------

@adjoint.non_differentiable
def _record_mode(seen):
    seen.append(adjoint.within_gradient())


def _recording(x, seen):
    _record_mode(seen)
    return np.sum(x ** 2)


def test_works_from_another_thread():
    results, seen = {}, []

    def run():
        results["g"] = adjoint.grad(_recording)(X, seen)
        results["inside"] = adjoint.within_gradient()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    np.testing.assert_allclose(results["g"], 2 * X)
    assert seen == [True] and results["inside"] is False
    assert adjoint.within_gradient() is False


def test_the_mode_and_the_recursion_limit_are_restored_after_an_error():
    limit = sys.getrecursionlimit()

    def fails(x):
        raise ValueError("inside f")

    with pytest.raises(ValueError, match="inside f"):
        adjoint.grad(fails)(X)
    assert sys.getrecursionlimit() == limit and adjoint.within_gradient() is False
    seen = []
    adjoint.grad(_recording)(X, seen)
    assert seen == [True]
    assert sys.getrecursionlimit() == limit and adjoint.within_gradient() is False


def test_recursion_as_deep_as_plain_python():
    def power(x, n):
        return x if n == 0 else x * power(x, n - 1)

    depth = sys.getrecursionlimit() // 2  # fine in plain Python; three frames a level when differentiated
    assert adjoint.grad(power)(1.0, depth) == pytest.approx(depth + 1)


def test_grad_runs_one_fused_function_and_value_and_grad_the_forward_function_and_pullback(monkeypatch):
    from adjoint.compiler import pipeline

    made = []
    for kind in ("forward_function", "gradient_function"):
        original = getattr(pipeline, kind)
        monkeypatch.setattr(pipeline, kind, lambda *a, _o=original, _k=kind, **k: made.append(_k) or _o(*a, **k))

    def sin_dot(x, y):
        return np.sum(np.sin(x) * y)

    np.testing.assert_allclose(adjoint.grad(sin_dot)(X, Y), np.cos(X) * Y)
    assert made == ["gradient_function"]
    value, g = adjoint.value_and_grad(sin_dot)(X, Y)
    assert made == ["gradient_function", "forward_function"]
    np.testing.assert_allclose(g, np.cos(X) * Y)


def test_only_code_that_calls_differentiated_functions_raises_the_recursion_limit(monkeypatch):
    raised = []
    monkeypatch.setattr(sys, "setrecursionlimit", lambda n: raised.append(n))

    def twice(x):
        return 2.0 * _sin_dot(x, Y)

    np.testing.assert_allclose(adjoint.grad(_sin_dot)(X, Y), np.cos(X) * Y)  # NumPy only: no room needed
    assert raised == []
    np.testing.assert_allclose(adjoint.grad(twice)(X), 2 * np.cos(X) * Y)  # calls `_sin_dot` differentiated
    assert len(raised) == 2 and raised[0] > raised[1]


def test_no_function_is_kept_alive():
    def make():
        return lambda x: np.sum(x ** 2)

    f, g = make(), make()
    alive = weakref.ref(f), weakref.ref(g)
    adjoint.pullback(f, X)[1](1.0)
    adjoint.grad(g)(X)
    del f, g
    gc.collect()
    assert [ref() for ref in alive] == [None, None]


def scaled_by_default(x, s=2.0, *, t=1.0):
    return np.sum(x * s * t)


def test_defaults_rebound_after_the_first_call_are_seen():
    gradient = adjoint.grad(scaled_by_default)
    x = np.ones(2)
    np.testing.assert_allclose(gradient(x), 2.0)
    scaled_by_default.__defaults__ = (5.0,)
    scaled_by_default.__kwdefaults__ = {"t": 3.0}
    try:
        np.testing.assert_allclose(gradient(x), 15.0)
        value, back = adjoint.pullback(scaled_by_default, x)
        assert value == pytest.approx(30.0)
        np.testing.assert_allclose(back(1.0)[0], 15.0)
    finally:
        scaled_by_default.__defaults__ = (2.0,)
        scaled_by_default.__kwdefaults__ = {"t": 1.0}
