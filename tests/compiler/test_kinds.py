"""compiler.kinds: which names certainly hold numbers or arrays, and which hold sequences."""

import gast
import numpy as np

from adjoint.compiler import kinds
from adjoint.compiler.pipeline import lower


def pair(x):
    return (x, 2.0 * x)


def mixed(x, y):
    a = x * 2.0
    t = pair(x)
    b = np.tanh(a)
    c = t[0]
    s = 0.0
    for i in range(3):
        s = s + b * i
    return np.sum(c) + s + y


def certain(fn, wrt=(0,)):
    node, _ = lower(fn, wrt, until="activity")
    params = {a.id for i, a in enumerate(node.args.args) if i in wrt}
    return kinds.certain_numbers(node.body, params)


def test_arithmetic_and_numpy_results_of_parameters_are_numbers():
    names = certain(mixed)
    assert {"x", "a", "b"} <= names


def test_what_a_user_function_returns_and_its_items_may_be_sequences():
    names = certain(mixed)
    assert "t" not in names and "c" not in names
    assert "y" not in names  # not differentiated: the API did not check its kind


def test_loop_carried_arithmetic_stays_a_number():
    names = certain(mixed)
    assert any(n.startswith("s_") for n in names)
    assert "s" in names


def test_sequences_are_displays_and_concatenations():
    def f(x):
        t = (x, x)
        u = t + (x,)
        return np.sum(u[0])

    node, _ = lower(f, (0,), until="activity")
    assert {"t", "u"} <= kinds.sequence_names(node.body)


def test_without_items_a_doubt_about_an_item_reaches_what_reads_it():
    body = gast.parse("z = d[0]\nw = z * 2\nv = w + x\nu = v\nt = -d").body
    with_items, without = kinds.certain_numbers_with_and_without_items(body, {"x", "d"})
    assert with_items == kinds.certain_numbers(body, {"x", "d"}) == {"d", "x", "z", "w", "v", "u", "t"}
    assert without == kinds.certain_numbers(body, {"x", "d"}, items=False) == {"d", "x", "v", "u", "t"}
