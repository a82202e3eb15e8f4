"""compiler.capture: the pullback uses the module-level values the forward pass saw."""

import types

import numpy as np

import adjoint

# A module whose attribute the differentiated code reads (as `import config as cfg` would).
cfg = types.ModuleType("review3_cfg")
cfg.scale = 2.0


def scaled_by_module_attribute(x):
    return np.sum(x * cfg.scale)


def test_module_attribute_read_at_forward_time():
    # expected: back() uses cfg.scale as the forward saw it (2.0); actual: re-reads cfg.scale at back() time (5.0)
    value, back = adjoint.pullback(scaled_by_module_attribute, np.ones(3))
    try:
        cfg.scale = 5.0
        (x_bar,) = back(1.0)
    finally:
        cfg.scale = 2.0
    np.testing.assert_allclose(x_bar, [2.0, 2.0, 2.0])
