"""The peers adjoint is compared with: HIPS autograd, JAX (eager and jit) and PyTorch eager,
each in its own module (`peer_<name>.py`), imported only when asked for; a peer that is not
installed is skipped with a note (`pip install -e .[bench]` installs them all).

Each peer module has `version()`, `LOSSES` (its copy of each
NumPy loss it can run, keyed by that loss) and `systems(workload, slow)`: for each column, a
function to time, its arguments in the peer's own arrays, and a conversion of its result to
NumPy arrays, so that it can be checked against the hand-written gradient; or, for a column
left out (JAX jit of the 1000-step loop takes minutes to compile, unless `slow`), the reason.
"""

import dataclasses
import importlib
import time

MODULES = {"autograd": "peer_autograd", "JAX": "peer_jax", "PyTorch": "peer_torch"}
COLUMNS = {"autograd": ("autograd",), "JAX": ("JAX eager", "JAX jit"), "PyTorch": ("PyTorch eager",)}


@dataclasses.dataclass
class Peer:
    name: str
    module: object

    @property
    def columns(self):
        return COLUMNS[self.name]

    def systems(self, workload, slow=False):
        """{column: (function, arguments, to_numpy) or the reason it is left out}, or {} for a
        workload the peer has no copy of; `slow` includes what takes minutes to prepare."""
        return self.module.systems(workload, slow) if workload.loss in self.module.LOSSES else {}


def load(names=tuple(MODULES)):
    """The peers that import, and for each that does not, why: {name: note}."""
    peers, skipped = [], {}
    for name in names:
        try:
            peers.append(Peer(name, importlib.import_module(MODULES[name])))
        except ImportError as error:
            skipped[name] = f"{name} skipped: {error} (`pip install -e .[bench]` installs the peers)"
    return peers, skipped


def first_call(fn, args):
    """The result of the first call of `fn(*args)` and the seconds it took (for JAX jit:
    tracing and compiling)."""
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start
