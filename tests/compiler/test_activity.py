"""compiler.activity: what varies with the inputs and what reaches the output."""

import numpy as np

from adjoint.compiler import annotations as anno
from adjoint.compiler.pipeline import lower


def mixed(x, W, n):
    rows = len(x)
    mask = x > 0
    h = x @ W
    unused = np.exp(W)
    scale = n * 2.0
    z = np.zeros_like(h)
    return np.sum(h * scale + z) / rows


def test_varied_follows_differentiable_paths_from_requested_inputs():
    node, _ = lower(mixed, (0,), until="activity")
    varied = anno.get(node, anno.VARIED)
    assert {"x", "h"} <= varied
    assert not {"W", "rows", "mask", "unused", "scale", "z", "n"} & varied


def test_useful_names_reach_the_output():
    node, _ = lower(mixed, (0, 1), until="activity")
    useful = anno.get(node, anno.USEFUL)
    assert {"h", "scale", "z", "x", "W"} <= useful
    assert "unused" not in useful and "mask" not in useful


def test_inactive_values_get_no_adjoint_code():
    import adjoint

    text = adjoint.source(mixed, wrt=0)
    assert "unused_bar" not in text and "W_bar" not in text and "scale_bar" not in text
    assert "x_bar" in text
