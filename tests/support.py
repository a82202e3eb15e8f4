"""Helpers shared by the tests."""

import importlib.util


def load_module(path, name):
    """Import the Python file at `path` as module `name` (for tests that write source files)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
