"""Helpers of the FFT rules."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
