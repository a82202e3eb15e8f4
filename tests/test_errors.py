"""Errors: every failure is an AdjointError that says where, what and what to do."""

import numpy as np
import pytest

import adjoint
from adjoint.errors import Problem


def calls_a_ufunc_without_rule(x):
    y = np.unwrap(x)
    z = np.i0(y) + np.i0(2.0)
    return np.sum(z)


def test_missing_rules_are_all_named_with_object_location_and_fix():
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(calls_a_ufunc_without_rule)(np.ones(2))
    error = info.value
    assert [p.line for p in error.problems] == [
        calls_a_ufunc_without_rule.__code__.co_firstlineno + 1,
        calls_a_ufunc_without_rule.__code__.co_firstlineno + 2,
    ]
    message = str(error)
    assert "`np.unwrap` (numpy.unwrap)" in message
    assert "`np.i0` (numpy.i0)" in message
    assert "@adjoint.rrule(np.unwrap)" in message
    assert "np.i0(2.0)" in message  # the source line is shown ...
    assert sum("np.i0" in p.message for p in error.problems) == 1  # not the constant call


def test_missing_rule_caret_points_at_the_call():
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(calls_a_ufunc_without_rule)(np.ones(2))
    first = info.value.problems[0]
    assert first.format().splitlines()[1:3] == ["    y = np.unwrap(x)", "        ^^^^^^^^^^^^"]


def test_every_error_derives_from_adjoint_error():
    assert issubclass(adjoint.TransformError, adjoint.AdjointError)
    with pytest.raises(adjoint.AdjointError):
        adjoint.grad(len)([1.0])


def test_array_method_without_a_rule_is_named_with_a_fix():
    # array methods are differentiated by their rules at run time (`x.sum()` works); one with no
    # rule is refused when it is called, naming the method and the rule to register
    def f(x):
        return np.sum(x.tolist())

    assert adjoint.grad(lambda x: x.sum())(np.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(adjoint.AdjointError) as info:
        adjoint.grad(f)(np.ones(2))
    message = str(info.value)
    assert "`ndarray.tolist`" in message
    assert "register a rule for np.ndarray.tolist" in message


def test_primitive_without_rule_called_directly():
    with pytest.raises(adjoint.AdjointError, match="@adjoint.rrule"):
        adjoint.grad(np.unwrap)(1.0)


def test_problem_format():
    problem = Problem("model.py", 3, 8, 12, "    y = f(x)\n", "no rule for `f`", "register one")
    assert problem.format() == "\n".join(
        ["model.py:3:9: no rule for `f`", "    y = f(x)", "        ^^^^", "    hint: register one"]
    )


def test_a_function_with_a_derivative_but_no_rule_is_refused_not_zeroed():
    def f(x):
        return np.median(x * 2.0)

    with pytest.raises(adjoint.TransformError, match="np.median"):
        adjoint.grad(f)(np.ones(3))


def test_grad_of_a_complex_output_is_refused_with_what_to_do():
    with pytest.raises(adjoint.AdjointError, match="real scalar.*complex"):
        adjoint.grad(lambda z: z * z)(1.0 + 2.0j)


def test_method_call_with_differentiable_argument_points_to_a_rule():
    # the method of a non-array object is differentiated as a function when it is called: a
    # compiled one has no source, and the error says what to do instead (for a random draw, how
    # to write it so that it differentiates)
    def f(mu, rng):
        return rng.normal(mu, 1.0)

    with pytest.raises(adjoint.AdjointError) as info:
        adjoint.grad(f)(0.5, np.random.default_rng(0))
    message = str(info.value)
    assert "`Generator.normal`" in message and "mu + sigma * rng.standard_normal(n)" in message


def test_rule_arity_mismatch_names_the_rule():
    import math

    def f(x):
        return math.log(x, 2.0)

    with pytest.raises(adjoint.TransformError, match="adjoint's rule for `math.log` takes at most 1 positional argument"):
        adjoint.grad(f)(3.0)


def test_a_compiled_callable_without_a_rule_points_to_a_rule():
    import functools

    with pytest.raises(adjoint.AdjointError, match="register a rule for it with @adjoint.rrule"):
        adjoint.grad(lambda x, f: f(np.multiply, [x, x]))(2.0, functools.reduce)
