"""PyTorch's versions of the workloads, eager on the CPU, float64 tensors, one thread:
`torch.autograd.grad` of the loss; the Hessian-vector product is double backward (the
gradient's graph kept, then the gradient of its inner product with the vector), five times
faster here than `torch.func.jvp(torch.func.grad(loss), ...)`. The Python-float loop runs on
0-d tensors."""

import importlib.metadata

import torch

import workloads

torch.set_num_threads(1)
try:
    torch.set_num_interop_threads(1)
except RuntimeError:  # only possible before PyTorch's first parallel work; the benchmark runs none
    pass


def version():
    return importlib.metadata.version("torch")


def mlp_loss(W1, b1, W2, b2, x, y):
    h = torch.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    m = torch.amax(z, dim=1, keepdim=True)
    lse = torch.log(torch.sum(torch.exp(z - m), dim=1, keepdim=True)) + m
    return -torch.sum(y * (z - lse)) / x.shape[0]


def lse_loss(X, b):
    Z = X + b
    m = torch.amax(Z, dim=1, keepdim=True)
    return torch.sum(torch.log(torch.sum(torch.exp(Z - m), dim=1, keepdim=True)) + m)


def rnn_loss(W, U, xs, h):
    for x in xs:
        h = torch.tanh(W @ h + U @ x)
    return torch.sum(h * h)


def scalar_loss(a, b):
    s = 0.0
    for i in range(1000):
        s = s + torch.sin(a * i) * b + torch.exp(-b * s * 1e-3)
    return s


LOSSES = {
    workloads.mlp_loss: mlp_loss, workloads.lse_loss: lse_loss,
    workloads.rnn_loss: rnn_loss, workloads.scalar_loss: scalar_loss,
}


def tensor(a, trained):
    return torch.tensor(a, dtype=torch.float64, requires_grad=trained)


def to_numpy(result):
    return tuple(g.detach().numpy() for g in result)


def systems(workload, slow=False):
    """{column: (function timed, its arguments, result -> NumPy arrays)} for `workload`."""
    loss, wrt = LOSSES[workload.loss], workload.wrt
    args = tuple(tensor(a, i in wrt) for i, a in enumerate(workload.args))
    if workload.directions is None:
        gradient = lambda *a: torch.autograd.grad(loss(*a), [a[i] for i in wrt])  # noqa: E731
        return {"PyTorch eager": (gradient, args, to_numpy)}
    directions = tuple(tensor(d, False) for d in workload.directions)

    def hvp(*a):
        weights = [a[i] for i in wrt]
        gradient = torch.autograd.grad(loss(*a), weights, create_graph=True)
        return torch.autograd.grad(sum(torch.sum(g * d) for g, d in zip(gradient, directions)), weights)

    return {"PyTorch eager": (hvp, args, to_numpy)}
