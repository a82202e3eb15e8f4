"""The README's example and the generated code it shows stay true."""

import importlib.util
import pathlib
import re

import adjoint

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_readme_generated_source_is_what_adjoint_prints(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example, shown = blocks[0], blocks[1]
    definition = example.split("\ndW, db")[0] + "\n"
    path = tmp_path / "model.py"
    path.write_text(definition)
    spec = importlib.util.spec_from_file_location("readme_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert adjoint.source(module.loss, wrt=(0, 1)) == shown


def test_readme_models_example_runs_and_its_comments_hold(tmp_path):
    block = next(b for b in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S) if "class Dense" in b)
    preamble = f'''
import dataclasses
import sys
import numpy as np
import adjoint

sys.path.insert(0, {str(README.parent / "examples")!r})
from train import Chain, identity

def mse(prediction, target):
    return np.mean((prediction - target) ** 2)

rng = np.random.default_rng(0)
x, y = rng.normal(size=(8, 3)), rng.normal(size=(8, 2))
W1, b1, W2, b2 = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(4, 2)), rng.normal(size=2)
'''
    path = tmp_path / "readme_models.py"
    path.write_text(preamble + block)
    spec = importlib.util.spec_from_file_location("readme_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    namespace = vars(module)
    grads, gs, model = namespace["grads"], namespace["gs"], namespace["model"]
    assert grads.layers[0].W.shape == (3, 4) and grads.layers[0].activation is None
    # `gs` was taken after the Adam step, at the updated model: compare with a fresh structural gradient
    fresh = adjoint.grad(lambda m: namespace["mse"](m(namespace["x"]), namespace["y"]))(model)
    import numpy as np

    np.testing.assert_allclose(gs[model.layers[0].W], fresh.layers[0].W)
    np.testing.assert_allclose(gs[model.layers[1].b], fresh.layers[1].b)


def _run_block(tmp_path, marker, name):
    block = next(b for b in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S) if marker in b)
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\nimport adjoint\n\n" + block)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return vars(module)


def test_readme_complex_example_holds(tmp_path):
    namespace = _run_block(tmp_path, "np.abs(z) ** 2", "readme_complex")
    assert namespace["g"] == 2 - 4j
    assert abs(namespace["z"]) < abs(1 + 2j)


def test_readme_rule_example_registers_a_rule_that_passes_its_checks(tmp_path):
    namespace = _run_block(tmp_path, "softplus_rrule", "readme_rule")
    import numpy as np

    g = adjoint.grad(lambda x: np.sum(namespace["softplus"](x)))(np.array([0.0]))
    assert g[0] == 0.5  # the rule's sigmoid at 0


def test_readme_forward_mode_example_runs_and_its_generated_code_is_what_adjoint_prints(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    index = next(i for i, b in enumerate(blocks) if "adjoint.jvp(f, (x,), (v,))" in b)
    example, shown = blocks[index], blocks[index + 1]
    path = tmp_path / "model.py"
    path.write_text(example)
    spec = importlib.util.spec_from_file_location("readme_forward", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its asserts hold
    import numpy as np

    x, v = module.x, module.v
    assert np.allclose(module.hv, module.H @ v) and module.second == 12.0
    assert np.isclose(module.slope, np.sum((np.cos(x) * x + np.sin(x)) * v))
    assert adjoint.source(module.f, mode="jvp") == shown


def test_readme_steering_example_holds(tmp_path):
    namespace = _run_block(tmp_path, "adjoint.within_gradient()", "readme_steering")  # its checks hold
    import numpy as np

    dropout, x = namespace["dropout"], np.ones((2, 3))
    assert dropout(x, 0.5, np.random.default_rng(0)) is x
    assert "if " not in adjoint.source(dropout).split("\n", 1)[1]
    assert np.any(np.abs(adjoint.grad(namespace["loss"])(namespace["W"], namespace["h"])) > 0.01)  # so clipping clipped


def test_readme_custom_rule_example_uses_the_rule(tmp_path):
    namespace = _run_block(tmp_path, "logsumexp_rrule", "readme_custom_rules")  # its assert holds
    import numpy as np

    x = namespace["x"]
    softmax = np.exp(2 * x - np.max(2 * x)) / np.sum(np.exp(2 * x - np.max(2 * x)))
    stable = np.max(2 * x) + np.log(np.sum(np.exp(2 * x - np.max(2 * x))))
    np.testing.assert_allclose(namespace["g"], 2 * stable * 2 * softmax, rtol=1e-12)
    hessian = 8 * np.outer(softmax, softmax) + 8 * stable * (np.diag(softmax) - np.outer(softmax, softmax))
    np.testing.assert_allclose(adjoint.hvp(namespace["loss"], x, np.array([1.0, -1.0])), hessian @ [1.0, -1.0], rtol=1e-9)


def test_readme_check_and_explain_tables_are_what_the_command_line_prints(tmp_path, monkeypatch, capsys):
    from adjoint.cli import main

    text = README.read_text()
    section = text[text.index("## Working with generated code") :]
    model = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    check_table, explain_table = re.findall(r"```text\n(adjoint\.(?:check|explain).*?)```", section, flags=re.S)
    (tmp_path / "model.py").write_text(model)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "model.py:loss"]) == 1
    assert capsys.readouterr().out == check_table
    assert main(["explain", "model.py:loss", "--wrt", "0"]) == 0
    assert capsys.readouterr().out == explain_table
