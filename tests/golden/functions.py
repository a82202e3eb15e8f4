"""Functions whose generated source is kept as golden files; keep their line numbers stable."""

import math

import numpy as np


def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return np.mean((logits - y) ** 2)


def scalar(x, y):
    z = math.sin(x) * y
    z = z + math.exp(-x) / y
    return math.sqrt(z * z + 1.0)


def layer(x, W):
    return np.maximum(x @ W, 0.0)


def two_layers(x, W1, W2):
    h = layer(x, W1)
    out, scale = layer(h, W2), np.sum(W1 ** 2)
    return np.sum(out) + 0.5 * scale


def rnn(W, U, xs, h):
    hs = []
    for x in xs:
        h = np.tanh(W @ h + U @ x)
        hs.append(h)
    return np.sum(np.stack(hs) ** 2)


def relu_sum(x):
    total = 0.0
    for v in x:
        if v > 0:
            total += v
    return total


def newton_sqrt(a):
    x = a
    while True:
        nxt = 0.5 * (x + a / x)
        if abs(nxt - x) < 1e-12:
            break
        x = nxt
    return x


def closure(x, w):
    f = lambda t: t * w
    return np.sum(f(x))


def early_return(x):
    if np.sum(x) > 0:
        return np.sum(x ** 2)
    return -np.sum(x)


def squares_of_positives(x):
    return sum([v * v for v in x if v > 0])


def running_sum(x):
    out = np.zeros(len(x))
    out[0] = x[0]
    for i in range(1, len(x)):
        out[i] = out[i - 1] + x[i]
    return np.sum(out * out)


class Dense:
    """A layer whose class declares `b` frozen (see the `dense_call_frozen` snapshot)."""

    def __init__(self, W, b, activation=np.tanh):
        self.W = W
        self.b = b
        self.activation = activation

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


class FrozenBias(Dense):
    __trainable__ = ("W",)


def chain_loss(layers, x, y):
    h = x
    for layer in layers:
        h = layer(h)
    return np.mean((h - y) ** 2)


def attention(q, k, v):
    scores = np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    weights = weights / np.sum(weights, axis=-1, keepdims=True)
    heads = np.einsum("bqk,bkd->bqd", weights, v)
    return np.mean(np.concatenate([heads, q], axis=-1) ** 2)


def gaussian_nll(L_raw, mu, x):
    n = mu.shape[0]
    L = np.tril(L_raw) + n * np.eye(n)
    cov = L @ L.T
    chol = np.linalg.cholesky(cov)
    z = np.linalg.solve(chol, x - mu)
    return 0.5 * np.sum(z ** 2) + np.sum(np.log(np.diagonal(chol)))
