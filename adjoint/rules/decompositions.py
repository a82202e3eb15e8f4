"""Linear algebra beyond products: inverses, solves, determinants and factorizations."""
