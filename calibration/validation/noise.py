"""How far one measurement of the same work is from another on the machine the validation ran on.

Three figures, each from the validation's own runs: how far the baseline drifted between its first and last run
(`drift`), how far apart the runs of one point fell (`pass_spread`, max/min over passes and repeats), and how that
scatter splits between engine instances and single calls (`instance_spread`). The split says what lowers the noise:
a per-call scatter falls with `--repeats` (cheap: a generate call), an instance's own speed only with `--passes`
(an engine start each).
"""

from __future__ import annotations

import numpy as np

from calibration.validation.grid import Run, engine_of, grouped, is_baseline, point_of, shape_of


def passes_run(runs: list[Run]) -> tuple[int, bool]:
    """(passes over the engine list that measured anything, whether the last of them ran every engine): an
    interrupted run, or one stopped before the passes it asked for, reports what it did."""
    per_pass = grouped(runs, lambda r: (r.pass_index,))
    if not per_pass:
        return 0, True
    sizes = [len(rs) for _, rs in sorted(per_pass.items())]
    return len(sizes), sizes[-1] >= max(sizes)


def baseline_runs(runs: list[Run]) -> dict[tuple, list[Run]]:
    """Per shape, the measured baseline runs in the order they ran (first and last in every pass)."""
    return grouped((r for r in runs if r.method == "baseline" and r.ok), shape_of)


def drift(runs: list[Run]) -> float | None:
    """Median over shapes of |TPOT last / TPOT first − 1| of the first and the last baseline run: how far the
    machine drifted during the run (the noise floor is the larger of this and `pass_spread`)."""
    pairs = [abs(rs[-1].tpot_s / rs[0].tpot_s - 1.0) for rs in baseline_runs(runs).values() if len(rs) > 1]
    return float(np.median(pairs)) if pairs else None


def pass_spread(runs: list[Run]) -> float | None:
    """Median over speculative points measured more than once (passes, repeats) of max/min TPOT − 1: how far one
    measurement of the same work is from another."""
    measured = grouped((r for r in runs if not is_baseline(r.method) and r.ok), point_of)
    spreads = [max(r.tpot_s for r in rs) / min(r.tpot_s for r in rs) - 1.0 for rs in measured.values() if len(rs) > 1]
    return float(np.median(spreads)) if spreads else None


def instance_spread(runs: list[Run]) -> dict[str, float] | None:
    """Standard deviations (as fractions) of a speculative run's log TPOT about its point's median, split in two:
    `per_call`, the median over engine instances of the scatter among the shapes one instance measured, and
    `per_instance`, the spread of the instances' mean residuals with the per-call part taken out
    (var(mean) = σ_instance² + σ_call² / shapes). None with fewer than two passes."""
    measured = grouped((r for r in runs if not is_baseline(r.method) and r.ok), point_of)
    residual: dict[tuple, list[float]] = {}
    for rs in measured.values():
        if len(rs) > 1:
            middle = float(np.median([np.log(r.tpot_s) for r in rs]))
            for r in rs:
                residual.setdefault(engine_of(r), []).append(float(np.log(r.tpot_s)) - middle)
    per_engine = [v for v in residual.values() if len(v) > 2]
    if len(per_engine) < 2:
        return None
    call = float(np.median([np.std(v, ddof=1) for v in per_engine]))
    means = np.std([np.mean(v) for v in per_engine], ddof=1)
    shapes = float(np.median([len(v) for v in per_engine]))
    return {"per_call": call, "per_instance": float(np.sqrt(max(means**2 - call**2 / shapes, 0.0)))}
