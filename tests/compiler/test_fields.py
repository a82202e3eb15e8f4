"""compiler.fields: a block's field reads of one object make its cotangent in one call, where
moving them together changes nothing."""

import dataclasses

import gast
import numpy as np
import pytest

import adjoint
from adjoint import frules
from adjoint import runtime as adj
from adjoint.compiler import fields, syntax
from adjoint.testing import check_grad


@dataclasses.dataclass
class Affine:
    W: np.ndarray
    b: np.ndarray
    scale: float = 1.5

    def __call__(self, x):
        return np.tanh(x @ self.W + self.b) * self.scale

    def twice(self, x):
        return np.sum((x @ self.W) * (x @ self.W) + self.b)

    def split(self, x):
        h = x @ self.W
        if np.sum(h) > 0:
            h = h * 2.0
        return np.sum(h + self.b)

    @property
    def bias(self):
        return 2.0 * self.b

    def through_property(self, x):
        return np.sum(x @ self.W + self.bias)


def loss(model, x):
    return np.sum(model(x) ** 2)


def gather(text):
    """`text`'s statements after the pass, as source."""
    body = syntax.parse(text).body
    fields._gather(body, "adj")
    return syntax.unparse(gast.Module(body=body, type_ignores=[])).strip()


X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])


def make():
    rng = np.random.default_rng(0)
    return Affine(rng.normal(size=(3, 2)), rng.normal(size=2))


def test_a_methods_field_reads_make_one_tangent():
    text = adjoint.source(Affine.__call__, wrt=0, args=(make(), X))
    assert text.count("field_bar") == 1
    assert "adj.field_bars({'scale': call_scale_bar, 'b': call_b_bar, 'W': call_W_bar}, self)" in text
    check_grad(loss, make(), X)


def test_a_field_read_twice_adds_its_cotangents():
    text = adjoint.source(Affine.twice, wrt=0, args=(make(), X))
    assert text.count("field_bar") == 1 and "adj.add(" in text.split("field_bars")[1]
    check_grad(lambda m, x: m.twice(x), make(), X)


def test_reads_on_either_side_of_a_branch_are_not_moved_across_it():
    text = adjoint.source(Affine.split, wrt=0, args=(make(), X))
    assert text.count("adj.field_bar(") == 2 and "field_bars" not in text
    check_grad(lambda m, x: m.split(x), make(), X)


def test_a_property_read_among_fields_runs_its_getter():
    text = adjoint.source(Affine.through_property, wrt=0, args=(make(), X))
    assert "field_bars({'bias': " in text
    check_grad(lambda m, x: m.through_property(x), make(), X)


def test_forward_mode_takes_the_tangents_where_the_cotangents_go():
    model, g, g_dot = make(), np.ones(2), np.arange(2.0)
    value, tangent = frules.lookup(adj.field_bars).frule(({"b": g, "W": None}, model), ({"b": g_dot, "W": None}, None))
    assert value.b is g and tangent.b is g_dot and "W" not in dir(tangent)


def test_gathers_at_the_last_read():
    assert gather(
        "s_bar = adj.field_bar(a_bar, s, 'a')\n"
        "b_bar = 2 * c_bar\n"
        "s_bar = adj.add(s_bar, adj.field_bar(b_bar, s, 'b'))\n"
        "t_bar = s_bar\n"
    ) == "b_bar = 2 * c_bar\ns_bar = adj.field_bars({'a': a_bar, 'b': b_bar}, s)\nt_bar = s_bar"


def test_an_accumulation_keeps_what_the_cotangent_held():
    assert gather(
        "s_bar = adj.add(s_bar, adj.field_bar(a_bar, s, 'a'))\n"
        "s_bar = adj.add(s_bar, adj.field_bar(b_bar, s, 'b'))\n"
    ) == "s_bar = adj.add(s_bar, adj.field_bars({'a': a_bar, 'b': b_bar}, s))"


@pytest.mark.parametrize("between", [
    "t_bar = s_bar",  # reads the object's cotangent
    "a_bar = 2 * c_bar",  # rebinds a cotangent moved
    "s = other",  # rebinds the object
    "if c:\n    d = 1",  # not a plain assignment
])
def test_nothing_moves_past_a_statement_it_depends_on(between):
    text = (
        "s_bar = adj.field_bar(a_bar, s, 'a')\n"
        f"{between}\n"
        "s_bar = adj.add(s_bar, adj.field_bar(b_bar, s, 'b'))\n"
    )
    assert gather(text) == syntax.unparse(syntax.parse(text)).strip()


def test_reads_of_different_objects_gather_apart():
    assert gather(
        "s_bar = adj.field_bar(a_bar, s, 'a')\n"
        "r_bar = adj.field_bar(c_bar, r, 'c')\n"
        "s_bar = adj.add(s_bar, adj.field_bar(b_bar, s, 'b'))\n"
        "r_bar = adj.add(r_bar, adj.field_bar(d_bar, r, 'd'))\n"
    ) == "s_bar = adj.field_bars({'a': a_bar, 'b': b_bar}, s)\nr_bar = adj.field_bars({'c': c_bar, 'd': d_bar}, r)"


def test_a_cotangent_started_again_gathers_from_there():
    assert gather(
        "s_bar = adj.field_bar(a_bar, s, 'a')\n"
        "s_bar = adj.field_bar(c_bar, s, 'c')\n"
        "s_bar = adj.add(s_bar, adj.field_bar(b_bar, s, 'b'))\n"
    ) == "s_bar = adj.field_bar(a_bar, s, 'a')\ns_bar = adj.field_bars({'c': c_bar, 'b': b_bar}, s)"
