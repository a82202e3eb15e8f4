"""Random states: saving and restoring the generators a function draws from, so that running it
again draws the same numbers (`adjoint.checkpoint`'s second run, `adjoint.testing`'s finite
differences): NumPy's and Python's global generators, and generators among the arguments, in
containers and objects too. States are kept compactly, one per call that drew.
"""

from __future__ import annotations

import random
import types

import numpy as np

__all__ = ["random_states", "restore_random_states", "moved", "state_of"]


def moved(before, after) -> list:
    """The `(generator, state before)` of the generators whose state changed."""
    return [(generator, state) for (generator, state), (_, now) in zip(before, after) if not _same_state(state, now)]


def _same_state(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    return a == b


def state_of(generator):
    """`generator`'s state now, as `restore_random_states` takes it."""
    if generator is np.random:
        return np.random.get_state()
    if generator is random or isinstance(generator, random.Random):
        return _packed(generator.getstate())
    if isinstance(generator, np.random.BitGenerator):
        return generator.state
    return generator.get_state()


def random_states(args, kwargs, globally=True) -> list:
    """`(generator, state)` for each generator among the arguments (in containers and objects
    too), and `globally` for NumPy's global generator and Python's `random` (also for
    `adjoint.testing`, which replays draws). States are kept compactly: one is held per call."""
    generators = [np.random, random] if globally else []
    for generator in _generators((*args, *kwargs.values()), set(), depth=3):
        generators.append(generator.bit_generator if isinstance(generator, np.random.Generator) else generator)
    return [(generator, state_of(generator)) for generator in generators]


def _generators(values, seen, depth):
    for value in values:
        if isinstance(value, (np.random.Generator, np.random.RandomState, random.Random)):
            yield value
        elif depth and id(value) not in seen and not isinstance(value, (np.ndarray, str, bytes, int, float)):
            seen.add(id(value))
            if isinstance(value, (tuple, list)):
                yield from _generators(value, seen, depth - 1)
            elif isinstance(value, dict):
                yield from _generators(value.values(), seen, depth - 1)
            elif hasattr(value, "__dict__") and not isinstance(value, _NOT_HOLDERS):
                yield from _generators(vars(value).values(), seen, depth - 1)


_NOT_HOLDERS = (types.FunctionType, types.MethodType, types.ModuleType, type)


def _packed(state):
    """Python's `random` state with its 625 ints in an array (2.5 KB, not 24 KB)."""
    version, internal, gauss = state
    return version, np.array(internal, dtype=np.uint32), gauss


def restore_random_states(states) -> None:
    for generator, state in states:
        if generator is random or isinstance(generator, random.Random):
            version, internal, gauss = state
            generator.setstate((version, tuple(internal.tolist()), gauss))
        elif isinstance(generator, np.random.BitGenerator):
            generator.state = state
        else:
            generator.set_state(state)
