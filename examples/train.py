"""Fit a small model with structural gradients and `adjoint.optim`, then the same model in
script style with implicit parameters.

Run with `.venv/bin/python examples/train.py` (after `make test` or `make demo` set up .venv).
"""

import dataclasses

import numpy as np

import adjoint


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    activation: object = np.tanh  # a function: no gradient, `None` in the model's gradient

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


class Chain:
    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def identity(z):
    return z


def mse(model, x, y):
    return np.mean((model(x) - y) ** 2)


def data(rng, n=128):
    x = rng.uniform(-2, 2, size=(n, 1))
    return x, np.sin(2 * x) + 0.1 * x ** 2


def structural(rng, x, y):
    """The model is an argument; its gradient mirrors it (`grads.layers[0].W`)."""
    model = Chain(
        Dense(rng.normal(size=(1, 32)), np.zeros(32)),
        Dense(rng.normal(size=(32, 1)) / np.sqrt(32), np.zeros(1), identity),
    )
    opt = adjoint.optim.Adam(lr=0.02)
    loss_and_grad = adjoint.value_and_grad(mse)
    losses = []
    for step in range(301):
        loss, grads = loss_and_grad(model, x, y)
        opt.step(model, grads)
        losses.append(loss)
        if step % 100 == 0:
            print(f"  step {step:3d}  loss {loss:.5f}")
    print(f"  gradient of the first layer's weights: {grads.layers[0].W.shape}; its activation: {grads.layers[0].activation}")
    return losses


# Script style: the weights are module-level arrays, no class needed.
W1, b1, W2, b2 = (np.zeros(0),) * 4


def predict(x):
    return np.tanh(x @ W1 + b1) @ W2 + b2


def implicit(rng, x, y):
    """The loss reaches its weights as globals: `adjoint.params` and `Grads`."""
    global W1, b1, W2, b2
    W1, b1 = rng.normal(size=(1, 32)), np.zeros(32)
    W2, b2 = rng.normal(size=(32, 1)) / np.sqrt(32), np.zeros(1)
    ps = adjoint.params(W1, b1, W2, b2)
    opt = adjoint.optim.SGD(lr=0.1, momentum=0.9)
    losses = []
    for step in range(301):
        gs = adjoint.gradient(lambda: np.mean((predict(x) - y) ** 2), ps)
        opt.step(ps, gs)  # updates W1, b1, W2, b2 in place
        losses.append(gs.value)  # the loss the gradients were taken at
        if step % 100 == 0:
            print(f"  step {step:3d}  loss {losses[-1]:.5f}")
    return losses


def main():
    rng = np.random.default_rng(0)
    x, y = data(rng)
    print("a Chain of Dense layers, trained with adjoint.optim.Adam:")
    first = structural(rng, x, y)
    print("the same network as global arrays, trained with adjoint.optim.SGD(momentum=0.9):")
    second = implicit(rng, x, y)
    for name, losses in [("structural", first), ("implicit", second)]:
        print(f"{name}: loss fell from {losses[0]:.4f} to {losses[-1]:.4f} ({losses[0] / losses[-1]:.0f}x)")


if __name__ == "__main__":
    main()
