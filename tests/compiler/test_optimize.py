"""compiler.optimize: dead pullback statements and dead join copies go; nothing else does."""

import gast
import numpy as np

import adjoint
from adjoint.compiler import optimize, syntax
from adjoint.testing import check_grad


def nested_function_first(x):
    def inner(v):
        w = v * 1.0
        w[0] = 3.0
        return w

    return np.sum(inner(x) * x)


def unused_intermediate_cotangent(x):
    y = np.sin(x)
    z = y * 2.0
    return np.sum(z)


def test_a_nested_function_defined_before_the_pullback_keeps_its_statements():
    # optimize must clean the pullback only, even when another function comes first
    text = adjoint.source(nested_function_first)
    assert "w[0] = 3.0" in text
    check_grad(nested_function_first, np.array([1.0, 2.0, 0.5]))


def test_dead_join_copies_are_dropped_from_the_forward_function():
    def f(x, flag):
        y = x
        if flag:
            y = x * 2.0
        z = x * 3.0
        return np.sum(z)

    text = adjoint.source(f, wrt=0)
    assert "y_1 = y" not in text and "y = x\n" not in text.split("def f_pullback")[1]


def test_pullback_keeps_what_it_reads():
    text = adjoint.source(unused_intermediate_cotangent)
    pullback = text.split("def unused_intermediate_cotangent_pullback")[1]
    assert "z_bar" in pullback and "y_bar" in pullback
    check_grad(unused_intermediate_cotangent, np.array([0.3, 0.2]))


def test_what_a_branch_keeps_reading_keeps_its_assignments():
    body = syntax.parse("a = 1\nb = 2\nif c:\n    d = a\n    e = b\n").body
    reads = set()
    kept = optimize._without_dead_assignments(body, {"d"}, reads)
    # `e` is read nowhere: gone, and with it `b`; `a` is read in the branch that stays
    assert syntax.unparse(gast.Module(body=kept, type_ignores=[])).strip() == "a = 1\nif c:\n    d = a"
    assert reads == {"a", "c"}
