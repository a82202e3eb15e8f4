"""adjoint's built-in rules, one module per family of primitives; importing this registers them all."""

from . import (  # noqa: F401
    builtins, containers, elementwise, linalg, math, methods, reductions, sequences, shape,
)
