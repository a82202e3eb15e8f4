"""compiler.accumulation: cotangents summed into arrays the pullback made add in place, and
nowhere else (never into the caller's cotangent, a primal value, or an array another name
still reads)."""

import numpy as np

import adjoint
from adjoint.testing import check_grad

rng = np.random.default_rng(0)


def peaks(X):
    m = np.max(X, axis=1, keepdims=True)
    return np.sum(np.tanh(X)) + np.sum(m * m)


def test_a_cotangent_the_pullback_made_is_added_to_in_place():
    text = adjoint.source(peaks)
    assert "X_bar = adj.add_chosen(X_bar, m_bar, X, m, axis=1, keepdims=True)" in text
    check_grad(peaks, rng.normal(size=(4, 3)))


def rnn(W, xs, h):
    for x in xs:
        h = np.tanh(W @ h + x)
    return np.sum(h)


def test_loop_accumulators_start_from_zeros_and_add_in_place():
    text = adjoint.source(rnn)
    assert "W_bar = adj.zeros_like(W)" in text and "W_bar += adj.matmul_lhs_bar(" in text
    check_grad(rnn, rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=3))


def doubled(x):
    return x + x


def test_the_callers_cotangent_is_never_updated_in_place():
    text = adjoint.source(doubled)
    assert "+=" not in text  # `x_bar` starts as the caller's cotangent itself
    x = rng.normal(size=3)
    seed = np.ones(3)
    value, back = adjoint.pullback(doubled, x)
    (x_bar,) = back(seed)
    np.testing.assert_array_equal(seed, np.ones(3))
    np.testing.assert_array_equal(x_bar, 2 * np.ones(3))


def shared(x):
    a = np.sin(x)
    b = a * 1.0
    c = a
    return np.sum(b * c) + np.sum(a * x)


def test_sums_through_copies_and_reuse_stay_right():
    check_grad(shared, rng.normal(size=4))


def handed_to_a_list(x):
    parts = []
    y = x * 2.0
    for _ in range(3):
        y = y + x
        parts.append(y)
    return np.sum(parts[0] * parts[2]) + np.sum(y)


def test_values_kept_in_a_list_and_loops_over_them_stay_right():
    check_grad(handed_to_a_list, rng.normal(size=3))


def hooked(x, seen):
    y = adjoint.hook(x * 2.0, seen.append)
    return np.sum(y * y) + np.sum(y)


def test_a_hook_sees_its_cotangent_unchanged_by_later_accumulation():
    seen = []
    x = rng.normal(size=3)
    gradient = adjoint.grad(hooked)(x, seen)
    y = 2.0 * x
    np.testing.assert_allclose(seen[0], 2 * y + 1.0)
    np.testing.assert_allclose(gradient, 2.0 * (2 * y + 1.0))


def mlp(W1, W2, x):
    h = np.tanh(x @ W1)
    z = h @ W2
    m = np.max(z, axis=1, keepdims=True)
    return np.sum(z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)))


def test_second_derivatives_read_the_in_place_pullback():
    W1, W2, x = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(5, 3))
    assert "m_bar -= " in adjoint.source(mlp, wrt=(0, 1))  # an in-place accumulation
    v1, v2 = rng.normal(size=W1.shape), rng.normal(size=W2.shape)
    _, hv = adjoint.jvp(adjoint.grad(mlp, wrt=(0, 1)), (W1, W2, x), (v1, v2, None))
    eps = 1e-6
    plus = adjoint.grad(mlp, wrt=(0, 1))(W1 + eps * v1, W2 + eps * v2, x)
    minus = adjoint.grad(mlp, wrt=(0, 1))(W1 - eps * v1, W2 - eps * v2, x)
    for got, p, m in zip(hv, plus, minus):
        np.testing.assert_allclose(got, (p - m) / (2 * eps), rtol=1e-5, atol=1e-7)


def update_through_a_dead_copy(x):
    a = x * 2.0
    b = a
    b += x
    return np.sum(b * x)


def update_through_a_live_copy(x):
    a = x * 2.0
    b = a
    b += x
    return np.sum(b * a)  # `a` sees the update in Python


def test_an_update_through_a_copy_of_a_new_array_is_differentiated_when_the_original_is_not_read_again():
    check_grad(update_through_a_dead_copy, rng.normal(size=3))
    try:
        check_grad(update_through_a_live_copy, rng.normal(size=3))  # right, where it is not refused
    except adjoint.TransformError as error:
        assert "may also be reached through another name" in str(error)


def update_through_a_copy_in_a_loop(x):
    a = x * 2.0
    b = a
    for _ in range(2):
        b += x * a  # in Python this changes `a` too, which the next iteration reads
    return np.sum(b)


def accumulator_read_through_its_first_name(x):
    acc = x * 0.0
    out = acc
    for _ in range(3):
        out += x ** 2
    return np.sum(acc)  # `acc` is `out`: Python sums the updates


def test_an_update_through_a_copy_that_a_loop_or_a_later_line_reads_is_refused():
    for f in (update_through_a_copy_in_a_loop, accumulator_read_through_its_first_name):
        try:
            check_grad(f, rng.normal(size=3))  # right, where it is not refused
        except adjoint.TransformError as error:
            assert "may also be reached through another name" in str(error)


def rnn_states(W, xs, h):
    for x in xs:
        h = np.tanh(W @ h + x)
    return h


def test_a_complex_cotangent_for_a_real_output_gives_its_real_part():
    for f, seed in ((rnn, 1.0), (rnn_states, np.ones(3))):
        _, back = adjoint.pullback(f, rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)), rng.normal(size=3))
        real, mixed = back(seed), back(seed + 2.0j * seed)
        for got, want in zip(mixed, real):
            np.testing.assert_allclose(got, want)



def copies_then_accumulates(X, W):
    a1 = X @ W
    a2 = a1 - np.max(a1, axis=1, keepdims=True)
    a7 = a1 + 0.0
    a7 += X * 0.5
    a7 *= 0.9
    return np.sum(a7) + np.sum(np.sin(a2))


def test_second_derivatives_read_a_pullback_whose_cotangents_are_copies():
    X, W = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
    V = rng.normal(size=X.shape)
    product = adjoint.hvp(copies_then_accumulates, X, V, W)
    eps = 1e-6
    plus = adjoint.grad(copies_then_accumulates)(X + eps * V, W)
    minus = adjoint.grad(copies_then_accumulates)(X - eps * V, W)
    np.testing.assert_allclose(product, (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_a_token_given_away_is_never_mistaken_for_another(monkeypatch):
    # tokens die (a loop's dry run, a rebound name) and CPython reuses their ids: were tokens
    # told apart by id, a later array could pass for one given away, and lose its `+=` by the
    # luck of the allocator. Every id made equal, the generated code must not change.
    from adjoint.compiler import accumulation

    def updates(f):
        return [line.strip() for line in adjoint.source(f).splitlines() if "+=" in line]

    expected = updates(rnn)
    monkeypatch.setattr(accumulation, "id", lambda obj: 0, raising=False)
    assert expected and updates(rnn_again) == expected


def rnn_again(W, xs, h):
    for x in xs:
        h = np.tanh(W @ h + x)
    return np.sum(h)
