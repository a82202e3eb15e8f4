"""adjoint's built-in rules, one module per family of primitives; importing this registers them all."""

from . import (  # noqa: F401
    assembly, builtins, calls, complex, containers, decompositions, elementwise, fft, linalg, math, methods, norms,
    pullback_reductions, pullback_transposes, pullbacks, random, reductions, selection, sequences, shape, spacing,
    steering, trigonometric,
)
