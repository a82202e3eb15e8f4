"""`python -m adjoint`: show and explain a function in a file, and the failures, with exit codes."""

import os
import pathlib
import subprocess
import sys

import pytest

from adjoint.cli import main

REPO = pathlib.Path(__file__).parent.parent
SAMPLES = pathlib.Path(__file__).parent / "cli_samples"
MODEL = str(SAMPLES / "cli_sample_model.py")  # its lines 15, 17 and 18 are looked for below


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_labels_every_block_with_the_file_and_line(capsys):
    code, out, err = run(capsys, "show", f"{MODEL}:loss", "--color", "never")
    assert (code, err) == (0, "")
    assert out.startswith(f"# adjoint: forward function and pullback of `loss` ({MODEL}:13)\n")
    lines = out.splitlines()
    assert lines.count(f"    # {MODEL}:15: h = np.tanh(x * w)") == 1  # the forward function
    assert lines.count(f"        # {MODEL}:15: h = np.tanh(x * w)") == 1  # the pullback
    assert f"# {MODEL}:17: y = scale(h, 2.0) + softplus(x)\n" in out  # (its sibling import was found)
    assert not [line for line in lines if line.lstrip().startswith("# line ")]  # every label relabelled ...
    assert "label = '# line 1: '" in out  # ... and the string that looks like one left alone
    assert "def loss_pullback(loss_bar):" in out and "return (x_bar, w_bar)" in out


def test_wrt_by_name_or_position_and_forward_mode(capsys):
    code, by_name, _ = run(capsys, "show", f"{MODEL}:loss", "--wrt", "w")
    assert code == 0 and "return (None, w_bar)" in by_name
    assert run(capsys, "show", f"{MODEL}:loss", "--wrt", "1")[1] == by_name
    code, out, _ = run(capsys, "show", f"{MODEL}:loss", "--wrt", "0,1", "--mode", "fwd")
    assert code == 0 and out.startswith(f"# adjoint: JVP (forward mode) of `loss` ({MODEL}:13)\n")
    assert "def loss_jvp(" in out and f"    # {MODEL}:15: h = np.tanh(x * w)\n" in out


def test_a_method_by_its_dotted_name(capsys):
    code, out, _ = run(capsys, "show", f"{MODEL}:Layer.apply", "--wrt", "x")
    assert code == 0 and f"# {MODEL}:33: return np.sin(x) * 3.0" in out and "return (None, x_bar)" in out


def test_color_only_where_asked_and_pygments_is_there(capsys, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" not in run(capsys, "show", f"{MODEL}:loss")[1]  # auto, and not a terminal
    assert "\x1b[" in run(capsys, "show", f"{MODEL}:loss", "--color", "always")[1]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert "\x1b[" in run(capsys, "show", f"{MODEL}:loss")[1]  # auto, at a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(capsys, "show", f"{MODEL}:loss")[1]


def test_plain_without_pygments(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)  # (an import of it now fails)
    code, out, _ = run(capsys, "show", f"{MODEL}:loss", "--color", "always")
    assert code == 0 and "\x1b[" not in out and f"# {MODEL}:15: h = np.tanh(x * w)" in out


def test_explain(capsys):
    code, out, _ = run(capsys, "explain", f"{MODEL}:branchy", "--wrt", "x")
    assert code == 0
    assert out.splitlines()[0] == f"adjoint.explain: `branchy` ({MODEL}:21), differentiated with respect to x"
    assert f"  w  {MODEL}:27  does not reach the output along a differentiable path" in out
    assert f"  z  {MODEL}:24  does not depend on the requested inputs" in out


def test_check_exits_1_on_a_missing_rule(capsys):
    code, out, _ = run(capsys, "check", f"{MODEL}:unwrapped")
    assert code == 1
    assert "np.unwrap" in out and "missing" in out
    code, out, _ = run(capsys, "check", f"{MODEL}:loss", "--wrt", "x")
    assert code == 0 and "scale" in out and "softplus" in out  # (its sibling module's functions too)


def test_a_function_that_cannot_be_transformed_exits_1_with_the_location(capsys):
    code, out, err = run(capsys, "show", f"{MODEL}:unsupported")
    assert (code, out) == (1, "")
    assert f"{MODEL}:37:5: `global` is not supported" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["show", "no/such/file.py:f"], "adjoint: no such file: no/such/file.py\n"),
        (["show", MODEL], f"adjoint: expected FILE.py:FUNCTION, got {MODEL!r}\n"),
        (
            ["show", f"{MODEL}:lost"],
            f"adjoint: {MODEL} defines no function 'lost' (functions there: Layer.apply, branchy, loss, offset, shifted, unsupported, unwrapped)\n",
        ),
        (["show", f"{MODEL}:loss", "--wrt", "2"], "adjoint: --wrt names '2', but loss has parameters (x, w)\n"),
        (["show", f"{MODEL}:loss", "--wrt", "v"], "adjoint: --wrt names 'v', but loss has parameters (x, w)\n"),
        (
            ["show", f"{MODEL}:loss", "--wrt", "0;1"],
            "adjoint: --wrt takes positions or parameter names separated by commas (0,1 or x,y), not '0;1'\n",
        ),
        (["explain", f"{MODEL}:np"], f"adjoint: {MODEL}:np is a module, not a Python function\n"),
    ],
)
def test_a_wrong_request_exits_2_with_one_line(capsys, argv, message):
    assert run(capsys, *argv) == (2, "", message)


def test_a_file_failing_to_import_exits_2_with_its_exception(capsys, tmp_path):
    broken = tmp_path / "broken_sample.py"
    broken.write_text("def f(x):\n    return x\n\nraise RuntimeError('boom')\n")
    path_before = list(sys.path)
    code, out, err = run(capsys, "show", f"{broken}:f")
    assert (code, out, err) == (2, "", f"adjoint: importing {broken} failed: RuntimeError: boom\n")
    assert sys.path == path_before


def test_help(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "show" in out and "explain" in out and "check" in out
    code, out, _ = run(capsys, "show", "--help")
    assert code == 0 and "--wrt" in out and "--mode" in out and "FILE.py:FUNCTION" in out
    assert main([]) == 2  # no command: the usage, on stderr


def _python_m_adjoint(*argv):
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "adjoint", *argv], cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )


def test_python_m_adjoint_show():
    done = _python_m_adjoint("show", "tests/cli_samples/cli_sample_model.py:loss", "--wrt", "0")
    assert (done.returncode, done.stderr) == (0, "")
    assert "    # tests/cli_samples/cli_sample_model.py:15: h = np.tanh(x * w)\n" in done.stdout
    assert "the CLI ran the file's main block" not in done.stdout + done.stderr


def test_python_m_adjoint_failures():
    done = _python_m_adjoint("show", "tests/cli_samples/cli_sample_model.py:nothing")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("adjoint: tests/cli_samples/cli_sample_model.py defines no function 'nothing'")
    done = _python_m_adjoint("explain", "tests/cli_samples/cli_sample_model.py:unsupported")
    assert done.returncode == 1
    assert "\ntests/cli_samples/cli_sample_model.py:37:5: `global` is not supported" in done.stderr  # as typed


def test_python_m_adjoint_export_writes_a_module_that_imports_its_helpers_by_their_names(tmp_path, monkeypatch):
    import numpy as np

    import adjoint
    from support import load_module

    output = tmp_path / "loss_grad.py"
    done = _python_m_adjoint("export", "tests/cli_samples/cli_sample_model.py:shifted", "--wrt", "0,1", "-o", str(output))
    assert done.returncode == 0, done.stderr
    assert "from cli_sample_model import offset" in output.read_text()  # the file's module, by the file's name
    monkeypatch.syspath_prepend(str(SAMPLES))
    exported = load_module(output, "cli_shifted_grad")
    model = load_module(pathlib.Path(MODEL), "cli_sample_model_for_export")
    x, w = np.linspace(-1.0, 1.0, 3), np.linspace(0.5, 1.5, 3)
    assert exported.value_and_grad(x, w, 4.0)[0] == model.shifted(x, w, 4.0)
    for got, expected in zip(exported.grad(x, w, 4.0), adjoint.grad(model.shifted, wrt=(0, 1))(x, w, 4.0)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert _python_m_adjoint("export", f"{MODEL}:loss").returncode == 2  # -o is required


def test_check_names_files_as_show_does():
    done = _python_m_adjoint("check", "tests/cli_samples/cli_sample_model.py:unwrapped")
    assert done.returncode == 1
    line = pathlib.Path(MODEL).read_text().splitlines().index("def unwrapped(x):") + 2  # (1-based, the body)
    assert f"\n  tests/cli_samples/cli_sample_model.py:{line}  np.unwrap" in done.stdout, done.stdout
