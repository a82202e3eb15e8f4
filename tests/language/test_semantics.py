"""Python semantics adjoint keeps or refuses: aliasing, late binding, unbound names, generators, with.

Each test names a case a naive transform gets wrong and asserts the correct behaviour: the gradient check passes (the
value equals the plain call's, the gradient matches finite differences, nothing is mutated), or
adjoint refuses the function with an `adjoint.AdjointError` (a `TransformError` for the source).
A silent wrong answer is never acceptable.
"""

import contextlib
import copy

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

X = np.array([0.3, -0.7, 0.5, 1.1, 0.2])
M = np.array([[0.3, -0.7], [0.5, 1.1]])


def correct_or_refused(f, *args):
    """The gradient check passes, or adjoint refuses with one of its own errors."""
    try:
        check_grad(f, *copy.deepcopy(args))
    except adjoint.AdjointError:
        pass


# ---- item assignment through another name (aliasing and views) -------------------------------


def alias_then_setitem(a):
    b = a * 1.0
    c = b
    c[0] = 1.0
    return np.sum(b * a)


def test_setitem_through_alias():
    """`c = b; c[0] = 1.0` leaves `b` unchanged in adjoint's code (setitem copies): wrong value."""
    correct_or_refused(alias_then_setitem, X)


def slice_view_then_setitem(x):
    y = x * 1.0
    v = y[1:3]
    v[0] = 100.0
    return np.sum(y * x)


def test_setitem_through_slice_view():
    """Writing into a basic-slice view `v = y[1:3]; v[0] = ...` does not update `y`: wrong value."""
    correct_or_refused(slice_view_then_setitem, X)


def row_view_then_setitem(a):
    b = a * 1.0
    row = b[0]
    row[1] = 5.0
    return np.sum(b * a)


def test_setitem_through_row_view():
    """Writing into a row view `row = b[0]; row[1] = 5.0` does not update `b`: wrong value."""
    correct_or_refused(row_view_then_setitem, M)


def transpose_view_then_setitem(a):
    b = a * 1.0
    v = b.T
    v[0, 1] = 100.0
    return np.sum(b * a)


def test_setitem_through_transpose_view():
    """Writing into `v = b.T` does not update `b`: wrong value."""
    correct_or_refused(transpose_view_then_setitem, M)


def rows_mutated_in_loop(a):
    b = a * 1.0
    for row in b:
        row[0] = 0.0
    return np.sum(b * a)


def test_setitem_on_loop_rows():
    """`for row in b: row[0] = 0.0` updates `b` in Python but not in adjoint's code: wrong value."""
    correct_or_refused(rows_mutated_in_loop, M)


def list_alias_append(x):
    a = [x[0], x[1]]
    b = a
    b.append(x[2])
    return sum(a) * x[3]


def test_append_through_alias():
    """`b = a; b.append(v)` does not grow `a` in adjoint's code (append copies): wrong value."""
    correct_or_refused(list_alias_append, X)


def dict_alias_setitem(x):
    d = {"a": x[0]}
    e = d
    e["a"] = x[1] * 3.0
    return d["a"] * x[2]


def test_dict_setitem_through_alias():
    """`e = d; e['a'] = v` leaves `d` unchanged in adjoint's code: wrong value."""
    correct_or_refused(dict_alias_setitem, X)


def chained_assignment_then_setitem(x):
    a = b = x * 2.0
    a[0] = 1.0
    return np.sum(b * x)


def test_setitem_after_chained_assignment():
    """`a = b = x * 2.0; a[0] = 1.0` leaves `b` unchanged in adjoint's code: wrong value."""
    correct_or_refused(chained_assignment_then_setitem, X)


def array_in_list_setitem(x):
    y = x * 1.0
    lst = [y]
    lst[0][0] = 7.0
    return np.sum(y * x)


def test_setitem_into_array_held_by_list():
    """`lst = [y]; lst[0][0] = 7.0` updates `y` in Python, not in adjoint's code: wrong value."""
    correct_or_refused(array_in_list_setitem, X)


def iterate_array_while_updating(x):
    y = x * 1.0
    for i, v in enumerate(y):
        if i + 1 < len(y):
            y[i + 1] = y[i + 1] + v
    return np.sum(y * y)


def test_iterating_an_array_that_the_loop_updates():
    """Iterating `y` while assigning `y[i + 1]` sees the updates in Python, not in adjoint: wrong value."""
    correct_or_refused(iterate_array_while_updating, X)


def iterate_list_while_appending(x):
    lst = [x[0], x[1]]
    for v in lst:
        if len(lst) < 5:
            lst.append(v * 2.0)
    return sum(lst) * x[2]


def test_iterating_a_list_that_the_loop_appends_to():
    """Iterating `lst` while appending to it visits the new items in Python, not in adjoint."""
    correct_or_refused(iterate_list_while_appending, X)


def augmented_on_aliased_parameters(x, y):
    x += 1.0
    return np.sum(x * y)


def test_augmented_assignment_on_parameter_passed_twice():
    """`x += 1.0` on a parameter becomes `x = x + 1.0`; passed the same array as `x` and `y`, Python's `y` sees the update: wrong value."""
    a = X.copy()
    try:
        value, _ = adjoint.pullback(augmented_on_aliased_parameters, a, a)
    except adjoint.AdjointError:
        return
    b = X.copy()
    assert np.isclose(value, augmented_on_aliased_parameters(b, b))


def bump(v):
    v += 1.0
    return v * 2.0


def helper_updates_argument_in_place(x):
    y = x * 1.0
    z = bump(y)
    return np.sum(y * z)


def set_first(v, a):
    v[0] = a
    return np.sum(v)


def helper_assigns_into_argument(x):
    y = x * 1.0
    t = set_first(y, x[1] * 3.0)
    return np.sum(y * x) + t


def append_to(lst, v):
    lst.append(v)
    return len(lst)


def helper_appends_to_argument(x):
    lst = [x[0]]
    n = append_to(lst, x[1] * 2.0)
    return sum(lst) * n


@pytest.mark.parametrize("f", [helper_updates_argument_in_place, helper_assigns_into_argument,
                               helper_appends_to_argument])
def test_helper_that_updates_its_argument(f):
    """A called helper that updates its argument (`v += 1.0`, `v[0] = a`, `lst.append(v)`) does not update it in adjoint, but the caller reads it afterwards: wrong value."""
    correct_or_refused(f, X)


def augmented_after_append(x):
    a = x * 1.0
    rows = []
    rows.append(a)
    a += 1.0
    return np.sum(rows[0] * a)


def augmented_after_storing_in_list(x):
    a = x * 1.0
    rows = [None]
    rows[0] = a
    a += 1.0
    return np.sum(rows[0] * a)


def augmented_after_storing_in_dict(x):
    a = x * 1.0
    d = {}
    d["k"] = a
    a += 1.0
    return np.sum(d["k"] * a)


@pytest.mark.parametrize("f", [augmented_after_append, augmented_after_storing_in_list,
                               augmented_after_storing_in_dict])
def test_augmented_assignment_after_storing_in_container(f):
    """`a += 1.0` after `rows.append(a)` / `rows[0] = a` / `d['k'] = a` is accepted although the container holds the same array: wrong value."""
    correct_or_refused(f, X)


def augmented_on_loop_rows(a):
    b = a * 1.0
    for row in b:
        row += 1.0
    return np.sum(b * a)


def augmented_on_enumerated_rows(a):
    b = a * 1.0
    for i, row in enumerate(b):
        row *= i + 2.0
    return np.sum(b * a)


@pytest.mark.parametrize("f", [augmented_on_loop_rows, augmented_on_enumerated_rows])
def test_augmented_assignment_on_loop_rows(f):
    """`for row in b: row += 1.0` is rewritten `row = row + 1.0`, but `row` is a view Python updates `b` through: wrong value."""
    correct_or_refused(f, M)


# ---- in-place updates inside loops ------------------------------------------------------------


def weights_filled_in_loop(x):
    w = np.ones(3)
    s = 0.0
    for i in range(3):
        w.fill(i + 1.0)
        s = s + np.sum(x * x * w)
    return s


def weights_written_through_out_in_loop(x):
    w = np.ones(3)
    s = 0.0
    for i in range(3):
        np.multiply(w, 2.0, out=w)
        s = s + np.sum(x * w)
    return s


def index_filled_in_loop(x):
    idx = np.array([2, 0, 1])
    s = 0.0
    for i in range(3):
        idx.fill(i)
        s = s + np.sum(x[idx] * x[:3])
    return s


def index_list_reversed_in_loop(x):
    order = [0, 1, 2]
    s = 0.0
    for i in range(2):
        order.reverse()
        s = s * 0.5 + np.sum(x[order] * x[:3] ** 2)
    return s


@pytest.mark.parametrize("f", [weights_filled_in_loop, weights_written_through_out_in_loop,
                               index_filled_in_loop, index_list_reversed_in_loop])
def test_update_in_loop_before_the_read(f):
    """An in-place update (`w.fill`, `out=w`, `order.reverse()`) before the read in a loop body changes what the tape holds for earlier iterations: silently wrong gradient."""
    correct_or_refused(f, X[:3])


GLOBAL_WEIGHTS = np.ones(3)


def reset_global_weights():
    GLOBAL_WEIGHTS[:] = 1.0


def double_global_weights():
    GLOBAL_WEIGHTS[:] = GLOBAL_WEIGHTS * 2.0


def global_array_updated_by_helper(x):
    reset_global_weights()
    s = np.sum(x * x * GLOBAL_WEIGHTS)
    double_global_weights()
    return s


def test_global_array_updated_after_read():
    """A module-level array updated in place by a helper after the forward pass read it: the pullback reads the updated array, silently wrong gradient."""
    correct_or_refused(global_array_updated_by_helper, X[:3])


# ---- closures, defaults and nested definitions --------------------------------------------


def lambda_default_captures_value(x):
    fs = []
    y = x
    for i in range(3):
        y = y * 1.5
        fs.append(lambda v, y=y: v * y)
    return np.sum(fs[0](x) + fs[2](x))


def test_lambda_default_argument_carries_gradient():
    """A differentiable value bound as a lambda default (`y=y`, the late-binding refusal's own hint) gets no gradient: silently wrong gradient."""
    correct_or_refused(lambda_default_captures_value, X)


def def_default_captures_value(x):
    def g(v, s=x * 2.0):
        return v * s
    return np.sum(g(x))


def test_def_default_argument_carries_gradient():
    """`def g(v, s=x * 2.0)`: the gradient through the default value is dropped (silently wrong)."""
    correct_or_refused(def_default_captures_value, X)


def closure_called_in_loop_after_rebinding(x):
    w = x
    def g(v):
        return v * w
    s = x
    for i in range(3):
        s = g(s)
        w = w * 2.0
    return np.sum(s)


def test_closure_called_in_loop_sees_rebinding():
    """A closure called in a loop that rebinds its free name after the call sees the new value in Python; adjoint keeps the first: wrong value."""
    correct_or_refused(closure_called_in_loop_after_rebinding, X)


def closure_called_through_alias(x):
    y = x * 2.0
    g = lambda: y * x
    h = g
    y = x * 3.0
    return np.sum(h())


def closure_called_from_tuple(x):
    y = x * 2.0
    def g():
        return y * x
    funcs = (g,)
    y = x * 3.0
    return np.sum(funcs[0]())


def passthrough(f):
    return f


def closure_called_after_helper_returned_it(x):
    y = x * 2.0
    g = lambda: y * x
    box = passthrough(g)
    y = x * 3.0
    return np.sum(box())


@pytest.mark.parametrize("f", [closure_called_through_alias, closure_called_from_tuple,
                               closure_called_after_helper_returned_it])
def test_late_binding_check_follows_the_function_value(f):
    """The late-binding refusal misses a closure called through an alias, a tuple or a helper's result after its free name is rebound: wrong value."""
    correct_or_refused(f, X)


def def_redefined(x):
    def g(v):
        return v * 2.0
    a = g(x)
    def g(v):
        return v * x
    return np.sum(a + g(x))


def test_redefined_nested_function():
    """After a second `def g`, calls of `g` still run the first definition: wrong value."""
    correct_or_refused(def_redefined, X)


def def_in_both_branches(x, c):
    if c:
        def g(v):
            return v * 2.0
    else:
        def g(v):
            return v * x
    return np.sum(g(x))


def test_def_in_both_branches():
    """`def g` in both arms of an `if`: the `else` path crashes with UnboundLocalError."""
    correct_or_refused(def_in_both_branches, X, True)
    correct_or_refused(def_in_both_branches, X, False)


def recursive_closure(x):
    def rec(n, v):
        if n == 0:
            return v
        return rec(n - 1, v * x)
    return np.sum(rec(3, x))


def recursive_lambda(x):
    rec = lambda n, v: v if n == 0 else rec(n - 1, v * x)
    return np.sum(rec(3, x))


@pytest.mark.parametrize("f", [recursive_closure, recursive_lambda])
def test_recursive_closure_over_differentiable_value(f):
    """A recursive nested function closing over `x` sends adjoint into infinite recursion (RecursionError)."""
    correct_or_refused(f, X)


# ---- statements -----------------------------------------------------------------------------


def uses_match(x, k):
    match k:
        case 0:
            y = x * 2.0
        case _:
            y = x * 3.0
    return np.sum(y)


def test_match_statement():
    """A `match` statement is passed through untouched and the gradient is silently zero."""
    correct_or_refused(uses_match, X, 0)
    correct_or_refused(uses_match, X, 1)


@contextlib.contextmanager
def doubled(v):
    yield v * 2.0


def with_as_differentiable(x):
    with doubled(x) as c:
        y = x * c
    return np.sum(y)


def with_as_rebinds_name(x):
    c = x * 5.0
    with doubled(1.0) as c:
        y = x * 1.0
    return np.sum(c * y)


def with_as_in_loop(x):
    s = 0.0
    c = 0.0
    for i in range(3):
        s = s + np.sum(x * c)
        with doubled(i * 1.0) as c:
            s = s * 0.5
    return s


@pytest.mark.parametrize("f", [with_as_differentiable, with_as_rebinds_name, with_as_in_loop])
def test_with_as_target(f):
    """`with cm(...) as c:`: the gradient through a differentiable `cm(x)` is dropped, and a rebound or loop-carried `c` is read from the wrong binding."""
    correct_or_refused(f, X)


def while_test_with_break(x):
    y = x
    k = 0
    while k < 5:
        y = y * x
        k = k + 1
        if np.sum(y) < 0.01:
            break
    return np.sum(y)


def test_while_with_condition_and_break():
    """`while k < 5: ... if c: break` crashes the compiler with KeyError: 'running'."""
    correct_or_refused(while_test_with_break, X)


def while_else_with_break(x):
    y = x
    k = 0
    while k < 3:
        y = y * x
        k += 1
        if np.sum(y) > 100.0:
            break
    else:
        y = y + 1.0
    return np.sum(y)


def test_while_else_with_break():
    """`while cond: ... break ... else:` crashes the compiler with KeyError: 'running'."""
    correct_or_refused(while_else_with_break, X)


def return_nested_in_else(x, flag):
    y = x * 2.0
    if flag > 0:
        y = y * 3.0
    else:
        if flag < -1:
            return np.sum(y)
        y = y + x
    return np.sum(y * x)


def test_early_return_nested_in_else_branch():
    """An early `return` nested in an `else` arm: the pullback reads the unbound result name (NameError) when that return is not taken."""
    correct_or_refused(return_nested_in_else, X, 1)
    correct_or_refused(return_nested_in_else, X, -1)
    correct_or_refused(return_nested_in_else, X, -2)


def two_nested_returns(x, a, b):
    y = x * 2.0
    if a > 0:
        if b > 0:
            return np.sum(y)
        y = y * x
    if b > 1:
        if a > 1:
            return np.sum(y * 3.0)
        y = y + 1.0
    return np.sum(y * x)


def test_two_nested_early_returns():
    """Two early returns in nested ifs: the forward pass copies the unbound result name (UnboundLocalError) when neither is taken."""
    correct_or_refused(two_nested_returns, X, 1, -1)
    correct_or_refused(two_nested_returns, X, -1, 2)


def bound_in_one_arm_then_loop(x, flag):
    if flag:
        c = x * 2.0
    for i in range(2):
        c = x * (i + 1.0)
    return np.sum(c)


def test_name_bound_in_one_arm_then_assigned_in_loop():
    """A name bound in one arm of an `if` then assigned in a loop: the loop's entry copy reads it unbound (UnboundLocalError)."""
    correct_or_refused(bound_in_one_arm_then_loop, X, True)
    correct_or_refused(bound_in_one_arm_then_loop, X, False)


def bound_in_one_arm_then_other_arm(x, flag):
    if flag:
        c = x * 2.0
    if not flag:
        c = x * 3.0
    return np.sum(c * x)


def test_name_bound_in_complementary_branches():
    """`if flag: c = ...` then `if not flag: c = ...`: the join copy reads an unbound `c` (NameError)."""
    correct_or_refused(bound_in_one_arm_then_other_arm, X, True)
    correct_or_refused(bound_in_one_arm_then_other_arm, X, False)


def loop_variable_reused(x, flag):
    s = 0.0
    if flag:
        for j in range(2):
            s = s + x[j]
    for i in range(2):
        for j in range(2):
            s = s + x[j] * x[i]
    for j in range(1):
        if j < 1:
            s = s * 2.0
    return s


def test_loop_variable_reused_after_conditional_loop():
    """A loop variable reused by several loops, the first inside an `if`: the forward pass copies an unbound name (UnboundLocalError)."""
    correct_or_refused(loop_variable_reused, X, True)
    correct_or_refused(loop_variable_reused, X, False)


def zero_iterations_unbound(x, n):
    for i in range(n):
        z = x * i
    return np.sum(z)


def test_zero_iteration_loop_leaves_name_unbound():
    """A name first assigned in a loop that runs zero times is unbound in Python; adjoint binds None and silently returns None."""
    with pytest.raises((UnboundLocalError, NameError, adjoint.AdjointError)):
        adjoint.pullback(zero_iterations_unbound, X.copy(), 0)


# ---- generators ---------------------------------------------------------------------------


def generator_reads_later_binding(x):
    w = 2.0
    g = (v * w for v in x)
    w = 3.0
    return sum(g)


def test_generator_is_lazy():
    """A generator expression runs when consumed (seeing `w = 3.0`) but adjoint runs it where written: wrong value."""
    correct_or_refused(generator_reads_later_binding, X)


def generator_consumed_twice(x):
    g = (v * v for v in x)
    a = sum(g)
    b = sum(g)
    return a + b


def test_generator_is_exhausted_after_one_pass():
    """A generator consumed twice is empty the second time; adjoint's list is not: wrong value."""
    correct_or_refused(generator_consumed_twice, X)


def sum_of_lists(x):
    lists = [[x[0]], [x[1], x[2]]]
    flat = sum(lists, [])
    return flat[0] * flat[2]


def test_builtin_sum_concatenating_lists():
    """`sum(lists, [])` (list concatenation) gets a silently zero gradient."""
    correct_or_refused(sum_of_lists, X)


# ---- calls and methods --------------------------------------------------------------------


def index_by_argmax_method(x):
    return x[x.argmax()] * 2.0


def truth_of_any_method(x):
    if x.any():
        return np.sum(x * 2.0)
    return np.sum(x)


def sort_by_argsort_method(x):
    idx = x.argsort()
    return np.sum(x[idx] * np.arange(5.0))


def loop_over_dict_keys(x):
    d = {"a": x[0], "b": x[1] * 3.0}
    s = 0.0
    for k in d.keys():
        s = s + d[k] ** 2
    return s


@pytest.mark.parametrize("f", [index_by_argmax_method, truth_of_any_method, sort_by_argsort_method,
                               loop_over_dict_keys])
def test_methods_whose_results_carry_no_gradient(f):
    """`x.argmax()`, `x.any()`, `x.argsort()`, `d.keys()` with used results are refused as "made for its effect" (`np.argmax(x)` works)."""
    check_grad(f, X.copy())


def keep(k):
    return k != 1


def predicate_after_index_read(x):
    s = 0.0
    for k in range(4):
        s = s + x[k] * 2.0
        if keep(k):
            s = s * x[k]
    return s


def test_user_predicate_on_an_int_used_as_index():
    """`if keep(k):` after `x[k]` is refused with the bogus "this updates `k` after a differentiated operation used it"."""
    check_grad(predicate_after_index_read, X.copy())


class Scale:
    def __init__(self, s):
        self.s = s

    def __call__(self, x):
        return np.tanh(x * self.s)


SCALE = Scale(3.0)


def calls_global_callable_object(x):
    return np.sum(SCALE(x))


def test_global_callable_object():
    """A module-level object with `__call__` is refused ("no rule for `SCALE`") though the same object created locally works."""
    check_grad(calls_global_callable_object, X.copy())


def takes_kwargs(a, **kw):
    return a * kw["b"] + kw["c"]


def passes_keywords(x, y):
    return np.sum(takes_kwargs(x, b=y, c=x * y))


def test_keyword_refusal_points_at_the_keyword():
    """Refusing a differentiable keyword argument `c=x * y`, the problem points at the `def` line instead of the call."""
    try:
        check_grad(passes_keywords, X.copy(), X * 2.0)
    except adjoint.TransformError as error:
        call_line = passes_keywords.__code__.co_firstlineno + 1
        assert all(p.line == call_line for p in error.problems), str(error)


def compares_a_name_bound_on_one_path(x, flag):
    if flag:
        y = x * 2.0
    if y == 3.0:
        return x
    return x * y


def test_comparing_an_unbound_name_fails_as_in_python():
    """`==` on a name no path bound must raise, not compare a placeholder."""
    with pytest.raises(UnboundLocalError):
        adjoint.grad(compares_a_name_bound_on_one_path)(1.5, False)
    check_grad(compares_a_name_bound_on_one_path, 1.2, True)


def branch_temporaries_in_a_loop(x):
    s = 0.0
    for i in range(3):
        if i % 2:
            s = s + x * i
        else:
            s = s - x
    return s


def test_temporaries_of_one_arm_are_not_placeholders_in_other_arms():
    """A value computed and used inside one arm needs no `adj.unbound` in the other arm."""
    check_grad(branch_temporaries_in_a_loop, 0.7)
    assert "unbound" not in adjoint.source(branch_temporaries_in_a_loop)
