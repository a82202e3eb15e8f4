"""compiler.fence: unsupported syntax is refused, located, all problems at once; the constructs
it used to refuse (loops, branches, early returns, `*args`, item assignment, nested functions)
now pass it and are differentiated."""

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

X = np.array([0.5, -1.5, 2.0])

_HINT = "rewrite it without this construct, or move it into a function with an @adjoint.rrule"

TOTAL = 0.0


class Box:
    value = 0.0


BOX = Box()


def many_problems(x):
    y = x * 2.0
    del y
    s = {v for v in x}
    w = (z := x * 3.0) + z
    BOX.value = w
    return np.sum(w) + len(s)


def refused(f):
    """The TransformError `adjoint.grad(f)` raises before running anything."""
    with pytest.raises(adjoint.TransformError) as info:
        adjoint.grad(f)(X.copy())
    return info.value


def test_all_problems_are_reported_together_with_locations():
    error = refused(many_problems)
    start = many_problems.__code__.co_firstlineno
    assert sorted(p.line for p in error.problems) == [start + 2, start + 3, start + 4, start + 5]
    message = str(error)
    assert "4 problems" in message
    assert "`del` is not supported" in message
    assert "set comprehensions are not supported" in message
    assert "assignment expressions (`:=`) are not supported" in message
    assert "assigning to an attribute (`BOX.value`) is not supported yet" in message
    assert __file__ in message


def test_problems_are_reported_in_the_order_of_the_statements():
    # (the statements' order, not that of one walk of the whole tree, where the `BOX.value`
    # target would come before the comprehension and the `:=` nested deeper in earlier lines)
    start = many_problems.__code__.co_firstlineno
    assert [p.line for p in refused(many_problems).problems] == [start + 2, start + 3, start + 4, start + 5]


def with_a_refused_construct_in_a_default(x, sizes={size for size in (1, 2)}):  # noqa: B006
    return np.sum(x * x) * len(sizes)


def test_a_default_value_is_not_fenced():
    # only the body is differentiated: a default is evaluated when the function is defined
    check_grad(with_a_refused_construct_in_a_default, X)


def test_problem_shows_source_line_with_caret_under_the_construct():
    error = refused(many_problems)
    problem = next(p for p in error.problems if "set comprehensions" in p.message)
    text = problem.format()
    assert "s = {v for v in x}" in text
    caret_line = text.splitlines()[2]
    assert caret_line.strip() == "^" * len("{v for v in x}")
    assert problem.col == 8
    assert problem.hint == _HINT


# ---- each construct that is still refused, with its message ------------------------------------


def uses_try_except(x):
    try:
        y = np.log(x)
    except FloatingPointError:
        y = x
    return np.sum(y)


def uses_yield(x):
    yield np.sum(x)


def uses_yield_from(x):
    yield from [np.sum(x)]


def writes_global(x):
    global TOTAL
    TOTAL = np.sum(x)
    return np.sum(x * 2.0)


def writes_nonlocal(x):
    acc = np.sum(x)

    def add(v):
        nonlocal acc
        acc = acc + v

    add(1.0)
    return acc


async def is_async(x):
    return np.sum(x)


def defines_async_function(x):
    async def helper(v):
        return v

    return np.sum(x)


def defines_class(x):
    class Scale:
        factor = 2.0

    return np.sum(x * Scale.factor)


def deletes(x):
    y = x * 2.0
    del y
    return np.sum(x)


def imports(x):
    import math

    return np.sum(x * math.pi)


def imports_from(x):
    from math import pi

    return np.sum(x * pi)


def walrus(x):
    return np.sum((y := x * 2.0) * y)


def set_comprehension(x):
    s = {v for v in x}
    return np.sum(x) + len(s)


def sets_attribute(x):
    BOX.value = np.sum(x)
    return np.sum(x * 2.0)


def updates_attribute(x):
    BOX.value += np.sum(x)
    return np.sum(x * 2.0)


def loop_target_is_attribute(x):
    for BOX.value in x:
        pass
    return np.sum(x)


def return_inside_with(x):
    with np.errstate(all="ignore"):
        return np.sum(np.log(x))


def break_inside_with(x):
    s = 0.0
    for v in x:
        with np.errstate(all="ignore"):
            s = s + v
            break
    return s


def continue_inside_with(x):
    s = 0.0
    for v in x:
        with np.errstate(all="ignore"):
            s = s + v
            continue
    return s


REFUSED = [
    (uses_try_except, 1, "`try` with `except` or `else` is not supported"),
    (uses_yield, 1, "generators (`yield`) are not supported"),
    (uses_yield_from, 1, "generators (`yield from`) are not supported"),
    (writes_global, 1, "`global` is not supported in differentiated code"),
    (writes_nonlocal, 4, "`nonlocal` is not supported in differentiated code"),
    (is_async, 0, "async functions are not supported"),
    (defines_async_function, 1, "async functions are not supported"),
    (defines_class, 1, "class definitions inside a differentiated function are not supported"),
    (deletes, 2, "`del` is not supported"),
    (imports, 1, "imports inside a differentiated function are not supported"),
    (imports_from, 1, "imports inside a differentiated function are not supported"),
    (walrus, 1, "assignment expressions (`:=`) are not supported"),
    (set_comprehension, 1, "set comprehensions are not supported"),
    (sets_attribute, 1, "assigning to an attribute (`BOX.value`) is not supported yet"),
    (updates_attribute, 1, "assigning to an attribute (`BOX.value`) is not supported yet"),
    (loop_target_is_attribute, 1, "assigning to an attribute (`BOX.value`) is not supported yet"),
    (return_inside_with, 2, "`return` inside `with` is not supported"),
    (break_inside_with, 5, "`break` inside `with` is not supported"),
    (continue_inside_with, 5, "`continue` inside `with` is not supported"),
]


@pytest.mark.parametrize("f, offset, message", REFUSED, ids=[f.__name__ for f, _, _ in REFUSED])
def test_unsupported_construct_is_refused_with_its_message_and_line(f, offset, message):
    error = refused(f)
    assert [p.message for p in error.problems] == [message]
    assert error.problems[0].line == f.__code__.co_firstlineno + offset


def test_jump_inside_with_hint_says_where_to_move_it():
    (problem,) = refused(break_inside_with).problems
    assert problem.hint == "move the `break` after the `with` block"


def test_attribute_assignment_hint_suggests_a_new_object():
    (problem,) = refused(sets_attribute).problems
    assert problem.hint == "build a new object instead of updating one in place"


def test_nothing_runs_before_a_refusal():
    before = (TOTAL, BOX.value)
    refused(writes_global)
    refused(sets_attribute)
    assert (TOTAL, BOX.value) == before


# ---- constructs the fence lets through, differentiated -----------------------------------------


def early_return(x):
    if np.sum(x) > 0:
        return np.sum(x ** 2)
    return -np.sum(x)


def starred(x, *rest):
    total = np.sum(x * x)
    for r in rest:
        total = total + np.sum(r * x)
    return total


def updates(x):
    y = x * 1.0
    x[0] = np.sin(x[1])
    x[1:] = x[1:] * 3.0
    return np.sum(y * x)


def nested(x):
    def inner(y):
        return np.sin(y) * x

    return np.sum(inner(x))


def loops_and_branches(x):
    y = x * 2.0
    for i in range(3):
        y = y + 1.0
    while np.sum(y) > 0:
        y = y - 1.0
    z = [v * 2.0 for v in x]
    w = y if np.sum(y) > 0 else -y
    return np.sum(w * z[0])


def try_finally(x):
    y = x * 2.0
    try:
        y = np.sin(y)
    finally:
        y = y + 1.0
    return np.sum(y)


def jumps_of_a_loop_or_function_nested_in_with(x):
    with np.errstate(all="ignore"):
        for v in x:
            x = x * v
            break

        def g(v):
            return v * 2.0

        y = g(x)
    return np.sum(y)


@pytest.mark.parametrize(
    "f, args",
    [
        (early_return, (X,)),
        (early_return, (-X,)),
        (starred, (X, X + 1.0, X * 2.0)),
        (updates, (X,)),
        (nested, (X,)),
        (loops_and_branches, (X,)),
        (try_finally, (X,)),
        (jumps_of_a_loop_or_function_nested_in_with, (X,)),
    ],
    ids=["early_return+", "early_return-", "starred", "updates", "nested", "loops_and_branches",
         "try_finally", "jumps_nested_in_with"],
)
def test_formerly_refused_construct_is_differentiated(f, args):
    check_grad(f, *args)


def test_early_return_gradient_takes_the_branch_that_ran():
    np.testing.assert_allclose(adjoint.grad(early_return)(X), 2 * X)
    np.testing.assert_allclose(adjoint.grad(early_return)(-X), -np.ones(3))


def test_item_assignment_does_not_update_the_callers_array():
    x = X.copy()
    adjoint.grad(updates)(x)
    np.testing.assert_array_equal(x, X)
