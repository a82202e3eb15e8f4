"""adjoint in one screen: differentiate a small model's loss, check it, read the generated code.

Run with `make demo`.
"""

import numpy as np

import adjoint
from adjoint.testing import check_grad


@adjoint.differentiable
def loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    logits = h @ W2 + b2
    return np.mean((logits - y) ** 2)


def main():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 8)), rng.normal(size=(32, 4))
    params = [rng.normal(size=(8, 16)) * 0.3, np.zeros(16), rng.normal(size=(16, 4)) * 0.3, np.zeros(4)]

    value, grads = adjoint.value_and_grad(loss, wrt=(0, 1, 2, 3))(*params, x, y)
    print(f"loss = {value:.6f}")
    for name, g in zip(["W1", "b1", "W2", "b2"], grads):
        print(f"  d loss / d {name}: shape {g.shape}, norm {np.linalg.norm(g):.6f}")

    check_grad(loss, *params, x, y)
    print("gradient (and forward-mode JVP) match central finite differences (float64)")

    # forward mode over the gradient: the Hessian times a direction, without forming the Hessian
    direction = rng.normal(size=params[0].shape)
    hv = adjoint.hvp(loss, params[0], direction, *params[1:], x, y)
    gradient = adjoint.grad(loss)
    eps = 1e-6
    differences = (gradient(params[0] + eps * direction, *params[1:], x, y)
                   - gradient(params[0] - eps * direction, *params[1:], x, y)) / (2 * eps)
    error = np.max(np.abs(hv - differences))
    assert error < 1e-6, error
    print(f"Hessian-vector product (d2 loss / d W1 d W1) matches differences of gradients to {error:.1e}\n")

    print("The generated forward function and pullback:\n")
    print(adjoint.source(loss, wrt=(0, 1, 2, 3)))

    for step in range(200):
        value, grads = adjoint.value_and_grad(loss, wrt=(0, 1, 2, 3))(*params, x, y)
        params = [p - 0.1 * g for p, g in zip(params, grads)]
        if step % 50 == 0:
            print(f"step {step:3d}  loss {value:.4f}")
    print(f"step 200  loss {loss(*params, x, y):.4f}")


if __name__ == "__main__":
    main()
