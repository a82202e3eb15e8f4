"""A gradient compiled as one function (`compiler.fuse`, `pipeline.gradient_function`), and the
Hessian-vector products that run it through forward mode (`derivatives._fused_gradient_jvp`)."""

import collections
import math

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import fuse, pipeline, syntax
from adjoint.testing import check_grad, check_jvp

RNG = np.random.default_rng(7)
X, W = RNG.normal(size=3), RNG.normal(size=3)
Z, V = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))


def inner(a, b):
    return np.sin(a) * b


def loop_with_branches(x, w, n=3, scale=2.0):
    s = 0.0
    for i in range(n):
        if i % 2:
            s = s + inner(x, w) * scale
        else:
            s = s - np.sum(x * w) ** 2
    return np.sum(s)


def while_of_floats(a, b):
    t = a
    while t < 10.0:
        t = t * b + math.sin(a)
    return t


def nested_def(x):
    def square(y):
        return y * y

    return np.sum(square(x) * np.cos(x))


def log_sum_exp_rows(z, v):
    z = z * v
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m)


def log_sum_exp_method(z):
    m = z.max(1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m) / 3.0


def shift_read_twice(z):
    m = np.max(z, axis=0, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(z - m), axis=0, keepdims=True)) + m) + np.sum(m * m)


CASES = [
    (loop_with_branches, (X, W)),
    (while_of_floats, (1.3, 1.7)),
    (nested_def, (X,)),
    (log_sum_exp_rows, (Z, V)),
    (log_sum_exp_method, (Z,)),
    (shift_read_twice, (Z,)),
]
IDS = [f.__name__ for f, _ in CASES]


def fused(f, args):
    wrt = tuple(range(len(args)))
    return pipeline.gradient_function(f, wrt, tuple(i for i, a in enumerate(args) if type(a) is float))


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_the_fused_gradient_is_grads(f, args):
    check_grad(f, *args)  # grad itself, against finite differences
    gradient = fused(f, args)
    expected = adjoint.grad(f, wrt=tuple(range(len(args))))(*args)
    for got, want in zip(gradient(*args), expected):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_forward_mode_over_the_fused_gradient_is_a_hessian_vector_product(f, args):
    check_jvp(fused(f, args), *args)  # against finite differences of the gradient itself


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_hvp_runs_the_fused_gradients_jvp(f, args):
    directions = tuple(RNG.normal(size=np.shape(a)) if type(a) is np.ndarray else 0.7 for a in args)
    gradient = adjoint.grad(f, wrt=tuple(range(len(args))))
    with pipeline.recording() as texts:
        _, product = adjoint.jvp(gradient, args, directions)
    assert any(f"def {f.__name__}_gradient_jvp(" in t for t in texts)
    assert any(f"JVP (forward mode) of `{f.__name__}_gradient`" in t for t in texts)  # named as the user's
    assert not any(f"def {f.__name__}_pullback_jvp(" in t for t in texts)  # its pullback: not transformed per call
    eps = 1e-6
    plus = gradient(*(a + eps * d for a, d in zip(args, directions)))
    minus = gradient(*(a - eps * d for a, d in zip(args, directions)))
    for got, high, low in zip(product, plus, minus):
        np.testing.assert_allclose(got, (high - low) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_keyword_defaults_reach_the_fused_gradient():
    gradient = fused(loop_with_branches, (X, W))
    for got, want in zip(gradient(X, W, 4, scale=0.5), adjoint.grad(loop_with_branches, wrt=(0, 1))(X, W, 4, scale=0.5)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    product = adjoint.hvp(lambda x: loop_with_branches(x, W, 4), X, V[0])
    check_jvp(lambda x: adjoint.grad(loop_with_branches)(x, W, 4), X)
    np.testing.assert_allclose(product, adjoint.jvp(lambda x: adjoint.grad(loop_with_branches)(x, W, 4), (X,), (V[0],))[1])


def test_the_fused_text_is_one_function_reading_like_backprop():
    text = fused(log_sum_exp_rows, (Z, V)).__adjoint_source__
    assert text.startswith("# adjoint: gradient (forward function and pullback fused) of `log_sum_exp_rows`")
    assert "def log_sum_exp_rows_gradient(z, v):" in text
    assert text.count("def ") == 1 and "_pullback" not in text  # no nested pullback, no `return (value, pullback)`
    assert "log_sum_exp_rows_bar = arguments.unit(log_sum_exp_rows, 'log_sum_exp_rows')" in text
    assert "m = np.max(adjoint.stop_gradient(z_1), axis=1, keepdims=True)" in text  # the shift cancels
    first = log_sum_exp_rows.__code__.co_firstlineno
    assert f"# line {first + 2}: m = np.max(z, axis=1, keepdims=True)" in text  # comments map to your lines
    assert text.rstrip().endswith("return (z_bar, v_bar)")
    compile(text, "<fused>", "exec")


def test_a_shift_read_elsewhere_keeps_its_derivative():
    text = fused(shift_read_twice, (Z,)).__adjoint_source__
    assert "stop_gradient" not in text


def test_the_fused_gradient_refuses_a_value_that_is_not_a_scalar():
    def vector(x):
        return x * 2.0

    with pytest.raises(adjoint.AdjointError, match="grad needs `.*vector` to return a float scalar"):
        pipeline.gradient_function(vector, (0,))(X)


def lowered(f):
    return pipeline.lower(f, (0,))


def pullback_of(node):
    name = node.body[-1].value.elts[1].id  # `return (value, f_pullback)`
    return next(s for s in node.body if isinstance(s, gast.FunctionDef) and s.name == name)


def test_a_nonlocal_in_the_pullback_is_not_fused():
    node, ctx = lowered(nested_def)
    pullback_of(node).body.insert(0, gast.Nonlocal(names=["x"]))
    assert fuse.transform(node, ctx) is None


def test_a_function_the_forward_made_reading_a_name_the_pullback_rebinds_is_not_fused():
    node, ctx = lowered(nested_def)
    rebound = next(iter(syntax.stored_names(pullback_of(node).body[0])))
    reader = syntax.parse(f"reader = lambda: {rebound}").body[0]
    node.body.insert(0, reader)
    assert fuse.transform(node, ctx) is None
    node.body.remove(reader)
    assert fuse.transform(node, ctx) is not None


def test_an_early_return_in_the_pullback_is_not_fused():
    node, ctx = lowered(nested_def)
    pullback_of(node).body.insert(0, syntax.returns(syntax.const(None)))
    assert fuse.transform(node, ctx) is None


def test_an_unfused_gradient_falls_back_to_the_forward_function_and_its_pullback(monkeypatch):
    def cubic(x):
        return np.sum(x ** 3)

    monkeypatch.setattr(fuse, "transform", lambda node, ctx, release=False: None)
    assert pipeline.gradient_function(cubic, (0,)) is None
    with pipeline.recording() as texts:
        product = adjoint.hvp(cubic, X, W)
    assert any("_pullback_jvp(" in t for t in texts)
    np.testing.assert_allclose(product, 6 * X * W, rtol=1e-12)


def test_calls_that_are_not_plain_take_the_general_path():
    def of_a_dict(p):
        return np.sum(np.sin(p["x"]) * p["w"])

    check_jvp(adjoint.grad(of_a_dict), {"x": X, "w": W})  # a container: the general path
    check_jvp(adjoint.grad(lambda x, k: np.sum(x ** k)), X, 3)  # an int argument held constant

    def updates_in_place(x):
        x = x.copy()
        x[0] = x[0] ** 2
        return np.sum(x * x)

    check_jvp(adjoint.grad(updates_in_place), X)


def activation(x):
    return np.tanh(x)


def uses_a_global(x):
    return np.sum(activation(x) ** 2)


def test_a_rebound_global_recompiles_the_fused_hvp(monkeypatch):
    before = adjoint.hvp(uses_a_global, X, W)
    monkeypatch.setitem(globals(), "activation", np.sin)
    after = adjoint.hvp(uses_a_global, X, W)
    np.testing.assert_allclose(after, 2 * np.cos(2 * X) * W, rtol=1e-10)  # d2/dx2 sin(x)^2 = 2 cos(2x)
    assert not np.allclose(before, after)


def biased_rows(X, b):
    Z = X + b
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=1, keepdims=True)) + m)


def test_what_the_pullback_does_not_read_is_released_before_it_runs():
    import linecache

    released = pipeline.gradient_function(biased_rows, (0, 1), (), release=True)
    kept = pipeline.gradient_function(biased_rows, (0, 1), ())
    text = "".join(linecache.getlines(released.__code__.co_filename))
    deleted = next(line for line in text.splitlines() if line.strip().startswith("del "))
    assert "Z," in deleted and "biased_rows_sub" in deleted and "biased_rows_exp" not in deleted  # the pullback reads the exp
    assert "del " not in "".join(linecache.getlines(kept.__code__.co_filename))  # (forward mode reads this one)
    X, b = RNG.normal(size=(4, 3)), RNG.normal(size=3)
    for got, expected in zip(released(X, b), adjoint.grad(biased_rows, wrt=(0, 1))(X, b)):
        np.testing.assert_allclose(got, expected)
    check_grad(biased_rows, X, b)


def test_the_kinds_and_reads_fuse_asks_are_those_of_whole_walks():
    def f(x, k=2.0):
        g = lambda t: t * k
        y = g(x) * np.sin(x)
        return y

    node, _ = pipeline.lower(f, (0,))
    pullback = next(s for s in node.body if isinstance(s, gast.FunctionDef))
    kinds, reads = fuse._kinds_and_reads(node, pullback)
    expected = collections.Counter(map(type, syntax.walk(node)))
    assert {k: n for k, n in kinds.items() if n} == dict(expected)
    assert reads == syntax.load_names(gast.Module(body=pullback.body, type_ignores=[]))
