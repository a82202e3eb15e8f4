"""compiler.ssa: one assignment per name except the copies (`anno.PHI`) where control flow
joins: after a branch, and at a loop's entry, back edge and exit; names first assigned in a
loop start as None; nested functions read the binding live where they are defined."""

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import annotations as anno
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower


def ssa(fn):
    """`fn` after the ssa pass: its FunctionDef node."""
    node, _ = lower(fn, (0,), until="ssa")
    return node


def phis(node) -> list:
    """`(kind, "target = source")` for every copy ssa inserted, in walk order."""
    return [
        (anno.get(n, anno.PHI), syntax.unparse(n).strip())
        for n in gast.walk(node)
        if isinstance(n, gast.Assign) and anno.get(n, anno.PHI)
    ]


def loops(node) -> list:
    return [n for n in gast.walk(node) if isinstance(n, (gast.For, gast.While))]


def stores_outside_phis(node) -> list:
    """Every name assigned by a statement that is not a PHI copy (targets of loops included)."""
    names = []
    for n in gast.walk(node):
        if isinstance(n, gast.Assign) and anno.get(n, anno.PHI):
            continue
        if isinstance(n, (gast.Assign, gast.For)):
            target = n.targets[0] if isinstance(n, gast.Assign) else n.target
            names += [t.id for t in gast.walk(target) if isinstance(t, gast.Name)]
    return names


def run(node, fn, *args):
    """Execute the ssa output of `fn` on `args`."""
    namespace = dict(fn.__globals__, adj=adjoint.runtime)
    node.name = "renamed"
    exec(compile(syntax.unparse(node), "<ssa>", "exec"), namespace)
    return namespace["renamed"](*args)


# ---- branches -----------------------------------------------------------------------------------


def updated_in_one_arm(x, c):
    y = x
    if c > 0:
        y = y * 2.0
    return y


def defined_in_both_arms(x, c):
    if c > 0:
        y = x * 2.0
    else:
        y = x * 3.0
    return y


def not_read_after_the_branch(x, c):
    y = x
    if c > 0:
        y = y * 2.0
    return x


def test_a_name_updated_in_one_arm_is_joined_by_a_copy_in_the_other():
    node = ssa(updated_in_one_arm)
    text = syntax.unparse(node)
    assert "y_1 = y * 2.0" in text
    assert phis(node) == [("join", "y_1 = y")]
    (branch,) = [n for n in node.body if isinstance(n, gast.If)]
    assert syntax.unparse(branch.orelse[0]).strip() == "y_1 = y"
    assert syntax.unparse(node.body[-1]).strip() == "return y_1"


def test_a_name_both_arms_define_needs_no_copy():
    node = ssa(defined_in_both_arms)
    assert phis(node) == []
    text = syntax.unparse(node)
    assert "y = x * 2.0" in text and "y = x * 3.0" in text and "return y" in text


def test_no_join_for_a_name_nothing_reads_after_the_branch():
    node = ssa(not_read_after_the_branch)
    assert phis(node) == []
    (branch,) = [n for n in node.body if isinstance(n, gast.If)]
    assert branch.orelse == []


@pytest.mark.parametrize("fn", [updated_in_one_arm, defined_in_both_arms])
@pytest.mark.parametrize("c", [1.0, -1.0])
def test_branches_compute_the_same_values(fn, c):
    assert run(ssa(fn), fn, 1.5, c) == fn(1.5, c)


# ---- loops --------------------------------------------------------------------------------------


def carried(x, n):
    h = x
    for i in range(n):
        t = np.tanh(h)
        h = t * 2.0
    return h


def first_assigned_in_loop(x, n):
    for i in range(n):
        t = x * i
        s = t + 1.0
    return s


def while_loop(x):
    while x < 10.0:
        x = x * 2.0
    return x


def with_break(x, n):
    s = x
    for i in range(n):
        s = s * 2.0
        if s > 10.0:
            break
    return s


def nested_loops(x, n):
    for i in range(n):
        for j in range(n):
            x = x * 2.0
    return x


def test_a_carried_name_gets_entry_back_and_exit_copies():
    node = ssa(carried)
    assert sorted(phis(node)) == [("back", "h_1 = h_2"), ("entry", "h_1 = h"), ("exit", "h_3 = h_1")]
    (loop,) = loops(node)
    assert anno.get(loop, anno.LOOP) == {"h_1": ("h", "h_3")}
    index = node.body.index(loop)
    assert anno.get(node.body[index - 1], anno.PHI) == "entry"  # just before the loop
    assert anno.get(node.body[index + 1], anno.PHI) == "exit"  # just after it
    assert anno.get(loop.body[-1], anno.PHI) == "back"  # at the end of the body
    assert syntax.unparse(node.body[-1]).strip() == "return h_3"  # after the loop: the exit copy


def test_a_name_used_only_within_one_iteration_is_not_carried():
    node = ssa(carried)
    assert "t" not in anno.get(loops(node)[0], anno.LOOP)
    assert "t = np.tanh(h_1)" in syntax.unparse(node)


def test_a_name_first_assigned_in_a_loop_starts_unbound():
    node = ssa(first_assigned_in_loop)
    (loop,) = loops(node)
    before = node.body[node.body.index(loop) - 1]
    assert syntax.unparse(before).strip() == "s = adj.unbound('s')"
    assert anno.get(loop, anno.LOOP) == {"s": (None, "s_2")}
    assert sorted(phis(node)) == [("back", "s = s_1"), ("entry", "s = adj.unbound('s')"), ("exit", "s_2 = s")]


def test_while_loop_carries_its_test_flag_and_its_names():
    node = ssa(while_loop)
    (loop,) = loops(node)
    record = anno.get(loop, anno.LOOP)
    assert set(record) == {"running_1", "x_1"} and record["x_1"] == ("x", "x_3")
    assert syntax.unparse(loop.test) == "running_1"
    assert ("back", "x_1 = x_2") in phis(node)


def test_back_edge_copies_come_before_the_trailing_break_check():
    node = ssa(with_break)
    (loop,) = loops(node)
    assert syntax.is_break_check(loop.body[-1])
    kinds = [anno.get(s, anno.PHI) for s in loop.body[-3:-1]]
    assert kinds == ["back", "back"]  # `broke_1 = broke_2` and `s_1 = s_2`, then `if broke_2: break`


def test_nested_loop_entry_reads_the_outer_loops_carried_name():
    node = ssa(nested_loops)
    outer, inner = loops(node)
    assert anno.get(outer, anno.LOOP) == {"x_1": ("x", "x_5")}
    assert anno.get(inner, anno.LOOP) == {"x_2": ("x_1", "x_4")}
    assert ("back", "x_1 = x_4") in phis(node)


@pytest.mark.parametrize(
    "fn, args",
    [
        (carried, (0.3, 3)),
        (carried, (0.3, 0)),
        (first_assigned_in_loop, (0.5, 3)),
        (while_loop, (1.5,)),
        (with_break, (1.5, 5)),
        (with_break, (1.5, 1)),
        (nested_loops, (0.5, 3)),
    ],
)
def test_loops_compute_the_same_values(fn, args):
    assert run(ssa(fn), fn, *args) == fn(*args)


@pytest.mark.parametrize("fn", [updated_in_one_arm, carried, first_assigned_in_loop, while_loop, with_break, nested_loops])
def test_every_name_is_assigned_once_outside_the_copies(fn):
    stored = stores_outside_phis(ssa(fn))
    assert len(stored) == len(set(stored)), stored
    assert "x" not in stored  # parameters are never reassigned


# ---- nested functions ---------------------------------------------------------------------------


def closure_after_rebinding(x):
    w = x * 2.0
    w = w + 1.0

    def f(y):
        return y * w

    return f(x)


def closure_before_rebinding(x):
    w = x * 2.0

    def f(y):
        return y * w

    a = f(x)
    w = w + 1.0
    return a + w


def closure_after_branch(x, c):
    w = x
    if c:
        w = x * 2.0
    g = lambda v: v * w  # noqa: E731
    return g(x)


def late_bound(x):
    k = x * 2.0
    g = lambda v: v * k  # noqa: E731
    k = 3.0
    return g(x) + k


def loaded_names(function_node) -> set:
    return {n.id for n in gast.walk(function_node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def test_closure_reads_the_binding_live_at_its_definition():
    node = ssa(closure_after_rebinding)
    (inner,) = [n for n in node.body if isinstance(n, gast.FunctionDef)]
    assert syntax.unparse(inner.body[0]).strip() == "return y * w_1"
    node = ssa(closure_before_rebinding)
    (inner,) = [n for n in node.body if isinstance(n, gast.FunctionDef)]
    assert syntax.unparse(inner.body[0]).strip() == "return y * w"
    assert loaded_names(inner) == {"y", "w"}
    assert "w_1 = w + 1.0" in syntax.unparse(node)


def test_lambda_reads_the_joined_name_after_a_branch():
    node = ssa(closure_after_branch)
    (lam,) = [n for n in gast.walk(node) if isinstance(n, gast.Lambda)]
    assert syntax.unparse(lam) == "lambda v: v * w_1"
    assert phis(node) == [("join", "w_1 = w")]


def test_nested_function_parameters_are_not_renamed():
    node = ssa(closure_after_rebinding)
    (inner,) = [n for n in node.body if isinstance(n, gast.FunctionDef)]
    assert [a.id for a in inner.args.args] == ["y"]


@pytest.mark.parametrize("fn, args", [(closure_after_rebinding, (0.7,)), (closure_before_rebinding, (0.7,)),
                                      (closure_after_branch, (0.7, True)), (closure_after_branch, (0.7, False))])
def test_closures_compute_the_same_values(fn, args):
    assert run(ssa(fn), fn, *args) == pytest.approx(fn(*args))


def test_closure_called_after_its_free_name_is_rebound_is_refused():
    # renaming would show it the old value, Python the new one
    with pytest.raises(adjoint.TransformError, match="reads `k`, which is assigned again") as info:
        lower(late_bound, (0,), until="ssa")
    assert info.value.problems[0].line == late_bound.__code__.co_firstlineno + 2
