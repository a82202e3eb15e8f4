"""What adjoint costs besides running the gradient: (a) the first differentiation of a
~50-line function (`transform_subject.py`, timed in fresh processes so nothing is cached),
(b) what a cached `adjoint.grad(f)(*args)` call adds over calling the generated gradient function
(forward function and pullback fused) directly, and (c) peak memory during one gradient call,
against hand-written.

Peak memory is tracemalloc's (NumPy reports its array buffers to it), during one call after a
warm-up, minus what was allocated before the call; the result (the gradients) is included, as
it is for the hand-written gradient. JAX and PyTorch allocate outside tracemalloc's view, so
only autograd among the peers is measured.
"""

import gc
import json
import os
import statistics
import subprocess
import sys
import tracemalloc

import adjoint.api
from adjoint.compiler import pipeline

import timing

HERE = os.path.dirname(os.path.abspath(__file__))
MEMORY_WORKLOADS = ("mlp", "rnn", "logsumexp_broadcast")


def first_differentiation(warm, runs):
    """Median over `runs` fresh processes of `transform_subject.measure` (seconds)."""
    command = [sys.executable, os.path.join(HERE, "transform_subject.py")] + (["--warm"] if warm else [])
    results = [
        json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout) for _ in range(runs)
    ]
    return {key: statistics.median(r[key] for r in results) for key in ("first", "cached", "lines")}


def cached_call_overhead(workload, rounds, budget):
    """Seconds `adjoint.grad(loss, wrt)(*args)` takes over the generated gradient function it
    calls (the forward function and pullback fused, `pipeline.gradient_function`), and both
    medians."""
    loss, wrt, args = workload.loss, workload.wrt, workload.args
    api_call = adjoint.grad(loss, wrt=wrt)
    floats = tuple(i for i in wrt if type(args[i]) is float)
    direct = pipeline.gradient_function(loss, tuple(wrt), floats, release=True)
    return timing.pair_difference(api_call, direct, args, rounds, budget)


def peak_bytes(fn, args):
    """Peak bytes tracemalloc sees allocated during one call of `fn(*args)` (after one warm-up
    call), above what was allocated before it."""
    fn(*args)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before


def memory(workloads, peers):
    """{workload name: {system: peak bytes}} for hand-written, adjoint and the peers that
    allocate through Python's allocator (autograd)."""
    table = {}
    for name in MEMORY_WORKLOADS:
        if name not in workloads:
            continue
        w = workloads[name]
        systems = {"hand-written": w.hand, "adjoint": w.adjoint}
        for peer in peers:
            if peer.name == "autograd":
                systems.update({column: fn for column, (fn, _, _) in peer.systems(w).items()})
        table[name] = {system: peak_bytes(fn, w.args) for system, fn in systems.items()}
    return table
