"""Optimizers: update a model's float arrays in place from its gradient.

`opt.step(model, grads)` takes a structural gradient (as `adjoint.grad` returns for a model)
or a `Grads` mapping (as `adjoint.gradient(loss, ps)` returns), updates each float array that
has a gradient in place, and returns the model. A weight tied into several places is updated
once, with the sum of its places' gradients. The parameters are the float arrays, as for
`adjoint.params`: Python floats and NumPy scalars in a model (an `eps`, a dropout rate) are
configuration and stay as they are; hold a trainable scalar in a 0-d array.

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

import weakref

import numpy as np

from .errors import AdjointError
from .implicit import Grads
from .runtime import is_differentiable
from . import tree as tree_module
from .tree import child, children

__all__ = ["Optimizer", "SGD", "Adam"]


class Optimizer:
    """What `SGD` and `Adam` share: pairing parameters with gradients, and per-parameter state.
    A new method subclasses it and defines `change`."""

    def __init__(self):
        self.state: dict = {}  # per parameter (an array's id): the method's state
        self._owners: dict = {}  # the same keys: a weak reference to the array the state belongs to

    def step(self, model, grads):
        """Update `model`'s float arrays in place by `grads`; return `model`."""
        for key, (param, gradient) in _parameters_with_gradients(model, grads).items():
            self._claim(key, param)
            gradient = np.asarray(gradient, dtype=np.result_type(param))
            if np.shape(gradient) != np.shape(param):
                raise AdjointError(f"a gradient of shape {np.shape(gradient)} for a parameter of shape {np.shape(param)}")
            param -= self.change(key, param, gradient)
        self._forget_the_dead()
        return model

    def change(self, key, param, gradient):
        """How much to subtract from `param` given its `gradient` (updating `self.state`)."""
        raise NotImplementedError

    def _claim(self, key, owner):
        """Keep the state under `key` only while it belongs to `owner`: a parameter replaced by
        a new array (or an id reused by one) starts afresh, and dead arrays' state is dropped."""
        held = self._owners.get(key)
        if held is None or held() is not owner:
            self.state.pop(key, None)
            self._owners[key] = weakref.ref(owner)

    def _forget_the_dead(self):
        for key in [k for k, ref in self._owners.items() if ref() is None]:
            self.state.pop(key, None)
            del self._owners[key]


class SGD(Optimizer):
    """Stochastic gradient descent, with optional momentum (heavy-ball or Nesterov) and
    weight decay (added to the gradient).

    >>> import numpy as np
    >>> model = {"w": np.array([1.0])}
    >>> opt = SGD(lr=0.1, momentum=0.9)
    >>> _ = opt.step(model, {"w": np.array([1.0])})
    >>> _ = opt.step(model, {"w": np.array([1.0])})  # velocity 0.9 * 1 + 1
    >>> model["w"]
    array([0.71])
    """

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
    """Adam (Kingma and Ba), with bias correction; `weight_decay` is decoupled (AdamW).

    >>> import numpy as np
    >>> model = [np.array([1.0, -1.0])]
    >>> _ = Adam(lr=0.1).step(model, [np.array([3.0, -0.5])])  # the first step moves each by lr
    >>> model[0]
    array([ 0.9, -0.9])
    """

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
    """`{id(array): (array, total gradient)}`: the places of one array add up."""
    found: dict = {}

    def add(param, gradient):
        if id(param) in found:
            gradient = found[id(param)][1] + gradient
        found[id(param)] = (param, gradient)

    if isinstance(grads, Grads):
        for param, gradient in grads.items():
            add(param, gradient)
        return found

    if isinstance(model, np.ndarray):
        raise AdjointError("opt.step needs a model, container or Grads; an array alone cannot be matched to its gradient "
                           "place: hold it in a dict or list")
    _pair(model, grads, add)
    return found


def _pair(tree, gradient, add) -> None:
    """Call `add(array, gradient)` for each float array of `tree` with a gradient
    (a module-level function: a recursive closure would keep the arrays alive until the next
    garbage collection). It ends where the model has a cycle: the gradient is a finite tree."""
    if gradient is None:  # nothing of the model has a gradient: nothing to update
        return
    tree_module.check_mirrors(tree, gradient)
    for key, value in children(tree):
        part = child(gradient, key)
        if part is None:
            continue
        if isinstance(value, np.ndarray) and is_differentiable(value):
            add(value, part)
        elif not is_differentiable(value):  # Python floats and NumPy scalars are configuration
            _pair(value, part, add)
