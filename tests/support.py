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
