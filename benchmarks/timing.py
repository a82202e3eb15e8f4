"""Interleaved medians: every system is timed a little in each round, round after round, so a
slow stretch of a shared machine lands on all of them rather than on whichever ran then.

Time is the process's CPU time (`time.process_time`), not the wall clock: on a shared machine
the stretches when another process holds the core are not counted. Every peer runs on one
thread, so CPU time is the time its work takes. A sample is the mean time of `reps`
back-to-back calls, `reps` chosen so that a sample lasts at least `FLOOR` seconds (timer resolution and call jitter then wash out); a system slower
than that is sampled one call at a time, and as few times as `budget` allows (at least once a
round), so a very slow peer (JAX eager on a Python loop) does not stretch the whole run.

>>> medians = interleaved({"sum": (sum, ([1.0, 2.0],)), "max": (max, (1.0, 2.0))}, rounds=2, budget=0.01)
>>> sorted(medians) == ["max", "sum"] and all(t > 0 for t in medians.values())
True
"""

import statistics
import time

FLOOR = 0.01  # seconds a sample lasts at least


def call_time(fn, args, reps=1):
    """Seconds per call of `fn(*args)`, the mean over `reps` calls in a row."""
    start = time.process_time()
    for _ in range(reps):
        fn(*args)
    return (time.process_time() - start) / reps


def repetitions(fn, args):
    """How many calls in a row make a sample last at least `FLOOR` (doubling until they do),
    and the time per call that showed."""
    reps = 1
    while True:
        per_call = call_time(fn, args, reps)
        if per_call * reps >= FLOOR:
            return reps, per_call
        reps *= 2


def interleaved(calls, rounds=5, budget=0.1, samples=5):
    """The median seconds per call of each of `calls` (name -> (function, its arguments)):
    each round takes up to `samples` samples of every call in turn, about `budget` seconds'
    worth each; the median is over all samples of all rounds."""
    plan = {name: repetitions(fn, args) for name, (fn, args) in calls.items()}
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, (fn, args) in calls.items():
            reps, per_call = plan[name]
            count = max(1, min(samples, int(budget / (per_call * reps))))
            times[name].extend(call_time(fn, args, reps) for _ in range(count))
    return {name: statistics.median(observed) for name, observed in times.items()}


def pair_difference(slow, fast, args, rounds=5, budget=0.1):
    """Median seconds `slow(*args)` takes over `fast(*args)`, and the two medians:
    `(difference, slow_median, fast_median)`. The difference is the median of paired samples,
    each a sample of `slow` and one of `fast` taken back to back (in turn in either order), so a
    slow stretch of the machine lands on both halves of a pair: a small difference between two
    calls is then not lost in the noise of each call's median.

    >>> difference, slow, fast = pair_difference(sorted, len, ([3.0, 1.0, 2.0],), rounds=2, budget=0.01)
    >>> slow > fast > 0
    True
    """
    reps = max(repetitions(slow, args)[0], repetitions(fast, args)[0])
    per_call = call_time(slow, args, reps)
    count = max(1, int(budget / (per_call * reps)))
    slow_times, fast_times, differences = [], [], []
    for round_ in range(rounds):
        for sample in range(count):
            if (round_ + sample) % 2:
                fast_time, slow_time = call_time(fast, args, reps), call_time(slow, args, reps)
            else:
                slow_time, fast_time = call_time(slow, args, reps), call_time(fast, args, reps)
            slow_times.append(slow_time)
            fast_times.append(fast_time)
            differences.append(slow_time - fast_time)
    return statistics.median(differences), statistics.median(slow_times), statistics.median(fast_times)
