"""Measure one model's grid through a started engine, in rounds, saving after every point.

Each round visits every point once, in a fresh shuffled order, and the point's time is the median over rounds.
Spreading the repeats of a point over the whole run (instead of back to back) means a burst of load from another
process spoils one sample of several points, which the median discards, rather than every sample of one point.
That only works while the burst is shorter than the run: a tiny draft's whole grid takes ~3 s on a CPU, and two
busy loops started with its first sample raised its held-out error from ~4% to 4.7-8.7% (4 s of load) and 24%
(8 s). So rounds continue past `repeats` until the model has been measured for `min_seconds`; over 20 s the same
bursts left 2.1% and 3.1%.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from calibration.calibrate import bench
from calibration.calibrate.bench import Point

MAX_ROUNDS = 100  # however quick the grid, the profile stays small (and each save quick)


def point_of(m) -> Point:
    return Point(m.kind, m.batch, m.new_tokens, m.context)


def next_round(counts: list[int], seconds: float, repeats: int, min_seconds: float) -> int | None:
    """The round to measure next given each point's sample count and the seconds measured so far, or None when
    the run is complete: a round an interruption cut short is finished first, then the `repeats` rounds asked
    for, then more until `min_seconds` of measuring (at most MAX_ROUNDS)."""
    done = min(counts, default=0)
    if not counts or (done >= repeats and done == max(counts) and (seconds >= min_seconds or done >= MAX_ROUNDS)):
        return None
    return done


def round_due(run, repeats: int, min_seconds: float) -> int | None:
    """`next_round` for a profile's model run."""
    return next_round([len(m.samples) for m in run.points], run.engine_seconds, repeats, min_seconds)


def measure_run(engine, run, *, repeats: int, min_seconds: float, seed: int,
                save: Callable[[], None]) -> Iterator[tuple[int, int]]:
    """Add samples to `run.points[i].samples` round by round (see `next_round`), calling `save()` after each and
    yielding (i, round) so the caller can show progress."""
    points = [point_of(m) for m in run.points]
    rng = np.random.default_rng(seed)
    bench.warm_up(engine, rng)
    prefixes = bench.prefixes_for(points, engine.vocab_size, seed)
    if prefixes:
        engine.generate(prefixes, 1)  # prime the prefix cache once for every decode and verify point
    while (round_ := round_due(run, repeats, min_seconds)) is not None:
        for i in np.random.default_rng(seed + 1 + round_).permutation(len(points)):
            m = run.points[i]
            if len(m.samples) > round_:
                continue  # measured before an interruption
            start = time.monotonic()
            m.samples.append(bench.measure(engine, points[i], prefixes, 1, rng)[0])
            run.engine_seconds += time.monotonic() - start
            save()
            yield int(i), round_
