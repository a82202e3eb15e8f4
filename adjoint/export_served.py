"""The functions of yours an exported function reaches only at run time (a layer's `__call__`
called through a loop variable, a method of an argument), found by running its forward function
once on example arguments (see `adjoint.exporting`).

What generated code calls through a local value is known only when it runs, and adjoint then
transforms it. `recorded(f, positions, args)` runs the forward function `export` writes, with
the runtime's transform hook watched: every function it transforms, for the positions, frozen
fields and Python floats of that call (`runtime.exported.run_time_key`), is written into the
module too, and served from there when the same call comes again (`runtime.exported.serve`).
A call that example did not make is still refused when it runs, never transformed.
"""

from __future__ import annotations

import dataclasses
import re
import sys

from . import runtime
from .compiler import pipeline
from .errors import AdjointError
from .runtime.exported import run_time_key
from .runtime.gradient_mode import differentiating


@dataclasses.dataclass
class Served:
    """A function of yours transformed at run time for one kind of call, as the example made it."""

    key: tuple  # `run_time_key(fn, wrt, args)`
    compiled: object  # `loader.Compiled`

    @property
    def fn(self):
        return self.key[0]


def recorded(f, positions: tuple, args: tuple) -> list[Served]:
    """Every function of yours the general forward function of `f` (differentiated at
    `positions`) has the runtime transform when called with `args`, in the order first met.
    The transform hook is swapped for the call: do not export while another thread differentiates.

    >>> import numpy as np
    >>> class Scale:
    ...     def __init__(self, k):
    ...         self.k = k
    ...     def __call__(self, x):
    ...         return x * self.k
    >>> def f(layers, x):
    ...     for layer in layers:
    ...         x = layer(x)
    ...     return np.sum(x)
    >>> [served.fn.__qualname__ for served in recorded(f, (0, 1), ([Scale(2.0)], np.ones(2)))]
    ['Scale.__call__']
    """
    forward = pipeline.forward_function(f, positions)
    found: dict[tuple, Served] = {}
    original = runtime._transform_hook

    def recording(fn, wrt, call_args):
        generated = original(fn, wrt, call_args)
        key = run_time_key(fn, wrt, call_args)
        if key not in found:
            found[key] = Served(key, generated.__adjoint_compiled__)
        return generated

    runtime.install_transformer(recording)
    try:
        with differentiating():
            forward(*args)
    except AdjointError:
        raise
    except Exception as error:
        raise AdjointError(
            f"running `{f.__qualname__}` on the example arguments, to find what it calls at run time, "
            f"raised {type(error).__name__}: {error}"
        ) from error
    finally:
        runtime.install_transformer(original)
    return list(found.values())


def importable_root(fn):
    """`(name, object)` to import so that `fn` can be written as `name.rest` (`Dense.__call__`:
    the class `Dense`), or None for a function defined inside another (a closure: its code
    cannot be named from a module).

    >>> import json
    >>> importable_root(json.JSONEncoder.encode)
    ('JSONEncoder', <class 'json.encoder.JSONEncoder'>)
    """
    qualname, module = getattr(fn, "__qualname__", ""), getattr(fn, "__module__", None)
    if "<locals>" in qualname or not module:
        return None
    root = qualname.split(".")[0]
    owner = getattr(sys.modules.get(module), root, None)
    if owner is None:
        return None
    found = owner
    for part in qualname.split(".")[1:]:
        found = getattr(found, part, None)
    return (root, owner) if found is fn else None


def table_text(entries, module: str) -> str:
    """The module's registration of its served forward functions: `entries` are
    `(function expression, key, forward name)`.

    >>> print(table_text([("Dense.__call__", (None, (0, 1), (), ()), "Dense_call_forward")], "exported"))
    exported.serve({
        (Dense.__call__, (0, 1), (), ()): Dense_call_forward,
    })
    """
    lines = [f"{module}.serve({{"]
    for expression, key, name in entries:
        lines.append(f"    ({expression}, {key[1]!r}, {key[2]!r}, {key[3]!r}): {name},")
    return "\n".join(lines + ["})"])


def served_name(fn, taken) -> str:
    """A module-level name for the forward function of `fn` (`Dense.__call__` ->
    `Dense_call_forward`), not among `taken`.

    >>> served_name(str.upper, {"str_upper_forward"})
    'str_upper_forward_2'
    """
    base = re.sub(r"_+", "_", re.sub(r"\W", "_", fn.__qualname__)).strip("_") + "_forward"
    name, count = base, 1
    while name in taken:
        count += 1
        name = f"{base}_{count}"
    return name
