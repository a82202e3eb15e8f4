"""Gradient time of adjoint (and autograd, when installed) divided by hand-written NumPy's, and
the same for a Hessian-vector product (`hvp`: forward mode over the gradient).

Every system's gradient is checked against the hand-written one before it is timed; rounds
are interleaved and medians reported; BLAS runs on one thread. Run with `make bench`.
"""

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import adjoint  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from train import Chain, Dense, identity  # noqa: E402  (the model of examples/train.py)

try:
    import autograd  # noqa: E402
    import autograd.numpy as anp  # noqa: E402
except ImportError:
    autograd = None


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


def mlp_autograd(W1, b1, W2, b2, x, y):
    h = anp.tanh(anp.dot(x, W1) + b1)
    z = anp.dot(h, W2) + b2
    m = anp.max(z, axis=1, keepdims=True)
    lse = anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True)) + m
    return -anp.sum(y * (z - lse)) / x.shape[0]


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


def lse_loss(X, b):
    Z = X + b
    m = np.max(Z, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(Z - m), axis=1, keepdims=True)) + m)


def lse_hand(X, b):
    Z = X + b
    e = np.exp(Z - np.max(Z, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return p, np.sum(p, axis=0)


def lse_autograd(X, b):
    Z = X + b
    m = anp.max(Z, axis=1, keepdims=True)
    return anp.sum(anp.log(anp.sum(anp.exp(Z - m), axis=1, keepdims=True)) + m)


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


def rnn_autograd(W, U, xs, h):
    for x in xs:
        h = anp.tanh(anp.dot(W, h) + anp.dot(U, x))
    return anp.sum(h * h)


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


def scalar_autograd(a, b):
    s = 0.0
    for i in range(1000):
        s = s + anp.sin(a * i) * b + anp.exp(-b * s * 1e-3)
    return s


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


def hvp_row(rng):
    """`hvp`: the Hessian-vector product of the `mlp_small` loss with respect to its weights."""
    args = mlp_inputs(8, 16, 4, 4, rng)
    directions = [rng.normal(size=np.shape(a)) for a in args[:4]]
    gradient = adjoint.grad(mlp_loss, wrt=(0, 1, 2, 3))
    candidates = {
        "hand-written": lambda *a: mlp_hvp_hand(*a, *directions),
        "adjoint": lambda *a: adjoint.jvp(gradient, a, (*directions, None, None))[1],
    }
    if autograd:
        inner = autograd.grad(lambda ps, x, y: mlp_autograd(*ps, x, y))  # its hvp: reverse over reverse
        product = autograd.grad(lambda ps, x, y: sum(anp.sum(g * d) for g, d in zip(inner(ps, x, y), directions)))
        candidates["autograd"] = lambda *a: product(tuple(a[:4]), a[4], a[5])
    return "hvp (mlp_small loss)", candidates, args


def mlp_inputs(n_in, n_hidden, n_out, batch, rng):
    y = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    return [
        rng.normal(size=(n_in, n_hidden)) * 0.1, np.zeros(n_hidden),
        rng.normal(size=(n_hidden, n_out)) * 0.1, np.zeros(n_out),
        rng.normal(size=(batch, n_in)), y,
    ]


def workloads(rng):
    return {
        "mlp (784-256-10, batch 64)": (mlp_loss, mlp_hand, mlp_autograd, mlp_inputs(784, 256, 10, 64, rng), (0, 1, 2, 3)),
        "mlp_small (8-16-4, batch 4)": (mlp_loss, mlp_hand, mlp_autograd, mlp_inputs(8, 16, 4, 4, rng), (0, 1, 2, 3)),
        "logsumexp_broadcast (1000x100)": (lse_loss, lse_hand, lse_autograd, [rng.normal(size=(1000, 100)), rng.normal(size=100)], (0, 1)),
        "rnn (hidden 32, 50 steps)": (rnn_loss, rnn_hand, rnn_autograd, [
            rng.normal(size=(32, 32)) * 0.2, rng.normal(size=(32, 8)) * 0.2, rng.normal(size=(50, 8)), np.zeros(32),
        ], (0, 1, 2, 3)),
        "scalar_loop (1000 iterations)": (scalar_loss, scalar_hand, scalar_autograd, [0.3, 0.7], (0, 1)),
        # `mlp` as a Chain of Dense objects, differentiated structurally (autograd: the array version)
        "mlp_model (mlp as a Chain of Dense objects)": (
            mlp_model_adjoint, mlp_hand, mlp_autograd, mlp_inputs(784, 256, 10, 64, rng), None,
        ),
    }


def median_time(fn, args, budget=0.2):
    reps, elapsed = 1, 0.0
    while elapsed < 0.02:
        start = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        elapsed = time.perf_counter() - start
        reps *= 2
    samples = []
    for _ in range(max(5, int(budget / max(elapsed / reps * 2, 1e-9) / reps))):
        start = time.perf_counter()
        for _ in range(reps):
            fn(*args)
        samples.append((time.perf_counter() - start) / reps)
        if len(samples) >= 15:
            break
    return statistics.median(samples)


def main():
    rng = np.random.default_rng(0)
    systems = ["hand-written", "adjoint"] + (["autograd"] if autograd else [])
    rows = []
    cases = []
    for name, (loss, hand, ag_loss, args, wrt) in workloads(rng).items():
        structural = wrt is None  # `loss` makes adjoint's gradient function for these arrays
        candidates = {"hand-written": hand, "adjoint": loss(*args) if structural else adjoint.grad(loss, wrt=wrt)}
        wrt = (0, 1, 2, 3) if structural else wrt
        if autograd:
            candidates["autograd"] = autograd.grad(lambda *a, ag_loss=ag_loss: ag_loss(*a), argnum=list(wrt))
        cases.append((name, candidates, args))
    cases.append(hvp_row(rng))
    for name, candidates, args in cases:
        hand = candidates["hand-written"]
        expected = hand(*args)
        for system, fn in candidates.items():
            for got, want in zip(fn(*args), expected):
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=f"{system} on {name}")
        times = {s: [] for s in candidates}
        for _ in range(3):  # interleaved rounds
            for system, fn in candidates.items():
                times[system].append(median_time(fn, args))
        medians = {s: statistics.median(t) for s, t in times.items()}
        rows.append((name, medians))
    print(f"Gradient time / hand-written NumPy gradient time (same run; {platform.processor() or platform.machine()}, "
          f"Python {sys.version.split()[0]}, NumPy {np.__version__}, 1 thread)\n")
    print("| workload | hand-written (us) | " + " | ".join(systems[1:]) + " |")
    print("|---|---:|" + "---:|" * (len(systems) - 1))
    for name, medians in rows:
        base = medians["hand-written"]
        ratios = " | ".join(f"{medians[s] / base:.2f}" for s in systems[1:])
        print(f"| {name} | {base * 1e6:.1f} | {ratios} |")


if __name__ == "__main__":
    main()
