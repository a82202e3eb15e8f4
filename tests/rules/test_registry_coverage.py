"""Every built-in rule in adjoint.registry is exercised by the rule tests of tests/rules."""

import adjoint  # noqa: F401  (registers the built-in rules)
from adjoint import registry

import test_builtins
import test_containers
import test_elementwise
import test_linalg
import test_math
import test_methods
import test_reductions
import test_sequences
import test_shape

TESTED_MODULES = [
    test_builtins, test_containers, test_elementwise, test_linalg, test_math, test_methods, test_reductions,
    test_sequences, test_shape,
]


def _builtin_rules():
    """The primitives with a rule defined in adjoint.rules (tests may register rules of their own)."""
    return {
        key: primitive
        for key, (primitive, rule) in registry._RULES.items()
        if rule.definition.__module__.startswith("adjoint.rules.")
    }


def test_every_builtin_rule_is_checked_by_a_rule_test():
    tested = {id(primitive) for module in TESTED_MODULES for primitive in module.RRULE_PRIMITIVES}
    untested = sorted(
        f"{getattr(p, '__module__', None) or type(p).__name__}.{getattr(p, '__qualname__', repr(p))}"
        for key, p in _builtin_rules().items()
        if key not in tested
    )
    assert not untested, f"rules without a check_rrule test: {untested}"


def test_rule_tests_only_name_registered_primitives():
    # A primitive listed in a test module but with no rule would make the coverage check vacuous.
    for module in TESTED_MODULES:
        for primitive in module.RRULE_PRIMITIVES:
            assert registry.lookup(primitive) is not None, f"{module.__name__} lists {primitive!r}, which has no rule"
