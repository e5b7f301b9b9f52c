"""Fit a measured profile: every model's cost from the median of its rounds, judged on its held-out points.

Saved as "fitted" when every model's held-out median error is within MAX_HELDOUT_MEDIAN_ERROR, else as "unfit"
with the reason; the raw samples are kept either way, so a fit can be redone (`fit_profile` again) or more rounds
added with `calibrate --repeats N --resume`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from advisor.errors import InputError

from calibration.calibrate import bench
from calibration.calibrate.fit import MAX_HELDOUT_MEDIAN_ERROR, FitError, fit_cost
from calibration.calibrate.runner import point_of

# vLLM dtypes -> advisor.model.modelspec.BYTES_PER_PARAM keys (the weights' bytes per parameter in the cost model)
WEIGHT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def fit_profile(profile, specs: dict, path: Path | None = None) -> None:
    from calibration.calibrate import profile_file as prof

    problems = []
    for role, run in (("target", profile.target), ("draft", profile.draft)):
        if run is None:
            continue
        if any(not m.samples for m in run.points):
            problems.append(f"{role}: not every point was measured")
            continue
        points = [point_of(m) for m in run.points]
        dtype = WEIGHT_DTYPES.get(str(run.engine.get("dtype", "bfloat16")), "bf16")
        try:
            fit = fit_cost(specs[role], points, [float(np.median(m.samples)) for m in run.points],
                           [m.heldout for m in run.points], run.chunk_tokens, weight_dtype=dtype)
        except FitError as exc:
            problems.append(f"{role}: {exc}")
            continue
        c = fit.cost
        run.fit = prof.schema().FittedCost(
            bandwidth=c.bandwidth, flops=c.flops, step_overhead=c.step_overhead, token_overhead=c.token_overhead,
            seq_overhead=c.seq_overhead, multi_token_overhead=c.multi_token_overhead, weight_dtype=c.weight_dtype,
            admission_step=fit.admission[0],
            admission_seq=fit.admission[1], train_median_error=fit.train_median_error,
            train_worst_error=fit.train_worst_error, heldout_median_error=fit.heldout_median_error,
            heldout_worst_error=fit.heldout_worst_error, outliers=[points[i].key for i in fit.outliers])
        if not fit.acceptable():
            spread = max(bench.summary(m.samples)[1] for m in run.points)
            problems.append(f"{role} held-out median error {100 * fit.heldout_median_error:.0f}% is over "
                            f"{100 * MAX_HELDOUT_MEDIAN_ERROR:.0f}%; its repeats differ by up to {100 * spread:.0f}%")
    profile.status = "unfit" if problems else "fitted"
    profile.note = "; ".join(problems)
    if path is not None:
        prof.save(profile, path)
    if problems:
        raise InputError(f"measurements too noisy to fit ({profile.note}); the raw data is kept in {path}: rerun on "
                         "a quieter machine, or add rounds with --repeats N --resume")
