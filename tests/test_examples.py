"""The examples run and do what they say."""

import runpy
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"


@pytest.mark.parametrize("name", ["quickstart", "train", "implicit_solver"])
def test_example_runs(name, capsys):
    runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    assert capsys.readouterr().out


def test_training_example_makes_the_loss_fall_in_both_styles():
    train = runpy.run_path(str(EXAMPLES / "train.py"))
    import numpy as np

    rng = np.random.default_rng(1)
    x, y = train["data"](rng, n=64)
    structural = train["structural"](rng, x, y)
    implicit = train["implicit"](rng, x, y)
    assert structural[-1] < structural[0] / 20
    assert implicit[-1] < implicit[0] / 20
