"""compiler.normalize and compiler.ssa: statement shapes, readable temporaries, same values, and
globals read into locals so the pullback uses the values the forward pass read."""

import types

import gast
import numpy as np

import adjoint
from adjoint.compiler import syntax
from adjoint.compiler.pipeline import lower


def nested(x, W, b):
    h = np.tanh(x @ W + b)
    a, c = h, -h
    s = np.sum(a * c, axis=0) / (-2.0)
    print("shape", np.shape(x[:, 0]))
    return np.reshape(s, (-1,)) + x[1:, ::2].sum()


def rebinding(x):
    x = x * 2.0
    y = np.sin(x)
    y += x
    y, x = x, y
    return y - x


def _atomic(node):
    return syntax.is_atom(node) or syntax.root_name(node) in {"np"}


def _one_operation(value):
    if _atomic(value):
        return True
    if isinstance(value, gast.BinOp):
        return _atomic(value.left) and _atomic(value.right)
    if isinstance(value, gast.UnaryOp):
        return _atomic(value.operand)
    if isinstance(value, gast.Call):
        return syntax.dotted(value.func) is not None and all(
            _atomic(a) for a in value.args + [k.value for k in value.keywords]
        )
    if isinstance(value, gast.Subscript):
        return _atomic(value.value)
    if isinstance(value, (gast.Tuple, gast.List)):
        return all(_atomic(e) for e in value.elts)
    if isinstance(value, gast.Attribute):
        return _atomic(value.value)
    return False


def test_every_statement_is_one_simple_shape():
    node, _ = lower(nested, (0, 1, 2), until="normalize")
    *body, last = node.body
    assert isinstance(last, gast.Return) and syntax.is_atom(last.value)
    for stmt in body:
        text = syntax.unparse(stmt)
        if isinstance(stmt, gast.Assign):
            assert _one_operation(stmt.value), text
        else:
            assert isinstance(stmt, gast.Expr) and _one_operation(stmt.value), text


def test_temporaries_are_named_after_their_target_and_operation():
    node, _ = lower(nested, (0, 1, 2), until="normalize")
    text = syntax.unparse(node)
    assert "h_matmul = x @ W" in text
    assert "h_add = h_matmul + b" in text
    assert "h = np.tanh(h_add)" in text
    assert "np.reshape(s, (-1,))" in text  # constant tuples and negative numbers stay inline
    assert "/ -2.0" in text


def test_every_statement_keeps_its_user_origin():
    from adjoint.compiler import annotations as anno

    node, _ = lower(nested, (0,), until="normalize")
    start = nested.__code__.co_firstlineno
    origins = [anno.get(s, anno.ORIGIN) for s in node.body]
    assert origins[0] == start + 1 and origins[-1] == start + 5
    assert all(o is not None for o in origins)


def test_ssa_gives_every_rebinding_a_new_name():
    node, _ = lower(rebinding, (0,), until="ssa")
    stored = [n.id for n in gast.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
    assert len(stored) == len(set(stored))
    assert "x" not in stored  # parameters are never reassigned
    text = syntax.unparse(node)
    assert "x_1 = x * 2.0" in text and "y = np.sin(x_1)" in text


def _run(node, ctx, fn, *args):
    namespace = dict(fn.__globals__)
    node.name = "normalized"
    exec(compile(syntax.unparse(node), "<test>", "exec"), namespace)
    return namespace["normalized"](*args)


def test_normalized_code_computes_the_same_values():
    rng = np.random.default_rng(0)
    args = rng.normal(size=(3, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2,))
    node, ctx = lower(nested, (0,), until="ssa")
    np.testing.assert_allclose(_run(node, ctx, nested, *args), nested(*args))
    node, ctx = lower(rebinding, (0,), until="ssa")
    np.testing.assert_allclose(_run(node, ctx, rebinding, 0.7), rebinding(0.7))


def duplicate_unpack_target(x):
    a, a = x
    return a * 1.0


def test_duplicate_unpacking_target_gets_last_element_only():
    # expected: `a, a = x` binds a = x[1], gradient [0, 1]; actual: [1, 1]
    np.testing.assert_allclose(adjoint.grad(duplicate_unpack_target)(np.array([1.0, 2.0])), [0.0, 1.0])

# A module whose attribute the differentiated code reads (as `import config as cfg` would).
cfg = types.ModuleType("review3_cfg")
cfg.scale = 2.0


def scaled_by_module_attribute(x):
    return np.sum(x * cfg.scale)


def test_module_attribute_read_at_forward_time():
    # expected: back() uses cfg.scale as the forward saw it (2.0); actual: re-reads cfg.scale at back() time (5.0)
    value, back = adjoint.pullback(scaled_by_module_attribute, np.ones(3))
    try:
        cfg.scale = 5.0
        (x_bar,) = back(1.0)
    finally:
        cfg.scale = 2.0
    np.testing.assert_allclose(x_bar, [2.0, 2.0, 2.0])


# ---- a global rebound during the forward pass ----

_STEP = 1.0


@adjoint.non_differentiable
def _tick():
    global _STEP
    _STEP = 2.0
    return 0.0


def _reads_then_ticks(x):
    y = x * _STEP
    n = _tick()
    return y + n


def test_pullback_uses_the_value_the_statement_read():
    # silently before: 2.0 (the value at the end of the forward pass)
    global _STEP
    try:
        assert adjoint.grad(_reads_then_ticks)(2.0) == 1.0
    finally:
        _STEP = 1.0
