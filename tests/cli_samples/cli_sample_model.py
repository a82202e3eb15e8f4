"""Sample functions for `python -m adjoint` (see tests/test_cli.py). Line numbers matter: the
tests look for the labels of lines 15, 17 and 18."""

import numpy as np

from cli_sample_helpers import scale, softplus

# not `__main__` when the CLI loads this file: this must not run
if __name__ == "__main__":
    raise SystemExit("the CLI ran the file's main block")


def loss(x, w):
    # a string holding "# line 1: " must stay as it is (only comments are relabelled)
    h = np.tanh(x * w)
    label = "# line 1: "
    y = scale(h, 2.0) + softplus(x)
    return np.sum(y) + len(label)


def branchy(x, n):
    y = x * 2
    if n > 3:
        z = np.ones(3) * n
    else:
        z = y
    w = x * 5
    return np.sum(z)


class Layer:
    def apply(self, x):
        return np.sin(x) * 3.0


def unsupported(x):
    global counter
    counter = 1
    return x * 2


def unwrapped(x):
    return np.sum(np.unwrap(np.tanh(x)))


def offset(n):
    return 0.5 * n


def shifted(x, w, n):
    return np.sum(x * w) + offset(n)  # `offset(n)` carries no gradient: an export imports it
