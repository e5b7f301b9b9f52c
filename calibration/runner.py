"""Measure one model's grid through a started engine, in rounds, saving after every point.

Each round visits every point once, in a fresh shuffled order, and the point's time is the median over rounds.
Spreading the repeats of a point over the whole run (instead of back to back) means a burst of load from another
process spoils one sample of several points, which the median discards, rather than every sample of one point.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import bench
from .bench import Point


def point_of(m) -> Point:
    return Point(m.kind, m.batch, m.new_tokens, m.context)


def missing_samples(run, repeats: int) -> int:
    return sum(max(0, repeats - len(m.samples)) for m in run.points)


def measure_run(engine, run, *, repeats: int, seed: int, save: Callable[[], None],
                advance: Callable[[float], None], weights: list[float]) -> None:
    """Fill `run.points[i].samples` up to `repeats` each; `save()` after every sample, `advance(w)` for progress
    (w = the point's predicted seconds, so the bar's ETA weighs long points as long)."""
    points = [point_of(m) for m in run.points]
    rng = np.random.default_rng(seed)
    bench.warm_up(engine, rng)
    prefixes = bench.prefixes_for(points, engine.vocab_size, seed)
    if prefixes:
        engine.generate(prefixes, 1)  # prime the prefix cache once for every decode and verify point
    for round_ in range(repeats):
        order = np.random.default_rng(seed + 1 + round_).permutation(len(points))
        for i in order:
            m = run.points[i]
            if len(m.samples) > round_:
                continue  # measured before an interruption
            start = time.monotonic()
            m.samples.append(bench.measure(engine, points[i], prefixes, 1, rng)[0])
            run.engine_seconds += time.monotonic() - start
            save()
            advance(weights[i])
