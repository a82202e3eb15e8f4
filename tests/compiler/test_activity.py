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


# ---- certain numbers, found once for `inplace` and `reverse` -----------------------------------


def scaled_item(x, d):
    y = x * 2.0
    return y + d[0]


def test_certain_numbers_are_found_again_once_the_statements_changed():
    import dataclasses

    from adjoint.compiler import activity, kinds, syntax

    node, ctx = lower(scaled_item, (0, 1), until="inplace")  # (`inplace` keeps them on the function)
    assert "y" in activity.certain_numbers(node, ctx)[0]
    position = next(i for i, s in enumerate(node.body) if syntax.stored_names(s) == {"y"})
    node.body[position] = syntax.parse("y = str(x)").body[0]  # no longer a number
    with_items, without_items = activity.certain_numbers(node, ctx)
    assert "y" not in with_items and "y" not in without_items
    assert with_items == kinds.certain_numbers(node.body, {"x", "d"})
    fewer = dataclasses.replace(ctx, wrt=(0,))  # `d` is no longer a differentiated parameter
    assert "d" not in activity.certain_numbers(node, fewer)[0]
