"""The benchmark's workloads, in one place: each NumPy loss, its hand-written gradient (the
bound every system is measured against), its inputs, and adjoint's gradient function for it.

A workload's `hand` and `adjoint` both take `args` and return one gradient per position in
`wrt`, in order; for `hvp` they return the Hessian of the `mlp_small` loss times `directions`.
Peers (`peers.py`) differentiate their own copies of `loss`, keyed by it.

>>> w = build()["logsumexp_broadcast"]
>>> [g.shape for g in w.hand(*w.args)]
[(1000, 100), (100,)]
"""

import dataclasses
import math
import os
import sys

import numpy as np

import adjoint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train import Chain, Dense, identity  # noqa: E402  (the model of examples/train.py)


@dataclasses.dataclass
class Workload:
    name: str  # what `--only` selects
    description: str
    loss: object  # the NumPy loss (for `hvp`, the loss whose Hessian it is)
    hand: object  # hand-written gradient (or Hessian-vector product)
    adjoint: object  # adjoint's, same signature and result
    args: list
    wrt: tuple  # the positions of `args` differentiated
    target: float | None  # the bound on adjoint's time / hand-written time
    directions: list | None = None  # `hvp` only: the vector the Hessian multiplies
    peer_note: str = ""  # how peers' figures differ from adjoint's in kind


# ---- mlp: 2-layer MLP, tanh, softmax cross-entropy -----------------------------------------

def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    m = np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return -np.sum(y * (z - lse)) / x.shape[0]


def mlp_hand(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    dz = (p * np.sum(y, axis=1, keepdims=True) - y) / x.shape[0]
    da = (dz @ W2.T) * (1 - h * h)
    return x.T @ da, np.sum(da, axis=0), h.T @ dz, np.sum(dz, axis=0)


def mlp_inputs(n_in, n_hidden, n_out, batch, rng):
    y = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    return [
        rng.normal(size=(n_in, n_hidden)) * 0.1, np.zeros(n_hidden),
        rng.normal(size=(n_hidden, n_out)) * 0.1, np.zeros(n_out),
        rng.normal(size=(batch, n_in)), y,
    ]


def mlp_model_loss(model, x, y):
    z = model(x)
    m = np.max(z, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(z - m), axis=1, keepdims=True)) + m
    return -np.sum(y * (z - lse)) / x.shape[0]


def mlp_model_adjoint(W1, b1, W2, b2, x, y):
    """adjoint's structural gradient of the model holding these arrays, as a tuple."""
    model = Chain(Dense(W1, b1), Dense(W2, b2, identity))
    grad = adjoint.grad(mlp_model_loss)

    def gradient(*args):
        g = grad(model, args[4], args[5])
        return g.layers[0].W, g.layers[0].b, g.layers[1].W, g.layers[1].b

    return gradient


# ---- logsumexp_broadcast: log-sum-exp over rows after adding a broadcast bias ---------------

def lse_loss(X, b):
    Z = X + b
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=1, keepdims=True)) + m)


def lse_hand(X, b):
    Z = X + b
    e = np.exp(Z - np.max(Z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return p, np.sum(p, axis=0)


# ---- rnn: tanh RNN in a Python loop, sum of squares of the final state ---------------------

def rnn_loss(W, U, xs, h):
    for x in xs:
        h = np.tanh(W @ h + U @ x)
    return np.sum(h * h)


def rnn_hand(W, U, xs, h):
    hs = [h]
    for x in xs:
        hs.append(np.tanh(W @ hs[-1] + U @ x))
    dh = 2 * hs[-1]
    dW, dU, dxs = np.zeros_like(W), np.zeros_like(U), np.zeros_like(xs)
    for t in range(len(xs) - 1, -1, -1):
        da = dh * (1 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dU += np.outer(da, xs[t])
        dxs[t] = U.T @ da
        dh = W.T @ da
    return dW, dU, dxs, dh


# ---- scalar_loop: Python floats and `math` ---------------------------------------------------

def scalar_loss(a, b):
    s = 0.0
    for i in range(1000):
        s = s + math.sin(a * i) * b + math.exp(-b * s * 1e-3)
    return s


def scalar_hand(a, b):
    s, trace = 0.0, []
    for i in range(1000):
        trace.append(s)
        s = s + math.sin(a * i) * b + math.exp(-b * s * 1e-3)
    da, db, ds = 0.0, 0.0, 1.0
    for i in range(999, -1, -1):
        s_prev = trace[i]
        e = math.exp(-b * s_prev * 1e-3)
        da += ds * math.cos(a * i) * i * b
        db += ds * (math.sin(a * i) - e * s_prev * 1e-3)
        ds = ds * (1.0 - e * b * 1e-3)
    return da, db


# ---- hvp: the Hessian of the mlp_small loss times a vector -----------------------------------

def mlp_hvp_hand(W1, b1, W2, b2, x, y, V1, v1, V2, v2):
    """The Hessian of `mlp_loss` times (V1, v1, V2, v2), by hand: tangents forward, then the
    tangent of each backward step (Pearlmutter's R-operator)."""
    n = x.shape[0]
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    rows = np.sum(y, axis=1, keepdims=True)
    dh = (1 - h * h) * (x @ V1 + v1)
    dz = dh @ W2 + h @ V2 + v2
    dp = p * (dz - np.sum(p * dz, axis=1, keepdims=True))
    gz, rgz = (p * rows - y) / n, dp * rows / n
    gh = gz @ W2.T
    rgh = rgz @ W2.T + gz @ V2.T
    rga = rgh * (1 - h * h) - gh * 2 * h * dh
    return x.T @ rga, np.sum(rga, axis=0), dh.T @ gz + h.T @ rgz, np.sum(rgz, axis=0)


def hvp_workload(rng):
    """`hvp`: forward mode (`adjoint.jvp`) over adjoint's gradient of the `mlp_small` loss."""
    args = mlp_inputs(8, 16, 4, 4, rng)
    directions = [rng.normal(size=np.shape(a)) for a in args[:4]]
    gradient = adjoint.grad(mlp_loss, wrt=(0, 1, 2, 3))
    return Workload(
        "hvp", "hvp (Hessian-vector product of the mlp_small loss)", mlp_loss,
        lambda *a: mlp_hvp_hand(*a, *directions),
        lambda *a: adjoint.jvp(gradient, a, (*directions, None, None))[1],
        args, (0, 1, 2, 3), 1.5, directions,
    )


# ---- the suite -------------------------------------------------------------------------------

def gradient_workload(name, description, loss, hand, args, wrt, target):
    return Workload(name, description, loss, hand, adjoint.grad(loss, wrt=wrt), args, wrt, target)


def rnn_inputs(rng):
    W, U = rng.normal(size=(32, 32)) * 0.2, rng.normal(size=(32, 8)) * 0.2
    return [W, U, rng.normal(size=(50, 8)), np.zeros(32)]


def lse_inputs(rng):
    return [rng.normal(size=(1000, 100)), rng.normal(size=100)]


NAMES = ("mlp", "mlp_small", "rnn", "scalar_loop", "logsumexp_broadcast", "hvp", "mlp_model", "mlp_model_small")


def build(seed=0):
    """Every workload by name, in the issue's order (then the models); each draws its inputs
    from its own generator, so a subset (`--only`) sees the same inputs as the full suite."""
    rng = {name: np.random.default_rng([seed, i]) for i, name in enumerate(NAMES)}
    model_args = mlp_inputs(784, 256, 10, 64, rng["mlp_model"])
    small_model_args = mlp_inputs(8, 16, 4, 4, rng["mlp_model_small"])
    suite = [
        gradient_workload("mlp", "mlp (784-256-10, batch 64)", mlp_loss, mlp_hand,
                          mlp_inputs(784, 256, 10, 64, rng["mlp"]), (0, 1, 2, 3), 1.05),
        gradient_workload("mlp_small", "mlp_small (8-16-4, batch 4)", mlp_loss, mlp_hand,
                          mlp_inputs(8, 16, 4, 4, rng["mlp_small"]), (0, 1, 2, 3), 1.3),
        gradient_workload("rnn", "rnn (hidden 32, 50 steps, a Python loop)", rnn_loss, rnn_hand,
                          rnn_inputs(rng["rnn"]), (0, 1, 2, 3), 1.3),
        gradient_workload("scalar_loop", "scalar_loop (1000 iterations of `math`)", scalar_loss,
                          scalar_hand, [0.3, 0.7], (0, 1), 2.0),
        gradient_workload("logsumexp_broadcast", "logsumexp_broadcast (1000x100, (100,) bias)", lse_loss,
                          lse_hand, lse_inputs(rng["logsumexp_broadcast"]), (0, 1), 1.10),
        hvp_workload(rng["hvp"]),
        Workload("mlp_model", "mlp_model (the mlp as a `Chain` of `Dense` objects)", mlp_loss, mlp_hand,
                 mlp_model_adjoint(*model_args), model_args, (0, 1, 2, 3), None,
                 peer_note="peers: the array version"),
        Workload("mlp_model_small", "mlp_model_small (mlp_small as a `Chain` of `Dense` objects)", mlp_loss, mlp_hand,
                 mlp_model_adjoint(*small_model_args), small_model_args, (0, 1, 2, 3), None,
                 peer_note="peers: the array version"),
    ]
    return {w.name: w for w in suite}
