"""HIPS autograd's versions of the workloads: the NumPy losses with `autograd.numpy`; its
gradient is reverse mode by tracing, its Hessian-vector product reverse over reverse (it has
no forward mode over a gradient of several arguments)."""

import importlib.metadata

import autograd
import autograd.numpy as anp

import workloads


def version():
    return importlib.metadata.version("autograd")


def mlp_loss(W1, b1, W2, b2, x, y):
    h = anp.tanh(anp.dot(x, W1) + b1)
    z = anp.dot(h, W2) + b2
    m = anp.max(z, axis=1, keepdims=True)
    lse = anp.log(anp.sum(anp.exp(z - m), axis=1, keepdims=True)) + m
    return -anp.sum(y * (z - lse)) / x.shape[0]


def lse_loss(X, b):
    Z = X + b
    m = anp.max(Z, axis=1, keepdims=True)
    return anp.sum(anp.log(anp.sum(anp.exp(Z - m), axis=1, keepdims=True)) + m)


def rnn_loss(W, U, xs, h):
    for x in xs:
        h = anp.tanh(anp.dot(W, h) + anp.dot(U, x))
    return anp.sum(h * h)


def scalar_loss(a, b):
    s = 0.0
    for i in range(1000):
        s = s + anp.sin(a * i) * b + anp.exp(-b * s * 1e-3)
    return s


LOSSES = {
    workloads.mlp_loss: mlp_loss, workloads.lse_loss: lse_loss,
    workloads.rnn_loss: rnn_loss, workloads.scalar_loss: scalar_loss,
}


def systems(workload, slow=False):
    """{column: (function timed, its arguments, result -> NumPy arrays)} for `workload`."""
    loss = LOSSES[workload.loss]
    if workload.directions is None:
        return {"autograd": (autograd.grad(loss, argnum=list(workload.wrt)), workload.args, tuple)}
    directions = workload.directions
    inner = autograd.grad(lambda ps, x, y: loss(*ps, x, y))
    product = autograd.grad(lambda ps, x, y: sum(anp.sum(g * d) for g, d in zip(inner(ps, x, y), directions)))
    return {"autograd": (lambda *a: product(tuple(a[:4]), a[4], a[5]), workload.args, tuple)}
