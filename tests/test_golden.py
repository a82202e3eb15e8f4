"""Golden snapshots of generated source: the product users read must not drift unnoticed.

Regenerate after an intended change with `ADJOINT_UPDATE_GOLDEN=1 make test`, and review the
diff like any other code change.
"""

import os
import pathlib

import numpy as np
import pytest

import adjoint
from adjoint.testing import check_grad

from golden import functions

HERE = pathlib.Path(__file__).parent / "golden"
CASES = {
    "mlp_loss": (functions.mlp_loss, (0, 1, 2, 3)),
    "scalar": (functions.scalar, (0, 1)),
    "two_layers": (functions.two_layers, (1, 2)),
    "rnn": (functions.rnn, (0, 1, 2, 3)),
    "relu_sum": (functions.relu_sum, (0,)),
    "newton_sqrt": (functions.newton_sqrt, (0,)),
    "closure": (functions.closure, (0, 1)),
    "early_return": (functions.early_return, (0,)),
    "squares_of_positives": (functions.squares_of_positives, (0,)),
    "running_sum": (functions.running_sum, (0,)),
    "chain_loss": (functions.chain_loss, (0,)),
    "attention": (functions.attention, (0, 1, 2)),
    "gaussian_nll": (functions.gaussian_nll, (0, 1)),
}
_W, _B = np.ones((3, 2)), np.zeros(2)
SPECIALISED = {  # the code that these example arguments get: `b` frozen by the class, or not
    "dense_call": (functions.Dense.__call__, (functions.Dense(_W, _B), np.ones((4, 3)))),
    "dense_call_frozen": (functions.Dense.__call__, (functions.FrozenBias(_W, _B), np.ones((4, 3)))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden(name):
    fn, wrt = CASES[name]
    text = adjoint.source(fn, wrt=wrt)
    path = HERE / f"{name}.txt"
    if os.environ.get("ADJOINT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


JVP_CASES = {  # forward mode: `adjoint.source(f, mode="jvp")`
    "mlp_loss_jvp": (functions.mlp_loss, (0, 1, 2, 3)),
    "rnn_jvp": (functions.rnn, (0, 1, 2, 3)),
    "newton_sqrt_jvp": (functions.newton_sqrt, (0,)),
    "closure_jvp": (functions.closure, (0, 1)),
    "two_layers_jvp": (functions.two_layers, (1, 2)),
}


@pytest.mark.parametrize("name", sorted(JVP_CASES))
def test_generated_jvp_source_matches_golden(name):
    fn, wrt = JVP_CASES[name]
    text = adjoint.source(fn, wrt=wrt, mode="jvp")
    path = HERE / f"{name}.txt"
    if os.environ.get("ADJOINT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


@pytest.mark.parametrize("name", sorted(SPECIALISED))
def test_specialised_source_matches_golden(name):
    fn, args = SPECIALISED[name]
    text = adjoint.source(fn, wrt=0, args=args)
    path = HERE / f"{name}.txt"
    if os.environ.get("ADJOINT_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_a_frozen_field_gets_no_adjoint_work():
    frozen, trainable = (HERE / "dense_call_frozen.txt").read_text(), (HERE / "dense_call.txt").read_text()
    assert "'b'" in trainable and "'b'" not in frozen
    assert "'W'" in trainable and "'W'" in frozen


def test_golden_functions_have_correct_gradients():
    rng = np.random.default_rng(1)
    check_grad(functions.mlp_loss, *[rng.normal(size=s) for s in [(3, 4), (4,), (4, 2), (2,), (5, 3), (5, 2)]])
    check_grad(functions.scalar, 0.7, 1.9)
    check_grad(functions.two_layers, rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4, 2)))
    check_grad(functions.rnn, *[rng.normal(size=s) * 0.5 for s in [(3, 3), (3, 2), (4, 2), (3,)]])
    check_grad(functions.relu_sum, np.array([0.5, -1.0, 2.0]))
    check_grad(functions.newton_sqrt, 2.0)
    check_grad(functions.closure, rng.normal(size=3), rng.normal(size=3))
    check_grad(functions.early_return, np.array([0.5, 1.0]))
    check_grad(functions.early_return, np.array([-0.5, -1.0]))
    check_grad(functions.squares_of_positives, np.array([0.5, -1.0, 2.0]))
    check_grad(functions.running_sum, np.array([0.5, -1.0, 2.0, 0.3]))
    layers = [functions.Dense(rng.normal(size=(3, 4)), rng.normal(size=4)), functions.FrozenBias(rng.normal(size=(4, 2)), rng.normal(size=2))]
    check_grad(functions.chain_loss, layers, rng.normal(size=(5, 3)), rng.normal(size=(5, 2)))
    check_grad(functions.attention, *[rng.normal(size=(2, 3, 4)) for _ in range(3)])
    check_grad(functions.gaussian_nll, rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=3))
