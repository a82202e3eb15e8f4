"""Helpers of selection rules: scattering a cotangent back to the entries that were selected."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
