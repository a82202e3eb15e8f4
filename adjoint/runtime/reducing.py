"""Helpers of reductions and norms: spreading a reduced cotangent back over its axes."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
