"""The ~50-line function whose first differentiation `overhead.py` times, and that timing,
run here in a fresh process (`python transform_subject.py [--warm]`) so nothing is cached:
it prints, as JSON, the first gradient call and the median later (cached) call, in seconds
of the process's CPU time.
With `--warm`, a small unrelated function is differentiated first, so what remains is the
cost of transforming this one (adjoint's one-time setup already paid)."""

import json
import statistics
import sys
import time

import numpy as np


def gru_attention_loss(Wz, Uz, bz, Wr, Ur, br, Wh, Uh, bh, Wo, bo, xs, labels, clip=5.0, train=True):
    """A GRU over the rows of `xs`, attention pooling over its states, a linear read-out and a
    softmax cross-entropy with weight decay: a loss with a loop, branches and a helper."""
    steps, hidden = xs.shape[0], Uz.shape[0]
    h = np.zeros(hidden)
    states = []
    for t in range(steps):
        x = xs[t]
        z = sigmoid(Wz @ x + Uz @ h + bz)
        r = sigmoid(Wr @ x + Ur @ h + br)
        candidate = np.tanh(Wh @ x + Uh @ (r * h) + bh)
        h = (1.0 - z) * h + z * candidate
        norm = np.sqrt(np.sum(h * h))
        if norm > clip:  # gradient-friendly state clipping
            h = h * (clip / norm)
        states.append(h)
    H = np.stack(states)

    # attention of the final state over every state
    scores = H @ h / np.sqrt(hidden)
    scores = scores - np.max(scores)
    weights = np.exp(scores)
    weights = weights / np.sum(weights)
    context = weights @ H
    features = np.concatenate([context, h])

    # layer norm; in training, a fixed dropout-like mask on alternate features
    centred = features - np.mean(features)
    features = centred / np.sqrt(np.mean(centred * centred) + 1e-5)
    if train:
        mask = np.arange(features.shape[0]) % 2 == 0
        features = np.where(mask, features / 0.5, 0.0)

    # read-out: a softmax cross-entropy over the classes for every label
    logits = Wo @ features + bo
    shifted = logits - np.max(logits)
    log_probs = shifted - np.log(np.sum(np.exp(shifted)))
    loss = 0.0
    for label in labels:
        loss = loss - log_probs[label]
    loss = loss / len(labels)

    # weight decay on the matrices only
    decay = 0.0
    for W in (Wz, Uz, Wr, Ur, Wh, Uh, Wo):
        decay = decay + np.sum(W * W)
    if decay > 1e3:
        loss = loss + 1e-4 * np.sqrt(decay)
    else:
        loss = loss + 1e-4 * decay
    return loss


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


WRT = tuple(range(11))


def inputs(seed=0, n_in=8, hidden=16, classes=5, steps=12):
    rng = np.random.default_rng(seed)
    weights = []
    for rows, cols in [(hidden, n_in), (hidden, hidden), (hidden, None)] * 3:
        weights.append(rng.normal(size=(rows, cols)) * 0.3 if cols else np.zeros(rows))
    weights += [rng.normal(size=(classes, 2 * hidden)) * 0.3, np.zeros(classes)]
    return [*weights, rng.normal(size=(steps, n_in)), [1, 3]]


def lines_of_code(fn):
    import inspect

    return len(inspect.getsource(fn).splitlines())


def measure(warm, later_calls=50):
    import adjoint

    if warm:
        adjoint.grad(lambda x: np.sum(np.tanh(x) * x))(np.ones(3))
    args = inputs()
    gradient = adjoint.grad(gru_attention_loss, wrt=WRT)
    start = time.process_time()
    gradient(*args)
    first = time.process_time() - start
    later = []
    for _ in range(later_calls):
        start = time.process_time()
        gradient(*args)
        later.append(time.process_time() - start)
    return {"first": first, "cached": statistics.median(later), "lines": lines_of_code(gru_attention_loss)}


if __name__ == "__main__":
    print(json.dumps(measure(warm="--warm" in sys.argv)))
