"""compiler.loader: generated code in linecache, bound to live globals and closure cells."""

import inspect
import linecache

import numpy as np
import pytest

import adjoint
from adjoint.compiler import pipeline

SCALE = 2.0


def uses_global(x):
    return x * SCALE


def test_generated_source_is_in_linecache_and_inspectable():
    forward = pipeline.forward_function(uses_global, (0,))
    filename = forward.__code__.co_filename
    assert filename.startswith("<adjoint ")
    assert "def uses_global_forward" in "".join(linecache.getlines(filename))
    assert inspect.getsource(forward).lstrip().startswith("def uses_global_forward")


def test_globals_are_live_not_snapshotted(monkeypatch):
    assert adjoint.grad(uses_global)(1.0) == pytest.approx(2.0)
    monkeypatch.setattr(__import__(__name__), "SCALE", 5.0)
    assert adjoint.grad(uses_global)(1.0) == pytest.approx(5.0)


def test_closure_cells_are_live():
    factor = 2.0

    def f(x):
        return x * factor

    assert adjoint.grad(f)(1.0) == pytest.approx(2.0)
    factor = 7.0
    assert adjoint.grad(f)(1.0) == pytest.approx(7.0)


def test_closures_sharing_code_keep_their_own_cells():
    fs = []
    for k in (1.0, 2.0, 3.0):
        def f(x, k=k):
            return x * k

        fs.append(f)
    assert [adjoint.grad(f)(1.0) for f in fs] == [1.0, 2.0, 3.0]


def test_closure_callee_is_resolved_per_instance():
    def make(activation):
        def f(x):
            return np.sum(activation(x))

        return f

    x = np.array([0.3, -0.4])
    np.testing.assert_allclose(adjoint.grad(make(np.sin))(x), np.cos(x))
    np.testing.assert_allclose(adjoint.grad(make(np.tanh))(x), 1 - np.tanh(x) ** 2)


def test_traceback_shows_generated_line():
    def f(x, y):
        return x @ y

    with pytest.raises(ValueError) as info:
        adjoint.grad(lambda x: np.sum(f(x, np.ones(5))))(np.ones(3))
    frames = [entry.path for entry in info.traceback]
    assert any(str(p).startswith("<adjoint ") for p in frames)


activation = np.tanh


def uses_global_activation(x):
    return np.sum(activation(x))


def test_rebinding_a_resolved_global_recompiles_instead_of_mixing_rules(monkeypatch):
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(adjoint.grad(uses_global_activation)(x), 1 - np.tanh(x) ** 2)
    monkeypatch.setattr(__import__(__name__), "activation", np.sin)
    np.testing.assert_allclose(adjoint.grad(uses_global_activation)(x), np.cos(x))


def test_monkeypatched_numpy_function_is_seen(monkeypatch):
    def f(x):
        return np.sum(np.exp(x))

    x = np.array([0.1, 0.2])
    np.testing.assert_allclose(adjoint.grad(f)(x), np.exp(x))
    monkeypatch.setattr(np, "exp", np.sin)
    np.testing.assert_allclose(adjoint.grad(f)(x), np.cos(x))



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 12. Re-registering a rule for a primitive does not invalidate functions already transformed.
def _softplus(x):
    return np.log1p(np.exp(x))


def _uses_softplus(x):
    return np.sum(_softplus(x))


def test_reregistered_rule_is_used():
    @adjoint.rrule(_softplus)
    def wrong_rule(x):
        def softplus_pullback(g):
            return (g * 100.0,)

        return _softplus(x), softplus_pullback

    adjoint.grad(_uses_softplus)(np.zeros(2))

    @adjoint.rrule(_softplus)
    def right_rule(x):
        def softplus_pullback(g):
            return (g / (1 + np.exp(-x)),)

        return _softplus(x), softplus_pullback

    # expected: [0.5, 0.5] from the new rule; actual: [100, 100] from the replaced one
    np.testing.assert_allclose(adjoint.grad(_uses_softplus)(np.zeros(2)), [0.5, 0.5])


@pytest.mark.parametrize("text", [
    "def f(x):\n    return x\n",
    "def f(x):\n    '''two\n\n    paragraphs'''\n    return x\n",  # a blank line inside a string stays blank
    "a = 1\n  \nb = 2",  # whitespace alone, and no final line break
    "",
])
def test_generated_text_is_indented_as_textwrap_indents_it(text):
    import textwrap

    from adjoint.compiler.loader import _indented

    assert _indented(text) == textwrap.indent(text, " " * 8)


# ---- source maps: a generated line back to the user's ----------------------------------------

from adjoint.compiler import loader  # noqa: E402


def _loop_then_sum(x, n):
    for i in range(n):  # offset 1
        x = np.sin(x) * x  # offset 2
    return np.sum(x)  # offset 3


def _generated_line(generated, text: str) -> int:
    lines = linecache.getlines(generated.__code__.co_filename)
    found = [i for i, line in enumerate(lines, 1) if line.strip() == text]
    assert len(found) == 1, text
    return found[0]


def test_a_statement_after_a_loop_is_the_loops_not_its_bodys():
    forward = pipeline.forward_function(_loop_then_sum, (0,))
    filename, first = forward.__code__.co_filename, _loop_then_sum.__code__.co_firstlineno
    after_loop = _generated_line(forward, "x_bar = x_1_bar")  # the reversed loop's result, after it
    assert loader.user_location(filename, after_loop) == (__file__, first + 1)
    in_body = _generated_line(forward, "x_sin_bar = x_2_bar * x_1")
    assert loader.user_location(filename, in_body) == (__file__, first + 2)


def test_code_generated_from_generated_code_maps_to_the_users_file():
    jvp = pipeline.gradient_jvp_function(_loop_then_sum, (0,), (), (0,))  # a JVP of the fused gradient
    filename, first = jvp.__code__.co_filename, _loop_then_sum.__code__.co_firstlineno
    assert loader.made_from(filename).startswith("<adjoint ")
    lines = linecache.getlines(filename)
    line = next(i for i, text in enumerate(lines, 1) if "= np.sin(" in text and "#" not in text)  # the forward pass
    assert loader.user_location(filename, line) == (__file__, first + 2)
    assert loader.user_location("not generated.py", 1) is None
