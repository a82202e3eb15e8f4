"""The benchmark's report: the machine it ran on, and markdown tables of ratios to the
hand-written gradient (with the issue's targets, met or not), first calls, overhead and memory.
A cell is a number, or a string saying why there is none (it is printed as "—" and explained
below the table).

>>> ratio(1.234), ratio(56.78), ratio(4321.0)
('1.23', '56.8', '4321')
>>> met(1.04, 1.05), met(1.052, 1.05), met(1.2, 1.1), met(1.2, None)
('✓', '✓', '✗', '')
"""

import datetime
import os
import platform
import re
import sys

import numpy as np

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def ratio(r):
    return f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:.0f}"


def met(value, target):
    """Whether `value`, as the table shows it, is within `target` ("" for no target)."""
    return "" if target is None else "✓" if float(ratio(value)) <= target else "✗"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(peers):
    named = [f"Python {sys.version.split()[0]}", f"NumPy {np.__version__}"]
    for peer in peers:
        named.append(f"{peer.name} {peer.module.version()}")
    return ", ".join(named)


def machine(peers):
    """One line naming the machine, the versions and the threads."""
    return (
        f"Machine: {cpu_model()} ({os.cpu_count()} logical cores, {platform.system()} {platform.machine()}); "
        f"{versions(peers)}; threads = 1 (BLAS, XLA, PyTorch); {datetime.date.today().isoformat()}."
    )


class Notes:
    """Footnotes: each distinct reason gets a number, cited in the cells it explains."""

    def __init__(self):
        self.reasons = []

    def cite(self, reason):
        if reason not in self.reasons:
            self.reasons.append(reason)
        return f"—[{self.reasons.index(reason) + 1}]"

    def lines(self):
        return [f"[{i}] {reason}" for i, reason in enumerate(self.reasons, 1)]


def cell(value, notes, show):
    return notes.cite(value) if isinstance(value, str) else show(value)


def timing_table(rows, columns):
    """`rows`: (workload, {system: seconds or reason}). Ratios to hand-written, adjoint's target."""
    notes = Notes()
    lines = [
        "| workload | hand-written (µs) | adjoint | target | met | " + " | ".join(columns) + " |",
        "|---|---:|---:|---:|:-:|" + "---:|" * len(columns),
    ]
    for workload, times in rows:
        base = times["hand-written"]
        adj = times["adjoint"]
        show = lambda t: ratio(t / base)  # noqa: E731
        target = f"≤ {workload.target:.2f}" if workload.target else "—"
        ok = "✗" if isinstance(adj, str) else met(adj / base, workload.target)
        adjoint_cell = cell(adj, notes, show)
        peers = " | ".join(cell(times.get(c, "no version of this workload"), notes, show) for c in columns)
        name = workload.description + (f" ({workload.peer_note})" if workload.peer_note else "")
        lines.append(f"| {name} | {base * 1e6:.1f} | {adjoint_cell} | {target} | {ok} | {peers} |")
    return lines + ([""] + notes.lines() if notes.reasons else [])


def first_call_table(rows, columns):
    """`rows`: (workload, {system: first-call seconds or reason}, JAX jit's later calls'
    seconds or reason); that last column only when `columns` has JAX jit."""
    notes = Notes()
    ms = lambda t: f"{t * 1e3:.1f}"  # noqa: E731
    steady = "JAX jit" in columns
    lines = [
        "| workload | " + " | ".join(f"{c} first call (ms)" for c in columns)
        + (" | JAX jit later calls (ms) |" if steady else " |"),
        "|---|" + "---:|" * (len(columns) + steady),
    ]
    for workload, firsts, later in rows:
        cells = [cell(firsts.get(c, "no version of this workload"), notes, ms) for c in columns]
        cells += [cell(later, notes, ms)] if steady else []
        lines.append(f"| {workload.name} | " + " | ".join(cells) + " |")
    return lines + ([""] + notes.lines() if notes.reasons else [])


def overhead_table(transform, cold_start, overhead):
    """Transform cost (fresh processes) and cached-call overhead against the issue's targets."""
    lines = ["| measure | adjoint | target | met |", "|---|---:|---:|:-:|"]
    for label, result in (("in a fresh process", cold_start), ("with adjoint already warm", transform)):
        first = result["first"] * 1e3
        lines.append(
            f"| first differentiation of a {result['lines']}-line function, {label} (ms) "
            f"| {first:.0f} | ≤ 50 | {met(first, 50)} |"
        )
    lines.append(f"| a later call of the same gradient, cached (ms) | {transform['cached'] * 1e3:.2f} | — | |")
    extra, through_api, direct = (t * 1e6 for t in overhead)
    return lines + [
        f"| mlp_small: `adjoint.grad(f, wrt)(*args)`, cached (µs) | {through_api:.1f} | — | |",
        f"| mlp_small: the generated gradient function, called directly (µs) | {direct:.1f} | — | |",
        f"| cached-call overhead: the difference (µs) | {extra:.1f} | ≤ 5 | {met(extra, 5)} |",
    ]


def memory_table(peaks):
    """`peaks`: {workload name: {system: bytes}}; ratios to hand-written."""
    columns = sorted({s for p in peaks.values() for s in p} - {"hand-written", "adjoint"})
    lines = [
        "| workload | hand-written peak (KiB) | adjoint | target | met | " + " | ".join(columns) + " |",
        "|---|---:|---:|---:|:-:|" + "---:|" * len(columns),
    ]
    for name, peak in peaks.items():
        base = peak["hand-written"]
        others = " | ".join(ratio(peak[c] / base) if c in peak else "—" for c in columns)
        r = peak["adjoint"] / base
        lines.append(f"| {name} | {base / 1024:.0f} | {ratio(r)} | ≤ 1.20 | {met(r, 1.2)} | {others} |")
    return lines


def write(text):
    """Write `text` to results/latest.md and a dated copy named after the machine; return the
    paths."""
    os.makedirs(RESULTS, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", cpu_model().lower()).strip("-")
    dated = f"{datetime.date.today().isoformat()}-{slug}.md"
    paths = [os.path.join(RESULTS, "latest.md"), os.path.join(RESULTS, dated)]
    for path in paths:
        with open(path, "w") as out:
            out.write(text)
    return paths

