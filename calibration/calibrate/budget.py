"""Keeping a calibration to its budget with what the engine measures, not only with the planning cost.

The grid is first sized by a planning cost (calibration/calibrate/machine.py): an earlier calibration on this
hardware, the datasheet, or a CPU guess. A model the planning cost does not know can run many times slower (an
18-layer generated Qwen3-style pair took 1,031 s against a 120 s budget on a 2-core machine). So once the target's
engine has measured its first PROBE_SAMPLES points, their time against the plan's gives a ratio, the grid is
re-sized to the budget at that ratio (grid.py `resized`: the same `shrink_to_budget`, the draft's grid included: same engine, same
machine), and the run says how long it will now take. Rounds beyond the ones asked for stop where the next would
overrun the budget.
"""

from __future__ import annotations

from calibration.calibrate import bench

PROBE_SAMPLES = 5  # first-round samples (random points: the round is shuffled) the ratio is taken from


def time_ratio(run, spec, cost, tp: int = 1) -> float | None:
    """Measured over planned seconds of the first sample of every point measured so far (decode points weighed by
    the steps they run), or None before PROBE_SAMPLES points have one."""
    measured = [m for m in run.points if m.samples]
    if len(measured) < PROBE_SAMPLES:
        return None
    points = [bench.point_of(m) for m in measured]
    planned = bench.sample_seconds(spec, cost, points, run.chunk_tokens, tp)
    spent = sum(p.steps * m.samples[0] for p, m in zip(points, measured))
    return max(spent / max(float(sum(planned)), 1e-12), 1e-6)


def another_round_fits(seconds: float, rounds: int, budget: float) -> bool:
    """Whether one more round, at the mean round time so far, stays within `budget` seconds of measuring."""
    return rounds == 0 or seconds + seconds / rounds <= budget
