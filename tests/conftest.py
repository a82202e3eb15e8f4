"""Shared fixtures for adjoint's tests."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    """A fresh, fixed-seed random generator for each test."""
    return np.random.default_rng(0)
