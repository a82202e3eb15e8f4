"""Edge cases of Python semantics: aliasing through containers and calls, nested functions, keywords.

Every test asserts the correct behaviour: the gradient check passes (value equals the plain
call's, gradient matches finite differences, nothing mutated), or adjoint refuses with one of
its own errors (`adjoint.AdjointError`, `TransformError` for the source) that points at the
user's code with a usable hint. A silent wrong answer or a crash inside adjoint is never fine.
"""

import copy
import io
import contextlib

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

X = np.array([0.3, -0.7, 0.5, 1.1, 0.2])
# away from integer/rounding boundaries of `10 * x` so finite differences are smooth
X_SMOOTH = np.array([0.33, -0.71, 0.52, 1.13, 0.21])
M = np.array([[0.3, -0.7, 0.4], [0.5, 1.1, -0.2]])


def correct_or_refused(f, *args):
    """The gradient check passes, or adjoint refuses with one of its own errors."""
    try:
        check_grad(f, *copy.deepcopy(args))
    except adjoint.AdjointError:
        pass


def refusal(f, *args):
    """The AdjointError adjoint raises for `f`, or None if the gradient check passes."""
    try:
        check_grad(f, *copy.deepcopy(args))
    except adjoint.AdjointError as error:
        return error
    return None


# ---- item updates and aliasing: silently wrong values ---------------------------------------


def update_after_max_with_key(x):
    y = x * 1.0
    w = x * 0.5
    z = max(y, w, key=lambda a: a[0])
    z[0] = 9.0
    return np.sum(y * x)


def augmented_after_min_with_key(x):
    y = x * 1.0
    w = x * 0.5
    z = min([y, w], key=lambda a: -a[0])
    z += 1.0
    return np.sum(y * x)


@pytest.mark.parametrize("f", [update_after_max_with_key, augmented_after_min_with_key])
def test_update_of_array_returned_by_max_or_min(f):
    """`z = max(y, w, key=...)` returns `y` itself, but the alias check treats built-ins as fresh: `z[0] = 9.0` silently leaves `y` unchanged."""
    correct_or_refused(f, X)


def rows_of_list_of_array_updated(m):
    y = m * 1.0
    rows = list(y)
    rows[0][0] = 9.0
    return np.sum(y * m)


def rows_of_list_of_array_augmented(m):
    y = m * 1.0
    rows = list(y)
    rows[0] += 1.0
    return np.sum(y * m)


def shallow_list_copy_then_item_update(x):
    y = x * 1.0
    lst = [y, x]
    lst2 = list(lst)
    lst2[0][0] = 9.0
    return np.sum(y * x)


def tuple_of_list_then_update(x):
    y = x * 1.0
    t = tuple([y])
    y[0] = 9.0
    return np.sum(t[0] * x)


def list_of_tuple_then_augmented(x):
    y = x * 1.0
    lst = list((y, x))
    y += 1.0
    return np.sum(lst[0] * x)


@pytest.mark.parametrize("f, arg", [
    (rows_of_list_of_array_updated, M), (rows_of_list_of_array_augmented, M),
    (shallow_list_copy_then_item_update, X), (tuple_of_list_then_update, X),
    (list_of_tuple_then_augmented, X),
])
def test_list_and_tuple_builtins_share_their_items(f, arg):
    """`list(y)` / `tuple(lst)` hold the same arrays (row views, shallow copies), but are treated as fresh: updates through or around them are silently lost."""
    correct_or_refused(f, arg)


def astype_without_copy_then_update(x):
    y = x * 1.0
    z = y.astype(np.float64, copy=False)
    z[0] = 9.0
    return np.sum(y * x)


def test_astype_copy_false_returns_the_same_array():
    """`y.astype(float64, copy=False)` is `y` itself, but `astype` is listed as a fresh method: the update is silently lost."""
    correct_or_refused(astype_without_copy_then_update, X)


def np_array_without_copy_then_update(x):
    y = x * 1.0
    z = np.array(y, copy=False)
    z[0] = 9.0
    return np.sum(y * x)


def test_np_array_copy_false_returns_the_same_array():
    """`np.array(y, copy=False)` is `y` itself, but `np.array` is treated as returning a new array: the update is silently lost."""
    correct_or_refused(np_array_without_copy_then_update, X)


def float_written_into_int_array(x):
    y = np.zeros(3, dtype=int)
    y[0] = x[0] * 10.0
    return np.sum(y * x[:3])


def swap_rows_by_tuple_assignment(m):
    y = m * 1.0
    y[0], y[1] = y[1], y[0]
    return np.sum(y * m * np.arange(3.0))


def row_views_in_list_then_base_updated(m):
    y = m * 1.0
    rows = [y[0], y[1]]
    y[1, 1] = 7.0
    return np.sum(rows[1] * m[1])


def row_view_in_tuple_then_base_updated(m):
    y = m * 1.0
    t = (y[0], 1)
    y[0, 0] = 7.0
    return np.sum(t[0] * m[0])


def row_view_in_dict_then_base_updated(m):
    y = m * 1.0
    d = {"a": y[0]}
    y[0, 0] = 9.0
    return np.sum(d["a"] * m[0])


@pytest.mark.parametrize("f", [swap_rows_by_tuple_assignment, row_views_in_list_then_base_updated,
                               row_view_in_tuple_then_base_updated, row_view_in_dict_then_base_updated])
def test_row_views_held_by_a_display(f):
    """Row views `y[0]` written into a tuple/list display are not tracked as aliases of `y` (`r = y[0]` alone is): `y[0], y[1] = y[1], y[0]` swaps instead of duplicating row 1, and later updates of `y` do not show through the display: silently wrong value."""
    correct_or_refused(f, M)


def floats_written_into_bool_array(x):
    y = np.zeros(5, dtype=bool)
    y[:] = x
    return np.sum(y * x)


def floats_written_into_int_row(x):
    y = np.zeros((2, 3), dtype=np.int32)
    y[0] = x[:3] * 10
    return np.sum(y[0] * x[:3])


@pytest.mark.parametrize("f", [float_written_into_int_array, floats_written_into_bool_array,
                               floats_written_into_int_row])
def test_setitem_into_integer_array_carries_no_gradient(f):
    """`y[0] = x[0] * 10.0` into an int (or bool) array truncates (a step function), yet the gradient flows through it: silently wrong gradient."""
    correct_or_refused(f, X_SMOOTH)


# ---- nested functions ----------------------------------------------------------------------


def nested_mask_built_through_view(x):
    def mask():
        m = np.ones(5)
        view = m[2:]
        view[0] = 0.0
        return m
    return np.sum(x * mask())


def nested_update_through_alias(x):
    def inner(v):
        w = v * 1.0
        u = w
        u[0] = 3.0
        return w
    return np.sum(inner(x) * x)


def nested_augmented_slice_view(x):
    def inner(v):
        w = v * 1.0
        u = w[1:3]
        u += 1.0
        return w
    return np.sum(inner(x) * x)


def nested_dict_through_alias(x):
    def inner(v):
        d = {}
        e = d
        e["k"] = v * 2.0
        return d["k"]
    return np.sum(inner(x))


def closure_counts_its_calls(x):
    counts = [0]
    def g(v):
        counts[0] = counts[0] + 1
        return v * 2.0
    s = g(x[0]) + g(x[1])
    return s * counts[0]


@pytest.mark.parametrize("f", [nested_mask_built_through_view, nested_update_through_alias,
                               nested_augmented_slice_view, nested_dict_through_alias,
                               closure_counts_its_calls])
def test_statements_of_nested_def_are_not_dropped(f):
    """`optimize` removes "dead" assignments from the first nested `def` (taking it for the pullback): writes through views, aliases or captured containers vanish (wrong value) or leave names unbound (UnboundLocalError, KeyError)."""
    correct_or_refused(f, X)


def shout(v):
    print("shout")
    return v


def nested_def_calls_for_effect(x):
    def inner(v):
        unused = shout(v)
        return v * 2.0
    return np.sum(inner(x))


def test_effectful_call_in_nested_def_runs():
    """An assignment whose name is unused in a nested `def` (`unused = shout(v)`) is dropped by `optimize`, so its print never happens."""
    plain = io.StringIO()
    with contextlib.redirect_stdout(plain):
        nested_def_calls_for_effect(X.copy())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        adjoint.pullback(nested_def_calls_for_effect, X.copy())
    assert out.getvalue() == plain.getvalue()


def nested_def_without_rule(x):
    def inner(v):
        return np.unwrap(v)
    return np.sum(inner(x))


def test_problem_in_nested_def_points_at_the_users_file():
    """A refusal inside a nested `def` reports the generated code (`<adjoint f #1>:9`) and an internal name (`__adjoint_closure__...f_forward.<locals>.inner`) instead of the user's file and line."""
    error = refusal(nested_def_without_rule, X)
    assert isinstance(error, adjoint.TransformError)
    line = nested_def_without_rule.__code__.co_firstlineno + 2
    assert all(p.filename == __file__ and p.line == line for p in error.problems), str(error)
    assert "__adjoint" not in str(error)


def comprehension_target_shadows_iterable(x):
    return sum(x * x for x in x) + np.sum(x)


def list_comprehension_target_shadows_iterable(x):
    t = [x for x in x[:2]]
    return t[0] * t[1]


def nested_comprehension_reuses_name(m):
    out = [[v * 2.0 for v in v] for v in m]
    return sum(out[1]) * np.sum(m)


@pytest.mark.parametrize("f, arg", [(comprehension_target_shadows_iterable, X),
                                    (list_comprehension_target_shadows_iterable, X),
                                    (nested_comprehension_reuses_name, M)])
def test_comprehension_target_named_like_its_iterable(f, arg):
    """`sum(x * x for x in x)`: the iterable is read in the enclosing scope, but adjoint's loop reads the renamed target (UnboundLocalError)."""
    correct_or_refused(f, arg)


# ---- loops and comprehensions refused although supported ------------------------------------


def accumulate_in_nested_loops(x):
    y = np.zeros(3)
    for i in range(2):
        for j in range(3):
            y[j] = y[j] + x[j] * (i + 1.0)
    return np.sum(y * y)


def accumulate_2d_in_nested_loops(x):
    y = np.zeros((2, 3))
    for i in range(2):
        for j in range(3):
            y[i, j] = y[i, j] + x[j] * (i + 1.0)
    return np.sum(y * y)


@pytest.mark.parametrize("f", [accumulate_in_nested_loops, accumulate_2d_in_nested_loops])
def test_item_update_reading_the_same_item_in_nested_loops(f):
    """`y[j] = y[j] + v` inside nested loops is refused ("`y_2` may be reached through `y_item_2`"), although `y[j] += v` and the single loop work."""
    check_grad(f, X.copy())


def enumerate_with_start_keyword(x):
    s = 0.0
    for i, v in enumerate(x, start=1):
        s = s + i * v * v
    return s


def test_enumerate_start_keyword():
    """`enumerate(x, start=1)` is refused ("creating a `enumerate` object"), while `enumerate(x, 1)` works."""
    check_grad(enumerate_with_start_keyword, X.copy())


def comprehension_unpacks_pairs_from_list(x):
    pairs = [(x[0], x[1]), (x[2], x[3])]
    return sum(a * b for a, b in pairs)


def comprehension_unpacks_rows(m):
    return sum(a * b for a, b in m)


def comprehension_over_dict_items(x):
    d = {"a": x[0], "b": x[1]}
    return sum(v * 2.0 for k, v in d.items())


@pytest.mark.parametrize("f, arg", [(comprehension_unpacks_pairs_from_list, X),
                                    (comprehension_unpacks_rows, np.array([[0.3, 0.4], [0.5, -0.2]])),
                                    (comprehension_over_dict_items, X)])
def test_comprehension_with_tuple_target(f, arg):
    """`sum(a * b for a, b in pairs)` / `... for k, v in d.items()` are refused ("cannot follow the gradient through this loop's iterable") though the same `for` loop works."""
    check_grad(f, arg.copy())


def zip_without_unpacking(x):
    s = 0.0
    for v in zip(x, x * 2.0):
        s = s + v[0] * v[1]
    return s


def test_refused_loop_iterable_is_located_at_the_loop():
    """Refusing `for v in zip(...)`, the caret sits at column 1 of the line (not the `for`) and the hint recommends `zip`, which it already is."""
    error = refusal(zip_without_unpacking, X)
    if error is None:
        return
    problem = error.problems[0]
    assert problem.col == 4, str(error)
    assert "zip" not in problem.hint, str(error)


def tuple_augmented(x):
    t = (x[0],)
    t += (x[1] * 2.0,)
    return t[0] * t[1]


def test_augmented_assignment_on_tuple():
    """`t += (v,)` on a tuple display (immutable: always a rebinding) is refused, claiming `t` "comes from a call that may return an array"."""
    check_grad(tuple_augmented, X.copy())


# ---- calls, recursion ------------------------------------------------------------------------


def deep(n, v):
    if n == 0:
        return v
    return deep(n - 1, v * 1.0001)


def deep_recursion(x):
    return np.sum(deep(600, x))


def test_recursion_as_deep_as_plain_python():
    """Recursion 600 levels deep works in plain Python, but adjoint uses two frames per level (`vjp` + forward) and raises RecursionError."""
    deep_recursion(X.copy())  # fine in plain Python
    correct_or_refused(deep_recursion, X)


def defaulted_varargs_varkw(a, b=1.0, *c, **e):
    return a * 2.0 + e["z"]


def calls_with_mapping_past_a_default(x):
    return defaulted_varargs_varkw(x[0], **{"z": x[4]})


def test_varkw_gradient_when_a_default_is_used():
    """`g(a, b=1.0, *c, **e)` called as `g(x[0], **{"z": x[4]})`: the cotangent of `e["z"]` is dropped (silently zero gradient for x[4])."""
    correct_or_refused(calls_with_mapping_past_a_default, X)


def shifted(a, b, scale=1.0, shift=0.0):
    return np.sum(a * b * scale) + shift


def passes_mapping_to_named_parameter(x):
    return shifted(x, x[0], **{"shift": x[1]})


def test_mapping_into_named_parameter():
    """README: keyword arguments carry gradients when "passed with `**` to your own functions", yet `f(x, **{"shift": x[1]})` is refused ("pass them by position")."""
    check_grad(passes_mapping_to_named_parameter, X.copy())


def keyword_only(x, *, k):
    return np.sum(x * k)


def calls_keyword_only(x):
    return keyword_only(x, k=x[0])


def test_keyword_only_refusal_hint_is_possible():
    """Refusing a differentiable value passed to a keyword-only parameter, the hint says "pass them by position", which Python forbids."""
    error = refusal(calls_keyword_only, X)
    if error is not None:
        assert "by position" not in str(error), str(error)


# ---- messages --------------------------------------------------------------------------------


def closures_over_comprehension_variable(x):
    fs = [lambda v: v * w for w in x]
    return sum(f(x[0]) for f in fs)


def item_update_inside_dict(x):
    y = x * 1.0
    d = {"k": y}
    d["k"][0] = 9.0
    return np.sum(y * x)


GLOBAL_WEIGHTS = np.ones(5)


def updates_global_array(x):
    GLOBAL_WEIGHTS[0] = x[0]
    return np.sum(GLOBAL_WEIGHTS * x)


@pytest.mark.parametrize("f", [closures_over_comprehension_variable, item_update_inside_dict,
                               updates_global_array])
def test_refusals_name_the_users_variables(f):
    """Refusals name adjoint's internal SSA/temporary names (`w_1`, `d_item`, `d_1`, `global_weights` for `GLOBAL_WEIGHTS`, with the hint `global_weights = global_weights.copy()`) that do not exist in the user's code."""
    error = refusal(f, X)
    if error is None:
        return
    for name in ("w_1", "d_item", "d_1", "global_weights"):
        assert f"`{name}`" not in str(error), str(error)


def extend_list(x):
    lst = [x[0], x[1]]
    lst.extend([x[2], x[3]])
    return sum(lst) * lst[3]


def test_list_method_refusal_hint_is_possible():
    """Refusing `lst.extend([...])`, the hint says "use its result, or mark the function @adjoint.non_differentiable": `extend` returns None and is a built-in method."""
    error = refusal(extend_list, X)
    if error is not None:
        assert "non_differentiable" not in str(error), str(error)


# ---- values the pullback reads, updated later by calls that run plainly ----------------------


class Scratch:
    def __init__(self):
        self.buf = np.zeros(3)

    def step(self, i):
        self.buf[:] = i + 1.0
        return self.buf


def method_refills_buffer_in_loop(x):
    o = Scratch()
    s = 0.0
    for i in range(3):
        w = o.step(i)
        s = s + np.sum(x[:3] * x[:3] * w)
    return s


def method_refills_buffer_after_use(x):
    o = Scratch()
    w = o.step(0)
    s = np.sum(x[:3] * x[:3] * w)
    o.step(5)
    return s


def write_into(i, out):
    out[:] = i + 1.0
    return out


def helper_refills_argument_in_loop(x):
    buf = np.zeros(3)
    s = 0.0
    for i in range(3):
        w = write_into(i, buf)
        s = s + np.sum(x[:3] * x[:3] * w)
    return s


@adjoint.non_differentiable
def constant_into(i, out):
    out[:] = i + 1.0
    return out


def non_differentiable_refills_argument_in_loop(x):
    buf = np.zeros(3)
    s = 0.0
    for i in range(3):
        w = constant_into(i, buf)
        s = s + np.sum(x[:3] * x[:3] * w)
    return s


CACHE = {"w": np.zeros(3)}


def cached_weights(i):
    w = CACHE["w"]
    w[:] = i + 1.0
    return w


def global_cache_refilled_in_loop(x):
    s = 0.0
    for i in range(3):
        w = cached_weights(i)
        s = s + np.sum(x[:3] * x[:3] * w)
    return s


@pytest.mark.parametrize("f", [method_refills_buffer_in_loop, method_refills_buffer_after_use,
                               helper_refills_argument_in_loop, non_differentiable_refills_argument_in_loop,
                               global_cache_refilled_in_loop])
def test_constant_array_refilled_by_a_plain_call_after_the_pullback_saved_it(f):
    """A constant array the pullback reads (tape or closure) is refilled in place by a call that runs plainly (a method, a helper writing `out[:]`, a non-differentiable function, a global cache): silently wrong gradient."""
    correct_or_refused(f, X)


# ---- more nested-function and conversion cases -----------------------------------------------


def twice(fn):
    def wrapped(v):
        return fn(fn(v))
    return wrapped


def decorated_nested_def(x):
    @twice
    def g(v):
        return v * x[0]
    return np.sum(g(x))


def test_decorated_nested_def_closing_over_input():
    """`@twice def g(v): return v * x[0]`: the pullback looks for `x` among the captures of the decorator's wrapper (which holds `fn`), so the gradient through `x[0]` is dropped: silently wrong."""
    correct_or_refused(decorated_nested_def, X)


def numpy_scalar_constructor(x):
    return np.float64(np.sum(x * x)) * 2.0


def numpy_scalar_item(x):
    s = np.sum(x * x)
    return s.item() * 2.0


@pytest.mark.parametrize("f", [numpy_scalar_constructor, numpy_scalar_item])
def test_numpy_scalar_conversions(f):
    """`np.float64(s)` is refused as "creating a `np.float64` object ... gradients cannot flow through an object's attributes", and `s.item()` has no rule, though `float(s)` works."""
    check_grad(f, X.copy())


def last_loop_row_used_after_update(m):
    y = m * 1.0
    for row in y:
        pass
    y[1, 0] = 9.0
    return np.sum(row * m[1])


def loop_rows_saved_then_base_updated(m):
    y = m * 1.0
    saved = []
    for row in y:
        saved.append(row)
    y[0, 0] = 9.0
    return np.sum(saved[0] * m[0])


def comprehension_rows_then_base_updated(m):
    y = m * 1.0
    saved = [r for r in y]
    y[0, 0] = 9.0
    return np.sum(saved[0] * m[0])


@pytest.mark.parametrize("f", [last_loop_row_used_after_update, loop_rows_saved_then_base_updated,
                               comprehension_rows_then_base_updated])
def test_loop_rows_outliving_the_loop_alias_the_array(f):
    """A row view bound by `for row in y` (or a comprehension) that outlives the loop still shows later updates of `y` in Python; adjoint's copy does not: silently wrong value."""
    correct_or_refused(f, M)


def stack_of_generator(x):
    return np.sum(np.stack(v * x for v in x[:2]))


def test_generator_passed_to_np_stack_fails_like_python():
    """`np.stack(v * x for v in xs)` raises TypeError in NumPy (it needs a sequence), but adjoint turns the generator into a list and returns a value: the differentiated function accepts code the plain one rejects."""
    with pytest.raises(TypeError):
        stack_of_generator(X.copy())
    with pytest.raises((TypeError, adjoint.AdjointError)):
        adjoint.pullback(stack_of_generator, X.copy())


def double(v):
    return v * 2.0


def result_assigned_but_unused(x):
    unused = double(x)
    return np.sum(x)


def test_call_whose_assigned_result_is_unused():
    """`unused = double(x)` (a pure helper, its result assigned but never read) is refused as "made for its effect on a differentiable value" with the hint "use its result"; it should simply run with no gradient through it."""
    check_grad(result_assigned_but_unused, X.copy())
