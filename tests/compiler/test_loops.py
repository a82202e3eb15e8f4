"""compiler.loops: each forward loop records on a tape exactly what its pullback reads (or only
counts its iterations), parts of arrays defined outside the loop gather their cotangents in a
buffer (`adj.scatter_add`), and an inner loop's tape is recorded in the outer loop's tape."""

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import annotations as anno
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower
from adjoint.testing import check_grad

RNG = np.random.default_rng(0)


# ---- the corpus ---------------------------------------------------------------------------------


def rnn(h, W, n):
    for i in range(n):
        h = np.tanh(W @ h)
    return np.sum(h)


def repeated_sine(x, n):
    s = x
    for i in range(n):
        s = np.sin(s)
    return np.sum(s)


def shifted(x, n):
    for i in range(n):
        x = x + 1.0
    return np.sum(x * x)


def doubling_while(x):
    while np.sum(x) < 10.0:
        x = x * 2.0
    return np.sum(x)


def indexed_rows(x, n):
    total = 0.0
    for i in range(n):
        total = total + x[i] * 2.0
    return total


def iterated_rows(x, w):
    s = 0.0
    for v in x:
        s = s + np.sum(v * w)
    return s


def zipped(x, y):
    s = 0.0
    for a, b in zip(x, y):
        s = s + a * b
    return s


def enumerated_from_one(x):
    s = 0.0
    for k, v in enumerate(x, 1):
        s = s + v * k
    return s


def indexed_array_defined_in_loop(x, n):
    s = 0.0
    for i in range(n):
        y = x * 2.0
        s = s + y[i] * y[i]
    return s


def nested_sine(x, n, m):
    for i in range(n):
        for j in range(m):
            x = np.sin(x)
    return np.sum(x)


def nested_indexed(x, n):
    s = 0.0
    for i in range(n):
        for j in range(n):
            s = s + x[i, j] * x[j, i]
    return s


def branch_in_loop(x, n):
    s = x
    for i in range(n):
        if i % 2 == 0:
            t = np.sin(s)
        else:
            t = s * 2.0
        s = t
    return np.sum(s)


def break_in_loop(x, n):
    s = x
    for i in range(n):
        s = np.sin(s) * 1.5
        if np.sum(s) > 2.0:
            break
    return np.sum(s)


X = np.array([0.3, -0.8, 1.1])
M = RNG.normal(size=(3, 3))

CASES = [
    (rnn, (RNG.normal(size=3), RNG.normal(size=(3, 3)) * 0.5, 4), (0, 1)),
    (repeated_sine, (X, 3), (0,)),
    (shifted, (X, 3), (0,)),
    (doubling_while, (np.array([0.5, 1.0]),), (0,)),
    (indexed_rows, (X, 3), (0,)),
    (iterated_rows, (M, X), (0, 1)),
    (zipped, (X, X[::-1].copy()), (0, 1)),
    (enumerated_from_one, (X,), (0,)),
    (indexed_array_defined_in_loop, (X, 3), (0,)),
    (nested_sine, (X, 2, 3), (0,)),
    (nested_indexed, (M, 3), (0,)),
    (branch_in_loop, (X, 3), (0,)),
    (break_in_loop, (X, 5), (0,)),
]
IDS = [f.__name__ for f, _, _ in CASES]


# ---- helpers: the forward loops and pullback loops of the generated code ------------------------


def generated(fn, wrt):
    """The forward function after every pass, and its pullback (a nested FunctionDef)."""
    node, _ = lower(fn, wrt)
    (pullback,) = [s for s in node.body if isinstance(s, gast.FunctionDef)]
    return node, pullback


def appends(loop) -> list:
    """The `tape.append(...)` statements directly in `loop`'s body."""
    return [
        s for s in loop.body
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call)
        and isinstance(s.value.func, gast.Attribute) and s.value.func.attr == "append"
    ]


def recorded(append) -> tuple:
    value = append.value.args[0]
    items = value.elts if isinstance(value, gast.Tuple) else [value]
    return tuple(syntax.unparse(item) for item in items)


def forward_loops(node):
    return [s for s in syntax.statements(node.body) if isinstance(s, (gast.For, gast.While))]


def pullback_loops(pullback):
    """`{tape name: the pullback loop over reversed(tape)}`."""
    found = {}
    for stmt in syntax.statements(pullback.body):
        if isinstance(stmt, gast.For) and isinstance(stmt.iter, gast.Call) and syntax.dotted(stmt.iter.func) == "reversed":
            found[stmt.iter.args[0].id] = stmt
    return found


def reads_of(loop) -> set:
    """The names `loop`'s body reads, without those its inner pullback loops unpack or it reads
    out of the iterated array itself (`x = xs[index]`, first in its body)."""
    unpacked = set().union(*(syntax.stored_names(s.target) for s in syntax.statements(loop.body) if isinstance(s, gast.For)))
    for stmt in loop.body:
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Subscript)):
            break
        unpacked |= syntax.stored_names(stmt)
    return set().union(*(syntax.load_names(s) for s in loop.body)) - unpacked


def defined_by(loop) -> set:
    names = set().union(*(syntax.stored_names(s) for s in loop.body))
    if isinstance(loop, gast.For):
        names |= syntax.stored_names(loop.target)
    return names


# ---- the tape holds exactly what the pullback reads ---------------------------------------------


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_the_tape_records_exactly_what_the_pullback_reads(fn, args, wrt):
    node, pullback = generated(fn, wrt)
    replayed = pullback_loops(pullback)
    for loop in forward_loops(node):
        (append,) = appends(loop) or [None]
        if append is None:
            continue  # a counted loop (see below)
        tape = append.value.func.value.id
        names = recorded(append)
        back = replayed[tape]
        assert names == tuple(syntax.unparse(back.target).strip("()").split(", ")), (names, syntax.unparse(back.target))
        reads = reads_of(back)
        assert set(names) <= reads, f"recorded but never read: {set(names) - reads}"
        assert reads & defined_by(loop) <= set(names), f"read but not recorded: {reads & defined_by(loop) - set(names)}"


def test_only_the_values_the_rules_need_are_recorded():
    node, _ = generated(rnn, (0, 1))
    (loop,) = forward_loops(node)
    assert recorded(appends(loop)[0]) == ("h_1", "h_2")  # tanh's output and matmul's operand
    assert "h_matmul" in syntax.unparse(loop)  # computed, but its pullback reads it not
    node, _ = generated(repeated_sine, (0,))
    (loop,) = forward_loops(node)
    assert recorded(appends(loop)[0]) == ("s_1",)  # sin's input only: cos(s) is its derivative


def test_the_branch_taken_is_recorded_not_the_values_of_the_arms():
    node, pullback = generated(branch_in_loop, (0,))
    (loop,) = forward_loops(node)
    names = recorded(appends(loop)[0])
    assert "cond" in names and "t" not in names
    (back,) = pullback_loops(pullback).values()
    assert any(isinstance(s, gast.If) and syntax.unparse(s.test) == "cond" for s in back.body)


def test_the_tape_is_appended_before_the_back_edge_copies_and_the_break():
    # after the copies, the carried names would already hold the next iteration's values
    node, _ = generated(break_in_loop, (0,))
    (loop,) = forward_loops(node)
    (append,) = appends(loop)
    at = loop.body.index(append)
    later = loop.body[at + 1:]
    assert later and all(anno.get(s, anno.PHI) == "back" for s in later[:-1])
    assert syntax.is_break_check(later[-1])
    assert "s_1" in recorded(append)  # the value sin read, not the one the copy sets


def test_tape_starts_empty_just_before_its_loop():
    node, _ = generated(rnn, (0, 1))
    (loop,) = forward_loops(node)
    before = node.body[node.body.index(loop) - 1]
    assert syntax.unparse(before) == "tape = []"


# ---- a counter when the pullback reads nothing from the iterations ------------------------------


@pytest.mark.parametrize("fn, args", [(shifted, (X, 3)), (doubling_while, (np.array([0.5, 1.0]),))])
def test_an_iteration_counter_when_the_pullback_reads_nothing(fn, args):
    text = adjoint.source(fn, wrt=0)
    assert "tape" not in text
    assert "steps = 0" in text and "steps = steps + 1" in text
    assert "for _ in range(steps):" in text
    check_grad(fn, *args)


def test_the_counter_counts_the_iterations_that_ran():
    value, back = adjoint.pullback(shifted, X, 4)
    np.testing.assert_allclose(back(1.0)[0], 2 * (X + 4.0))
    value, back = adjoint.pullback(shifted, X, 0)
    np.testing.assert_allclose(back(1.0)[0], 2 * X)


# ---- parts of arrays defined outside the loop gather in a buffer --------------------------------


@pytest.mark.parametrize("fn, wrt, index", [
    (indexed_rows, 0, "i"),
    (iterated_rows, (0, 1), "index"),
    (enumerated_from_one, 0, "k - 1"),
])
def test_indexed_reads_of_an_outer_array_scatter_into_one_buffer(fn, wrt, index):
    text = adjoint.source(fn, wrt=wrt)
    pullback = text[text.index("_pullback("):]
    assert pullback.count("x_bar_parts = adj.buffer_like(x)") == 1
    assert f"adj.scatter_add(x_bar_parts, {index}, " in pullback
    assert "x_bar = adj.from_buffer(x_bar_parts, x)" in pullback
    assert "adj.unindex" not in pullback  # no full-size cotangent per iteration
    # the buffer is made before the pullback loop and read back after it
    loop_at = pullback.index("in reversed(tape)")
    assert pullback.index("adj.buffer_like") < loop_at < pullback.index("adj.from_buffer")


def test_zip_scatters_each_sequence_into_its_own_buffer():
    text = adjoint.source(zipped)
    assert "adj.scatter_add(x_bar_parts, index, a_bar)" in text
    assert "adj.scatter_add(y_bar_parts, index, b_bar)" in text


def test_nested_loops_scatter_into_the_outermost_buffer():
    text = adjoint.source(nested_indexed, wrt=0)
    assert text.count("adj.buffer_like(x)") == 1
    assert "adj.scatter_add(x_bar_parts, (i, j), " in text and "adj.scatter_add(x_bar_parts, (j, i), " in text


def test_an_array_defined_inside_the_loop_is_not_buffered():
    text = adjoint.source(indexed_array_defined_in_loop, wrt=0)
    assert "buffer_like" not in text and "scatter_add" not in text
    assert "y_bar = adj.unindex(" in text


# ---- nested loops -------------------------------------------------------------------------------


def test_an_inner_loops_tape_is_recorded_in_the_outer_tape():
    node, pullback = generated(nested_sine, (0,))
    outer, inner = forward_loops(node)
    assert recorded(appends(inner)[0]) == ("x_2",)
    assert recorded(appends(outer)[0]) == ("tape",)  # the inner loop's tape, one per outer iteration
    assert syntax.unparse(outer.body[outer.body.index(inner) - 1]) == "tape = []"  # a new one each time
    replayed = pullback_loops(pullback)
    assert set(replayed) == {"tape", "tape_1"}
    assert syntax.unparse(replayed["tape_1"].target) == "tape"
    assert replayed["tape"] in list(syntax.statements(replayed["tape_1"].body))  # replayed inside


def test_inner_tape_and_outer_values_share_the_outer_tape():
    node, _ = generated(nested_indexed, (0,))
    outer, _ = forward_loops(node)
    assert recorded(appends(outer)[0]) == ("i", "tape")


# ---- gradients ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn, args, wrt", CASES, ids=IDS)
def test_gradient(fn, args, wrt):
    check_grad(fn, *args)


def test_loop_that_does_not_run_passes_the_cotangent_through():
    assert adjoint.grad(repeated_sine)(X, 0).tolist() == [1.0, 1.0, 1.0]
    np.testing.assert_allclose(adjoint.grad(indexed_rows)(X, 0), np.zeros(3))


def test_break_stops_the_pullback_where_the_forward_stopped():
    x = np.array([1.2, 1.4, 0.9])
    assert np.sum(np.sin(x) * 1.5) > 2.0  # breaks after the first iteration
    np.testing.assert_allclose(adjoint.grad(break_in_loop)(x, 5), 1.5 * np.cos(x))


def loop_doing_nothing(x, n):
    for _ in range(n):
        pass
    while n < 0:
        pass
    return x * 2


def test_a_loop_whose_body_does_nothing_stays_a_valid_loop():
    check_grad(loop_doing_nothing, 1.5, 3)


# ---- the pullback loop's carried cotangents are guessed, so its body is written once ------------


def biased_rnn(h, W, b, n):
    for i in range(n):
        h = np.tanh(W @ h + b)  # only the loop adds to `b`'s cotangent
    return np.sum(h)


def test_a_pullback_loop_is_written_once_when_the_guess_is_right(monkeypatch):
    from adjoint.compiler import reverse

    written = []
    emit_block = reverse._Reverse.emit_block
    monkeypatch.setattr(reverse._Reverse, "emit_block", lambda self, adjoints: written.append(adjoints) or emit_block(self, adjoints))
    _, pullback = generated(biased_rnn, (0, 1, 2))
    assert len(written) == 2  # the function's pullback, and the loop's body once
    code = syntax.unparse(pullback)
    assert "b_bar = adj.zeros_like(b)" in code and "b_bar += " in code
    check_grad(biased_rnn, RNG.normal(size=3), RNG.normal(size=(3, 3)) * 0.5, RNG.normal(size=3), 3)


def scaled_rows(x, c, n):
    total = 0.0
    for i in range(n):
        total = total + x[i] * c  # `x` gathers its rows in a buffer: the guess `x` adds no code
    return total


def test_a_guessed_cotangent_nothing_adds_to_leaves_no_code():
    _, pullback = generated(scaled_rows, (0, 1))
    code = syntax.unparse(pullback)
    assert "zeros_like(x)" not in code and "x_bar = adj.from_buffer" in code
    check_grad(scaled_rows, RNG.normal(size=4), 1.5, 3)
