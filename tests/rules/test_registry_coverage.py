"""Every built-in rule in adjoint.registry is exercised by the rule tests of tests/rules.

Each `tests/rules/test_<family>.py` lists, in `RRULE_PRIMITIVES`, the primitives whose rules it
checks with `check_rrule`; together they must name every rule `adjoint.rules` registers.
"""

import importlib
import pathlib

import adjoint  # noqa: F401  (registers the built-in rules)
from adjoint import registry

TESTED_MODULES = [
    importlib.import_module(path.stem)
    for path in sorted(pathlib.Path(__file__).parent.glob("test_*.py"))
    if path.stem != "test_registry_coverage"
]


def _builtin_rules():
    """The primitives with a rule defined in adjoint.rules (tests may register rules of their own)."""
    return {
        key: primitive
        for key, (primitive, rule) in registry._RULES.items()
        if rule.definition.__module__.startswith("adjoint.rules.")
    }


def _tested():
    return {id(p) for module in TESTED_MODULES for p in getattr(module, "RRULE_PRIMITIVES", ())}


def test_every_builtin_rule_is_checked_by_a_rule_test():
    tested = _tested()
    untested = sorted(
        f"{getattr(p, '__module__', None) or type(p).__name__}.{getattr(p, '__qualname__', repr(p))}"
        for key, p in _builtin_rules().items()
        if key not in tested
    )
    assert not untested, f"rules without a check_rrule test: {untested}"


def test_rule_tests_only_name_registered_primitives():
    # A primitive listed in a test module but with no rule would make the coverage check vacuous.
    for module in TESTED_MODULES:
        for primitive in getattr(module, "RRULE_PRIMITIVES", ()):
            assert registry.lookup(primitive) is not None, f"{module.__name__} lists {primitive!r}, which has no rule"


def test_every_builtin_rule_has_a_forward_rule_of_its_own():
    # not one derived from the pullback (`frules.TRANSPOSED`, for users' rules): a written rule
    from adjoint import frules

    missing = sorted(
        f"{getattr(p, '__module__', None) or type(p).__name__}.{getattr(p, '__qualname__', repr(p))}"
        for p in _builtin_rules().values()
        if frules.lookup(p) is None or frules.lookup(p).kind == frules.TRANSPOSED
    )
    assert not missing, f"built-in rules without a forward rule: {missing}"
