"""Norms: `np.linalg.norm` of vectors and matrices, every `ord` and `axis`."""
