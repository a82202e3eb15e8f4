"""Helpers of einsum and tensordot rules: the contraction that gives each operand its cotangent."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
