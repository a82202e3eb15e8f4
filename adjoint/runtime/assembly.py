"""Helpers of assembly rules: cutting a cotangent back into the pieces an array was built from."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []
