"""compiler.emit: comments and headers stay valid Python whatever the user's file is called."""

import gast
import numpy as np

import adjoint

from support import load_module


def test_source_file_with_newline_in_path(tmp_path):
    # expected: gradient 2x (or AdjointError); actual: SyntaxError from loader (filename in the header comment)
    path = tmp_path / "a\nb.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    module = load_module(str(path), "review3_newline")
    np.testing.assert_allclose(adjoint.grad(module.f)(np.arange(3.0)), [0.0, 2.0, 4.0])


# ---- source maps: every statement finds its own line's comment, after every pass ------------

import ast  # noqa: E402

import pytest  # noqa: E402

from adjoint.compiler import annotations as anno  # noqa: E402
from adjoint.compiler import emit, fuse, loader, pipeline, syntax  # noqa: E402
from golden import functions  # noqa: E402


def _looped_with_branches(x, n):
    total = 0.0
    for i in range(n):
        if i % 2:
            total = total + np.sin(x) * x
        else:
            total = total - np.sqrt(x)
        x = x * 1.5
    y = np.tanh(total)
    return np.sum(y * x)


MAPPED = [
    (functions.mlp_loss, (0, 1, 2, 3)), (functions.scalar, (0, 1)), (functions.two_layers, (1, 2)),
    (functions.rnn, (0, 1, 2, 3)), (functions.relu_sum, (0,)), (functions.newton_sqrt, (0,)),
    (functions.closure, (0, 1)), (functions.early_return, (0,)), (functions.squares_of_positives, (0,)),
    (functions.running_sum, (0,)), (functions.attention, (0, 1, 2)), (functions.gaussian_nll, (0, 1)),
    (_looped_with_branches, (0,)),
]


def _is_comment(stmt) -> bool:
    return isinstance(stmt, gast.Expr) and isinstance(getattr(stmt.value, "value", None), syntax.Comment)


def _pairs(emitted: list, parsed: list):
    """The statements of an emitted body (comments left out) beside those of its text parsed
    again, nested bodies too."""
    emitted = [stmt for stmt in emitted if not _is_comment(stmt)]
    assert [type(s).__name__ for s in emitted] == [type(s).__name__ for s in parsed]
    for ours, theirs in zip(emitted, parsed):
        yield ours, theirs
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(ours, field, None), list):
                yield from _pairs(getattr(ours, field), getattr(theirs, field))


def _assert_mapped(node, text):
    lines = text.splitlines(True)
    checked = 0
    for ours, theirs in _pairs(node.body, ast.parse(text).body[0].body):
        origin = anno.get(ours, anno.ORIGIN)
        if origin is None or anno.get(ours, anno.PHI) or isinstance(ours, gast.FunctionDef):
            continue  # (a copy where control flow joins belongs to the statement before it)
        assert loader.locate(lines, theirs.lineno).line == origin, (theirs.lineno, lines[theirs.lineno - 1])
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("fn, wrt", MAPPED, ids=[fn.__name__ for fn, _ in MAPPED])
def test_every_statement_maps_to_its_own_line(fn, wrt):
    node, ctx = pipeline.lower(fn, wrt)
    _assert_mapped(node, emit.to_source(node, ctx))
    node, ctx = pipeline.lower(fn, wrt, mode=pipeline.TANGENT)
    _assert_mapped(node, emit.to_source(node, ctx))
    node, ctx = pipeline.lower(fn, wrt)
    fused = fuse.transform(node, ctx, True)
    if fused is not None:
        _assert_mapped(fused, emit.to_source(fused, ctx))
