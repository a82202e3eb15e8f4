"""Selecting entries: diagonals, triangles, take, take_along_axis, sort, select."""
