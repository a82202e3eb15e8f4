"""compiler.within: `within_gradient()` is written as `True`, and what that rules out dropped,
in the function's own body only; the user's function is untouched."""

import adjoint
import adjoint as ad
from adjoint import within_gradient as differentiated
from adjoint.compiler import pipeline, syntax


def lowered(f) -> str:
    node, _ = pipeline.lower(f, (0,), until="within")
    return syntax.unparse(node)


def branches(x):
    if adjoint.within_gradient():
        y = x * 2
    else:
        y = x * 3
    z = x if not ad.within_gradient() else -x
    while not differentiated():
        x = x + 1
    assert differentiated()
    return y + z


def test_branches_it_settles_keep_only_the_arm_that_runs():
    text = lowered(branches)
    assert "within_gradient" not in text and "differentiated" not in text
    assert "y = x * 2" in text and "x * 3" not in text
    assert "z = -x" in text and "while" not in text and "assert" not in text


def conditions(x, training):
    if training and adjoint.within_gradient():
        x = x * 2
    if training or adjoint.within_gradient():
        x = x + 1
    if not training and adjoint.within_gradient():
        x = x - 1
    flag = adjoint.within_gradient()
    return x * flag


def test_conditions_are_simplified_as_conditions():
    text = lowered(conditions)
    assert "if training:" in text and "x = x + 1" in text and "if not training:" in text
    assert "training or" not in text and "flag = True" in text


def shadowed(x, within_gradient=None):
    inner = lambda: adjoint.within_gradient()  # noqa: E731  (transformed when it is differentiated)
    if within_gradient():  # a parameter, not adjoint's
        x = x * 2
    return x + inner()


def test_local_names_and_nested_functions_are_left_alone():
    text = lowered(shadowed)
    assert "if within_gradient():" in text and "lambda: adjoint.within_gradient()" in text


def emptied(x):
    for i in range(3):
        if not adjoint.within_gradient():
            x = x * 2
    return x


def test_a_body_left_empty_stays_valid_python():
    text = lowered(emptied)
    assert "pass" in text and "x * 2" not in text
    assert adjoint.grad(emptied)(1.0) == 1.0 and emptied(1.0) == 8.0


def side_effects(x, log):
    if log.append(1) or adjoint.within_gradient():  # Python calls log.append first
        x = x * 2
    if x > 0 or adjoint.within_gradient() or log.append(2):
        x = x + 1
    return x


def test_calls_before_a_settling_constant_still_run():
    text = lowered(side_effects)
    assert "if log.append(1) or True:" in text and "if x > 0 or True:" in text and "append(2)" not in text
    log = []
    assert adjoint.grad(side_effects)(1.0, log) == 2.0 and log == [1]


rate = 10.0


def local_only_in_the_dropped_arm(x):
    if not adjoint.within_gradient():
        rate = 1.0
    return x * rate  # local to the function, as Python has it: not the global


def test_a_name_assigned_only_in_a_dropped_arm_stays_local():
    import pytest

    with pytest.raises(UnboundLocalError):
        adjoint.grad(local_only_in_the_dropped_arm)(1.0)
    with pytest.raises(UnboundLocalError):
        local_only_in_the_dropped_arm(1.0) if False else adjoint.jvp(local_only_in_the_dropped_arm, (1.0,), (1.0,))


def default_mentions_adjoint(x, keep=adjoint.stop_gradient):
    if not adjoint.within_gradient():
        return x[0]  # would need a rule of its own if it were kept
    return keep(x) * x


def test_names_in_defaults_are_not_taken_for_parameters():
    text = lowered(default_mentions_adjoint)
    assert "within_gradient" not in text and "x[0]" not in text


def settled_by_constants(x):
    if False:
        x = x * 3
    y = x if x > 0 and True else -x
    while False or not True:
        x = x + 1
    return y


def test_tests_settled_by_constants_alone_are_settled_too():
    # (no `within_gradient()` here: the pass must still look, not skip the function)
    text = lowered(settled_by_constants)
    assert "x * 3" not in text and "while" not in text
    assert "y = x if x > 0 else -x" in text
