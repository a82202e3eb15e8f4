"""adjoint: source-to-source reverse-mode automatic differentiation for Python and NumPy.

>>> import numpy as np, adjoint
>>> def loss(w, x):
...     return np.mean(np.tanh(x @ w) ** 2)
>>> g = adjoint.grad(loss)(np.ones(3), np.eye(3))
>>> g.shape
(3,)
"""

from . import rules as _rules  # noqa: F401  (registers the built-in rules)
from .api import differentiable, grad, gradient, non_differentiable, pullback, rrule, source, value_and_grad
from .checking import check
from .derivatives import frule, hessian, hvp, jacobian, jvp
from .errors import AdjointError, TransformError
from .explaining import explain
from .exporting import export
from .implicit import Grads, Params, params
from .runtime.structs import Tangent
from .steering import checkpoint, hook, stop_gradient, within_gradient
from .tree import tree_leaves, tree_map
from . import optim, testing  # noqa: E402  (adjoint.optim.SGD, adjoint.testing.check_grad)
from . import composition as _composition  # noqa: E402

_composition.register()  # the rules that let derivatives compose (they need the API above)

__all__ = [
    "AdjointError",
    "Grads",
    "Params",
    "Tangent",
    "TransformError",
    "check",
    "checkpoint",
    "differentiable",
    "explain",
    "export",
    "frule",
    "grad",
    "gradient",
    "hessian",
    "hook",
    "hvp",
    "jacobian",
    "jvp",
    "non_differentiable",
    "params",
    "pullback",
    "rrule",
    "source",
    "stop_gradient",
    "tree_leaves",
    "tree_map",
    "value_and_grad",
    "within_gradient",
]
__version__ = "0.1.0"
