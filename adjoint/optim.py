"""Optimizers: update a model's float arrays in place from its gradient.

`opt.step(model, grads)` takes a structural gradient (as `adjoint.grad` returns for a model)
or a `Grads` mapping (as `adjoint.gradient(loss, ps)` returns), updates each array that has a
gradient in place, and returns the model. A weight tied into several places is updated once,
with the sum of its places' gradients. Python floats and NumPy scalars held by a model
are replaced in their container or object (they cannot change in place).

>>> import numpy as np, adjoint
>>> model = {"w": np.array([1.0, -2.0])}
>>> opt = adjoint.optim.SGD(lr=0.5)
>>> for _ in range(3):
...     grads = adjoint.grad(lambda m: np.sum(m["w"] ** 2))(model)
...     model = opt.step(model, grads)
>>> model["w"]
array([0., 0.])
"""

from __future__ import annotations

import numpy as np

from .errors import AdjointError
from .implicit import Grads
from .runtime import is_differentiable
from .tree import child, children

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """What `SGD` and `Adam` share: pairing parameters with gradients, and per-parameter state."""

    def __init__(self):
        self.state: dict = {}  # per parameter (an array's id, or a float's place): the method's state

    def step(self, model, grads):
        """Update `model`'s parameters in place by `grads`; return `model`."""
        for key, (param, gradient, place) in _parameters_with_gradients(model, grads).items():
            gradient = np.asarray(gradient, dtype=np.result_type(param))
            change = self.change(key, param, gradient)
            if place is None:
                param -= change
            else:  # a Python float or NumPy scalar: replaced in its container, keeping its type
                _replace(*place, type(param)(param - change))
        return model

    def change(self, key, param, gradient):
        """How much to subtract from `param` given its `gradient` (updating `self.state`)."""
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (heavy-ball or Nesterov) and
    weight decay (added to the gradient)."""

    def __init__(self, lr=0.01, momentum=0.0, nesterov=False, weight_decay=0.0):
        super().__init__()
        self.lr, self.momentum, self.nesterov, self.weight_decay = lr, momentum, nesterov, weight_decay

    def change(self, key, param, gradient):
        if self.weight_decay:
            gradient = gradient + self.weight_decay * param
        if not self.momentum:
            return self.lr * gradient
        velocity = self.momentum * self.state.get(key, 0.0) + gradient
        self.state[key] = velocity
        return self.lr * (gradient + self.momentum * velocity if self.nesterov else velocity)


class Adam(Optimizer):
    """Adam (Kingma and Ba), with bias correction; `weight_decay` is decoupled (AdamW)."""

    def __init__(self, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0):
        super().__init__()
        self.lr, self.b1, self.b2, self.eps, self.weight_decay = lr, b1, b2, eps, weight_decay

    def change(self, key, param, gradient):
        count, mean, square = self.state.get(key, (0, 0.0, 0.0))
        count += 1
        mean = self.b1 * mean + (1 - self.b1) * gradient
        square = self.b2 * square + (1 - self.b2) * gradient * gradient
        self.state[key] = (count, mean, square)
        corrected_mean = mean / (1 - self.b1 ** count)
        corrected_square = square / (1 - self.b2 ** count)
        return self.lr * (corrected_mean / (np.sqrt(corrected_square) + self.eps) + self.weight_decay * param)


def _parameters_with_gradients(model, grads) -> dict:
    """`{key: (param, total gradient, place)}`: `place` is `(container, key)` for a Python
    float, None for an array (updated in place). Places of one array add up."""
    found: dict = {}

    def add(key, param, gradient, place):
        if key in found:
            gradient = found[key][1] + gradient
        found[key] = (param, gradient, place)

    if isinstance(grads, Grads):
        for param, gradient in grads.items():
            add(id(param), param, gradient, None)
        return found

    def walk(tree, gradient):  # ends: the gradient is a finite tree, even where the model has a cycle
        for key, value in children(tree):
            part = child(gradient, key)
            if part is None:
                continue
            if isinstance(value, np.ndarray) and is_differentiable(value):
                add(id(value), value, part, None)
            elif type(value) is float or isinstance(value, np.generic) and is_differentiable(value):
                add((id(tree), key), value, part, (tree, key))
            else:
                walk(value, part)

    if isinstance(model, np.ndarray):
        raise AdjointError("opt.step needs a model, container or Grads; an array alone cannot be matched to its gradient "
                           "place: hold it in a dict or list")
    walk(model, grads)
    return found


def _replace(container, key, value):
    if isinstance(container, (dict, list)):
        container[key] = value
    elif isinstance(container, tuple):
        raise AdjointError(
            f"cannot update the float at position {key} of a tuple in place: hold parameters in arrays, "
            "lists, dicts or objects"
        )
    else:
        object.__setattr__(container, key, value)
