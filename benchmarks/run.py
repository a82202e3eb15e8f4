"""`make bench`: gradient time of adjoint and its peers (autograd, JAX eager and jit, PyTorch
eager; each skipped with a note when not installed) as a ratio to hand-written NumPy's in the
same run, then first calls, adjoint's overhead and peak memory; printed as markdown and, for a
full run, written to `results/latest.md` and a dated copy named after the machine.

Every system's result is checked against the hand-written one before it is timed (one that
disagrees or fails is not timed, and the table says why); rounds are interleaved and medians
reported; BLAS, XLA and PyTorch run on one thread.

    python benchmarks/run.py [--quick] [--only NAME[,NAME]] [--slow]

`--quick`: one short round (a smoke test; nothing written). `--only`: a subset of the
workloads, `overhead` and `memory` (nothing written). `--slow`: also JAX jit of the 1000-step
scalar loop, which takes over a minute to compile.
"""

import os

# before NumPy is imported: BLAS reads these once (`peer_jax` and `peer_torch` pin their own)
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import overhead  # noqa: E402
import peers as peer_modules  # noqa: E402
import report  # noqa: E402
import timing  # noqa: E402
import workloads as workload_modules  # noqa: E402

SECTIONS = ("overhead", "memory")


def progress(message):
    print(message, file=sys.stderr, flush=True)


def systems_for(workload, peers, skipped, slow):
    """{system: (function, arguments, result -> NumPy arrays) or why there is none}."""
    systems = {
        "hand-written": (workload.hand, workload.args, tuple),
        "adjoint": (workload.adjoint, workload.args, tuple),
    }
    for name, note in skipped.items():
        systems.update({c: note for c in peer_modules.COLUMNS[name]})
    for peer in peers:
        try:
            systems.update(peer.systems(workload, slow))
        except Exception as error:  # a peer's failure is reported, not fatal
            systems.update({c: f"{c} failed to set up {workload.name}: {error!r}" for c in peer.columns})
    return systems


def mismatch(got, expected):
    """What is wrong with `got` as a gradient equal to `expected`, or None."""
    got = tuple(got)
    if len(got) != len(expected):
        return f"{len(got)} gradients where the hand-written gradient has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        try:
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-9)
        except AssertionError:
            error = np.max(np.abs(np.asarray(g, dtype=float) - e))
            return f"gradient {i} differs from the hand-written one (largest difference {error:.3g})"
    return None


def first_calls(workload, systems):
    """Call each system once, timed, and check its result: the calls that may be timed
    (name -> (function, arguments)) and each system's first-call seconds (or why none)."""
    expected = tuple(workload.hand(*workload.args))
    runnable, firsts = {}, {}
    for name, system in systems.items():
        if isinstance(system, str):
            firsts[name] = system
            continue
        fn, args, to_numpy = system
        try:
            result, seconds = peer_modules.first_call(fn, args)
            problem = mismatch(to_numpy(result), expected)
        except Exception as error:  # reported in the table, not fatal
            problem = f"raised {type(error).__name__}: {error}"
        if problem:
            firsts[name] = f"{name} on {workload.name}: {problem}; not timed"
            progress(f"  !! {firsts[name]}")
        else:
            runnable[name], firsts[name] = (fn, args), seconds
    return runnable, firsts


def time_workloads(selected, peers, skipped, options):
    """The timing table's rows and the first-call table's rows."""
    rows, first_rows = [], []
    for workload in selected:
        progress(f"{workload.name}: first calls and checks")
        runnable, firsts = first_calls(workload, systems_for(workload, peers, skipped, options.slow))
        progress(f"{workload.name}: timing {', '.join(runnable)}")
        medians = timing.interleaved(runnable, options.rounds, options.budget)
        rows.append((workload, {**firsts, **medians}))
        first_rows.append((workload, firsts, medians.get("JAX jit", firsts["JAX jit"])))
    return rows, first_rows


def measure_overhead(all_workloads, options):
    runs = 1 if options.quick else 3
    progress("overhead: first differentiation in fresh processes")
    cold = overhead.first_differentiation(warm=False, runs=runs)
    warm = overhead.first_differentiation(warm=True, runs=runs)
    progress("overhead: cached-call overhead")
    extra = overhead.cached_call_overhead(all_workloads["mlp_small"], options.rounds, options.budget)
    return report.overhead_table(warm, cold, extra)


def markdown(rows, first_rows, overhead_lines, peaks, peers, options, seconds):
    columns = [c for name in peer_modules.MODULES for c in peer_modules.COLUMNS[name]]
    out = ["# adjoint benchmarks", "", report.machine(peers), ""]  # a skipped peer: footnoted in its cells
    if rows:
        out += [
            "## Gradient time / hand-written NumPy gradient time", "",
            f"Medians of interleaved rounds ({options.rounds}); every result was checked against the "
            "hand-written one before it was timed. `target`: the issue's bound on adjoint's ratio.", "",
        ]
        out += report.timing_table(rows, columns) + [""]
        first_columns = ["adjoint", *peer_modules.COLUMNS["JAX"]]
        out += [
            "## First calls", "",
            "adjoint: transform and run (the first workload also pays adjoint's one-time setup, and "
            "mlp_small, after mlp, reuses the code generated for its loss); JAX jit: trace, compile and run; "
            "JAX eager: run, compiling each primitive the first time it meets it.", "",
        ]
        out += report.first_call_table(first_rows, first_columns) + [""]
    if overhead_lines:
        out += ["## Transform cost and cached-call overhead", ""] + overhead_lines + [""]
    if peaks:
        out += [
            "## Peak memory during one gradient / hand-written's", "",
            "tracemalloc's peak above the memory in use before the call, gradients included "
            "(JAX and PyTorch allocate outside its view).", "",
        ]
        out += report.memory_table(peaks) + [""]
    out.append(
        f"The run took {seconds:.0f} s{' (--quick)' if options.quick else ''}; the machine's load average over "
        f"its last 5 minutes was {os.getloadavg()[1]:.2f} (on {os.cpu_count()} logical cores): other work on "
        "the machine slows every system, and moves the small workloads' ratios most."
    )
    return "\n".join(out) + "\n"


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short round, for a smoke test")
    parser.add_argument("--only", help="comma-separated names: " + ", ".join(workload_modules.NAMES + SECTIONS))
    parser.add_argument("--slow", action="store_true", help="include JAX jit of the 1000-step loop")
    options = parser.parse_args(argv)
    known = workload_modules.NAMES + SECTIONS
    options.names = options.only.split(",") if options.only else list(known)
    unknown = set(options.names) - set(known)
    if unknown:
        parser.error(f"unknown names {sorted(unknown)}; choose from {', '.join(known)}")
    options.rounds, options.budget = (1, 0.02) if options.quick else (5, 0.1)
    return options


def main(argv=None):
    options = parse(argv)
    start = time.perf_counter()
    all_workloads = workload_modules.build()
    peers, skipped = peer_modules.load()
    selected = [w for name, w in all_workloads.items() if name in options.names]
    rows, first_rows = time_workloads(selected, peers, skipped, options)
    overhead_lines = measure_overhead(all_workloads, options) if "overhead" in options.names else []
    if "memory" in options.names:
        progress("memory: peaks")
    peaks = overhead.memory(all_workloads, peers) if "memory" in options.names else {}
    seconds = time.perf_counter() - start
    text = markdown(rows, first_rows, overhead_lines, peaks, peers, options, seconds)
    print(text)
    if options.quick or options.only:
        progress("(a partial run: results/ left as it is)")
    else:
        progress("written: " + ", ".join(report.write(text)))


if __name__ == "__main__":
    main()
