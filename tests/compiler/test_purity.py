"""compiler.purity: a function of yours counts as reading its arguments only when nothing in its
code could write to them; what it reads only may run as it is inside differentiated code after a
value the pullback needs, anything else is refused there."""

import logging
import operator

import numpy as np
import pytest

import adjoint
from adjoint.compiler.purity import reads_only

log = logging.getLogger("adjoint.tests.purity")


def share(logits, labels):
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def report(y):
    log.debug("mean %s", y.mean())
    print(f"{np.max(y):.3f}", len(y))


def clip_out(y):
    np.clip(y, -0.5, 0.5, out=y)


def zero_loop(y):
    for i in range(len(y)):
        y[i] = 0.0


def copy_into(y):
    np.copyto(y, 0.0)


def multiply_positionally(y):
    np.multiply(y, 0.0, y)


def in_place(y):
    y *= 0.0


def through_operator(y):
    operator.imul(y, 0.0)


def through_a_method(y):
    y.fill(0.0)


def through_a_helper(y):
    zero_loop(y)


def shadowing(y, print=np.copyto):
    print(y, 0.0)


def passed_to_map(y):
    list(map(np.copyto, [y], [0.0]))


def a_method_passed(y):
    sorted([0.0], key=y.fill)


def through_exec(y):
    exec("y[...] = 0.0")


def out_by_position(y):
    np.clip(y, 0.0, 0.0, y)


def a_methods_out_by_position(y):
    y.sum(0, None, y[:1])


def out_through_a_mapping(y):
    np.multiply(y, 0.0, **{"out": y})


def calls_what_it_is_given(y, callback):
    list(map(callback, [y]))


def imports_a_writer(y):
    from numpy import copyto as print

    print(y, 0.0)


ZERO_AT = np.vectorize(lambda a, i: a.__setitem__(i, 0.0), excluded={0})


def through_a_vectorized_function(y):
    ZERO_AT(y, np.arange(len(y)))


def sanitizes_in_place(y):
    np.nan_to_num(y, copy=False)


CONFIG = {"verbose": False}


def validates(y):
    if not np.all(np.isfinite(y)):
        raise ValueError("not finite")
    if CONFIG.get("verbose") and hasattr(y, "shape"):
        print(next(iter(y)))


def confusion(pred, labels, k=3):
    """A metric building values of its own: a new array of counts, a dict, a list, a counter."""
    cm = np.zeros((k, k))
    for t, p in zip(labels, np.argmax(pred, axis=1)):
        cm[t, p] += 1
    counts = {}
    seen = []
    n = 0
    for label in labels:
        counts[int(label)] = counts.get(int(label), 0) + 1
        seen.append(label)
        n += 1
    return cm, counts, seen, n


def through_a_list_it_made(y):
    held = [y]
    held[0][...] = 0.0


def through_an_item_it_stored(y):
    store = {}
    store["y"] = y
    store["y"] += 1.0


def through_a_rebound_name(y):
    cm = np.zeros(3)
    cm = y
    cm[0] = 0.0


def rebinds_by_match(y):
    cm = np.zeros(3)
    match y:
        case cm:
            pass
    cm[...] = 0.0


def rebinds_by_a_decorated_def(y):
    cm = np.zeros(3)

    @(lambda _: y)
    def cm():
        pass

    cm[...] = 0.0


W_MODULE = np.array([1.0, 2.0])


def writes_a_global_named_like_a_nested_local():
    def made():
        W_MODULE = np.zeros(2)
        return W_MODULE

    W_MODULE[...] = 0.0


def decorated_wrapper():
    import functools

    def inner(y):
        return y

    @functools.wraps(inner)
    def wrapper(y):
        y[...] = 0.0

    return wrapper


@pytest.mark.parametrize("fn", [share, report, validates, confusion])
def test_functions_that_read_only(fn):
    assert reads_only(fn)


@pytest.mark.parametrize("fn", [clip_out, zero_loop, copy_into, multiply_positionally, in_place, through_operator,
                                through_a_method, through_a_helper, shadowing, passed_to_map, a_method_passed,
                                through_exec, out_by_position, a_methods_out_by_position, decorated_wrapper(),
                                out_through_a_mapping, calls_what_it_is_given, imports_a_writer,
                                through_a_vectorized_function, sanitizes_in_place, through_a_list_it_made,
                                through_an_item_it_stored, through_a_rebound_name, rebinds_by_match,
                                rebinds_by_a_decorated_def, writes_a_global_named_like_a_nested_local])
def test_functions_that_may_write(fn):
    assert not reads_only(fn)


@pytest.mark.parametrize("helper", [clip_out, zero_loop, copy_into, through_a_helper])
def test_a_helper_writing_a_value_the_pullback_needs_is_refused(helper):
    def loss(x):
        y = np.sin(x)
        z = y * y
        helper(y)
        return np.sum(z)

    with pytest.raises(adjoint.TransformError, match="this updates `y` after a differentiated operation used it"):
        adjoint.grad(loss)(np.array([0.6, 1.4]))


def test_a_helper_reading_a_value_the_pullback_needs_runs():
    def loss(x):
        y = np.sin(x)
        z = y * y
        report(y)
        return np.sum(z)

    x = np.array([0.6, 1.4])
    np.testing.assert_allclose(adjoint.grad(loss)(x), 2 * np.sin(x) * np.cos(x))


@adjoint.non_differentiable
def zero_all(ys):
    for v in ys:
        v[...] = 0.0


W_DECAYING = np.array([1.0, 2.0])


@adjoint.non_differentiable
def decay():
    W_DECAYING[...] = 0.0


def test_a_declared_function_writing_through_a_container_or_a_global_is_refused():
    def through_a_list(x):
        y = np.sin(x)
        z = y * y
        zero_all([y])
        return np.sum(z)

    def through_a_global(x):
        z = np.sum((np.sin(x) * W_DECAYING) ** 2)
        decay()
        return z

    for f in (through_a_list, through_a_global):
        with pytest.raises(adjoint.TransformError):
            adjoint.grad(f)(np.array([0.6, 1.4]))


def test_a_declared_metric_building_its_own_counts_may_run_after_the_loss():
    metric = adjoint.non_differentiable(confusion)

    def loss(W, x, labels):
        logits = x @ W
        value = np.mean(logits ** 2)
        return value, metric(logits, labels)

    W, x, labels = np.eye(3) * 0.5, np.arange(12.0).reshape(4, 3) / 10, np.array([0, 1, 2, 0])
    (value, (cm, counts, seen, n)), g = adjoint.value_and_grad(loss, has_aux=True)(W, x, labels)
    np.testing.assert_allclose(g, 2 * x.T @ (x @ W) / 12)
    assert cm.sum() == 4 and n == 4
