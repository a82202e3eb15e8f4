"""Assembling and splitting arrays: concatenate, the stacks, the splits, tile, repeat, pad."""
