"""Fit the advisor's cost model (`advisor.model.costmodel.EngineCost`) to measured step times.

The fitted function is the one `recommend` evaluates (`calibration.calibrate.bench.predict`, i.e. `step_time` and
`prefill_time`), so the error reported on held-out points is the error of the advisor's own predictions.
Residuals are log-ratios log(predicted / measured): step times span three orders of magnitude and a 10% miss
should weigh the same on a 5 ms decode step as on a 2 s prefill. A robust loss (soft-L1, Huber-like beyond
`LOSS_SCALE`) keeps a point disturbed by a neighbour's load from dragging the fit (scipy.optimize.least_squares).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model.costmodel import EngineCost
from advisor.model.modelspec import ModelSpec

from calibration.calibrate.bench import Point, predict

MAX_HELDOUT_MEDIAN_ERROR = 0.15  # refuse to save a fit that misses unseen shapes by more than this (median)
LOSS_SCALE = 0.05  # residuals (log-ratios) beyond ~5% count linearly, not quadratically
OUTLIER_FLOOR = 0.4  # a training point is only dropped as an outlier when the fit misses it by > e^0.4 - 1 ≈ 50%
PARAMS = ("bandwidth", "flops", "step_overhead", "token_overhead", "seq_overhead", "multi_token_overhead")
# x = [log bandwidth/GB/s, log flops/GFLOP/s, step ms, token µs, seq µs, multi-token ms, admission ms, admission µs/seq]
SCALES = np.array([1.0, 1.0, 1e-3, 1e-6, 1e-6, 1e-3, 1e-3, 1e-6])


class FitError(ValueError):
    """The measurements do not pin the cost model down (too few, or too noisy)."""


@dataclass(frozen=True, slots=True)
class Fit:
    """A fitted cost and how well it predicts."""

    cost: EngineCost  # fitted on the training points only
    admission: tuple[float, float]  # (s per step, s per sequence) a step admitting new requests pays on top
    train_median_error: float  # median |predicted/measured - 1| on the points fitted
    train_worst_error: float
    heldout_median_error: float  # the same on points the fit never saw
    heldout_worst_error: float
    errors: tuple[float, ...]  # predicted/measured - 1 at every point, in input order
    outliers: tuple[int, ...] = ()  # indices of training points left out of the final fit as gross outliers

    def acceptable(self) -> bool:
        return self.heldout_median_error <= MAX_HELDOUT_MEDIAN_ERROR


def _cost(x: np.ndarray, weight_dtype: str) -> EngineCost:
    v = x * SCALES  # rates in log space (positive, scale-free); overheads in ms/µs so every unknown is O(1)
    return EngineCost(bandwidth=float(np.exp(v[0])) * 1e9, flops=float(np.exp(v[1])) * 1e9, step_overhead=float(v[2]),
                      token_overhead=float(v[3]), seq_overhead=float(v[4]), multi_token_overhead=float(v[5]),
                      weight_dtype=weight_dtype)


def measured_time(model: ModelSpec, cost: EngineCost, admission: tuple[float, float], points: list[Point],
                  chunk_tokens: int) -> np.ndarray:
    """What the benchmark should read: the advisor's step time, plus, for points timed as freshly admitted requests
    (prefill, verify), the admission cost (scheduling new requests, allocating their blocks, the prefix-cache
    lookup) that a running decode or verification step does not pay. Fitting it keeps it out of EngineCost."""
    admitted = np.array([p.admitted for p in points])
    batch = np.array([p.batch for p in points], dtype=float)
    return predict(model, cost, points, chunk_tokens) + admitted * (admission[0] + admission[1] * batch)


def _starts(model: ModelSpec, points: list[Point], times: np.ndarray, weight_dtype: str) -> list[np.ndarray]:
    """Initial guesses from the data's extremes: the fastest step bounds the overhead, the weights streamed in the
    fastest step bound the bandwidth, the largest step's FLOPs bound the FLOP rate. Spread ×/÷ 4 around them,
    because the roofline's max() makes the landscape piecewise and one start can settle on the wrong side."""
    fastest = float(times.min())
    tokens = np.array([p.batch * p.new_tokens for p in points], dtype=float)
    bandwidth = float(model.weight_bytes_read(1, weight_dtype)) / fastest / 1e9
    biggest = int(np.argmax(tokens))
    flops = tokens[biggest] * float(model.flops_per_token(points[biggest].context)) / float(times[biggest]) / 1e9
    return [np.array([np.log(bw), np.log(fl), share * fastest * 1e3, 1.0, 1.0, 0.0, 0.0, 0.0])
            for bw in (bandwidth, bandwidth * 4) for fl in (flops, flops * 4) for share in (0.2, 0.6)]


def fit_cost(model: ModelSpec, points: list[Point], times, heldout: list[bool], chunk_tokens: int,
             weight_dtype: str = "bf16") -> Fit:
    """Least-squares fit of the five EngineCost parameters (and the admission cost) to `times` (seconds, one per
    point) on the points not held out; errors reported on both sets."""
    times = np.asarray(times, dtype=float)
    heldout = np.asarray(heldout, dtype=bool)
    if len(points) != len(times) or len(points) != len(heldout):
        raise ValueError("fit_cost: points, times and heldout must have the same length")
    train = ~heldout
    if train.sum() < 2 * len(SCALES) or heldout.sum() < 2:
        raise FitError(f"too few measured points to fit ({int(train.sum())} to fit, {int(heldout.sum())} held out): "
                       "widen the grid (--max-batch, --max-context) or raise --budget-seconds")
    if np.any(~np.isfinite(times)) or np.any(times <= 0):
        raise FitError("some measured times are not positive numbers: the raw data is corrupt")
    from scipy.optimize import least_squares

    # Rates between 1 MB/s (MFLOP/s) and 1 PB/s (EFLOP/s): wide enough for any device, finite for exp().
    lower, upper = [np.log(1e-3)] * 2 + [0.0] * 6, [np.log(1e6), np.log(1e9)] + [np.inf] * 6

    def model_at(x: np.ndarray, chosen: list[Point]) -> np.ndarray:
        v = x * SCALES
        return measured_time(model, _cost(x, weight_dtype), (v[6], v[7]), chosen, chunk_tokens)

    def solve(use: np.ndarray, starts: list[np.ndarray]):
        chosen = [p for p, u in zip(points, use) if u]
        results = [least_squares(lambda x: np.log(model_at(x, chosen) / times[use]), np.clip(x0, lower, upper),
                                 bounds=(lower, upper), loss="soft_l1", f_scale=LOSS_SCALE, x_scale="jac",
                                 max_nfev=2000) for x0 in starts]
        return min(results, key=lambda r: r.cost)

    best = solve(train, _starts(model, points, times, weight_dtype))
    # A bounded-influence loss still leans toward gross outliers; drop the training points the first fit misses by
    # far more than the rest (4 robust standard deviations, and at least ~50%) and fit again from where it ended.
    miss = np.abs(np.log(model_at(best.x, points) / times))
    spread = 1.4826 * np.median(np.abs(miss[train] - np.median(miss[train])))
    outliers = train & (miss > max(OUTLIER_FLOOR, np.median(miss[train]) + 4 * spread))
    if outliers.any() and (train & ~outliers).sum() >= 2 * len(SCALES):
        best = solve(train & ~outliers, [best.x])
    else:
        outliers = np.zeros_like(train)
    errors = model_at(best.x, points) / times - 1.0
    held, fitted = np.abs(errors[heldout]), np.abs(errors[train & ~outliers])
    v = best.x * SCALES
    return Fit(cost=_cost(best.x, weight_dtype), admission=(float(v[6]), float(v[7])),
               train_median_error=float(np.median(fitted)), train_worst_error=float(fitted.max()),
               heldout_median_error=float(np.median(held)), heldout_worst_error=float(held.max()),
               errors=tuple(float(e) for e in errors), outliers=tuple(int(i) for i in np.flatnonzero(outliers)))
