"""tracebacks: an exception raised in generated code carries a note naming the user's line.

Every expected line is found by its marker comment in this file's own text (`line_of`), never
from the code under test.
"""

import importlib.util
import math
import pathlib
import traceback

import numpy as np
import pytest

import adjoint
from adjoint.errors import TransformError
from adjoint.tracebacks import annotate

HERE = pathlib.Path(__file__)
SOURCE = HERE.read_text().splitlines()


def line_of(marker: str) -> int:
    """The line of this file ending in the comment `# <marker>`."""
    found = [i for i, text in enumerate(SOURCE, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(found) == 1, marker
    return found[0]


def notes_of(exc) -> list:
    return [note for note in getattr(exc, "__notes__", ()) if note.startswith("adjoint: ")]


def the_note(exc) -> str:
    notes = notes_of(exc)
    assert len(notes) == 1, notes
    return notes[0]


def assert_names(note: str, marker: str, phase: str, function: str):
    first = note.splitlines()[0]
    assert first == f"adjoint: in {phase} of `{function}`, for {HERE}:{line_of(marker)}", note
    assert note.splitlines()[1].strip() == SOURCE[line_of(marker) - 1].strip()  # the user's source text
    assert "\n  generated: <adjoint " in note


# ---- the functions that raise -----------------------------------------------------------------

def shapes(x, W):
    h = np.tanh(x @ W)  # MATMUL
    return np.sum(h ** 2)


def square_root(x):
    y = x * 3.0
    return math.sqrt(y) * 2.0  # SQRT


def asserting(x):
    assert x.shape[0] == 3, "x needs 3 entries"  # ASSERT
    return np.sum(x ** 2)


def failing_hook(g):
    raise FloatingPointError("the hook refuses")


def hooked(x):
    y = np.sin(x)
    z = adjoint.hook(y, failing_hook)  # HOOK
    return np.sum(z * x)


def looped(x, n):
    for i in range(n):
        x = np.sqrt(x) * 2.0  # LOOP BODY
    return np.sum(x)


def accumulating(x):
    y = np.sqrt(x)  # ACCUMULATED
    z = np.sin(x)
    return np.sum(y * z)


def helper(h):
    return np.sqrt(h) * 2.0  # HELPER


def calls_helper(x):
    s = helper(x * 2.0)  # CALLS HELPER
    return np.sum(s)


def with_nested(x):
    def inner(y):
        return np.sqrt(y * x)  # NESTED

    return np.sum(inner(x))  # NESTED CALL


# ---- the pullback (the test), the forward pass, the paths ------------------------------

def test_error_in_the_pullback_names_the_users_line():
    value, back = adjoint.pullback(square_root, 0.0)  # forward: sqrt(0) is fine; its derivative is not
    assert value == 0.0
    with pytest.raises(ZeroDivisionError) as info:
        back(1.0)
    assert_names(the_note(info.value), "SQRT", "the pullback", "square_root")


def test_error_in_the_forward_pass_names_the_users_line():
    with pytest.raises(ValueError) as info:  # (2, 3) @ (4, 4)
        adjoint.value_and_grad(shapes)(np.ones((2, 3)), np.ones((4, 4)))
    assert_names(the_note(info.value), "MATMUL", "the forward pass", "shapes")


def test_error_in_the_fused_gradient():
    with pytest.raises(ValueError) as info:
        adjoint.grad(shapes)(np.ones((2, 3)), np.ones((4, 4)))
    assert_names(the_note(info.value), "MATMUL", "the forward pass (fused gradient)", "shapes")


def test_error_on_the_general_path():
    # a dict argument is not a plain call: `api._pullback` runs it
    def through_dict(p):
        return shapes(p["x"], p["W"])

    with pytest.raises(ValueError) as info:
        adjoint.grad(through_dict)({"x": np.ones((2, 3)), "W": np.ones((4, 4))})
    note = the_note(info.value)
    assert_names(note, "MATMUL", "the forward pass", "shapes")
    assert "called from the forward pass of `test_error_on_the_general_path.<locals>.through_dict`" in note


def test_a_failing_user_assert():
    with pytest.raises(AssertionError, match="3 entries") as info:
        adjoint.grad(asserting)(np.ones(2))
    assert_names(the_note(info.value), "ASSERT", "the forward pass (fused gradient)", "asserting")


def test_a_domain_error_in_a_scalar_math_pullback():
    with pytest.raises(ZeroDivisionError) as info:
        adjoint.grad(square_root)(0.0)
    assert_names(the_note(info.value), "SQRT", "the pullback (fused gradient)", "square_root")
    with pytest.raises(ZeroDivisionError) as info:
        adjoint.value_and_grad(square_root)(0.0)  # forward function and pullback apart
    assert_names(the_note(info.value), "SQRT", "the pullback", "square_root")


def test_an_error_raised_by_a_function_the_pullback_calls():
    with pytest.raises(FloatingPointError) as info:
        adjoint.value_and_grad(hooked)(np.ones(2))
    assert_names(the_note(info.value), "HOOK", "the pullback", "hooked")


def test_a_loops_pullback():
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            adjoint.value_and_grad(looped)(np.zeros(2), 2)
    assert_names(the_note(info.value), "LOOP BODY", "the pullback", "looped")


def test_an_accumulated_adjoint():
    # x_bar += ... for `np.sqrt(x)` is written after the statements of `np.sin(x)`'s line
    with np.errstate(divide="raise", invalid="raise"):
        with pytest.raises(FloatingPointError) as info:
            adjoint.value_and_grad(accumulating)(np.zeros(2))
        assert_names(the_note(info.value), "ACCUMULATED", "the pullback", "accumulating")
        with pytest.raises(FloatingPointError) as info:
            adjoint.grad(accumulating)(np.zeros(2))
        assert_names(the_note(info.value), "ACCUMULATED", "the pullback (fused gradient)", "accumulating")


def test_a_helpers_pullback_called_from_the_callers():
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            adjoint.value_and_grad(calls_helper)(np.zeros(2))
    note = the_note(info.value)
    assert_names(note, "HELPER", "the pullback", "helper")
    caller = f"  called from the pullback of `calls_helper`, for {HERE.name}:{line_of('CALLS HELPER')}: "
    assert caller in note


def test_a_nested_function():
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            adjoint.value_and_grad(with_nested)(np.zeros(2))
    note = the_note(info.value)
    assert_names(note, "NESTED", "the pullback", "with_nested.<locals>.inner")
    assert f"called from the pullback of `with_nested`, for {HERE.name}:{line_of('NESTED CALL')}" in note


def picky(x):
    return x * 2.0


@adjoint.rrule(picky)
def picky_rrule(x):
    def picky_pullback(g):
        raise OverflowError("the rule refuses this cotangent")

    return picky(x), picky_pullback


def uses_a_rule(p):
    y = picky(p["x"]) + 1.0  # RULE
    return np.sum(y)


def test_an_error_raised_by_a_rule_on_the_general_path():
    value, back = adjoint.pullback(uses_a_rule, {"x": np.ones(2)})  # a dict: `api._pullback`
    assert value == 6.0
    with pytest.raises(OverflowError) as info:
        back(1.0)
    assert_names(the_note(info.value), "RULE", "the pullback", "uses_a_rule")


# ---- forward mode -------------------------------------------------------------------------------

def test_jvp():
    with pytest.raises(ZeroDivisionError) as info:
        adjoint.jvp(square_root, (0.0,), (1.0,))
    assert_names(the_note(info.value), "SQRT", "the JVP (forward mode)", "square_root")


def test_hvp_over_the_fused_gradient():
    with pytest.raises(ZeroDivisionError) as info:
        adjoint.hvp(square_root, 0.0, 1.0)
    note = the_note(info.value)
    assert_names(note, "SQRT", "the JVP (forward mode) of the forward pass (fused gradient)", "square_root")
    assert "generated: <adjoint square_root_gradient #" in note


# ---- once, shown, and only for generated code ---------------------------------------------------

def test_the_note_is_added_once():
    jacobian = adjoint.jacobian(lambda x: np.sqrt(x * 0.0) * np.ones(2))  # jacobian -> pullback -> back
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError) as info:
            jacobian(np.ones(2))
    exc = info.value
    the_note(exc)
    annotate(exc)  # again, as another entry point would
    assert len(notes_of(exc)) == 1


def test_the_note_shows_in_the_formatted_traceback():
    with pytest.raises(ZeroDivisionError) as info:
        adjoint.grad(square_root)(0.0)
    text = "".join(traceback.format_exception(info.value))
    assert f"for {HERE}:{line_of('SQRT')}" in text
    assert text.rstrip().endswith(the_note(info.value).splitlines()[-1].rstrip())


def untransformable(x):
    global LAST
    LAST = x
    return x


def calls_untransformable(x):
    return untransformable(x) * 2.0


def test_no_note_for_errors_outside_generated_code():
    with pytest.raises(TransformError) as info:  # raised from inside the caller's generated code
        adjoint.value_and_grad(calls_untransformable)(1.0)
    assert "`global`" in str(info.value) and notes_of(info.value) == []
    with pytest.raises(Exception) as info:
        adjoint.grad(lambda x: x @ x)(np.ones((2, 3)))  # a lambda's code is generated too: noted
    assert len(notes_of(info.value)) == 1
    with pytest.raises(adjoint.AdjointError) as info:
        adjoint.grad(shapes, wrt=5)(np.ones(2), np.ones(2))  # refused before any generated code runs
    assert notes_of(info.value) == []
    error = TransformError("f", [])
    assert annotate(error) is error and notes_of(error) == []
    plain = ValueError("raised by nobody's generated code")
    try:
        raise plain
    except ValueError:
        annotate(plain)
    assert notes_of(plain) == []


# ---- exported modules: real files, found by their header ---------------------------------------

def test_a_generated_frame_of_a_real_file(tmp_path):
    # as `adjoint.export` writes one: the generated text, its header and `# line N:` comments
    module = tmp_path / "exported_square_root.py"
    module.write_text("import math\n\nfrom adjoint import runtime as adj\n\n\n" + adjoint.source(square_root))
    spec = importlib.util.spec_from_file_location("exported_square_root", module)
    exported = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exported)

    _, back = exported.square_root_forward(0.0)
    try:
        back(1.0)
    except ZeroDivisionError as exc:
        note = the_note(annotate(exc))
    else:
        raise AssertionError("no error")
    first = note.splitlines()[0]
    assert first == f"adjoint: in the pullback of `square_root`, for {HERE.name}:{line_of('SQRT')}"
    assert note.splitlines()[1].strip() == SOURCE[line_of("SQRT") - 1].strip()
    assert f"generated: {module}:" in note
