"""`adjoint.export`: exported modules import and run in a fresh process with nothing transformed,
give the gradients finite differences give, are byte-identical across processes, and what
cannot be exported is refused with where it is read."""

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import adjoint
from adjoint.errors import AdjointError
from adjoint.testing import check_grad
from export_samples import layers, models
from support import load_module

REPO = pathlib.Path(__file__).resolve().parents[1]
TESTS = pathlib.Path(__file__).resolve().parent

# Run in a fresh process, with the export samples *not* importable: the exported module must
# stand alone. Everything that parses or transforms is made to fail first.
IMPORT_AND_RUN = textwrap.dedent("""
    import ast, importlib.util, inspect, json, sys
    import gast
    import numpy as np
    import adjoint
    from adjoint.compiler import pipeline

    path, inputs, entry, outputs = sys.argv[1:]
    loaded = np.load(inputs)  # (NumPy reads its headers with `ast`: before it is made to fail)
    args = [loaded[f"a{i}"] if loaded[f"a{i}"].ndim else loaded[f"a{i}"].item() for i in range(len(loaded.files))]

    def refuse(*args, **kwargs):
        raise AssertionError("the exported module parsed or transformed something")

    kept = ast.parse, gast.parse, inspect.getsource
    ast.parse = gast.parse = inspect.getsource = refuse
    pipeline.compile_function = pipeline.lower = pipeline._compiled_gradient = refuse
    spec = importlib.util.spec_from_file_location("exported_gradient", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = getattr(module, entry)(*args)
    ast.parse, gast.parse, inspect.getsource = kept
    if entry == "value_and_grad":
        result = result[1]
    parts = result if isinstance(result, tuple) else (result,)
    np.savez(outputs, *parts)
    assert not pipeline._compiled, "something was transformed"
    print(json.dumps([type(part).__name__ for part in parts]))
""")


def run_exported(path, args, tmp_path, entry="grad"):
    """Import the module at `path` in a fresh process and call `entry(*args)`: the results and
    their type names."""
    inputs, outputs = tmp_path / "inputs.npz", tmp_path / "outputs.npz"
    np.savez(inputs, **{f"a{i}": np.asarray(a) for i, a in enumerate(args)})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_AND_RUN, str(path), str(inputs), entry, str(outputs)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = np.load(outputs)
    return [loaded[f"arr_{i}"] for i in range(len(loaded.files))], json.loads(done.stdout)


def checked_gradient(f, args, position):
    """adjoint's gradient of scalar `f` with respect to `args[position]`, checked against central
    finite differences first (the exported module must reproduce it)."""
    check_grad(f, *args)
    return adjoint.gradient(f, *args)[position]


def mlp_args():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 3)), rng.normal(size=(5, 4))


def test_mlp_loss_round_trip_in_a_fresh_process(tmp_path):
    path = adjoint.export(models.mlp_loss, tmp_path / "mlp_grad.py", wrt=(0, 1))
    args = mlp_args()
    (W_bar, b_bar), kinds = run_exported(path, args, tmp_path)
    assert kinds == ["ndarray", "ndarray"]
    np.testing.assert_allclose(W_bar, checked_gradient(models.mlp_loss, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b_bar, checked_gradient(models.mlp_loss, args, 1), rtol=1e-6, atol=1e-8)


def test_scalar_loop_with_math_round_trip(tmp_path):
    path = adjoint.export(models.series, tmp_path / "series_grad.py")
    (x_bar,), kinds = run_exported(path, (0.7, 5), tmp_path)
    assert kinds == ["float"]
    hand = sum(np.cos(0.7 * i) * i / (i + 1) - np.exp(-0.7) * (1, 2, 3)[i % 3] for i in range(5))
    assert float(x_bar) == pytest.approx(hand, rel=1e-12)


def test_helpers_differentiated_at_run_time_are_exported_with_their_own_code(tmp_path):
    path = adjoint.export(models.two_layers, tmp_path / "two_layers_grad.py", wrt=(1, 2))
    text = path.read_text()
    for helper in ("affine", "scaled_square", "smooth", "affine_free"):  # `affine_free`: reached from `smooth`
        assert f"def {helper}_forward(" in text
        assert f"{helper} = exported.differentiated('{helper}', {helper}_forward)" in text
    assert "export_samples" not in text  # the samples are not imported: their code is in the module
    rng = np.random.default_rng(1)
    args = (rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), rng.normal(size=3))
    (W_bar, b_bar), _ = run_exported(path, args, tmp_path, entry="value_and_grad")
    np.testing.assert_allclose(W_bar, checked_gradient(models.two_layers, args, 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(b_bar, checked_gradient(models.two_layers, args, 2), rtol=1e-6, atol=1e-8)


def test_same_bytes_across_processes_and_within_one(tmp_path):
    script = "import sys, adjoint; from export_samples import models; adjoint.export(models.two_layers, sys.argv[1], wrt=(1, 2))"
    written = []
    for seed in ("1", "2"):  # (set and dict orders that hang on string hashes would differ)
        target = tmp_path / seed / "exported.py"
        target.parent.mkdir()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)]), "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        written.append(target.read_bytes())
    here = adjoint.export(models.two_layers, tmp_path / "here.py", wrt=(1, 2)).read_bytes()
    again = adjoint.export(models.two_layers, tmp_path / "again.py", wrt=(1, 2)).read_bytes()
    assert written[0] == written[1] == here == again
    assert str(tmp_path).encode() not in here and b"/work" not in here and b"<adjoint " not in here  # no paths, no counters


def test_module_reads_like_the_generated_code(tmp_path):
    text = adjoint.export(models.mlp_loss, tmp_path / "mlp_grad.py", wrt=(0, 1)).read_text()
    assert text.startswith('"""Gradient of `mlp_loss` (models.py), with respect to arguments (0, 1).')
    assert "do not edit" in text
    assert "import numpy as np\n" in text and "import adjoint.runtime as adj\n" in text
    assert "SCALE = 2.0\n" in text
    assert adjoint.source(models.mlp_loss, (0, 1)) in text  # the same code, comments and header included
    assert text.index("import ") < text.index("def mlp_loss_forward") < text.index("def value_and_grad")


def test_entry_points_mirror_adjoints_api(tmp_path):
    module = load_module(adjoint.export(models.mlp_loss, tmp_path / "m.py", wrt=(0, 1)), "exported_mlp")
    args = mlp_args()
    copies = [a.copy() for a in args]
    value, gradients = module.value_and_grad(*args)
    expected = adjoint.value_and_grad(models.mlp_loss, wrt=(0, 1))(*args)
    assert value == expected[0]
    for got, want in zip(gradients, expected[1]):
        np.testing.assert_array_equal(got, want)
    value, back = module.pullback(*args)
    cotangents = back(1.0)
    assert len(cotangents) == 4 and cotangents[2] is None and cotangents[3] is None
    for arg, copy in zip(args, copies):  # the caller's data is never updated
        np.testing.assert_array_equal(arg, copy)


def test_gradients_never_share_memory_with_arguments_or_cotangent(tmp_path):
    module = load_module(adjoint.export(models.passthrough, tmp_path / "p.py"), "exported_passthrough")
    x, cotangent = np.ones(3), np.arange(3.0)
    (x_bar,) = module.pullback(x)[1](cotangent)
    np.testing.assert_array_equal(x_bar, cotangent)
    assert not np.shares_memory(x_bar, cotangent) and not np.shares_memory(x_bar, x)


def test_grad_refuses_a_non_scalar_output_as_adjoint_grad_does(tmp_path):
    module = load_module(adjoint.export(models.vector_valued, tmp_path / "v.py"), "exported_vector")
    with pytest.raises(AdjointError, match="return a float scalar"):
        module.grad(np.ones(3))
    value, back = module.pullback(np.zeros(3))
    np.testing.assert_allclose(back(np.ones(3))[0], 2.0 * np.ones(3))


OFFSETS = np.array([1.0, 2.0, 3.0])


def shifted_loss(x):
    return np.sum((x - OFFSETS) ** 2)


def test_refuses_an_array_global_naming_it_and_its_line(tmp_path):
    target = tmp_path / "shifted.py"
    line = shifted_loss.__code__.co_firstlineno + 1
    with pytest.raises(AdjointError, match=rf"test_exporting\.py:{line}: .*`OFFSETS`, a ndarray.*pass it as an argument"):
        adjoint.export(shifted_loss, target)
    assert not target.exists()


def test_refuses_what_is_not_a_module_path_or_a_position(tmp_path):
    with pytest.raises(AdjointError, match="ending in .py"):
        adjoint.export(models.series, tmp_path / "series.txt")
    with pytest.raises(AdjointError, match="wrt names argument 5"):
        adjoint.export(models.series, tmp_path / "series.py", wrt=5)
    with pytest.raises(AdjointError, match="needs a Python function"):
        adjoint.export(np.sin, tmp_path / "sin.py")


def test_closure_values_and_keyword_defaults_are_written_as_literals(tmp_path):
    f = models.scaled_by(3.0)
    text = adjoint.export(f, tmp_path / "closure.py").read_text()
    assert "\nk = 3.0\n" in text and "scaled_sines_forward.__kwdefaults__ = {'power': 2.0}" in text
    module = load_module(tmp_path / "closure.py", "exported_closure")
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(module.grad(x), 3.0 * 2.0 * np.sin(x) * np.cos(x), rtol=1e-12)


def test_a_method_reached_only_at_run_time_is_refused_at_its_line_not_transformed(tmp_path):
    module = load_module(adjoint.export(models.spring_energy, tmp_path / "spring.py"), "exported_spring")
    line = models.spring_energy.__code__.co_firstlineno + 1
    with pytest.raises(AdjointError, match=rf"spring\.py:\d+ \(models\.py:{line}: return spring\.energy\(x\)\): .*`Spring\.energy`"):
        module.grad(np.ones(2), models.Spring(2.0))
    assert adjoint.grad(models.spring_energy)(np.ones(2), models.Spring(2.0)).tolist() == [4.0, 4.0]  # adjoint itself still transforms


def differentiates_a_lambda(x, w):
    f = lambda t: t * w  # noqa: E731
    return np.sum(f(x))


def layer(x):  # a global function of this module's ...
    return x * 2.0


def layers_by_name(x, W):
    layer = np.tanh  # ... and a local of the same name, which the code calls
    return np.sum(layer(x @ W))


def test_a_function_defined_inside_is_refused_at_export_and_a_local_callee_is_not_taken_for_a_global(tmp_path):
    line = differentiates_a_lambda.__code__.co_firstlineno + 2
    with pytest.raises(AdjointError, match=rf"test_exporting\.py:{line}: `f` is a function defined inside"):
        adjoint.export(differentiates_a_lambda, tmp_path / "lambda_grad.py")
    module = load_module(adjoint.export(layers_by_name, tmp_path / "layers_grad.py", wrt=1), "layers_grad")
    x, W = np.linspace(0.0, 1.0, 6).reshape(2, 3), np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    np.testing.assert_allclose(module.grad(x, W), checked_gradient(layers_by_name, (x, W), 1), rtol=1e-12)


def test_refuses_one_name_meaning_two_things_in_the_modules_it_joins(tmp_path):
    with pytest.raises(AdjointError, match=r"layers\.py:\d+: `SCALE` means .*3\.0.* but .*2\.0.* at models\.py:\d+"):
        adjoint.export(models.mixed_scales, tmp_path / "mixed.py")


def square_root_sum(x):
    return np.sum(np.sqrt(x))  # the pullback divides by this square root


def test_an_error_in_exported_code_is_noted_with_the_line_it_came_from(tmp_path):
    path = adjoint.export(square_root_sum, tmp_path / "root_grad.py")
    module = load_module(path, "root_grad")
    line = square_root_sum.__code__.co_firstlineno + 1
    for entry, phase in [(module.value_and_grad, "the pullback"), (module.grad, "the pullback (fused gradient)")]:
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError) as info:
            entry(np.array([1.0, 0.0]))
        (note,) = info.value.__notes__
        assert f"in {phase} of `square_root_sum`, for test_exporting.py:{line}" in note
        assert "return np.sum(np.sqrt(x))  # the pullback divides" in note
        assert f"generated: {path}:" in note


@dataclasses.dataclass
class ScaledDense:
    W: np.ndarray
    scale: np.ndarray = dataclasses.field(metadata={"trainable": False})


def scaled_dense_loss(layer, x):
    return np.sum(np.tanh(x @ layer.W) * layer.scale)


def test_fields_a_class_declares_frozen_get_no_gradient_as_with_adjoint_grad(tmp_path):
    module = load_module(adjoint.export(scaled_dense_loss, tmp_path / "dense_grad.py"), "dense_grad")
    layer, x = ScaledDense(np.ones((2, 3)), np.full(3, 2.0)), np.linspace(0.0, 1.0, 8).reshape(4, 2)
    exported, expected = module.grad(layer, x), adjoint.grad(scaled_dense_loss)(layer, x)
    assert exported.scale is None and expected.scale is None
    np.testing.assert_allclose(exported.W, expected.W, rtol=1e-12)


CHAIN_IN_A_FRESH_PROCESS = textwrap.dedent("""
    import importlib.util, json, sys
    import numpy as np
    from adjoint.compiler import pipeline
    from export_samples import layers

    def refuse(*args, **kwargs):
        raise AssertionError("the exported module transformed something")

    pipeline.compile_function = pipeline.lower = pipeline._compiled_gradient = refuse
    spec = importlib.util.spec_from_file_location("chain_grad", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    W1, W2 = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.5, 1.5, 4).reshape(2, 2)
    model = [layers.Dense(W1, np.ones(2)), layers.Frozen(W2, np.zeros(2), 2.0)]
    first, second = module.grad(model, np.ones((4, 3)))
    print(json.dumps([first.W.tolist(), first.b.tolist(), second.W.tolist(), second.b]))
""")


def test_with_example_arguments_the_layers_called_at_run_time_are_exported_and_served(tmp_path):
    W1, W2 = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.5, 1.5, 4).reshape(2, 2)
    model, x = [layers.Dense(W1, np.ones(2)), layers.Frozen(W2, np.zeros(2), 2.0)], np.ones((4, 3))
    path = adjoint.export(models.chain, tmp_path / "chain_grad.py", args=(model, x))
    text = path.read_text()
    assert "def Dense_call_forward(" in text and "def Dense_call_forward_2(" in text  # two kinds of call: one frozen
    assert "from export_samples.layers import Dense" in text
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(TESTS)])}
    done = subprocess.run(
        [sys.executable, "-c", CHAIN_IN_A_FRESH_PROCESS, str(path)], capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    first_W, first_b, second_W, second_b = json.loads(done.stdout)
    check_grad(models.chain, model, x)
    expected = adjoint.grad(models.chain)(model, x)
    np.testing.assert_allclose(first_W, expected[0].W, rtol=1e-12)
    np.testing.assert_allclose(first_b, expected[0].b, rtol=1e-12)
    np.testing.assert_allclose(second_W, expected[1].W, rtol=1e-12)
    assert second_b is None and expected[1].b is None  # frozen by its class
    without = load_module(adjoint.export(models.chain, tmp_path / "chain_plain.py"), "chain_plain")
    with pytest.raises(AdjointError, match="export with example arguments"):
        without.grad(model, x)  # (refused, not transformed)


def test_a_kind_of_call_the_example_did_not_make_is_refused(tmp_path):
    model, x = [layers.Dense(np.ones((3, 2)), np.ones(2))], np.ones((4, 3))
    module = load_module(adjoint.export(models.chain, tmp_path / "one_kind.py", args=(model, x)), "one_kind")
    module.grad(model, x)
    with pytest.raises(AdjointError, match="`Dense.__call__`"):
        module.grad([layers.Frozen(np.ones((3, 2)), np.ones(2))], x)  # its frozen bias: another kind of call


def test_grad_runs_the_fused_gradient_specialised_on_the_examples_python_floats(tmp_path, monkeypatch):
    module = load_module(adjoint.export(models.series, tmp_path / "series_fused.py", args=(0.7, 5)), "series_fused")
    assert "def series_gradient(" in module.__loader__.get_data(str(module.__file__)).decode()
    calls = []
    fused = module.series_gradient
    monkeypatch.setattr(module, "series_gradient", lambda *args: calls.append(args) or fused(*args))
    expected = adjoint.grad(models.series)(0.7, 5)
    assert module.grad(0.7, 5) == pytest.approx(expected, rel=1e-12) and len(calls) == 1
    assert module.grad(np.float64(0.7), 5) == pytest.approx(expected, rel=1e-12) and len(calls) == 1  # not a float: general code
    assert module.value_and_grad(0.7, 5)[1] == pytest.approx(expected, rel=1e-12) and len(calls) == 1  # (the value: forward and pullback)


def test_a_helper_whose_differentiated_positions_depend_on_the_iteration(tmp_path):
    path = adjoint.export(models.rolled, tmp_path / "rolled_grad.py")
    assert " if " in path.read_text()  # (the positions `adj.vjp` is given: a choice between two tuples)
    module = load_module(path, "rolled_grad")
    args = (np.linspace(-0.5, 0.5, 9).reshape(3, 3), np.zeros(3), np.linspace(0.0, 1.0, 12).reshape(4, 3))
    np.testing.assert_allclose(module.grad(*args), checked_gradient(models.rolled, args, 0), rtol=1e-12)


rechecked_tanh = adjoint.checkpoint(layers.affine_free)


def through_a_checkpoint(x):
    return np.sum(rechecked_tanh(x))


def test_a_checkpoint_is_refused_at_export_with_its_line(tmp_path):
    line = through_a_checkpoint.__code__.co_firstlineno + 1
    with pytest.raises(AdjointError, match=rf"test_exporting\.py:{line}: the generated code calls `rechecked_tanh`, a checkpoint"):
        adjoint.export(through_a_checkpoint, tmp_path / "checkpointed.py")
