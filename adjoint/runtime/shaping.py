"""Helpers of shape rules: undoing moves, flips and rolls of axes on a cotangent."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
