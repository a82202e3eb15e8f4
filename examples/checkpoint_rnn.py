"""Gradient checkpointing: a 100-step RNN whose steps are checkpointed ten at a time.

Without checkpointing, the pullback keeps every step's intermediate values until the backward
pass runs. With `adjoint.checkpoint`, each ten-step segment keeps only its inputs and runs again
during the backward pass: the same gradients, for a fraction of the memory and one more forward
pass. Run it: `python examples/checkpoint_rnn.py`.
"""

import time
import tracemalloc

import numpy as np

import adjoint

STEPS, SEGMENT = 100, 10


def segment(h, W, U, xs):
    """Run the RNN over the inputs `xs` (one per step) from the state `h`."""
    for x in xs:
        h = np.tanh(h @ W + x @ U)
    return h


checkpointed_segment = adjoint.checkpoint(segment)


def loss(W, U, h, xs):
    for start in range(0, STEPS, SEGMENT):
        h = segment(h, W, U, xs[start : start + SEGMENT])
    return np.sum(h ** 2)


def checkpointed_loss(W, U, h, xs):
    for start in range(0, STEPS, SEGMENT):
        h = checkpointed_segment(h, W, U, xs[start : start + SEGMENT])
    return np.sum(h ** 2)


def problem(hidden=64, batch=32, inputs=16, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)
    U = rng.normal(size=(inputs, hidden)) / np.sqrt(inputs)
    return W, U, np.zeros((batch, hidden)), rng.normal(size=(STEPS, batch, inputs))


def peak_memory(f, *args):
    """The gradient of `f` at `args` (w.r.t. W and U), and the peak memory it allocated (bytes)."""
    gradient = adjoint.grad(f, (0, 1))
    gradient(*args)  # transformed once, outside the measurement
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        grads = gradient(*args)
        return grads, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def seconds(f, *args, repeats=10):
    gradient = adjoint.grad(f, (0, 1))
    gradient(*args)
    start = time.perf_counter()
    for _ in range(repeats):
        gradient(*args)
    return (time.perf_counter() - start) / repeats


if __name__ == "__main__":
    args = problem()
    (dW, dU), plain_peak = peak_memory(loss, *args)
    (cW, cU), checkpointed_peak = peak_memory(checkpointed_loss, *args)
    print(f"gradients agree: {np.allclose(dW, cW, rtol=1e-12) and np.allclose(dU, cU, rtol=1e-12)}")
    print(f"peak memory: {plain_peak / 1e6:.2f} MB plain, {checkpointed_peak / 1e6:.2f} MB checkpointed "
          f"({plain_peak / checkpointed_peak:.1f}x less)")
    ratio = seconds(checkpointed_loss, *args) / seconds(loss, *args)
    print(f"time: checkpointed / plain = {ratio:.2f}")
