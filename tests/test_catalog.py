"""docs/rules.md is the catalog of adjoint's rules, generated from the registry and kept in sync."""

import pathlib

import pytest

from adjoint import catalog

DOCS = pathlib.Path(__file__).parent.parent / "docs" / "rules.md"


def test_docs_rules_md_is_the_generated_catalog():
    pytest.importorskip("scipy")  # the page lists scipy's rules, which load only when it imports
    page = DOCS.read_text()
    if f"with NumPy\n{catalog.numpy_version()};" not in page:
        pytest.skip("docs/rules.md describes another NumPy release, which has other functions")
    assert page == catalog.markdown(), "docs/rules.md is stale: run `make docs`"


def test_every_builtin_rule_appears_once_under_its_public_name():
    names = [e.name for e in catalog.entries()]
    assert len(names) == len(set(names))
    assert {"np.sum", "x.sum", "a @ b", "np.abs", "math.sin"} <= set(names)


def test_an_entry_shows_the_keywords_its_rule_takes():
    (entry,) = [e for e in catalog.entries() if e.name == "np.var"]
    assert "ddof=0" in entry.call and "keepdims=False" in entry.call
    assert entry.family == "reductions"


def test_functions_without_gradient_are_listed():
    assert {"np.floor", "np.argmax", "np.shape"} <= set(catalog.without_gradient())


def test_array_attributes_are_shown_without_a_call():
    (entry,) = [e for e in catalog.entries() if e.name == "x.T"]
    assert entry.call == "x.T"


def test_random_draws_without_gradient_are_listed_by_their_public_names():
    listed = set(catalog.without_gradient())
    assert {"np.random.seed", "np.random.rand", "np.random.default_rng", "np.random.Generator.random",
            "np.random.Generator.integers", "np.random.PCG64.jumped"} <= listed
    # draws that move with a float parameter or pick an array's items have a derivative
    assert not {"np.random.normal", "np.random.Generator.normal", "np.random.Generator.choice"} & listed
