"""`adjoint.explain`: active variables, and why the other adjoints are skipped, in the user's names.

The expectations are read off each function by hand: what depends on `x`, what reaches the
returned value.
"""

import numpy as np
import pytest

import adjoint
from adjoint.errors import AdjointError, TransformError
from adjoint.explaining import INDEPENDENT, NEITHER, NOT_DIFFERENTIATED, THROUGH, UNUSED, Variable


def inactive_branch(x, n):
    y = x * 2
    if n > 3:
        z = np.ones(3) * n
    else:
        z = y
    w = x * 5
    return np.sum(z)


START = inactive_branch.__code__.co_firstlineno  # the `def` line; the body follows it


def _by_name(variables):
    return {(v.name, v.reason): v.lines for v in variables}


def test_an_inactive_branch_and_a_dead_value():
    report = adjoint.explain(inactive_branch, wrt=0)
    assert report.wrt == ("x",)
    assert [(v.name, v.lines) for v in report.active] == [("x", (START,)), ("y", (START + 1,)), ("z", (START + 5,))]
    assert _by_name(report.inactive) == {
        ("n", NOT_DIFFERENTIATED): (START,),
        ("z", INDEPENDENT): (START + 3,),  # `np.ones(3) * n`: the branch carries no gradient of x
        ("w", UNUSED): (START + 6,),
    }


def test_differentiating_the_other_parameter_swaps_the_branches():
    report = adjoint.explain(inactive_branch, wrt=(1,))
    assert [(v.name, v.lines) for v in report.active] == [("n", (START,)), ("z", (START + 3,))]
    assert _by_name(report.inactive) == {
        ("x", NOT_DIFFERENTIATED): (START,),
        ("y", INDEPENDENT): (START + 1,),
        ("z", INDEPENDENT): (START + 5,),
        ("w", NEITHER): (START + 6,),
    }


def test_by_default_every_parameter_is_differentiated():
    report = adjoint.explain(inactive_branch)
    assert report.wrt == ("x", "n")
    assert {v.name for v in report.active} == {"x", "n", "y", "z"}
    assert [v.name for v in report.inactive] == ["w"]


def comparisons_and_counts(x):
    m = np.max(x)
    k = len(x)
    s = x * 0.0
    for i in range(k):
        s = s + x
    if m > 0:
        s = s * 2.0
    return np.sum(s)


def test_values_used_only_in_comparisons_or_as_counts():
    first = comparisons_and_counts.__code__.co_firstlineno
    report = adjoint.explain(comparisons_and_counts)
    assert [(v.name, v.lines) for v in report.active] == [("x", (first,)), ("s", (first + 3, first + 5, first + 7))]
    assert _by_name(report.inactive) == {
        ("m", UNUSED): (first + 1,),  # varied, but only compared
        ("k", THROUGH.format("`len`")): (first + 2,),  # an int: `len` of x
        ("i", NEITHER): (first + 4,),  # a `range` counter
    }


def through_argmax(x):
    k = np.argmax(x)
    above = x > 0.5
    return x[k] * 2.0 + np.sum(above)


def test_a_value_read_from_the_inputs_without_a_derivative_says_through_what():
    first = through_argmax.__code__.co_firstlineno
    report = adjoint.explain(through_argmax)
    assert _by_name(report.inactive) == {
        ("k", THROUGH.format("`np.argmax`")): (first + 1,),
        ("above", THROUGH.format("a comparison")): (first + 2,),
    }


def unused_parameter(x, y):
    return x * 3.0


def test_a_differentiated_parameter_that_does_not_reach_the_output():
    report = adjoint.explain(unused_parameter)
    assert [v.name for v in report.active] == ["x"]
    assert report.inactive == (Variable("y", (unused_parameter.__code__.co_firstlineno,), UNUSED),)


def test_the_table_names_file_and_lines():
    text = str(adjoint.explain(inactive_branch, wrt=0))
    assert text.splitlines()[0] == (
        f"adjoint.explain: `inactive_branch` (test_explaining.py:{START}), differentiated with respect to x"
    )
    assert f"  w  test_explaining.py:{START + 6}  {UNUSED}" in text
    assert repr(adjoint.explain(inactive_branch, wrt=0)) == text  # (what a REPL shows)
    assert f"  w  tests/x.py:{START + 6}  {UNUSED}" in adjoint.explain(inactive_branch, wrt=0).format("tests/x.py")


def test_wrt_is_checked_as_source_checks_it():
    with pytest.raises(AdjointError, match="wrt names argument 2, but `inactive_branch` has 2 parameters"):
        adjoint.explain(inactive_branch, wrt=(0, 2))
    with pytest.raises(AdjointError, match="wrt must be a non-negative int"):
        adjoint.explain(inactive_branch, wrt="x")


def generator(x):
    yield x


def test_a_function_adjoint_cannot_transform_is_refused_with_its_location():
    with pytest.raises(TransformError, match=r"test_explaining\.py:\d+:\d+: generators"):
        adjoint.explain(generator)


def constant():
    return 1.0


def test_a_function_without_variables():
    report = adjoint.explain(constant)
    assert (report.wrt, report.active, report.inactive) == ((), (), ())
    assert str(report).splitlines()[1:] == ["", "active (adjoint computed)", "  (none)", "", "skipped", "  (none)"]
    assert str(report).splitlines()[0].endswith("differentiated with respect to nothing")
