"""compiler.pipeline: the passes in order, caching, and generated code as valid input again."""

import numpy as np
import pytest

from adjoint.compiler import fence, pipeline
from adjoint.compiler.context import Context
from adjoint.compiler.source import get_source


def model(W, b, x):
    h = np.tanh(x @ W + b)
    scale, shift = np.sum(h ** 2), np.max(h, axis=0)
    return np.mean(h * scale + shift)


def test_generated_code_is_readable_by_the_source_front_end():
    forward = pipeline.forward_function(model, (0, 1))
    found = get_source(forward)
    assert found.node.name == "model_forward"
    assert found.filename.startswith("<adjoint ")


def test_generated_code_stays_in_the_language_the_transformer_reads():
    # Higher-order derivatives differentiate generated code again. It may only use what the
    # transformer accepts or will accept with closures: the pullback closure is the one
    # construct the fence reports today.
    forward = pipeline.forward_function(model, (0, 1))
    ctx = Context(forward, get_source(forward), (0, 1))
    fence.transform(ctx.source.node, ctx)
    assert ctx.problems == []


def test_lower_stops_after_the_named_pass():
    node, _ = pipeline.lower(model, (0,), until="normalize")
    assert node.name == "model"  # not yet reversed
    node, _ = pipeline.lower(model, (0,))
    assert node.name == "model_forward"


def test_compiled_once_per_code_object_and_wrt():
    pipeline._compiled.clear()
    first = pipeline.compiled(model, (0,))
    assert pipeline.compiled(model, (0,)) is first
    assert pipeline.compiled(model, (1,)) is not first


def test_debug_switch_prints_every_pass(monkeypatch, capsys):
    monkeypatch.setattr(pipeline, "DEBUG", True)
    pipeline.compile_function(model, (0,))
    printed = capsys.readouterr().err
    for name, _ in pipeline.PASSES:
        assert f"after {name}" in printed


def test_equal_code_in_two_files_is_transformed_once_per_file(tmp_path, monkeypatch):
    # code objects of identical functions in different files compare equal
    import importlib

    import adjoint

    for name in ("twin_a", "twin_b"):
        (tmp_path / f"{name}.py").write_text("import numpy as np\n\ndef f(x):\n    return np.sum(x ** 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    a, b = importlib.import_module("twin_a"), importlib.import_module("twin_b")
    assert a.f.__code__ == b.f.__code__
    assert "(twin_a.py:3)" in adjoint.source(a.f)
    assert "(twin_b.py:3)" in adjoint.source(b.f)


def test_the_garbage_collector_is_paused_while_transforming_and_left_as_it_was(monkeypatch):
    import gc

    import adjoint

    seen = []
    real = pipeline.emit.to_source

    def spying(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline.emit, "to_source", spying)

    def cube(x):
        return x * x * x

    def broken(x):
        x.sort()  # (refused: the collector must come back on all the same)
        return x

    assert gc.isenabled()
    pipeline.compile_function(cube, (0,))
    assert seen == [False] and gc.isenabled()
    with pytest.raises(adjoint.AdjointError):
        pipeline.compile_function(broken, (0,))
    assert gc.isenabled()
    gc.disable()
    try:
        pipeline.compile_function(cube, (0,))
        assert not gc.isenabled()  # (the caller's choice is kept)
    finally:
        gc.enable()
