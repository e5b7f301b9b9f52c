"""Fit the advisor's cost model (`advisor.model.cost.enginecost.EngineCost`) to measured step times, and finish a
profile.

The fitted function is the one `recommend` evaluates (`calibration.calibrate.bench.predict`, i.e. `step_time` and
`prefill_time`), so the error reported on held-out points is the error of the advisor's own predictions.
Only what the grid can see is fitted (`GRID`): one model's steps in its own engine time neither a drafter pass nor
speculative bookkeeping, and do not separate a per-layer latency floor from the per-step overhead; those parameters
keep their defaults (their CPU value on a CPU, where CUDA graphs do not exist) and the profile says why
(`unfitted`).
Residuals are log-ratios log(predicted / measured): step times span three orders of magnitude and a 10% miss
should weigh the same on a 5 ms decode step as on a 2 s prefill. A robust loss (soft-L1, Huber-like beyond
`LOSS_SCALE`) keeps a point disturbed by a neighbour's load from dragging the fit (scipy.optimize.least_squares).
The unknowns are EngineCost's fitted fields (their metadata says in which unit, bounds and start), then the
admission cost, which only the benchmark pays.

A draft timed on a GPU runs its steps without graphs, as V2 runs a draft model's passes: its fit solves for the
eager pass's overhead instead of the step's (calibration/calibrate/eager.py).

At tensor parallelism N > 1 every step also pays 2·layers all-reduces; their two terms are measured on their own
(allreduce.py: the per-call latency would be one more per-step constant here) and held fixed in the step fit.
A profile's fit (`fit_profile`) takes every model's points at their time with the drift between rounds taken out
(`rounds.point_times`) and is judged on its held-out points: saved as "fitted" when every model's held-out median error
is within MAX_HELDOUT_MEDIAN_ERROR, else as "unfit" with the reason; the raw samples are kept either way, so a fit can
be redone (`fit_profile` again) or more rounds added with `calibrate --repeats N --resume`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from advisor.errors import InputError
from advisor.model.cost.enginecost import Calibrated, EngineCost, calibrated_fields
from advisor.model.gpu.kernels import DENSE_LAYER_KERNELS
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles.catalog import load_hardware
from calibration.calibrate import allreduce, bench
from calibration.calibrate import profile_file as prof
from calibration.calibrate.bench import Point, point_of, predict
from calibration.calibrate.eager import ENGINE_STEP, PASS, eager_grid, eager_steps, engine_step
from calibration.calibrate.rounds import point_times

MAX_HELDOUT_MEDIAN_ERROR = 0.15  # refuse to save a fit that misses unseen shapes by more than this (median)
LOSS_SCALE = 0.05  # residuals (log-ratios) beyond ~5% count linearly, not quadratically
# The solver stops once a step improves the loss by less than this share of it. scipy's default (1e-8) lets it creep
# for 2000 evaluations along directions the grid barely sees (token vs sequence overhead on a TP=2 grid: 3 min on 2
# cores for a loss that moved by 3e-4 of itself). At 1e-5 that fit took 10 s, and every stored test profile refitted
# to the same held-out errors to 4 digits.
LOSS_TOLERANCE = 1e-5
OUTLIER_FLOOR = 0.4  # a training point is only dropped as an outlier when the fit misses it by > e^0.4 - 1 ≈ 50%
FITTED = tuple(f for f in calibrated_fields() if f.how.unit is not None)  # every field a fit may solve for
GRID = tuple(f for f in FITTED if not f.how.unseen and not f.how.moe_only)  # ... those any model's step grid identifies
MOE_GRID = tuple(f for f in FITTED if f.how.moe_only)  # ... and those only an MoE model's steps depend on
PARAMS = tuple(f.name for f in GRID)
NO_EXPERTS = "a dense model's steps touch no experts"  # why a dense model's fit keeps MOE_GRID at their defaults
# What a step admitting new requests pays on top: s per step (in ms), s per admitted sequence (in µs).
ADMISSION = (Calibrated(unit=1e-3), Calibrated(unit=1e-6))
UNKNOWNS = tuple(f.how for f in GRID) + ADMISSION  # x, the vector the solver moves
# Fitted only when the grid has the points for it (2 per unknown); else held at its default and listed as unfitted.
# The overlap exponent shapes the step between its memory- and compute-bound ends: the smallest grids barely span it.
OPTIONAL = ("overlap_exponent",)
# The fewest points a model's grid must leave to fit (2 per unknown once the optional ones are held) and to hold out.
MIN_TRAINING_POINTS, MIN_HELD_OUT = 2 * (len(UNKNOWNS) - len(OPTIONAL)), 2
# vLLM dtypes -> advisor.model.shape.modelspec.BYTES_PER_PARAM keys (the weights' bytes per parameter in the cost model)
WEIGHT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


def grid_for(model: ModelSpec) -> tuple:
    """The fields `model`'s calibration grid identifies: GRID, and MOE_GRID for a sparse MoE (the expert work of
    a step grows with its tokens as E·(1 - (1 - k/E)^N) per layer, unlike anything else in it)."""
    return GRID + (MOE_GRID if model.num_experts > 1 else ())


def min_training_points(model: ModelSpec) -> int:
    """The fewest points `model`'s grid must leave to fit: 2 per unknown once the optional ones are held."""
    return MIN_TRAINING_POINTS + 2 * (len(grid_for(model)) - len(GRID))


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
    held: tuple[str, ...] = ()  # OPTIONAL parameters held at their defaults: too few points to fit them

    def acceptable(self) -> bool:
        return self.heldout_median_error <= MAX_HELDOUT_MEDIAN_ERROR


def _unknown(value: float, how: Calibrated):
    """A value (SI units) as the solver sees it. A linear one is multiplied by 1/unit rather than divided by unit:
    the starting points stay bit for bit those the shipped profiles were fitted from."""
    return np.log(value / how.unit) if how.log else value * (1 / how.unit)


def _value(x, how: Calibrated) -> float:
    """The solver's unknown back in SI units."""
    return float(np.exp(x)) * how.unit if how.log else float(x * how.unit)


def _cost(x: np.ndarray, weight_dtype: str, fixed: dict, grid: tuple = GRID) -> EngineCost:
    return EngineCost(**fixed, **{f.name: _value(xi, f.how) for f, xi in zip(grid, x)}, weight_dtype=weight_dtype)


def _admission(x: np.ndarray, grid: tuple = GRID) -> tuple[float, float]:
    step, seq = (_value(xi, how) for xi, how in zip(x[len(grid):], ADMISSION))
    return step, seq


def unfitted(cpu: bool, moe: bool = False, eager: bool = False) -> dict[str, str]:
    """The fields calibrate's grid does not identify, and why: they keep their defaults (on a CPU, the ones that do
    not apply there take their CPU value); for a dense model (`moe` false), those only experts pay too; for an
    `eager` draft (`eager_grid`), the step overhead instead of the pass's."""
    held = {**{f.name: ("does not apply on a CPU (no CUDA graphs): " if cpu and f.how.cpu is not None else "")
               + f.how.unseen for f in FITTED if f.how.unseen},
            **({} if moe else {f.name: NO_EXPERTS for f in MOE_GRID})}
    if eager:
        del held[PASS.name]
        held["step_overhead"] = ENGINE_STEP
    return held


def datasheet(hardware: str | None) -> EngineCost | None:
    """The datasheet costs of a calibration's hardware profile; None when it names none shipped."""
    try:
        return EngineCost.from_datasheet(load_hardware(hardware)) if hardware else None
    except InputError:
        return None


def norm_floor(hardware: str | None) -> float:
    """Seconds the cost model charges one RMSNorm on `hardware` (a small kernel's floor: layer_floor_graph over a dense
    layer's kernels); 0 where it is not known."""
    cost = datasheet(hardware)
    return 0.0 if cost is None else cost.layer_floor_graph / DENSE_LAYER_KERNELS


def held_fixed(cpu: bool, hardware: str | None = None) -> dict[str, float]:
    """Values the fit holds instead of solving for them (the fields the grid does not identify): CPU values where a
    parameter does not apply there; on a GPU the datasheet's values for its `hardware` profile (kernel floors scaled
    by its generation: EngineCost.from_datasheet), not the field defaults, which are Hopper's."""
    if cpu:
        return {f.name: f.how.cpu for f in FITTED if f.how.unseen and f.how.cpu is not None}
    cost = datasheet(hardware)  # None: a profile naming hardware no longer shipped keeps the field defaults
    return {} if cost is None else {f.name: getattr(cost, f.name) for f in FITTED if f.how.unseen}


def measured_time(model: ModelSpec, cost: EngineCost, admission: tuple[float, float], points: list[Point],
                  chunk_tokens: int, tp: int = 1) -> np.ndarray:
    """What the benchmark should read: the advisor's step time, plus, for points timed as freshly admitted requests
    (prefill, verify), the admission cost (scheduling new requests, allocating their blocks, the prefix-cache
    lookup) that a running decode or verification step does not pay. Fitting it keeps it out of EngineCost."""
    admitted = np.array([p.admitted for p in points])
    batch = np.array([p.batch for p in points], dtype=float)
    return predict(model, cost, points, chunk_tokens, tp) + admitted * (admission[0] + admission[1] * batch)


def _starts(model: ModelSpec, points: list[Point], times: np.ndarray, weight_dtype: str,
            grid: tuple = GRID) -> list[np.ndarray]:
    """Initial guesses from the data's extremes: the fastest step bounds the overhead, the weights streamed in the
    fastest step bound the bandwidth, the largest step's FLOPs bound the FLOP rate. Spread ×/÷ 4 around them,
    because the roofline's (smooth) max makes the landscape nearly piecewise and one start can settle on the wrong
    side. Every other unknown starts where its metadata says."""
    fastest = float(times.min())
    tokens = np.array([p.batch * p.new_tokens for p in points], dtype=float)
    bandwidth = float(model.weight_bytes_read(1, weight_dtype)) / fastest
    biggest = int(np.argmax(tokens))
    flops = tokens[biggest] * float(model.flops_per_token(points[biggest].context)) / float(times[biggest])
    guesses = [{"bandwidth": bw, "flops": fl, "step_overhead": share * fastest, PASS.name: share * fastest}
               for bw in (bandwidth, bandwidth * 4) for fl in (flops, flops * 4) for share in (0.2, 0.6)]
    return [np.array([_unknown(guess[f.name], f.how) if f.name in guess else f.how.start for f in grid]
                     + [how.start for how in ADMISSION]) for guess in guesses]


def outliers(miss: np.ndarray, train: np.ndarray) -> np.ndarray:
    """The training points a first fit misses by far more than the rest: |log error| beyond 4 robust standard
    deviations (1.4826 MAD) above the median, and beyond OUTLIER_FLOOR. A bounded-influence loss still leans toward
    gross outliers, so they are dropped and the fit redone from where it ended."""
    spread = 1.4826 * np.median(np.abs(miss[train] - np.median(miss[train])))
    return train & (miss > max(OUTLIER_FLOOR, np.median(miss[train]) + 4 * spread))


def fit_cost(model: ModelSpec, points: list[Point], times, heldout: list[bool], chunk_tokens: int,
             weight_dtype: str = "bf16", fixed: dict | None = None, tp: int = 1, eager: bool = False) -> Fit:
    """Least-squares fit of the EngineCost parameters the grid identifies (`grid_for`; `eager`: a draft's steps run
    without graphs on a GPU, `eager_grid`), and the admission cost, to `times` (seconds, one per point, measured on
    `tp` GPUs) on the points not held out; errors reported on both sets. `fixed`: values of other EngineCost fields
    (default: theirs; at tp > 1 the measured all-reduce terms; eager: the engine's step overhead). With fewer than
    two training points per unknown, the OPTIONAL ones are held at their defaults (`Fit.held`) before the fit is
    refused."""
    fixed = dict(fixed or {})
    times = np.asarray(times, dtype=float)
    heldout = np.asarray(heldout, dtype=bool)
    if len(points) != len(times) or len(points) != len(heldout):
        raise ValueError("fit_cost: points, times and heldout must have the same length")
    train = ~heldout
    kept = OPTIONAL if train.sum() < 2 * (len(grid_for(model)) + len(ADMISSION)) else ()
    grid = tuple(f for f in grid_for(model) if f.name not in kept)
    grid = eager_grid(grid) if eager else grid
    fixed = {name: value for name, value in fixed.items() if name not in {f.name for f in grid}}
    unknowns = tuple(f.how for f in grid) + ADMISSION
    if train.sum() < 2 * len(unknowns) or heldout.sum() < MIN_HELD_OUT:
        raise FitError(f"too few measured points to fit ({int(train.sum())} to fit, {int(heldout.sum())} held out): "
                       "widen the grid (--max-batch, --max-context) or raise --budget-seconds")
    if np.any(~np.isfinite(times)) or np.any(times <= 0):
        raise FitError("some measured times are not positive numbers: the raw data is corrupt")
    lower = [np.log(how.bounds[0]) if how.log else how.bounds[0] for how in unknowns]
    upper = [np.log(how.bounds[1]) if how.log else how.bounds[1] for how in unknowns]

    def model_at(x: np.ndarray, chosen: list[Point]) -> np.ndarray:
        return measured_time(model, _cost(x, weight_dtype, fixed, grid), _admission(x, grid), chosen, chunk_tokens,
                             tp)

    def solve(use: np.ndarray, starts: list[np.ndarray]):
        chosen = [p for p, u in zip(points, use) if u]
        results = [least_squares(lambda x: np.log(model_at(x, chosen) / times[use]), np.clip(x0, lower, upper),
                                 bounds=(lower, upper), loss="soft_l1", f_scale=LOSS_SCALE, x_scale="jac",
                                 ftol=LOSS_TOLERANCE, max_nfev=2000) for x0 in starts]
        return min(results, key=lambda r: r.cost)

    best = solve(train, _starts(model, points, times, weight_dtype, grid))
    dropped = outliers(np.abs(np.log(model_at(best.x, points) / times)), train)
    if dropped.any() and (train & ~dropped).sum() >= 2 * len(unknowns):
        best = solve(train & ~dropped, [best.x])
    else:
        dropped = np.zeros_like(train)
    errors = model_at(best.x, points) / times - 1.0
    held, fitted = np.abs(errors[heldout]), np.abs(errors[train & ~dropped])
    return Fit(cost=_cost(best.x, weight_dtype, fixed, grid), admission=_admission(best.x, grid), held=kept,
               train_median_error=float(np.median(fitted)), train_worst_error=float(fitted.max()),
               heldout_median_error=float(np.median(held)), heldout_worst_error=float(held.max()),
               errors=tuple(float(e) for e in errors), outliers=tuple(int(i) for i in np.flatnonzero(dropped)))


def fit_profile(profile: prof.Profile, specs: dict, path: Path | None = None) -> None:
    """Fit every model of a measured profile, set its status ("fitted" or "unfit", with the reason) and save it.
    A profile measured without a GPU (NVML named none) is a CPU's."""
    problems = []
    cpu = not profile.device.get("gpu")
    tp = int(profile.settings.get("tensor_parallel_size", 1))
    fixed = held_fixed(cpu, profile.hardware)
    if tp > 1:
        try:
            fixed.update(_allreduce_fit(profile))
        except FitError as exc:
            problems.append(f"all-reduce: {exc}")
    for role, run in (("target", profile.target), ("draft", profile.draft)):
        if run is None:
            continue
        if any(not m.samples for m in run.points):
            problems.append(f"{role}: not every point was measured")
            continue
        points = [point_of(m) for m in run.points]
        dtype = WEIGHT_DTYPES.get(str(run.engine.get("dtype", "bfloat16")), "bf16")
        if tp > 1 and "link_bandwidth" not in fixed:
            continue  # without the all-reduce terms the steps cannot be fitted (said above)
        eager = eager_steps(role, run.points, cpu)
        try:
            fit = fit_cost(specs[role], points, point_times([m.samples for m in run.points]),
                           [m.heldout for m in run.points], run.chunk_tokens, weight_dtype=dtype,
                           fixed={**fixed, "step_overhead": engine_step(profile.target.fit)} if eager else fixed,
                           tp=tp, eager=eager)
        except FitError as exc:
            problems.append(f"{role}: {exc}")
            continue
        run.fit = prof.FittedCost(
            **{f.name: getattr(fit.cost, f.name) for f in calibrated_fields()},
            admission_step=fit.admission[0], admission_seq=fit.admission[1],
            train_median_error=fit.train_median_error, train_worst_error=fit.train_worst_error,
            heldout_median_error=fit.heldout_median_error, heldout_worst_error=fit.heldout_worst_error,
            outliers=[points[i].key for i in fit.outliers],
            unfitted={**unfitted(cpu, specs[role].num_experts > 1, eager),
                      **{name: f"{sum(not m.heldout for m in run.points)} points to fit: too few for it as well"
                         for name in fit.held}})
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


def _allreduce_fit(profile: prof.Profile) -> dict[str, float]:
    """Fit a TP profile's measured all-reduce ladder, store the fit in it, and return the two EngineCost fields the
    step fit then holds fixed."""
    block = profile.allreduce
    if block is None or any(not p.samples for p in block.points):
        raise FitError("the all-reduce was not measured")
    try:
        fit = allreduce.fit_block(block.model_dump(), norm_floor(profile.hardware))
    except ValueError as exc:
        raise FitError(str(exc)) from None
    block.fit = prof.AllReduceFitted(allreduce_latency=fit.allreduce_latency, link_bandwidth=fit.link_bandwidth,
                                     median_error=fit.median_error, worst_error=fit.worst_error)
    return {"allreduce_latency": fit.allreduce_latency, "link_bandwidth": fit.link_bandwidth}
