"""Differences between neighbours and evenly spaced values: np.diff, np.gradient, np.linspace."""
