"""compiler.fence: unsupported syntax is refused, located, all problems at once."""

import numpy as np
import pytest

import adjoint


def many_problems(x):
    y = x * 2.0
    for i in range(3):
        y = y + 1.0
    while y > 0:
        y = y - 1.0
    z = [v for v in x]
    w = y if y > 0 else -y
    return y


def early_return(x):
    return x
    return -x


def starred(x, *rest):
    return x


def updates(x):
    x[0] = 1.0
    return x


def nested(x):
    def inner(y):
        return y

    return inner(x)


def test_all_problems_are_reported_together_with_locations():
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(many_problems)(np.ones(2))
    error = info.value
    lines = sorted(p.line for p in error.problems)
    start = many_problems.__code__.co_firstlineno
    assert lines == [start + 2, start + 4, start + 6, start + 7]
    message = str(error)
    assert "4 problems" in message
    assert "`for` loops are not supported yet" in message
    assert "while" in message and "comprehensions" in message and "conditional" in message
    assert __file__ in message


def test_problem_shows_source_line_with_caret_under_the_construct():
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(many_problems)(np.ones(2))
    problem = next(p for p in info.value.problems if "conditional" in p.message)
    text = problem.format()
    assert "w = y if y > 0 else -y" in text
    caret_line = text.splitlines()[2]
    assert caret_line.strip() == "^" * len("y if y > 0 else -y")
    assert problem.col == 8


def test_early_return_is_refused():
    with pytest.raises(adjoint.TransformError, match="return"):
        adjoint.grad(early_return)(1.0)


def test_star_parameter_is_refused():
    with pytest.raises(adjoint.TransformError, match=r"\*rest"):
        adjoint.grad(starred)(1.0)


def test_item_assignment_is_refused():
    with pytest.raises(adjoint.TransformError, match="assigning to an item"):
        adjoint.grad(updates)(np.ones(2))


def test_nested_function_is_refused():
    with pytest.raises(adjoint.TransformError, match="nested functions"):
        adjoint.grad(nested)(1.0)
