"""Forward mode and higher-order derivatives (adjoint/derivatives.py): jvp, hvp, hessian,
jacobian, gradients of gradients, nested derivatives inside a loss, perturbation confusion.

Every expectation is either analytic or central finite differences of a lower-order derivative
that is itself checked elsewhere.
"""

import math

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_jvp

RNG = np.random.default_rng(0)


def finite_difference(f, x, v, eps=1e-6):
    """(f(x + eps v) - f(x - eps v)) / 2 eps, for array-valued f."""
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


# ---- functions with known Hessians -------------------------------------------------------------

A = np.array([[3.0, 1.0, 0.5], [1.0, 2.0, -0.3], [0.5, -0.3, 4.0]])
B = np.array([0.2, -1.0, 0.7])


def quadratic(x):
    return 0.5 * x @ A @ x + B @ x


def sum_sin(x):
    return np.sum(np.sin(x))


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i, i + 1] += -400 * x[i]
        H[i + 1, i] += -400 * x[i]
        H[i + 1, i + 1] += 200
    return H


W1 = RNG.normal(size=(4, 5)) * 0.5
W2 = RNG.normal(size=(5, 3)) * 0.5
X = RNG.normal(size=(6, 4))
Y = RNG.normal(size=(6, 3))


def mlp_loss(W1, W2, X, Y):
    h = np.tanh(X @ W1)
    return np.mean((h @ W2 - Y) ** 2)


@pytest.mark.parametrize("f, x, expected", [
    (quadratic, np.array([0.3, -0.2, 1.0]), A),
    (sum_sin, np.array([0.3, -0.2, 1.0]), np.diag(-np.sin([0.3, -0.2, 1.0]))),
    (rosenbrock, np.array([0.5, -0.3, 1.2, 0.8]), rosenbrock_hessian(np.array([0.5, -0.3, 1.2, 0.8]))),
], ids=["quadratic", "sum_sin", "rosenbrock"])
def test_hessian_matches_the_analytic_one(f, x, expected):
    H = adjoint.hessian(f)(x)
    assert H.shape == x.shape + x.shape
    np.testing.assert_allclose(H, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("f, x", [
    (quadratic, np.array([0.3, -0.2, 1.0])),
    (sum_sin, np.array([0.3, -0.2, 1.0])),
    (rosenbrock, np.array([0.5, -0.3, 1.2, 0.8])),
], ids=["quadratic", "sum_sin", "rosenbrock"])
def test_hvp_matches_the_hessian_times_v(f, x):
    v = RNG.normal(size=x.shape)
    np.testing.assert_allclose(adjoint.hvp(f, x, v), adjoint.hessian(f)(x) @ v, rtol=1e-10, atol=1e-10)


def test_hvp_of_an_mlp_loss_matches_finite_differences_of_its_gradient():
    v = RNG.normal(size=W1.shape)
    gradient = adjoint.grad(mlp_loss)
    expected = finite_difference(lambda w: gradient(w, W2, X, Y), W1, v)
    actual = adjoint.hvp(mlp_loss, W1, v, W2, X, Y)
    assert actual.shape == W1.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


def test_hessian_of_an_mlp_loss_is_symmetric_and_matches_hvps():
    w = W2.ravel()

    def loss_of_flat(w):
        return mlp_loss(W1, w.reshape(W2.shape), X, Y)

    H = adjoint.hessian(loss_of_flat)(w)
    np.testing.assert_allclose(H, H.T, atol=1e-10)
    v = RNG.normal(size=w.shape)
    np.testing.assert_allclose(H @ v, adjoint.hvp(loss_of_flat, w, v), rtol=1e-9, atol=1e-10)


# ---- jvp -------------------------------------------------------------------------------------

def test_jvp_returns_value_and_tangent_with_none_for_constants():
    def f(x, y):
        return np.sin(x) * y

    value, tangent = adjoint.jvp(f, (np.array([0.0, 1.0]), 2.0), (np.array([1.0, 1.0]), None))
    np.testing.assert_allclose(value, np.sin([0.0, 1.0]) * 2.0)
    np.testing.assert_allclose(tangent, np.cos([0.0, 1.0]) * 2.0)


def test_jvp_of_tuple_output_mirrors_it():
    def f(x):
        return x * 2.0, np.sum(x ** 2)

    value, tangent = adjoint.jvp(f, (np.array([1.0, 2.0]),), (np.array([1.0, 0.0]),))
    assert isinstance(tangent, tuple)
    np.testing.assert_allclose(tangent[0], [2.0, 0.0])
    assert float(tangent[1]) == pytest.approx(2.0)


def test_jvp_refuses_mismatched_tangents():
    with pytest.raises(adjoint.AdjointError, match="one tangent per primal"):
        adjoint.jvp(np.sin, (1.0, 2.0), (1.0,))
    with pytest.raises(adjoint.AdjointError, match="shape"):
        adjoint.jvp(np.sin, (np.ones(3),), (np.ones(2),))


def test_jvp_does_not_mutate_arguments():
    x = np.array([1.0, 2.0])
    t = np.array([1.0, -1.0])
    adjoint.jvp(lambda x: np.cumsum(x * x), (x,), (t,))
    np.testing.assert_array_equal(x, [1.0, 2.0])
    np.testing.assert_array_equal(t, [1.0, -1.0])


def loops_and_branches(x, n):
    total = 0.0
    for i in range(n):
        if x[i % len(x)] > 0:
            total = total + np.sin(x[i % len(x)]) * x
        else:
            total = total - x ** 2
    return np.sum(total)


def while_loop(x):
    y = x
    while np.sum(y) < 10.0:
        y = y * 1.5 + 0.1
    return np.sum(y ** 2)


def closures(x, w):
    scale = lambda t: t * w
    def twice(t):
        return scale(scale(t))
    return np.sum(twice(x))


def containers(x, w):
    p = {"w": w, "n": 3, "pair": (x, 2.0)}
    ys = [x * p["n"], p["pair"][0] * w]
    for y in ys:
        x = x + y
    return np.sum(x) * p["pair"][1]


@pytest.mark.parametrize("f, args", [
    (loops_and_branches, (np.array([0.5, -0.3, 1.2]), 5)),
    (while_loop, (np.array([0.5, 1.0]),)),
    (closures, (np.array([0.5, -1.0]), np.array([2.0, 0.5]))),
    (containers, (np.array([0.5, -1.0]), np.array([2.0, 0.5]))),
], ids=["loops_and_branches", "while_loop", "closures", "containers"])
def test_jvp_of_control_flow_closures_and_containers(f, args):
    check_jvp(f, *args)


# ---- jacobian --------------------------------------------------------------------------------

def test_jacobian_in_both_modes_matches_finite_differences():
    def f(x):
        return np.array([x[0] * x[1], np.sin(x[2]), np.sum(x ** 2)])

    x = np.array([0.5, -1.0, 2.0])
    expected = np.stack([finite_difference(f, x, e) for e in np.eye(3)], axis=-1)
    for mode in ("rev", "fwd"):
        J = adjoint.jacobian(f, mode=mode)(x)
        assert J.shape == (3, 3)
        np.testing.assert_allclose(J, expected, rtol=1e-7, atol=1e-8)


def test_jacobian_shape_is_output_shape_plus_input_shape():
    def f(W, x):
        return np.tanh(W @ x)

    W, x = RNG.normal(size=(2, 3)), RNG.normal(size=3)
    for mode in ("rev", "fwd"):
        assert adjoint.jacobian(f, wrt=0, mode=mode)(W, x).shape == (2, 2, 3)
        assert adjoint.jacobian(f, wrt=1, mode=mode)(W, x).shape == (2, 3)
    np.testing.assert_allclose(adjoint.jacobian(f, 1)(W, x), adjoint.jacobian(f, 1, mode="fwd")(W, x), atol=1e-12)


def test_jacobian_refuses_an_unknown_mode():
    with pytest.raises(adjoint.AdjointError, match="mode"):
        adjoint.jacobian(np.sin, mode="sideways")


# ---- gradients of gradients ------------------------------------------------------------------

def test_grad_of_grad_of_a_scalar_function():
    def f(x):
        return math.sin(x) * x ** 3

    second = adjoint.grad(adjoint.grad(f))(0.7)
    expected = -math.sin(0.7) * 0.7 ** 3 + 6 * math.cos(0.7) * 0.7 ** 2 + 6 * 0.7 * math.sin(0.7)
    assert second == pytest.approx(expected, rel=1e-10)


def scalar_with_loop_and_branch(x):
    y = x
    for k in range(4):
        if y > 1.0:
            y = y - 0.1 * y ** 2
        else:
            y = y * math.exp(0.2 * k) + math.sin(y)
    return y


def test_grad_of_grad_through_loops_and_branches_matches_finite_differences():
    first = adjoint.grad(scalar_with_loop_and_branch)
    second = adjoint.grad(first)
    for x in (0.3, 0.9, 1.7):
        expected = (first(x + 1e-6) - first(x - 1e-6)) / 2e-6
        assert second(x) == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_a_third_derivative_is_refused_with_what_to_do():
    f = lambda x: x ** 5
    with pytest.raises(adjoint.AdjointError, match="third derivative"):
        adjoint.grad(adjoint.grad(adjoint.grad(f)))(1.5)


def test_jvp_of_grad_and_grad_of_jvp_agree():
    def f(x):
        return np.sum(np.exp(x) * x)

    x, v = np.array([0.1, -0.4]), np.array([1.0, 2.0])
    forward_over_reverse = adjoint.jvp(adjoint.grad(f), (x,), (v,))[1]

    def directional(x):
        return adjoint.jvp(f, (x,), (v,))[1]

    reverse_over_forward = adjoint.grad(directional)(x)
    np.testing.assert_allclose(forward_over_reverse, reverse_over_forward, rtol=1e-10)
    np.testing.assert_allclose(forward_over_reverse, (np.exp(x) * (x + 2)) * v, rtol=1e-10)


def test_jvp_of_jvp_is_a_second_directional_derivative():
    def f(x):
        return np.sum(np.sin(x) * x)

    x, u, v = np.array([0.3, 1.1]), np.array([1.0, 0.0]), np.array([0.5, 1.0])

    def directional(x):
        return adjoint.jvp(f, (x,), (u,))[1]

    _, second = adjoint.jvp(directional, (x,), (v,))
    expected = np.sum((2 * np.cos(x) - x * np.sin(x)) * u * v)
    assert float(second) == pytest.approx(expected, rel=1e-10)


# ---- perturbation confusion ------------------------------------------------------------------

def test_no_perturbation_confusion_in_the_classic_test():
    # d/dx [x * d/dy (x + y)] at any point is 1 (a confused implementation says 2)
    def outer(x):
        return x * adjoint.grad(lambda y: x + y)(1.0)

    assert adjoint.grad(outer)(3.0) == pytest.approx(1.0)
    assert adjoint.jvp(outer, (3.0,), (1.0,))[1] == pytest.approx(1.0)


def test_inner_derivative_of_a_closure_over_the_outer_variable():
    # d/dx [x * d/dy (x * y)] = d/dx [x * x] = 2x
    def outer(x):
        return x * adjoint.grad(lambda y: x * y)(2.0)

    assert adjoint.grad(outer)(1.5) == pytest.approx(3.0)
    assert adjoint.jvp(outer, (1.5,), (1.0,))[1] == pytest.approx(3.0)


def test_inner_and_outer_derivatives_of_the_same_function():
    def f(x, y):
        return x * x * y

    def g(x):
        return adjoint.grad(f, 1)(x, x)  # d/dy f = x^2, at y = x

    # g(x) = x^2, so g'(x) = 2x
    assert adjoint.grad(g)(1.5) == pytest.approx(3.0)
    assert adjoint.jvp(g, (1.5,), (1.0,))[1] == pytest.approx(3.0)


# ---- a loss holding an inner gradient (physics-informed) -------------------------------------

def network(params, x):
    W, b, v = params
    return np.sum(np.tanh(x @ W + b) @ v)


def input_gradient_loss(params, xs):
    total = 0.0
    for x in xs:
        slope = adjoint.grad(network, 1)(params, x)
        total = total + np.sum((slope - 1.0) ** 2)
    return total


def test_a_loss_holding_an_input_gradient_is_differentiated_with_respect_to_the_parameters():
    params = [RNG.normal(size=(2, 4)) * 0.5, RNG.normal(size=4) * 0.1, RNG.normal(size=4)]
    xs = [RNG.normal(size=2) for _ in range(3)]
    g = adjoint.grad(input_gradient_loss)(params, xs)
    assert [np.shape(p) for p in g] == [p.shape for p in params]
    for index, part in enumerate(params):
        direction = RNG.normal(size=part.shape)

        def along(t, index=index, direction=direction):
            moved = list(params)
            moved[index] = params[index] + t * direction
            return input_gradient_loss(moved, xs)

        expected = (along(1e-6) - along(-1e-6)) / 2e-6
        assert float(np.sum(g[index] * direction)) == pytest.approx(expected, rel=1e-5, abs=1e-7)


# ---- regressions from review ---------------------------------------------------------------------

G = adjoint.grad


def test_an_inner_gradient_of_a_function_calling_another_closure_over_the_outer_variable():
    def outer(x):
        net = lambda t: x * t * t
        return x * G(lambda t: net(t))(1.0)  # = 2 x^2

    assert G(outer)(1.5) == pytest.approx(6.0)
    assert adjoint.jvp(outer, (1.5,), (1.0,))[1] == pytest.approx(6.0)


def pinn_through_a_closure(params, xs):
    net = lambda x: network(params, x)
    return sum(np.sum((G(lambda t: net(t))(x) - 1.0) ** 2) for x in xs)


def test_a_physics_informed_loss_through_a_closure_is_not_treated_as_a_constant():
    params = [RNG.normal(size=(2, 4)) * 0.5, RNG.normal(size=4) * 0.1, RNG.normal(size=4)]
    xs = [RNG.normal(size=2) for _ in range(2)]
    g = G(pinn_through_a_closure)(params, xs)
    direction = RNG.normal(size=params[0].shape)
    moved = lambda t: pinn_through_a_closure([params[0] + t * direction, *params[1:]], xs)
    expected = (moved(1e-6) - moved(-1e-6)) / 2e-6
    assert float(np.sum(g[0] * direction)) == pytest.approx(expected, rel=1e-5)


def test_an_inner_gradient_of_a_closure_with_default_values():
    def constant_default(x):
        f = lambda y, k=2.0: x * k * y * y  # 4 x^2
        return x * G(f)(1.0)

    def outer_through_a_default(x):
        return x * G(lambda y, x=x: x * y * y)(1.0)  # 2 x^2

    assert G(constant_default)(1.5) == pytest.approx(12.0)
    assert adjoint.jvp(constant_default, (1.5,), (1.0,))[1] == pytest.approx(12.0)
    assert G(outer_through_a_default)(1.5) == pytest.approx(6.0)


class Quadratic:
    def loss(self, w, x):
        return np.sum(np.sin(x @ w))


def test_hvp_of_a_bound_method():
    w, v, x = np.ones(3), np.array([1.0, 0.0, 2.0]), np.ones((2, 3)) * 0.3
    gradient = G(Quadratic().loss)
    expected = (gradient(w + 1e-6 * v, x) - gradient(w - 1e-6 * v, x)) / 2e-6
    np.testing.assert_allclose(adjoint.hvp(Quadratic().loss, w, v, x), expected, rtol=1e-6, atol=1e-9)


def test_second_derivatives_through_rules_that_are_called_not_inlined():
    f = lambda w: np.sum(np.array([w[0] * w[1], w[1]]) ** 3)
    w, v = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    expected = (G(f)(w + 1e-6 * v) - G(f)(w - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(adjoint.hvp(f, w, v), expected, rtol=1e-6)
    h = lambda x: max(x * x, 3.0 * x)
    assert G(G(h))(1.3) == 0.0 and G(G(h))(3.5) == pytest.approx(2.0)


def squared_sines(w, x):
    return np.sum(np.sin(w * x) ** 2)


def through_a_helper(w, x):
    return squared_sines(w, x)


@pytest.mark.parametrize("inner", [squared_sines, through_a_helper])
def test_grad_and_jvp_of_a_function_calling_jvp_with_constant_arguments(inner):
    x, u = np.array([0.3, 1.1]), np.array([1.0, 0.5])

    def k(w):
        return adjoint.jvp(inner, (w, x), (u, None))[1] ** 2

    w, v = np.array([0.7, -0.2]), np.array([1.0, 2.0])
    expected = np.array([(k(w + 1e-6 * e) - k(w - 1e-6 * e)) / 2e-6 for e in np.eye(2)])
    np.testing.assert_allclose(G(k)(w), expected, rtol=1e-6)
    assert adjoint.jvp(k, (w,), (v,))[1] == pytest.approx(expected @ v, rel=1e-6)


def test_value_and_grad_inside_a_differentiated_function():
    def f(x, w):
        return np.sin(x * w) * w

    def loss(w):
        value, slope = adjoint.value_and_grad(f)(0.7, w)
        return value * slope + slope ** 2

    expected = (loss(1.3 + 1e-6) - loss(1.3 - 1e-6)) / 2e-6
    assert G(loss)(1.3) == pytest.approx(expected, rel=1e-6)
    assert adjoint.jvp(loss, (1.3,), (1.0,))[1] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("inside, message", [
    (lambda w: adjoint.hvp(lambda y: w * y ** 3, 1.0, 1.0), "third derivative"),
    (lambda w: adjoint.grad(lambda y: w * y, freeze=[])(1.0), "freeze="),
    (lambda w: adjoint.pullback(lambda y: w * y, 1.0)[0], "use adjoint.grad or adjoint.jvp"),
])
def test_apis_that_cannot_be_differentiated_again_say_so(inside, message):
    with pytest.raises(adjoint.AdjointError, match=message):
        G(inside)(1.3)


def test_source_shows_the_code_derivatives_of_derivatives_run():
    gradient = G(quadratic)
    assert adjoint.source(gradient) == adjoint.source(quadratic)
    text = adjoint.source(G(sum_sin), mode="jvp", args=(np.ones(3),))
    assert "def sum_sin_gradient_jvp(sum_sin_gradient_tangents, x):" in text  # the gradient as one function
    compile(text.replace("\n# adjoint", "\n\n# adjoint"), "<shown>", "exec")  # readable, valid Python
    with pytest.raises(adjoint.AdjointError, match="pass example arguments"):
        adjoint.source(gradient, mode="jvp")
    assert "def quadratic_jvp(quadratic_tangents, x):" in adjoint.source(quadratic, mode="jvp")


# ---- models' tangents (review) -------------------------------------------------------------------

# the pullback also works out the exponent's partial, log(x), before the int's cotangent is dropped
@pytest.mark.filterwarnings("ignore:invalid value encountered in log")
def test_an_int_read_out_of_a_container_does_not_move():
    x = np.array([-0.5, 0.3])
    loss = lambda m: np.sum(m["x"] ** m["p"])
    assert adjoint.jvp(loss, ({"x": x, "p": 2},), ({"x": np.ones(2)},))[1] == pytest.approx(-0.4)
    product = adjoint.hvp(loss, {"x": x, "p": 2}, {"x": np.ones(2), "p": None})
    assert product["p"] is None and np.allclose(product["x"], 2.0)


def test_a_models_tangent_must_mirror_it():
    from dataclasses import dataclass

    @dataclass
    class Dense:
        W: np.ndarray

    with pytest.raises(adjoint.AdjointError, match="the field or key 'w'"):
        adjoint.jvp(lambda m: np.sum(m.W), (Dense(np.ones(2)),), (adjoint.Tangent(Dense, w=np.ones(2)),))
    with pytest.raises(adjoint.AdjointError, match=r"argument 0\.W has shape \(3,\)"):
        adjoint.jvp(lambda m: np.sum(m.W), (Dense(np.ones(2)),), (adjoint.Tangent(Dense, W=np.ones(3)),))
    with pytest.raises(adjoint.AdjointError, match="the field or key 'v'"):
        adjoint.jvp(lambda p: p["W"], ({"W": 1.0},), ({"v": 1.0},))


def test_a_model_holding_a_function_takes_a_tangent_of_its_own_type():
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent.parent / "examples"))
    from train import Chain, Dense, identity

    model = Chain(Dense(RNG.normal(size=(3, 4)), np.zeros(4)), Dense(RNG.normal(size=(4, 2)), np.zeros(2), identity))
    x, y = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    mse = lambda m, x, y: np.mean((m(x) - y) ** 2)
    direction = adjoint.tree_map(lambda a: RNG.normal(size=np.shape(a)), model)
    _, slope = adjoint.jvp(mse, (model, x, y), (direction, None, None))
    gradient = G(mse)(model, x, y)
    expected = sum(np.sum(g * d) for g, d in zip(adjoint.tree_leaves(gradient), adjoint.tree_leaves(direction)))
    assert slope == pytest.approx(expected, rel=1e-10)


# ---- closures inside losses (review) -------------------------------------------------------------

def test_jvp_of_a_closure_inside_a_loss_gives_the_closures_values_their_gradient():
    def loss(w):
        _, slope = adjoint.jvp(lambda y: w * y ** 2, (3.0,), (1.0,))  # 6w
        return slope * w

    assert G(loss)(2.0) == pytest.approx(24.0)

    def through_a_model(w):
        return adjoint.jvp(lambda y: network([w[:, None] * np.ones((3, 4)), np.zeros(4), np.ones(4)], y), (X[0, :3],), (w,))[1] ** 2

    w = np.array([0.5, -0.2, 0.9])
    expected = np.array([(through_a_model(w + 1e-6 * e) - through_a_model(w - 1e-6 * e)) / 2e-6 for e in np.eye(3)])
    np.testing.assert_allclose(G(through_a_model)(w), expected, rtol=1e-6, atol=1e-9)


def test_an_inner_gradient_of_a_closure_with_an_int_default():
    def loss(w):
        return G(lambda y, k=2: w * y ** k)(1.5)  # 3w

    def loop_variables(w):
        return sum(G(f)(2.0) for f in [lambda y, i=i: w * y ** (i + 1) for i in range(3)])

    assert G(loss)(0.7) == pytest.approx(3.0)
    assert G(loop_variables)(0.7) == pytest.approx(17.0)


def test_refusals_inside_losses_say_what_they_are():
    def value_and_grad_of_a_closure(w):
        value, slope = adjoint.value_and_grad(lambda y: w * y ** 2)(1.5)
        return value + slope

    def nested_twice(x):
        return G(lambda y: np.sum(G(lambda z: z ** 3)(y) ** 2))(x)

    with pytest.raises(adjoint.AdjointError, match="value_and_grad of a closure"):
        G(value_and_grad_of_a_closure)(0.7)
    with pytest.raises(adjoint.AdjointError, match="third derivative"):
        G(nested_twice)(1.5)


# ---- the API's edges (review) --------------------------------------------------------------------

def test_jvp_refuses_a_tangent_for_an_int_and_primals_that_are_not_a_tuple():
    with pytest.raises(adjoint.AdjointError, match="its tangent must be None"):
        adjoint.jvp(lambda t: t ** 2, (2,), (1.0,))
    with pytest.raises(adjoint.AdjointError, match="as tuples"):
        adjoint.jvp(np.sin, np.array([0.5, 1.0]), np.array([1.0, 1.0]))
    with pytest.raises(adjoint.AdjointError, match="has 1 items, the argument 2"):
        adjoint.jvp(lambda p: p[0] * p[1], ((1.0, 2.0),), ((1.0,),))


class Scaled:
    def __init__(self):
        self.A = np.eye(3) * 2.0

    def loss(self, x):
        return np.sum((self.A @ x) ** 3)


def test_second_derivatives_of_methods_of_objects_holding_arrays_and_of_numpy_functions():
    x, v = np.array([0.3, 1.1, -0.4]), np.array([1.0, 0.5, 2.0])
    np.testing.assert_allclose(adjoint.hvp(Scaled().loss, x, v), 48 * x * v)
    assert adjoint.hessian(np.sin)(0.5) == pytest.approx(-np.sin(0.5))
    np.testing.assert_allclose(adjoint.hvp(np.sum, x, v), 0.0)
    assert adjoint.jvp(x.dot, (v,), (v,))[1] == pytest.approx(x @ v)


def test_a_users_forward_rule_must_shape_its_tangent_like_its_value():
    def square(x):
        return x ** 2

    @adjoint.frule(square)
    def square_frule(primals, tangents):
        (x,), (dx,) = primals, tangents
        return square(x), np.sum(2 * x * dx)  # wrong: a scalar for a vector

    with pytest.raises(adjoint.AdjointError, match="tangent of shape"):
        adjoint.jvp(lambda t: square(t) + 1.0, (np.ones(2),), (np.ones(2),))


class HeldModel:
    scale = 2.0  # a class constant: no tangent

    def __init__(self, W):
        self.W = W

    def apply(self, x):
        return self.scale * np.tanh(self.W @ x)


def test_jvp_through_a_method_held_in_a_name_and_a_class_constant():
    model, x = HeldModel(np.eye(2) * 0.5), np.array([0.3, -0.2])
    direction = HeldModel(np.ones((2, 2)))  # a tangent of the model's own class

    def held(m):
        f = m.apply
        return np.sum(f(x) ** 2)

    expected = float(np.sum(2 * (2 * np.tanh(model.W @ x)) * 2 * (1 - np.tanh(model.W @ x) ** 2) * (direction.W @ x)))
    for f in (held, lambda m: np.sum(m.apply(x) ** 2)):
        _, tangent = adjoint.jvp(f, (model,), (direction,))
        assert tangent == pytest.approx(expected)
