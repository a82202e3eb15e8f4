"""What carries no gradient: the built-in set (adjoint/rules/random.py, and the lists at the end of
shape.py, selection.py, builtins.py and methods.py), `adjoint.non_differentiable` on a function
of yours, and the random draws with float parameters, which are refused. (`np.arange`,
`np.unique`, `np.bincount`, `math.modf` and `math.frexp` look gradient-free but are not: their
rules are tested with their families.)

Each family is used inside a differentiated function whose gradient is checked against finite
differences (the draws are seeded inside the function, so every evaluation sees the same ones),
and its generated code is checked to spend no adjoint work on the results.
"""

import functools
import re

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.rules import random as random_rules
from adjoint.testing import check_grad

X = np.array([0.3, 1.2, -0.5, 2.0])
W = np.array([[0.5, -1.0, 0.25], [1.5, 0.2, -0.7]])
BATCHES = np.arange(12.0).reshape(6, 2) / 10.0

def no_adjoint_work(f, *names, **source_options):
    """Assert that `f`'s generated pullback computes no cotangent for `names` (while it does for
    something: the function is differentiated at all)."""
    text = adjoint.source(f, **source_options)
    assert "_pullback(" in text
    spent = [name for name in names if re.search(rf"\b{name}_bar\b", text)]
    assert not spent, f"adjoint work spent on {spent}:\n{text}"


def zero_tangent(f, *args):
    """Assert that forward mode through `f` gives a zero tangent."""
    _, tangent = adjoint.jvp(f, args, tuple(np.ones_like(a) for a in args))
    np.testing.assert_array_equal(tangent, np.zeros_like(tangent))


# ---- random numbers -------------------------------------------------------------------------------

def dropout(x):
    rng = np.random.default_rng(0)
    mask = rng.random(x.shape) > 0.5
    return np.sum(np.sin(x) * mask) / 0.5


def noisy_loss(x):
    np.random.seed(0)
    noise = np.random.normal(size=x.shape)
    return np.sum((x + 0.1 * noise) ** 2)


def sampled_gate(x):
    np.random.seed(1)
    gate = np.random.binomial(1, 1 / (1 + np.exp(-x)))  # integer draws: constant in the probability
    return np.sum(x ** 2 * gate)


def sampled_gate_of_a_generator(x):
    rng = np.random.default_rng(1)
    gate = rng.binomial(1, 1 / (1 + np.exp(-x)))
    return np.sum(x ** 2 * gate)


def reparametrized(mu, log_sigma):
    rng = np.random.default_rng(2)
    z = rng.standard_normal(mu.shape)
    return np.sum((mu + np.exp(log_sigma) * z) ** 2)


def random_integers_times(x):
    rng = np.random.default_rng(3)
    picks = rng.integers(0, 3, size=x.shape)
    return np.sum(x * picks) + np.random.RandomState(4).randint(5)


@pytest.mark.parametrize("f", [dropout, noisy_loss, sampled_gate, sampled_gate_of_a_generator, random_integers_times])
def test_random_draws_carry_no_gradient(f):
    check_grad(f, X)


def test_a_reparametrized_draw_differentiates_through_its_parameters():
    check_grad(reparametrized, X, np.array([0.1, -0.2, 0.0, 0.3]))


@pytest.mark.parametrize("f, names", [
    (dropout, ["mask", "rng"]), (noisy_loss, ["noise"]), (sampled_gate, ["gate"]),
])
def test_no_adjoint_work_is_spent_on_random_draws(f, names):
    no_adjoint_work(f, *names)


def gate_only(x):
    np.random.seed(1)
    return np.sum(np.random.binomial(1, 1 / (1 + np.exp(-x))) * 1.0)


def generator_gate_only(x):
    rng = np.random.default_rng(1)
    return np.sum(rng.binomial(1, 1 / (1 + np.exp(-x))) * 1.0)


@pytest.mark.parametrize("f", [gate_only, generator_gate_only])
def test_forward_mode_gives_random_draws_zero_tangents(f):
    zero_tangent(f, X)
    np.testing.assert_array_equal(adjoint.grad(f)(X), np.zeros(4))


def test_every_public_random_function_and_generator_method_is_sorted_into_one_list():
    # a name NumPy adds is in neither list: this fails until someone decides which it is
    names = {name for name, _ in random_rules.public_callables()}
    assert not random_rules.WITHOUT_GRADIENT & random_rules.WITH_GRADIENT
    assert names == random_rules.WITHOUT_GRADIENT | random_rules.WITH_GRADIENT
    for name, function in random_rules.public_callables():
        declared = registry.is_non_differentiable(function)
        assert declared == (name in random_rules.WITHOUT_GRADIENT), name
        assert registry.lookup(function) is None, name


@pytest.mark.parametrize("path", [
    "random", "integers", "standard_normal", "spawn", "bit_generator.jumped", "bit_generator.random_raw",
    "bit_generator.seed_seq.spawn",
])
def test_a_generators_bound_methods_are_declared_by_their_class(path):
    method = functools.reduce(getattr, path.split("."), np.random.default_rng(0))
    assert registry.is_non_differentiable(method)


def test_the_module_functions_are_the_global_random_states_methods():
    assert registry.unbound(np.random.normal) is np.random.RandomState.normal
    assert registry.unbound(np.random.default_rng(0).normal) is np.random.Generator.normal
    for name in ("rand", "randn", "randint", "seed", "default_rng", "get_state", "binomial"):
        assert registry.is_non_differentiable(getattr(np.random, name)), name
    for name in ("normal", "uniform", "choice", "permutation", "shuffle"):
        assert not registry.is_non_differentiable(getattr(np.random, name)), name


def draw_around(x):
    return np.sum(np.random.normal(x, 1.0))


def generator_draw_around(x):
    rng = np.random.default_rng(0)
    return np.sum(rng.normal(x, 1.0))


def choice_of_floats(x):
    rng = np.random.default_rng(0)
    return np.sum(rng.choice(x, 3) ** 2)


@pytest.mark.parametrize("f, named", [
    (draw_around, "np.random.normal"), (generator_draw_around, "normal"), (choice_of_floats, "choice"),
])
def test_a_draw_that_moves_with_a_differentiable_parameter_is_refused(f, named):
    with pytest.raises(adjoint.AdjointError, match=named):
        adjoint.grad(f)(X)
    with pytest.raises(adjoint.AdjointError, match=named):
        adjoint.jvp(f, (X,), (np.ones(4),))


def permuted_by_position(x):
    rng = np.random.default_rng(0)
    return np.sum(x[rng.permutation(len(x))] * np.arange(4.0))


def test_an_arrays_items_are_permuted_by_drawing_their_positions():
    check_grad(permuted_by_position, X)


# ---- shuffling in place ---------------------------------------------------------------------------

def epoch_with_a_generator(w):
    rng = np.random.default_rng(0)
    order = np.arange(len(BATCHES))
    rng.shuffle(order)
    loss = 0.0
    for start in range(0, len(order), 2):
        batch = BATCHES[order[start : start + 2]]
        loss = loss + np.sum((batch @ w) ** 2) * (start + 1)  # the order matters to the loss
    return loss


def epoch_with_the_global_state(w):
    np.random.seed(0)
    order = np.arange(len(BATCHES))
    np.random.shuffle(order)
    loss = 0.0
    for start in range(0, len(order), 2):
        batch = BATCHES[order[start : start + 2]]
        loss = loss + np.sum((batch @ w) ** 2) * (start + 1)
    return loss


@pytest.mark.parametrize("f", [epoch_with_a_generator, epoch_with_the_global_state])
def test_shuffling_an_index_array_in_place_works(f):
    check_grad(f, np.array([0.5, -1.5]))
    no_adjoint_work(f, "order")


def shuffled_values(x):
    y = x * 1.0
    np.random.default_rng(0).shuffle(y)
    return np.sum(y * np.arange(4.0))


def shuffled_values_of_the_global_state(x):
    y = x * 1.0
    np.random.shuffle(y)
    return np.sum(y * np.arange(4.0))


@pytest.mark.parametrize("f", [shuffled_values, shuffled_values_of_the_global_state])
def test_shuffling_a_differentiable_array_in_place_is_refused_where_it_happens(f):
    line = f.__code__.co_firstlineno + 2
    with pytest.raises(adjoint.TransformError, match=rf"test_nondifferentiable.py:{line}:.*\n.*shuffle\(y\)") as error:
        adjoint.grad(f)(X)
    assert "rng.permutation(len(x))" in str(error.value)  # not "mark it non-differentiable": that would be wrong
    with pytest.raises(adjoint.TransformError, match=r"shuffle\(y\)"):
        adjoint.jvp(f, (X,), (np.ones(4),))


# ---- indices, comparisons and counts ---------------------------------------------------------------

def at_the_largest(x):
    return x[np.argmax(x)] * 2.0 + x[np.nanargmin(x)]


def by_rank(x):
    order = np.argsort(x)
    return np.sum(x[order] * np.arange(4.0)) + np.sum(x[np.lexsort((x,))])


def in_bins(x):
    edges = np.array([-1.0, 0.0, 1.0, 3.0])
    where = np.searchsorted(edges, x)
    return np.sum(x * where)


def gated_by_comparisons(x):
    positive = x > 0
    return np.sum(np.where(positive, x, -x)) * np.any(x) + np.sum(x) * np.all(x < 5)


def at_a_flat_index(m):
    row, column = np.unravel_index(np.argmax(m), m.shape)
    i, j = np.triu_indices(2, 1)
    return m[row, column] * 3.0 + np.sum(m[i, j]) * np.ravel_multi_index((1, 2), m.shape)


@pytest.mark.parametrize("f, names", [
    (at_the_largest, []), (by_rank, ["order"]), (in_bins, ["where"]), (gated_by_comparisons, ["positive"]),
])
def test_indices_comparisons_and_truth_values_carry_no_gradient(f, names):
    check_grad(f, X)
    no_adjoint_work(f, *names)


def test_indices_of_a_shape_carry_no_gradient():
    check_grad(at_a_flat_index, W)
    no_adjoint_work(at_a_flat_index, "row", "column", "i", "j")


def any_times(x):
    return np.any(x) * 1.0


def nanargmax_as_float(x):
    return np.nanargmax(x) * 1.0 + np.lexsort((x,))[0]


@pytest.mark.parametrize("f", [any_times, nanargmax_as_float])
def test_forward_mode_gives_indices_zero_tangents(f):
    zero_tangent(f, X)


# ---- shapes, dtypes and built-ins ------------------------------------------------------------------

def scaled_by_its_size(x):
    n = len(x)
    return np.sum(x) / n + np.sum(x) * x.nbytes / x.itemsize + np.sum(x) * np.finfo(x.dtype).eps


def truncated(x):
    return np.sum(x) * np.int64(x[1]) + x[0] * int(x[1]) + np.sum(np.tri(4) @ x)


def described(x):
    label = format(x[0], ".2f") + hex(len(x))
    if isinstance(x, np.ndarray) and len(label) > 3:
        return np.sum(x ** 2)
    return np.sum(x)


@pytest.mark.parametrize("f", [scaled_by_its_size, truncated, described])
def test_shapes_dtypes_and_builtins_carry_no_gradient(f):
    check_grad(f, X)


def test_no_adjoint_work_is_spent_on_shapes():
    no_adjoint_work(scaled_by_its_size, "n")


def count_times(x):
    return np.int64(x[1]) * 1.0 + x.nbytes + len(x)


def test_forward_mode_gives_integer_casts_and_sizes_zero_tangents():
    zero_tangent(count_times, X)


# ---- adjoint.non_differentiable on a function of yours ---------------------------------------------

@adjoint.non_differentiable
def spread(x):
    return float(np.std(x))  # a float, with a derivative: declared to carry none


def normalized_by_a_constant_spread(x):
    s = spread(x)
    return np.sum(x ** 2) / s


def test_a_declared_function_returning_floats_gets_no_gradient():
    s = float(np.std(X))
    np.testing.assert_allclose(adjoint.grad(normalized_by_a_constant_spread)(X), 2 * X / s)
    _, tangent = adjoint.jvp(normalized_by_a_constant_spread, (X,), (np.ones(4),))
    np.testing.assert_allclose(tangent, np.sum(2 * X) / s)
    no_adjoint_work(normalized_by_a_constant_spread, "s")


def test_non_differentiable_as_a_call_returns_the_function():
    def halved_rank(x):
        return np.argsort(x) / 2.0

    assert adjoint.non_differentiable(halved_rank) is halved_rank
    assert registry.is_non_differentiable(halved_rank)


@adjoint.non_differentiable
def accuracy(logits, labels):
    """A metric of yours: it reads values the pullback needs, and changes none."""
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def test_a_declared_metric_may_read_values_the_pullback_needs():
    def loss(W, x, labels):
        logits = x @ W
        value = np.mean((logits - 1.0) ** 2)
        return value, accuracy(logits, labels)

    W, x, labels = np.eye(3) * 0.5, np.arange(12.0).reshape(4, 3) / 10, np.array([0, 1, 2, 0])
    (value, acc), g = adjoint.value_and_grad(loss, has_aux=True)(W, x, labels)
    check_grad(lambda W: loss(W, x, labels)[0], W)
    np.testing.assert_allclose(g, adjoint.grad(lambda W: loss(W, x, labels)[0])(W))
    assert acc == accuracy(x @ W, labels)
