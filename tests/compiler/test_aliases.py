"""compiler.aliases: which names may share memory, and which containers hold them."""

import gast

from adjoint.compiler import aliases


def test_copies_and_views_alias_and_the_versions_of_a_holder_hold_what_it_held():
    statements = gast.parse("b = a\nc = b[0:2]\nlst = [c]\nkept = lst\nagain = kept\nother = d * 2").body
    found = aliases.analyse(statements, [])
    assert found.classes["a"] == found.classes["c"] == {"a", "b", "c"}
    assert found.contained == {"c"}
    assert found.holders == {"lst", "kept", "again"}
    assert "other" not in found.classes
