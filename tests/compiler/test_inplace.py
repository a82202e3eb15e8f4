"""compiler.inplace: updates and effect-only calls adjoint cannot reproduce are refused."""

import logging
import numpy as np
import pytest

import adjoint
from adjoint import TransformError
from adjoint.testing import check_grad

RNG = np.random.default_rng(0)


# 3. `a = b = expr; a += ...`: a and b are one array, the in-place update is not refused.
def _chained_then_augmented(x):
    a = b = x * 2.0
    a += 1.0
    return np.sum(a * b)


def test_chained_assignment_then_augmented_assignment_is_refused():
    # plain Python updates the one array both names hold; adjoint does not mutate, so it refuses
    with pytest.raises(adjoint.TransformError, match=r"write `a = a \+ \.\.\.`"):
        adjoint.grad(_chained_then_augmented)(RNG.normal(size=3))


# 4. `y = x[0:2]; y += ...`: y is a view of x, the in-place update is not refused.
def _view_then_augmented(x):
    y = x[0:2]
    y += 1.0
    return np.sum(x * x)


def test_augmented_assignment_on_a_view_is_refused():
    # plain Python updates x through the view y; adjoint does not mutate, so it refuses
    with pytest.raises(adjoint.TransformError, match="another name or view"):
        adjoint.grad(_view_then_augmented)(RNG.normal(size=3))


# 5. Expression statements that mutate a differentiated array run unchecked.
def _in_place_relu(x):
    h = x * 2.0
    np.maximum(h, 0.0, out=h)
    return np.sum(h)


def test_in_place_update_by_an_expression_statement_is_refused():
    # the call updates h through out=; differentiating around it would give 2 everywhere
    with pytest.raises(adjoint.TransformError, match="out="):
        adjoint.grad(_in_place_relu)(np.array([-1.0, 2.0]))


def aliased_update(x):
    y = x
    x += 1.0
    return np.sum(y * x)


def test_in_place_update_of_a_shared_array_is_refused_with_the_fix():
    with pytest.raises(adjoint.TransformError, match=r"write `x = x \+ \.\.\.`"):
        adjoint.grad(aliased_update)(np.ones(2))


def test_in_place_update_of_an_unshared_name_is_a_rebinding():
    def f(x, d):
        h = x * 1.0
        h += d
        h *= 2.0
        return np.sum(h ** 2)

    check_grad(f, np.ones(2), np.array([0.5, -1.0]))


def test_in_place_update_of_a_parameter_computes_a_new_array():
    # `x += y` on a parameter is `x = x + y`: the caller's array is never updated
    def f(x, y):
        x += y
        return np.sum(x * y)

    x, y = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    check_grad(f, x, y)
    value, back = adjoint.pullback(f, x, y)
    x_bar, y_bar = back(1.0)
    np.testing.assert_allclose(value, np.sum((x + y) * y))
    np.testing.assert_allclose(x_bar, y)
    np.testing.assert_allclose(y_bar, x + 2 * y)
    np.testing.assert_array_equal(x, [1.0, -2.0])  # unchanged by the forward pass and the pullback


def test_in_place_update_of_a_parameter_aliased_inside_the_function_is_refused():
    # `y` would see the update in plain Python; adjoint's new array would not reach it
    def f(x):
        y = x
        x += 1.0
        return np.sum(y)

    with pytest.raises(adjoint.TransformError, match="another name or view") as info:
        adjoint.grad(f)(np.ones(2))
    assert info.value.problems[0].line == f.__code__.co_firstlineno + 2  # at `x += 1.0`


def test_effect_only_call_with_unused_result_is_refused():
    def record(values):
        values.sort()

    def f(x):
        h = x * 2.0
        _ = record(h)
        return np.sum(h)

    with pytest.raises(adjoint.TransformError, match="made for its effect"):
        adjoint.grad(f)(np.ones(2))


def test_unused_pure_numpy_result_is_fine():
    def f(x):
        unused = np.exp(x)
        return np.sum(x * 3.0)

    check_grad(f, np.array([0.5, 1.0]))


X = np.array([0.3, 0.7, -0.4])


# 1. `x += y` on a parameter is assumed unaliased, but the caller may pass one array twice.
def _update_param(x, y):
    x += y
    return np.sum(x * y)


def test_augmented_assignment_on_parameter_aliased_by_caller_is_refused():
    # A plain call with `a` twice would update `a` and return 20; adjoint's copy would give 10.
    a = np.array([1.0, 2.0])
    with pytest.raises(adjoint.AdjointError, match="shares its memory"):
        adjoint.pullback(_update_param, a, a)
    np.testing.assert_array_equal(a, [1.0, 2.0])
    check_grad(_update_param, a, a.copy())  # separate arrays: differentiated, `a` left unchanged


# 2. In-place effects through an *assignment* (`out=`) are not refused, only expression statements.
def _out_through_assignment(x):
    h = x * 1.0
    y = np.sin(h)
    _ = np.maximum(h, 0.0, out=h)
    return np.sum(y)


def test_out_argument_in_assignment_statement():
    # expected: TransformError (like `np.maximum(h, 0, out=h)` alone) or cos(x); actual: cos(max(x, 0)), silently
    with pytest.raises(adjoint.TransformError, match="out="):
        adjoint.grad(_out_through_assignment)(X)

# 3. Reading `h.shape` counts as aliasing `h`, so an ordinary `h *= 2.0` is refused.
def _shape_then_update(x):
    h = x * 1.0
    n = h.shape[0]
    h *= 2.0
    return np.sum(h) / n


def test_shape_read_does_not_alias():
    # expected: gradient 2/n everywhere; actual: TransformError "may also be reached through another name"
    check_grad(_shape_then_update, X)

# 5. A non-differentiable function's result is assumed fresh, but it may return its argument.
@adjoint.non_differentiable
def _stop_gradient(v):
    return v


def _stop_gradient_then_update(x):
    h = x * 2.0
    c = _stop_gradient(h)
    c += 1.0
    return np.sum(h * c)


def test_non_differentiable_identity_then_augmented_assignment():
    # refused: the plain call's answer needs mutation (silently before: sum(2x * (2x+1)), h not updated)
    with pytest.raises(adjoint.TransformError, match="comes from a call that may return"):
        adjoint.grad(_stop_gradient_then_update)(X)

# 6. Aliasing through a keyword argument of a user function is not seen by the in-place pass.
def _identity(v):
    return v


def _keyword_alias(x, c):
    h = c * 2.0
    v = _identity(v=h)
    h += 1.0
    return np.sum(v * x)


def test_keyword_argument_alias_then_augmented_assignment():
    # refused: the plain call's answer needs mutation (silently before: sum(2c * x), v not updated)
    with pytest.raises(adjoint.TransformError, match="another name or view"):
        adjoint.grad(_keyword_alias)(X, c=np.ones(3))


def weights_doubled_after_use(x):
    w = np.ones(3)
    y = x * w
    np.multiply(w, 2.0, out=w)
    return np.sum(y)


def test_non_differentiable_array_mutated_after_use_is_refused():
    # silently before: [2, 2, 2], the pullback read w after the out= write
    with pytest.raises(adjoint.TransformError, match="updates `w` after"):
        adjoint.grad(weights_doubled_after_use)(np.arange(3.0))


def mask_filled_after_use(x):
    m = x > 0
    y = np.where(m, x, 0.0)
    m.fill(True)
    return np.sum(y)


def index_sorted_after_use(x, idx):
    y = x[idx]
    idx.sort()
    return np.sum(y * np.arange(3.0))


def weights_doubled_before_use(x):
    w = np.ones(3)
    np.multiply(w, 2.0, out=w)
    return np.sum(x * w)


def test_methods_updating_a_read_array_are_refused():
    with pytest.raises(adjoint.TransformError, match="updates `m` after"):
        adjoint.grad(mask_filled_after_use)(np.array([-1.0, 2.0]))
    with pytest.raises(adjoint.TransformError, match="updates `idx` after"):
        adjoint.grad(index_sorted_after_use)(np.arange(3.0), np.array([2, 0, 1]))


def test_update_before_use_is_fine():
    check_grad(weights_doubled_before_use, np.arange(3.0))


# ---- regressions from the fourth review ----

def _positional_out(x):
    w = np.full(3, 2.0)
    y = x * w
    np.multiply(w, 3.0, w)  # the ufunc's third positional argument is its output
    return np.sum(y)


def test_positional_out_of_a_ufunc_is_an_update():
    # silently before: 6 (the pullback read the updated w)
    with pytest.raises(adjoint.TransformError, match="updates `w` after"):
        adjoint.grad(_positional_out)(np.array([1.0, 2.0, 3.0]))


_BUFFER = np.ones(2)


def _global_fill(x):
    y = x * _BUFFER
    _BUFFER.fill(5.0)
    return np.sum(y)


def _closure_fill():
    buffer = np.ones(2)

    def f(x):
        y = x * buffer
        buffer.fill(5.0)
        return np.sum(y)

    return f


def test_mutating_method_of_a_global_or_closure_array_after_a_differentiated_read():
    # silently before: 5 (the pullback read the filled buffer)
    with pytest.raises(adjoint.TransformError, match="updates `_BUFFER` after"):
        adjoint.grad(_global_fill)(np.array([1.5, 2.5]))
    with pytest.raises(adjoint.TransformError, match="updates `buffer` after"):
        adjoint.grad(_closure_fill())(np.array([1.5, 2.5]))
    np.testing.assert_array_equal(_BUFFER, np.ones(2))  # refused before anything ran


def _update_through_a_view(x):
    w = np.full(3, 2.0)
    y = x * w
    v = w[0:2]
    v.fill(0.0)
    return np.sum(y)


def _view_made_before_the_read(x):
    w = np.full(3, 2.0)
    v = w[0:2]
    y = x * w
    np.copyto(v, 0.0)
    return np.sum(y)


def test_update_through_a_view_after_a_differentiated_read():
    # silently before: [0, 0, 2]
    with pytest.raises(adjoint.TransformError, match="after a differentiated operation"):
        adjoint.grad(_update_through_a_view)(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(adjoint.TransformError, match="after a differentiated operation"):
        adjoint.grad(_view_made_before_the_read)(np.array([1.0, 2.0, 3.0]))


_log = logging.getLogger("adjoint.tests")


def dense(x, W, b):
    return np.tanh(x @ W + b)


# ---- 4. "mark the function @adjoint.non_differentiable" cannot be followed for a logger --------

adjoint.non_differentiable(_log.info)
adjoint.non_differentiable(logging.Logger.info)


def loss_with_logging(x):
    y = x * 2.0
    _log.info("mean %s", np.mean(y))
    return np.sum(y)


def test_effect_only_call_hint_is_actionable_for_bound_methods():
    # Expected: after following the hint (both `_log.info` and `logging.Logger.info` are marked
    # non-differentiable above) the logging call runs. Actual: still refused with the same hint,
    # because `_log.info` is a fresh bound method each time and the registry is keyed by id
    # (resolve.py `_resolve_call`/`classify`, inplace.py `_passes_varied`).
    g = adjoint.grad(loss_with_logging)(np.ones(3))
    np.testing.assert_allclose(g, 2.0 * np.ones(3))


# ---- 6. residual update after a helper call: misleading reason -------------------------------

def residual_block(x, W, b):
    h = dense(x, W, b)
    h += x
    return np.sum(h)


def test_residual_augmented_assignment_message():
    # Expected: the gradient (h is a local, never a parameter), or a reason that is true: `h`
    # comes from `dense(...)`, which adjoint cannot tell returns a new array. Actual:
    # "`h` may also be reached through another name or view here" -- no other name reaches `h`
    # (inplace.py `_update_problem`, `_is_fresh`).
    rng = np.random.default_rng(0)
    x, W, b = rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)
    try:
        adjoint.testing.check_grad(residual_block, x, W, b)
    except TransformError as error:
        assert "another name or view" not in str(error), str(error)


class _Model:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        return np.tanh(self.W @ x)


_MODEL = _Model(np.eye(2) * 0.5)


def _model_called_in_a_loop(xs):
    total = 0.0
    model = _MODEL
    for x in xs:
        total = total + np.sum(model.forward(x))
    return total


def test_a_method_that_reads_its_object_may_run_in_a_loop():
    # `model.forward(x)` on one model every iteration: taken to read the model, not update it
    check_grad(_model_called_in_a_loop, np.ones((3, 2)))


def unused_view_of_a_parameter(x):
    xt = np.transpose(x)  # left over: a view nothing reads
    print(np.reshape(x, -1).shape)
    return np.sum(x ** 2)


def test_an_unused_view_is_not_taken_for_an_effect():
    np.testing.assert_allclose(adjoint.grad(unused_view_of_a_parameter)(np.ones(3)), [2.0, 2.0, 2.0])


def update_through_rollaxis(x):
    y = np.rollaxis(x, 1)
    y[0] = 0.0  # writes into `x` too: a view
    return np.sum(x * y)


def update_through_real_if_close(x):
    y = np.real_if_close(x)  # `x` itself for a real array
    y[0] = 0.0
    return np.sum(x * y)


@pytest.mark.parametrize("f", [update_through_rollaxis, update_through_real_if_close])
def test_an_update_through_a_view_made_by_a_new_rule_is_refused(f):
    with pytest.raises(TransformError, match="view|another name|held elsewhere"):
        adjoint.grad(f)(np.ones((2, 2)))
