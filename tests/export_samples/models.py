"""Functions to export: an MLP's loss, a scalar loop, and functions calling helpers of `layers`."""

import math

import numpy as np

from .layers import affine, scaled_square, smooth, step, tripled

SCALE = 2.0
POWERS = (1, 2, 3)


def mlp_loss(W, b, x, y):
    h = np.tanh(x @ W + b)
    return np.mean((h - y) ** 2) * SCALE


def series(x, n):
    s = 0.0
    for i in range(n):
        s = s + math.sin(x * i) / (i + 1) + math.exp(-x) * POWERS[i % 3]
    return s


def two_layers(x, W, b):
    h = affine(x, W, b)
    return np.sum(scaled_square(h)) + smooth(h)


def vector_valued(x):
    return np.sin(x) * 2.0


def passthrough(x):
    return x


def scaled_by(k):
    def scaled_sines(x, *, power=2.0):
        return np.sum(np.sin(x) ** power) * k
    return scaled_sines


class Spring:
    def __init__(self, k):
        self.k = k

    def energy(self, x):
        return self.k * np.sum(x ** 2)


def spring_energy(x, spring):
    return spring.energy(x)


def mixed_scales(x):
    return tripled(x) * SCALE


def chain(layers, x):
    for layer in layers:
        x = layer(x)
    return np.sum(x ** 2)


def rolled(W, h, xs):
    for x in xs:
        h = step(h, W, x)  # `h` carries a gradient from the second step on
    return np.sum(h ** 2)
