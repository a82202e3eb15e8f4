"""adjoint's built-in rules, one module per NumPy family; importing this registers them all."""

from . import elementwise, linalg, math, reductions, shape  # noqa: F401
