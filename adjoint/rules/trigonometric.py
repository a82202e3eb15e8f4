"""Trigonometric, inverse trigonometric and hyperbolic functions, by their partial derivatives."""
