"""`adjoint.check`: every call of a function and of the functions it reaches, classified
before anything runs (see `adjoint/checking.py`)."""

import math

import numpy as np
import pytest

import adjoint


def _line(fn, offset):
    """The file line `offset` lines below `fn`'s `def`."""
    return fn.__code__.co_firstlineno + offset


def _kinds(report, function=None):
    return [(e.call, e.kind) for e in report.entries if function is None or e.function == function]


# ---- functions checked (module level: their helpers are globals, as in user code) ---------------


def unwraps(x):
    y = np.tanh(x)
    return np.sum(np.unwrap(y))


def scale(v):
    return np.sin(v) * 2.0


def every_kind(x, g):
    h = scale(x) + np.exp(x)
    k = np.argmax(x)
    u = np.unwrap(x)
    return np.sum(h * u) + g(x) + k


def outer(x):
    return np.sum(middle(x))


def middle(x):
    return np.cos(x) + inner(x)


def inner(x):
    return np.log1p(x * x)


def countdown(x, n):
    if n <= 0:
        return np.sum(x)
    return ping(np.sin(x), n - 1)


def ping(x, n):
    return countdown(np.cos(x), n)


def power(x, n):
    return np.ones_like(x) if n == 0 else x * power(x, n - 1)


def uses_try(x):
    try:
        y = np.tanh(x)
    except ValueError:
        y = x
    return np.sum(y)


def methods(x):
    return x.sum() + x.tolist()[0]


def loops(x):
    for i in range(len(x)):
        x = np.tanh(x)
    return np.sum(x)


def constant_unwrap(x, phases):
    return np.sum(x * np.unwrap(phases))


def for_its_effect(x):
    np.unwrap(x)
    return np.sum(np.tanh(x))


# ---- the report's entries -----------------------------------------------------------------------


def test_a_missing_rule_is_an_entry_with_its_location_and_fix():
    report = adjoint.check(unwraps, file=None)

    (missing,) = report.missing
    assert (missing.call, missing.resolved, missing.kind) == ("np.unwrap", "numpy.unwrap", "missing")
    assert (missing.filename, missing.line) == (__file__, _line(unwraps, 2))
    assert missing.col == len("    return np.sum(")
    assert missing.source_line.strip() == "return np.sum(np.unwrap(y))"
    assert missing.active is True
    assert not report.ok
    assert "@adjoint.rrule(np.unwrap)" in str(report)
    assert "@adjoint.non_differentiable" in missing.hint


def test_every_kind_of_callee_is_named():
    report = adjoint.check(every_kind, wrt=0, file=None)

    assert _kinds(report, "every_kind") == [
        ("scale", "user function"), ("np.exp", "rule"), ("np.argmax", "non-differentiable"),
        ("np.unwrap", "missing"), ("np.sum", "rule"), ("g", "dynamic"),
    ]
    by_call = {e.call: e for e in report.entries if e.function == "every_kind"}
    assert by_call["np.exp"].resolved == "numpy.exp"
    assert by_call["scale"].resolved == f"{__name__}.scale"
    assert "argument `g`" in by_call["g"].note
    assert report.summary() == "3 rules, 1 user function, 1 non-differentiable, 1 missing, 1 dynamic"


def test_user_functions_reached_are_checked_in_turn_with_their_calls_listed_under_them():
    report = adjoint.check(outer, file=None)

    assert [name for name, _ in report.functions] == ["outer", "middle", "inner"]
    assert _kinds(report, "middle") == [("np.cos", "rule"), ("inner", "user function")]
    assert _kinds(report, "inner") == [("np.log1p", "rule")]
    (log1p,) = [e for e in report.entries if e.call == "np.log1p"]
    assert log1p.line == _line(inner, 1)
    text = str(report)
    assert text.index("middle  (") < text.index("np.cos") < text.index("inner  (") < text.index("np.log1p")
    assert report.ok


def test_recursion_is_read_once_per_function():
    report = adjoint.check(countdown, wrt=0, file=None)

    assert [name for name, _ in report.functions] == ["countdown", "ping"]
    assert _kinds(report, "ping") == [("countdown", "user function"), ("np.cos", "rule")]
    assert len(report.entries) == 5

    report = adjoint.check(power, wrt=0, file=None)
    assert [name for name, _ in report.functions] == ["power"]
    assert _kinds(report) == [("np.ones_like", "non-differentiable"), ("power", "user function")]


def test_unsupported_syntax_is_reported_not_raised():
    report = adjoint.check(uses_try, file=None)

    (problem,) = report.problems
    assert problem.line == _line(uses_try, 1)
    assert "try" in problem.message
    assert not report.ok
    assert _kinds(report) == [("np.tanh", "rule"), ("np.sum", "rule")]  # the calls are listed still
    assert "problems:" in str(report) and f"test_checking.py:{_line(uses_try, 1)}" in str(report)


def test_check_never_calls_the_function():
    calls = []

    def counted(x):
        calls.append(x)
        return np.sum(np.unwrap(x))

    report = adjoint.check(counted, file=None)
    assert calls == []
    assert [e.call for e in report.missing] == ["np.unwrap"]


def test_methods_of_values_known_at_run_time_are_judged_as_an_arrays():
    report = adjoint.check(methods, file=None)

    by_call = {e.call: e for e in report.entries}
    assert (by_call["x.sum"].kind, by_call["x.sum"].resolved) == ("rule", "numpy.ndarray.sum")
    assert by_call["x.tolist"].kind == "missing"
    assert "@adjoint.rrule(np.ndarray.tolist)" in by_call["x.tolist"].hint


def test_a_loops_range_is_listed_once_per_call_site():
    report = adjoint.check(loops, file=None)

    assert _kinds(report) == [
        ("range", "non-differentiable"), ("len", "non-differentiable"), ("np.tanh", "rule"), ("np.sum", "rule"),
    ]
    assert [e.line for e in report.entries] == [_line(loops, 1)] * 2 + [_line(loops, 2), _line(loops, 3)]


# ---- whether `ok` agrees with the transform ----------------------------------------------------


@pytest.mark.parametrize(
    "fn, wrt, accepted",
    [(unwraps, 0, False), (constant_unwrap, 0, True), (constant_unwrap, 1, False), (outer, 0, True),
     (for_its_effect, 0, False), (countdown, 0, True), (uses_try, 0, False)],
    ids=["unwraps", "constant_unwrap-0", "constant_unwrap-1", "outer", "for_its_effect", "countdown", "uses_try"],
)
def test_ok_agrees_with_the_transform(fn, wrt, accepted):
    report = adjoint.check(fn, wrt=wrt, file=None)
    args = [np.linspace(0.1, 0.9, 3), 2][: fn.__code__.co_argcount]
    if fn is constant_unwrap:
        args[1] = np.linspace(0.1, 0.9, 3)
    try:
        adjoint.grad(fn, wrt=wrt)(*args)
        transformed = True
    except adjoint.AdjointError:
        transformed = False
    assert report.ok is accepted is transformed


def test_what_the_transform_refuses_after_resolving_is_a_problem():
    report = adjoint.check(for_its_effect, file=None)

    (problem,) = report.problems
    assert (problem.line, problem.col) == (_line(for_its_effect, 1), 4)
    assert "for its effect" in problem.message
    assert report.missing[0].active is False  # its rule would not be needed: the call itself is the problem


def test_a_missing_rule_no_gradient_reaches_is_allowed_and_said_so():
    report = adjoint.check(constant_unwrap, wrt=0, file=None)

    (missing,) = report.missing
    assert missing.active is False
    assert report.ok
    assert "no gradient flows through it" in str(report)
    assert "missing rules:" not in str(report)


# ---- what it reads and prints -------------------------------------------------------------------


class Scaled:
    def __call__(self, x):
        return np.tanh(x) * 3.0

    def loss(self, x):
        return np.sum(self(x))


def test_a_callable_object_and_a_bound_method_are_read_through_their_code():
    assert _kinds(adjoint.check(Scaled(), file=None)) == [("np.tanh", "rule")]
    report = adjoint.check(Scaled().loss, file=None)
    assert _kinds(report, "Scaled.loss") == [("np.sum", "rule"), ("self", "dynamic")]


def test_the_table_is_printed_to_stdout_unless_told_otherwise(capsys):
    report = adjoint.check(every_kind, wrt=0)
    printed = capsys.readouterr().out

    assert printed == str(report) + "\n"
    line = f"test_checking.py:{_line(every_kind, 3)}"
    (row,) = [r for r in printed.splitlines() if "numpy.unwrap" in r]
    assert row.split() == [line, "np.unwrap", "numpy.unwrap", "missing"]
    assert printed.splitlines()[0] == "adjoint.check(every_kind): not differentiable as written"
    assert "scale  (test_checking.py:" in printed

    adjoint.check(every_kind, file=None)
    assert capsys.readouterr().out == ""


def test_the_report_is_deterministic():
    assert str(adjoint.check(every_kind, file=None)) == str(adjoint.check(every_kind, file=None))


def clipped(x):
    return np.minimum(x, 1.0)


@adjoint.rrule(clipped)
def clipped_rule(x):
    return clipped(x), lambda g: (g * (x < 1.0),)


def uses_clipped(x):
    return np.sum(clipped(x)) * math.pi


def test_a_rule_of_yours_is_named_and_its_function_not_read():
    report = adjoint.check(uses_clipped, file=None)

    (entry,) = [e for e in report.entries if e.call == "clipped"]
    assert (entry.kind, entry.note) == ("rule", f"your rule {__name__}.clipped_rule")
    assert [name for name, _ in report.functions] == ["uses_clipped"]


def test_a_bad_wrt_is_refused():
    with pytest.raises(adjoint.AdjointError, match="wrt"):
        adjoint.check(unwraps, wrt="x", file=None)


def test_a_wrt_past_the_parameters_is_refused():
    with pytest.raises(adjoint.AdjointError, match="wrt names argument 3"):
        adjoint.check(unwraps, wrt=3, file=None)


def unwrapping_helper(x):
    return np.unwrap(x) * 2.0


def calls_helpers(x, scale_by):
    def shifted(h):
        return np.tanh(h) + 1.0

    return np.sum(unwrapping_helper(shifted(x)) * scale_by(x))


def test_a_missing_rule_in_a_helper_is_listed_under_it():
    report = adjoint.check(calls_helpers, wrt=0, file=None)

    (missing,) = report.missing
    assert (missing.function, missing.line) == ("unwrapping_helper", _line(unwrapping_helper, 1))
    assert _kinds(report, "calls_helpers") == [
        ("np.tanh", "rule"), ("np.sum", "rule"), ("unwrapping_helper", "user function"),
        ("shifted", "dynamic"), ("scale_by", "dynamic"),
    ]
    notes = {e.call: e.note for e in report.entries if e.kind == "dynamic"}
    assert notes == {"shifted": "the local value `shifted`", "scale_by": "the argument `scale_by`"}
    assert not report.ok


def test_a_helper_without_source_is_a_problem_not_an_error():
    namespace = {"np": np}
    exec("def hidden(x):\n    return np.sin(x)\n", namespace)
    hidden = namespace["hidden"]

    def calls_hidden(x):
        return np.sum(hidden(x))

    report = adjoint.check(calls_hidden, file=None)
    (problem,) = report.problems
    assert "cannot read the source of `hidden`" in problem.message
    assert not report.ok


def test_a_lambda_is_read_too():
    report = adjoint.check(lambda x: np.sum(np.cbrt(x)), file=None)
    assert _kinds(report) == [("np.sum", "rule"), ("np.cbrt", "rule")]


scaled = Scaled()


def uses_global_model(x):
    return scaled.loss(x) + scaled(x)


def test_a_global_models_methods_are_read_through_their_code():
    report = adjoint.check(uses_global_model, file=None)

    assert [e.resolved for e in report.entries if e.function == "uses_global_model"] == [
        f"{__name__}.Scaled.loss", f"{__name__}.Scaled.__call__",
    ]
    assert [name for name, _ in report.functions] == ["uses_global_model", "Scaled.loss", "Scaled.__call__"]


def test_a_gradient_made_by_adjoint_is_checked_as_the_function_it_differentiates():
    report = adjoint.check(adjoint.grad(unwraps), file=None)
    assert [e.call for e in report.missing] == ["np.unwrap"]


def test_a_pass_that_fails_is_a_problem_naming_it(monkeypatch):
    from adjoint.compiler import pipeline

    def broken(node, ctx):
        raise TypeError("unhashable type: 'Layer'")

    monkeypatch.setattr(pipeline, "PASSES", tuple(
        (name, broken if name == "shifts" else transform) for name, transform in pipeline.PASSES
    ))
    report = adjoint.check(outer, file=None)

    assert [p.message for p in report.problems if p.line == outer.__code__.co_firstlineno] == [
        "adjoint failed reading this function, in its `shifts` pass (TypeError: unhashable type: 'Layer')"
    ]
    assert _kinds(report, "outer") == [("np.sum", "rule"), ("middle", "user function")]  # resolved before it
    assert not report.ok
