"""Language corpus: constructs adjoint refuses, and two it must not refuse.

`try/except`, `yield`, writes to globals and nonlocals, `async def` and class definitions
inside a differentiated function raise `adjoint.TransformError` whose first problem names this
file, the line and column of the construct, and that line of source, with a message naming the
construct. `with` over a context manager that carries no gradient (`np.errstate`) and
`try/finally` without `except` are differentiated.
"""

import copy
import inspect
import pathlib
import re

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

TOTAL = 0.0


def uses_try_except(x):
    y = x * 2.0
    try:
        z = np.log(y)
    except FloatingPointError:
        raise ValueError("bad input")
    return np.sum(z)


def uses_yield(x):
    y = np.sin(x)
    yield y * 2.0


def writes_global(x):
    global TOTAL
    TOTAL = np.sum(x)
    return np.sum(x ** 2)


def writes_nonlocal(x):
    acc = 0.0

    def add(v):
        nonlocal acc
        acc = acc + np.sum(v)
    add(x)
    return acc * 2.0


async def is_async(x):
    return np.sum(x ** 2)


def defines_async_function(x):
    async def helper(v):
        return v * 2.0
    return np.sum(x ** 2)


def defines_class(x):
    class Box:
        scale = 2.0
    return np.sum(x * Box.scale)


# Each case: the function; the texts that may start the reported construct (a `global` or
# `nonlocal` write may be reported at its declaration or at the assignment, `try/except` at the
# `try` or at the `except`: all of them locate the construct); a pattern the message must match.
ERROR_CASES = [
    pytest.param(uses_try_except, ("try:", "except FloatingPointError"), r"\btry\b|\bexcept", id="try-except"),
    pytest.param(uses_yield, ("yield y",), r"yield|generator", id="yield"),
    pytest.param(writes_global, ("global TOTAL", "TOTAL = np.sum"), r"global", id="global-write"),
    pytest.param(writes_nonlocal, ("nonlocal acc", "acc = acc + "), r"nonlocal", id="nonlocal-write"),
    pytest.param(is_async, ("async def is_async",), r"async", id="async-def"),
    pytest.param(defines_async_function, ("async def helper",), r"async", id="nested-async-def"),
    pytest.param(defines_class, ("class Box",), r"class", id="class-definition"),
]


def locate(f, marker):
    """(line number, column, text) of the first source line of `f` holding `marker`."""
    lines, start = inspect.getsourcelines(f)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset, text.index(marker), text
    raise LookupError(f"{marker!r} not in the source of {f.__name__}")


def transform_error(f):
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(f)(np.array([0.5, 1.5]))
    return info.value


@pytest.mark.parametrize("f, markers, pattern", ERROR_CASES)
def test_unsupported_construct_is_located(f, markers, pattern):
    error = transform_error(f)
    assert error.problems, "a TransformError must list its problems"
    problem = error.problems[0]
    allowed = {locate(f, marker)[:2]: locate(f, marker)[2] for marker in markers}
    assert (problem.line, problem.col) in allowed, (
        f"problem at {problem.line}:{problem.col}, expected one of {sorted(allowed)}: {problem.message}"
    )
    text = allowed[problem.line, problem.col]
    assert pathlib.Path(problem.filename).resolve() == pathlib.Path(__file__).resolve()
    assert problem.source_line.strip() == text.strip()
    assert re.search(pattern, problem.message, re.IGNORECASE), problem.message
    report = str(error)
    assert f"{pathlib.Path(__file__).name}:{problem.line}:{problem.col + 1}" in report
    assert text.strip() in report
    assert "^" in problem.format()


def test_every_problem_of_a_function_is_in_this_file():
    error = transform_error(uses_try_except)
    first = inspect.getsourcelines(uses_try_except)[1]
    last = first + len(inspect.getsourcelines(uses_try_except)[0]) - 1
    for problem in error.problems:
        assert first <= problem.line <= last
        assert problem.message


def test_nothing_ran_before_the_error():
    before = TOTAL
    transform_error(writes_global)
    assert TOTAL == before


# ---- constructs that must work ----

def with_errstate(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(x) * x
    return np.sum(y)


def with_errstate_in_loop(x):
    s = 0.0
    for k in range(1, 4):
        with np.errstate(over="ignore"):
            s = s + np.sum(np.exp(k * x))
    return s


def with_errstate_around_branch(x):
    with np.errstate(all="ignore"):
        if np.sum(x) > 0:
            y = np.sqrt(x)
        else:
            y = x * x
    return np.sum(y * x)


def try_finally(x):
    y = x * 2.0
    try:
        y = np.sin(y) * x
    finally:
        y = y + 1.0
    return np.sum(y ** 2)


def try_finally_with_return(x):
    try:
        return np.sum(np.tanh(x) * x)
    finally:
        pass


def try_finally_in_loop(x):
    s = 0.0
    for v in x:
        try:
            s = s + v ** 2
        finally:
            s = s * 0.9
    return s


def case(f, *args):
    return pytest.param(f, args, id=f.__name__)


X = np.array([0.5, 1.5, 0.8])

CASES = [
    case(with_errstate, X),
    case(with_errstate_in_loop, X),
    case(with_errstate_around_branch, X),
    case(try_finally, X),
    case(try_finally_with_return, X),
    case(try_finally_in_loop, X),
]


@pytest.mark.parametrize("f, args", CASES)
def test_supported_construct_gradient(f, args):
    check_grad(f, *copy.deepcopy(args))


def test_errstate_is_restored_after_grad():
    before = np.geterr()
    adjoint.grad(with_errstate)(X.copy())
    assert np.geterr() == before
