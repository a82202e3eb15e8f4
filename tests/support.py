"""Helpers shared by the tests."""

import importlib.util


def load_module(path, name):
    """Import the Python file at `path` as module `name` (for tests that write source files)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case(f, *args, label=None):
    """A `pytest.param` of a function and its arguments, named after the function (and label)."""
    import pytest

    name = getattr(f, "__qualname__", type(f).__name__)
    return pytest.param(f, args, id=name if label is None else f"{name}-{label}")


# ---- small objects of every kind adjoint gives gradients to (shared by the runtime tests) ------

import collections  # noqa: E402
import dataclasses  # noqa: E402

import numpy as np  # noqa: E402

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    size: int = 2


@dataclasses.dataclass(frozen=True)
class FrozenDense:
    W: np.ndarray
    b: np.ndarray


class Slotted:
    __slots__ = ("W", "scale")

    def __init__(self, W, scale):
        self.W, self.scale = W, scale


class Plain:
    def __init__(self, W, name="p"):
        self.W = W
        self.name = name


class Computed:
    """Its `__init__` stores a transformed argument: adjoint cannot follow it."""

    def __init__(self, W):
        self.W = W * 2.0
