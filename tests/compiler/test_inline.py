"""compiler.inline: rules stitched into generated code, and the fallback to calling them."""

import numpy as np
import pytest

import adjoint
from adjoint import registry
from adjoint.compiler import inline
from adjoint.testing import check_grad


@pytest.mark.parametrize("primitive", [np.sin, np.tanh, np.maximum, np.sum, np.mean, np.max, np.where, np.dot])
def test_builtin_rules_are_inlinable(primitive):
    assert inline.plan_for(registry.lookup(primitive)) is not None


def test_elementwise_rule_becomes_an_expression():
    def f(x):
        return np.tanh(x)

    assert "x_bar = f_bar * (1 - f ** 2)" in adjoint.source(f)


def test_binary_rule_unbroadcasts_only_against_arrays():
    def f(x, b):
        return x * b + x * 2.0

    text = adjoint.source(f)
    assert "adj.unbroadcast(f_mul_bar * b, x)" in text
    assert "f_mul_1_bar * 2.0" in text and "unbroadcast(f_mul_1_bar" not in text


def test_keyword_arguments_equal_to_defaults_are_dropped():
    def f(x):
        return np.sum(x, axis=1)

    text = adjoint.source(f)
    assert "x_bar = adj.unreduce(f_bar, x, axis=1)" in text


def test_unsupported_keyword_is_reported_at_the_call():
    def f(x):
        return np.sum(x, out=None)

    with pytest.raises(adjoint.TransformError, match="`out=`"):
        adjoint.grad(f)(np.ones(2))


def softsign(x):
    return x / (1 + np.abs(x))


def _softsign_derivative(x):
    return 1 / (1 + np.abs(x)) ** 2


@adjoint.rrule(softsign)
def softsign_rrule(x):
    def softsign_pullback(g):
        if np.ndim(g) > 5:  # a branch makes this rule not inlinable: it is called instead
            raise ValueError
        return (g * _softsign_derivative(x),)

    return softsign(x), softsign_pullback


def test_rule_of_other_shape_is_called_with_its_pullback():
    def f(x):
        return np.sum(softsign(x))

    text = adjoint.source(f)
    assert "softsign_rrule(x)" in text and "softsign_pullback(" in text
    check_grad(f, np.array([0.3, -1.2]))


def cube(x):
    return x ** 3


@adjoint.rrule(cube)
def cube_rrule(x):
    square = x * x

    def cube_pullback(g):
        return (3 * g * square,)

    return cube(x), cube_pullback


def test_user_rule_in_inlinable_shape_is_stitched_with_derived_names():
    def f(x):
        return cube(x)

    text = adjoint.source(f)
    assert "f_square = x * x" in text
    assert "x_bar = 3 * f_bar * f_square" in text
    assert adjoint.grad(f)(2.0) == pytest.approx(12.0)



# ---- regressions found in review ----

RNG = np.random.default_rng(0)

# 1. A user variable named `g` collides with the cotangent parameter of the inlined rules.
def _uses_g(x, g):
    return np.sum(x * g)


def test_variable_named_g_gets_the_right_gradient():
    # expected: check passes (d/dx = g); actual: silently wrong, the pullback computes `bar * bar`
    check_grad(_uses_g, RNG.normal(size=3), RNG.normal(size=3))


# 9. np.full(3, x): the unbroadcast back to the fill value is dropped as "needless".
def _full_with_int_shape(x):
    return np.sum(np.full(3, x))


def test_full_with_an_int_shape():
    # expected: 3.0; actual: TypeError (a shape-(3,) cotangent for the float x)
    check_grad(_full_with_int_shape, 1.5)


X = np.array([0.3, 0.7, -0.4])


# 7. An inlined user rule whose pullback returns a *variable* holding None crashes (TypeError).
def _mul_by_sign(v, s):
    return v * np.sign(s)


@adjoint.rrule(_mul_by_sign)
def _mul_by_sign_rrule(v, s):
    def _mul_by_sign_pullback(g):
        ds = None
        return g * np.sign(s), ds

    return _mul_by_sign(v, s), _mul_by_sign_pullback


def _uses_sign_rule(x):
    s = np.sum(x)
    y = _mul_by_sign(x, s)
    return np.sum(y) + s


def test_inlined_user_rule_returning_none_variable():
    # expected: None read as zero (as the opaque path does); actual: TypeError float + NoneType
    check_grad(_uses_sign_rule, X)

# 8. A user rule with a required keyword-only parameter is refused at every call.
def _weighted_sum(v, *, w):
    return np.sum(v) * w


@adjoint.rrule(_weighted_sum)
def _weighted_sum_rrule(v, *, w):
    def _weighted_sum_pullback(g):
        return (g * w * np.ones_like(v),)

    return _weighted_sum(v, w=w), _weighted_sum_pullback


def _uses_keyword_only_rule(x):
    return _weighted_sum(x, w=3.0)


def test_user_rule_with_required_keyword_only_parameter():
    # expected: gradient 3.0; actual: TransformError "does not support the keyword argument `w=`"
    check_grad(_uses_keyword_only_rule, X)

# 9. Inlining snapshots a rule's globals once (inline.plan_for cache): rebinding them leaves the
#    pullback on the old value while the forward uses the new one.
_SCALE = 1.5


def _scaled(v):
    return v * _SCALE


@adjoint.rrule(_scaled)
def _scaled_rrule(v):
    def _scaled_pullback(g):
        return (g * _SCALE,)

    return _scaled(v), _scaled_pullback


def _uses_scaled(x):
    return np.sum(_scaled(x))


def test_inlined_rule_global_rebound():
    # expected: gradient 4.0 after `_SCALE = 4.0`; actual: 1.5 (the value when first inlined)
    global _SCALE
    check_grad(_uses_scaled, X)
    _SCALE = 4.0
    try:
        check_grad(_uses_scaled, X)
    finally:
        _SCALE = 1.5

# 10. A user rule that rebinds one of its parameters before the pullback crashes inlining.
def _centered_exp(v):
    return np.exp(v - np.max(v))


@adjoint.rrule(_centered_exp)
def _centered_exp_rrule(v):
    v = v - np.max(v)
    ans = np.exp(v)

    def _centered_exp_pullback(g):
        return (g * ans - np.sum(g * ans) * (v == 0) / np.sum(v == 0),)

    return ans, _centered_exp_pullback


def _uses_centered_exp(x):
    return np.sum(_centered_exp(x) * x)


def test_user_rule_rebinding_a_parameter_is_called_not_inlined():
    # inlining it crashed with "cannot store into the expression substituted for v"
    check_grad(_uses_centered_exp, X)
    assert "= centered_exp_rrule(x)" in adjoint.source(_uses_centered_exp)


# ---- plans are cached per rule object ----------------------------------------------------------

def test_a_plan_is_read_once_per_rule(monkeypatch):
    rule = registry.lookup(np.sin)
    first = inline.plan_for(rule)
    monkeypatch.setattr(inline, "_plan_partials", lambda partials: pytest.fail("planned again"))
    assert inline.plan_for(rule) is first


def test_a_rule_registered_again_is_planned_again(tmp_path):
    module = _ramp_module(tmp_path, "ramp(x, slope, floor=floor)")
    first = inline.plan_for(registry.lookup(module.ramp))
    assert first is not None and first.source is module.ramp_rrule

    def ramp_rrule(x, slope=1.0, *, floor=0.0):
        y = module.ramp(x, slope, floor=floor)

        def ramp_pullback(g):
            return (2.0 * g * slope * (x * slope > floor),)

        return y, ramp_pullback

    adjoint.rrule(module.ramp)(ramp_rrule)
    again = inline.plan_for(registry.lookup(module.ramp))
    assert again is not first and again.source is ramp_rrule
    assert "2.0" in syntax_text(again.results[0])


def test_a_plan_does_not_keep_its_rule_alive():
    import gc
    import weakref

    def halve(x):
        return x / 2

    def halve_rrule(x):
        def halve_pullback(g):
            return (g / 2,)

        return halve(x), halve_pullback

    rule = registry.Rule(halve, halve_rrule, halve_rrule)
    assert inline.plan_for(rule) is not None
    alive = weakref.ref(rule)
    del rule
    gc.collect()
    assert alive() is None


def syntax_text(node):
    from adjoint.compiler import syntax

    return syntax.unparse(node)


# ---- a user's rule is inlined only when its value is, literally, its primitive's ----------------

RAMP_RULE = """
import numpy as np
import adjoint


def ramp(x, slope=1.0, *, floor=0.0):
    return np.maximum(x * slope, floor)


@adjoint.rrule(ramp)
def ramp_rrule({parameters}):
    y = {value}

    def ramp_pullback(g):
        return (g * slope * (x * slope > floor),)

    return y, ramp_pullback
"""
RAMP_PARAMETERS = "x, slope=1.0, *, floor=0.0"


def _ramp_module(tmp_path, value, parameters=RAMP_PARAMETERS):
    from tests.support import load_module

    path = tmp_path / "ramp_rule.py"
    path.write_text(RAMP_RULE.format(value=value, parameters=parameters))
    return load_module(path, "ramp_rule")


@pytest.mark.parametrize("value, inlined", [
    ("ramp(x, slope, floor=floor)", True),
    ("ramp(x, slope=slope, floor=floor)", True),
    ("np.maximum(x * slope, floor)", False),  # the same math, but not visibly the primitive's value
    ("ramp(x, 2 * slope, floor=floor)", False),  # the primitive of something else
    ("ramp(slope, x, floor=floor)", False),  # parameters out of order
    ("ramp(x, slope)", False),  # a parameter left to the primitive's default
    ("ramp(x, slope, floor=slope)", False),
])
def test_a_users_rule_is_inlined_only_when_its_value_is_visibly_the_primitives(value, inlined, tmp_path):
    module = _ramp_module(tmp_path, value)
    assert (inline.plan_for(registry.lookup(module.ramp)) is not None) == inlined


@pytest.mark.parametrize("parameters", [
    "x, slope=2.0, *, floor=0.0",  # `ramp(x)` would mean slope 1.0 to the primitive, 2.0 to the rule
    "x, slope, *, floor=0.0",
    "x, slope=1.0, floor=0.0",  # `floor` may be passed by position to the rule, not to the primitive
])
def test_a_users_rule_whose_parameters_differ_from_its_primitives_is_called(parameters, tmp_path):
    module = _ramp_module(tmp_path, "ramp(x, slope, floor=floor)", parameters)
    assert inline.plan_for(registry.lookup(module.ramp)) is None


def test_an_inlined_users_rule_reads_as_its_math(tmp_path):
    module = _ramp_module(tmp_path, "ramp(x, slope, floor=floor)")

    def f(x):
        return np.sum(module.ramp(x, 2.0, floor=0.1))

    text = adjoint.source(f)
    assert "f_ramp = module.ramp(x, 2.0, floor=0.1)" in text  # the user's statement computes the value
    assert "x_bar = f_ramp_bar * 2.0 * (x * 2.0 > 0.1)" in text
    check_grad(f, X)
