"""compiler.normalize and compiler.ssa: statement shapes, readable temporaries, same values, and
globals read into locals so the pullback uses the values the forward pass read."""

import copy
import types

import gast
import numpy as np
import pytest

import adjoint
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower


def nested(x, W, b):
    h = np.tanh(x @ W + b)
    a, c = h, -h
    s = np.sum(a * c, axis=0) / (-2.0)
    print("shape", np.shape(x[:, 0]))
    return np.reshape(s, (-1,)) + x[1:, ::2].sum()


def rebinding(x):
    x = x * 2.0
    y = np.sin(x)
    y += x
    y, x = x, y
    return y - x


def _atomic(node):
    return syntax.is_atom(node) or syntax.root_name(node) in {"np"}


def _one_operation(value):
    if _atomic(value):
        return True
    if isinstance(value, gast.BinOp):
        return _atomic(value.left) and _atomic(value.right)
    if isinstance(value, gast.UnaryOp):
        return _atomic(value.operand)
    if isinstance(value, gast.Call):
        return syntax.dotted(value.func) is not None and all(
            _atomic(a) for a in value.args + [k.value for k in value.keywords]
        )
    if isinstance(value, gast.Subscript):
        return _atomic(value.value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return all(_atomic(e) for e in value.elts)
    if isinstance(value, gast.Attribute):
        return _atomic(value.value)
    return False


def test_every_statement_is_one_simple_shape():
    node, _ = lower(nested, (0, 1, 2), until="normalize")
    *body, last = node.body
    assert isinstance(last, gast.Return) and syntax.is_atom(last.value)
    for stmt in body:
        text = syntax.unparse(stmt)
        if isinstance(stmt, gast.Assign):
            assert _one_operation(stmt.value), text
        else:
            assert isinstance(stmt, gast.Expr) and _one_operation(stmt.value), text


def test_temporaries_are_named_after_their_target_and_operation():
    node, _ = lower(nested, (0, 1, 2), until="normalize")
    text = syntax.unparse(node)
    assert "h_matmul = x @ W" in text
    assert "h_add = h_matmul + b" in text
    assert "h = np.tanh(h_add)" in text
    assert "np.reshape(s, (-1,))" in text  # constant tuples and negative numbers stay inline
    assert "/ -2.0" in text


def test_every_statement_keeps_its_user_origin():
    from adjoint.compiler import annotations as anno

    node, _ = lower(nested, (0,), until="normalize")
    start = nested.__code__.co_firstlineno
    origins = [anno.get(s, anno.ORIGIN) for s in node.body]
    assert origins[0] == start + 1 and origins[-1] == start + 5
    assert all(o is not None for o in origins)


def test_ssa_gives_every_rebinding_a_new_name():
    node, _ = lower(rebinding, (0,), until="ssa")
    stored = [n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
    assert len(stored) == len(set(stored))
    assert "x" not in stored  # parameters are never reassigned
    text = syntax.unparse(node)
    assert "x_1 = x * 2.0" in text and "y = np.sin(x_1)" in text


def _run(node, ctx, fn, *args):
    namespace = dict(fn.__globals__)
    namespace[ctx.runtime_alias] = adjoint.runtime  # `adj.setitem`, `adj.append`
    node.name = "normalized"
    exec(compile(syntax.unparse(node), "<test>", "exec"), namespace)
    return namespace["normalized"](*args)


def test_normalized_code_computes_the_same_values():
    rng = np.random.default_rng(0)
    args = rng.normal(size=(3, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2,))
    node, ctx = lower(nested, (0,), until="ssa")
    np.testing.assert_allclose(_run(node, ctx, nested, *args), nested(*args))
    node, ctx = lower(rebinding, (0,), until="ssa")
    np.testing.assert_allclose(_run(node, ctx, rebinding, 0.7), rebinding(0.7))


def duplicate_unpack_target(x):
    a, a = x
    return a * 1.0


def test_duplicate_unpacking_target_gets_last_element_only():
    # expected: `a, a = x` binds a = x[1], gradient [0, 1]; actual: [1, 1]
    np.testing.assert_allclose(adjoint.grad(duplicate_unpack_target)(np.array([1.0, 2.0])), [0.0, 1.0])

# A module whose attribute the differentiated code reads (as `import config as cfg` would).
cfg = types.ModuleType("review3_cfg")
cfg.scale = 2.0


def scaled_by_module_attribute(x):
    return np.sum(x * cfg.scale)


def test_module_attribute_read_at_forward_time():
    # expected: back() uses cfg.scale as the forward saw it (2.0); actual: re-reads cfg.scale at back() time (5.0)
    value, back = adjoint.pullback(scaled_by_module_attribute, np.ones(3))
    try:
        cfg.scale = 5.0
        (x_bar,) = back(1.0)
    finally:
        cfg.scale = 2.0
    np.testing.assert_allclose(x_bar, [2.0, 2.0, 2.0])


# ---- a global rebound during the forward pass ----

_STEP = 1.0


@adjoint.non_differentiable
def _tick():
    global _STEP
    _STEP = 2.0
    return 0.0


def _reads_then_ticks(x):
    y = x * _STEP
    n = _tick()
    return y + n


def test_pullback_uses_the_value_the_statement_read():
    # silently before: 2.0 (the value at the end of the forward pass)
    global _STEP
    try:
        assert adjoint.grad(_reads_then_ticks)(2.0) == 1.0
    finally:
        _STEP = 1.0


# ---- control flow and the newer statement shapes --------------------------------------------------
# Conditional expressions, `and`/`or`, comprehensions and `sum(genexp)` become statements the
# pullback can follow; item assignment becomes `adj.setitem`; starred targets and displays become
# items, slices and concatenations; a `while` test is computed before the loop and again at the
# end of its body; a tuple loop target is unpacked at the start of the body.


def conditional_expression(x, c):
    y = np.sin(x) if c > 0 else x * 2.0
    return y


def and_or_chain(a, b, c):
    y = a and b or c
    return y


def three_way_and(a, b, c):
    return a and b and c


def filtered_comprehension(xs):
    ys = [x * 2.0 for x in xs if x > 0 if x < 5]
    return ys


def nested_generators(xs, ys):
    zs = [x * y for x in xs for y in ys if y > x]
    return zs


def comprehension_shadowing_a_parameter(x, xs):
    ys = [x * 2.0 for x in xs]
    return x, ys


def sum_of_generator(xs):
    return sum(x * x for x in xs if x > 0)


def sum_of_generator_with_start(xs, s):
    return sum((x for x in xs), s)


def dict_comprehension(xs):
    return {i: x * 2.0 for i, x in enumerate(xs)}


def item_assignment(x, v):
    y = x * 1.0
    y[0] = v * 2.0
    y[1:3] = v
    return y


def nested_item_assignment(x, v):
    y = x * 1.0
    y[0][1] = v
    return y


def augmented_item_assignment(x, v):
    y = x * 1.0
    y[1] += v * 2.0
    return y


def starred_unpacking(xs):
    a, *rest, b = xs
    return a, rest, b


def starred_displays(a, xs):
    items = [a, *xs, a]
    pair = (*xs, a)
    return items, pair


def while_loop(x):
    while np.sum(x) < 10.0:
        x = x * 2.0
    return x


def while_loop_with_break(x):
    while x < 10.0:
        x = x * 2.0
        if x > 5.0:
            break
    return x


def tuple_loop_targets(pairs, xs):
    s = 0.0
    for a, b in pairs:
        s = s + a * b
    for i, (u, v) in enumerate(zip(xs, xs)):
        s = s + u * v * i
    return s


def normalized(fn):
    node, _ = lower(fn, (0,), until="normalize")
    return node, syntax.unparse(node)


def _is_simple_argument(node):
    """An atom, or `slice(...)` of atoms (an index `adj.setitem` receives), or a tuple of them."""
    if _atomic(node):
        return True
    if isinstance(node, gast.Tuple):
        return all(_is_simple_argument(e) for e in node.elts)
    return isinstance(node, gast.Call) and syntax.dotted(node.func) == "slice" and all(_atomic(a) for a in node.args)


def _simple_value(value):
    """`_one_operation`, comparisons and dict displays of atoms included."""
    if isinstance(value, gast.Compare):
        return _atomic(value.left) and all(_atomic(c) for c in value.comparators)
    if isinstance(value, gast.Dict):
        return all(_atomic(n) for n in value.keys + value.values)
    return _one_operation(value)


def _is_iterable(node):
    """What a loop iterates: an atom, or range/enumerate/zip/reversed of such."""
    if _atomic(node):
        return True
    return (
        isinstance(node, gast.Call) and syntax.dotted(node.func) in {"range", "enumerate", "zip", "reversed"}
        and all(_is_iterable(a) for a in node.args)
    )


def _assert_simple(body):
    for stmt in body:
        text = syntax.unparse(stmt)
        if isinstance(stmt, gast.If):
            assert isinstance(stmt.test, gast.Name) or _simple_value(stmt.test), text
        elif isinstance(stmt, gast.While):
            assert isinstance(stmt.test, (gast.Name, gast.Constant)), text
        elif isinstance(stmt, gast.For):
            assert _is_iterable(stmt.iter), text
        elif isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call):
            assert syntax.dotted(stmt.value.func) and all(_is_simple_argument(a) for a in stmt.value.args), text
        elif isinstance(stmt, gast.Assign):
            assert _simple_value(stmt.value), text
        elif isinstance(stmt, gast.Return):
            assert syntax.is_atom(stmt.value), text
        elif not isinstance(stmt, gast.Break):
            raise AssertionError(f"unexpected statement: {text}")
        for nested in syntax.bodies(stmt):
            _assert_simple(nested)


NEW_SHAPES = [
    (conditional_expression, [(0.5, 1.0), (0.5, -1.0)]),
    (and_or_chain, [(1.0, 2.0, 3.0), (0.0, 2.0, 3.0), (1.0, 0.0, 3.0)]),
    (three_way_and, [(1.0, 2.0, 3.0), (1.0, 0.0, 3.0), (0.0, 2.0, 3.0)]),
    (filtered_comprehension, [([1.0, -2.0, 3.0, 7.0],)]),
    (nested_generators, [([1.0, 2.0], [0.5, 1.5, 2.5])]),
    (comprehension_shadowing_a_parameter, [(9.0, [1.0, 2.0])]),
    (sum_of_generator, [([1.0, -2.0, 3.0],), ([],)]),
    (sum_of_generator_with_start, [([1.0, 2.0], 10.0)]),
    (dict_comprehension, [([1.0, 2.0],)]),
    (item_assignment, [(np.arange(4.0), 1.5)]),
    (nested_item_assignment, [(np.arange(6.0).reshape(2, 3), 1.5)]),
    (augmented_item_assignment, [(np.arange(3.0), 1.5)]),
    (starred_unpacking, [((1.0, 2.0, 3.0, 4.0),), ([1.0, 2.0],)]),
    (starred_displays, [(1.0, (2.0, 3.0)), (1.0, [])]),
    (while_loop, [(np.array([0.5, 1.0]),), (np.array([20.0]),)]),
    (while_loop_with_break, [(1.0,), (4.0,), (30.0,)]),
    (tuple_loop_targets, [([(1.0, 2.0), (3.0, 4.0)], [0.5, 1.5])]),
]


@pytest.mark.parametrize("fn", [f for f, _ in NEW_SHAPES], ids=[f.__name__ for f, _ in NEW_SHAPES])
def test_new_shapes_are_simple_statements_at_every_depth(fn):
    node, _ = normalized(fn)
    _assert_simple(node.body)
    assert not any(
        isinstance(n, (gast.IfExp, gast.BoolOp, gast.ListComp, gast.GeneratorExp, gast.DictComp, gast.Starred))
        for n in gast.walk(node)
    ), syntax.unparse(node)


@pytest.mark.parametrize(
    "fn, args", [(f, a) for f, cases in NEW_SHAPES for a in cases],
    ids=[f"{f.__name__}-{i}" for f, cases in NEW_SHAPES for i, _ in enumerate(cases)],
)
def test_new_shapes_compute_the_same_values(fn, args):
    node, ctx = lower(fn, (0,), until="normalize")
    expected = fn(*copy.deepcopy(args))
    actual = _run(node, ctx, fn, *copy.deepcopy(args))
    assert type(actual) is type(expected)
    np.testing.assert_equal(actual, expected)


def test_conditional_expression_assigns_one_name_in_both_arms():
    node, text = normalized(conditional_expression)
    (branch,) = [s for s in node.body if isinstance(s, gast.If)]
    assert [syntax.unparse(s) for s in branch.body] == ["y_value = np.sin(x)"]
    assert [syntax.unparse(s) for s in branch.orelse] == ["y_value = x * 2.0"]
    assert "y = y_value" in text


def test_and_or_stop_early_as_python_does():
    _, text = normalized(and_or_chain)
    assert "if y_or_and:\n        y_or_and = b" in text  # `b` only when `a` is true
    assert "y_or_false = not y_or\n    if y_or_false:\n        y_or = c" in text  # `c` only when false
    _, text = normalized(three_way_and)
    assert "if three_way_and_and:\n        three_way_and_and = b\n        if three_way_and_and:" in text


def test_comprehension_is_a_loop_appending_under_its_filters():
    node, text = normalized(filtered_comprehension)
    assert "ys_1 = []" in text and "for x_1 in xs:" in text
    (loop,) = [s for s in syntax.statements(node.body) if isinstance(s, gast.For)]
    ifs = [s for s in syntax.statements(loop.body) if isinstance(s, gast.If)]
    assert len(ifs) == 2  # one per `if`, nested
    assert syntax.unparse(ifs[1].body[-1]) == "ys_1 = adj.append(ys_1, ys_1_item_mul)"


def test_nested_generators_nest_their_loops_in_order():
    node, _ = normalized(nested_generators)
    outer = next(s for s in node.body if isinstance(s, gast.For))
    inner = outer.body[0]
    assert syntax.unparse(outer.iter) == "xs" and isinstance(inner, gast.For) and syntax.unparse(inner.iter) == "ys"


def test_comprehension_variables_do_not_rebind_the_functions_names():
    _, text = normalized(comprehension_shadowing_a_parameter)
    assert "for x_1 in xs:" in text and "x_1 * 2.0" in text
    assert "(x, ys)" in text


def test_sum_of_a_generator_is_a_running_total():
    _, text = normalized(sum_of_generator)
    assert "sum_of_generator_total = 0" in text
    assert "sum_of_generator_total = sum_of_generator_total + sum_of_generator_total_item_mul" in text
    assert "sum(" not in text
    _, text = normalized(sum_of_generator_with_start)
    assert "sum_of_generator_with_start_total = s" in text


def test_dict_comprehension_fills_a_dict_with_setitem():
    _, text = normalized(dict_comprehension)
    assert "dict_comprehension_1 = {}" in text
    assert "dict_comprehension_1 = adj.setitem(dict_comprehension_1, i_1, " in text


def test_item_assignment_rebinds_the_container_with_setitem():
    _, text = normalized(item_assignment)
    assert "y = adj.setitem(y, 0, y_mul)" in text
    assert "y = adj.setitem(y, slice(1, 3, None), v)" in text
    assert "y[" not in text  # nothing is assigned in place


def test_nested_item_assignment_updates_the_inner_item_then_the_outer():
    _, text = normalized(nested_item_assignment)
    assert "y_item = y[0]\n    y_1 = adj.setitem(y_item, 1, v)\n    y = adj.setitem(y, 0, y_1)" in text


def test_augmented_item_assignment_reads_adds_and_stores_the_item():
    _, text = normalized(augmented_item_assignment)
    assert "y_item = y[1]\n    y_mul = v * 2.0\n    y_add = y_item + y_mul\n    y = adj.setitem(y, 1, y_add)" in text


def test_starred_target_takes_items_from_both_ends_and_a_list_slice():
    _, text = normalized(starred_unpacking)
    assert "a = xs[0]" in text and "b = xs[-1]" in text
    assert "rest_item = xs[1:-1]\n    rest = list(rest_item)" in text


def test_starred_display_concatenates_its_parts():
    _, text = normalized(starred_displays)
    assert "items_part_1 = list(xs)" in text
    assert "items_add = items_part + items_part_1\n    items = items_add + items_part_2" in text
    assert "pair_part = tuple(xs)" in text and "pair = pair_part + pair_part_1" in text


def test_while_test_is_computed_before_the_loop_and_at_the_end_of_the_body():
    node, _ = normalized(while_loop)
    loop = next(s for s in node.body if isinstance(s, gast.While))
    before = [syntax.unparse(s) for s in node.body[: node.body.index(loop)]]
    assert before == ["running_sum = np.sum(x)", "running = running_sum < 10.0"]
    assert syntax.unparse(loop.test) == "running"
    assert [syntax.unparse(s) for s in loop.body[-2:]] == ["running_sum = np.sum(x)", "running = running_sum < 10.0"]


def test_while_test_is_not_recomputed_after_a_break():
    node, _ = normalized(while_loop_with_break)
    loop = next(s for s in node.body if isinstance(s, gast.While))
    assert syntax.is_break_check(loop.body[-1])
    guard = loop.body[-2]
    assert syntax.unparse(guard) == "if not broke:\n    running = x < 10.0"


def test_tuple_loop_target_is_unpacked_at_the_start_of_the_body():
    node, text = normalized(tuple_loop_targets)
    first, second = [s for s in node.body if isinstance(s, gast.For)]
    assert syntax.unparse(first.target) == "a_b"
    assert syntax.unparse(first.body[0]) == "a, b = a_b"
    # enumerate and zip keep their structure: the pullback routes each item by position
    assert syntax.unparse(second.target) == "(i, (u, v))" and syntax.unparse(second.iter) == "enumerate(zip(xs, xs))"
