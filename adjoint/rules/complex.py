"""Complex numbers: real and imaginary parts, conjugates and angles, in JAX's convention."""
