"""The fit: the one `specadvisor calibrate` uses (calibration/calibrate/fit.py: `scipy.optimize.least_squares`,
residual log(predicted / published), soft-L1 loss at LOSS_SCALE, gross outliers dropped by `outliers` and the fit
redone) plus a weak prior on every parameter, in two stages (`fit_stages`), and its leave-one-source-out."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import least_squares

from advisor.model.cost.engines import VLLM
from calibration.calibrate.fit import LOSS_SCALE, outliers

from .params import PRIOR_WEIGHT, PRIORS, STAGE_ONE, STAGE_TWO, for_engine, range_residuals, unseen_engine_terms
from .row import Row
from .sources import OWN_KIND


def median_abs(errors) -> float:
    return float(np.median(np.abs(errors)))

def to_values(x: np.ndarray, free, base: dict | None = None) -> dict:
    """The parameters: those in `free` from x, the rest from `base` (default: their priors)."""
    return {**(PRIORS if base is None else base),
            **{p.name: float(math.exp(xi)) if p.log else float(xi * p.sigma) for p, xi in zip(free, x)}}


def to_x(v: dict, free) -> np.ndarray:
    return np.array([math.log(v[p.name]) if p.log else v[p.name] / p.sigma for p in free])


def x_bounds(free) -> tuple[np.ndarray, np.ndarray]:
    lo = [math.log(p.bounds[0]) if p.log else p.bounds[0] / p.sigma for p in free]
    hi = [math.log(p.bounds[1]) if p.log else p.bounds[1] / p.sigma for p in free]
    return np.array(lo), np.array(hi)


def prior_residuals(x: np.ndarray, free) -> np.ndarray:
    return PRIOR_WEIGHT * np.array([(xi - math.log(p.prior)) / p.sigma if p.log else xi - p.prior / p.sigma
                                    for p, xi in zip(free, x)])


def predictions(table: list[Row], v: dict) -> np.ndarray:
    """Each row's prediction, with its engine's own terms (`params.for_engine`)."""
    return np.array([r.predict(for_engine(v, r.engine)) for r in table])


def fit(table: list[Row], use: np.ndarray, free, base: dict | None = None, extra: dict | None = None,
        start: dict | None = None) -> tuple[dict, np.ndarray]:
    """(fitted parameters, rows dropped as gross outliers): soft-L1 least squares on log(predicted / published) of
    the rows in `use` plus the priors and the physical ranges (`range_residuals`), solving for `free` with the
    others from `base` (default: their priors); from `start`, else from three (CDNA3's floors at 1, 4 and 12
    times Hopper's); then the outlier rule of calibrate's fit and one more solve without them."""
    published = np.array([r.published for r in table])
    lo, hi = x_bounds(free)

    def residuals(x, mask):
        v = {**to_values(x, free, base), **(extra or {})}
        chosen = [r for r, u in zip(table, mask) if u]
        return np.concatenate([np.log(np.maximum(predictions(chosen, v), 1e-12) / published[mask]),
                               prior_residuals(x, free), range_residuals(v)])

    def solve(mask, starts):
        found = [least_squares(residuals, np.clip(x0, lo + 1e-9, hi - 1e-9), args=(mask,), bounds=(lo, hi),
                               loss="soft_l1", f_scale=LOSS_SCALE, x_scale="jac", max_nfev=3000) for x0 in starts]
        return min(found, key=lambda r: r.cost)

    starts = [to_x(start, free)] if start is not None else [
        to_x({**PRIORS, **(base or {}), "floor_scale_cdna3": f}, free)
        for f in ((1.0, 4.0, 12.0) if "floor_scale_cdna3" in {p.name for p in free} else (1.0,))]
    best = solve(use, starts)
    miss = np.abs(np.log(predictions(table, {**to_values(best.x, free, base), **(extra or {})}) / published))
    dropped = outliers(miss, use)
    if dropped.any():
        best = solve(use & ~dropped, [best.x])
    return {**to_values(best.x, free, base), **(extra or {})}, dropped


def fit_stages(table: list[Row], train: np.ndarray, extra: dict | None = None,
               start: dict | None = None, held: dict | None = None) -> tuple[dict, np.ndarray]:
    """Both stages on the rows in `train`: STAGE_ONE on its vLLM rows on NVIDIA GPUs, then STAGE_TWO on the others
    with the first's values held (the first stage's rows see no STAGE_TWO parameter: their residuals are constants
    there); (parameters, rows either stage dropped as gross outliers). `held`: the first stage's result, when the
    caller knows it (a leave-one-out of a source the first stage never saw)."""
    stage_one_rows = np.array([r.vllm_v1 for r in table])
    if held is None:
        held, dropped = fit(table, train & stage_one_rows, STAGE_ONE, extra=extra, start=start)
    else:
        dropped = np.zeros(len(table), bool)
    both, more = fit(table, train & ~stage_one_rows, STAGE_TWO, base=held, extra=extra, start=start)
    return both, dropped | more


def floor_sensitivity(table: list[Row], train: np.ndarray, start: dict) -> list[tuple[float, ...]]:
    """(floor exponent, median |error| on the fitted rows, on all rows, the two draft/target ratio rows of 8B
    targets): the fit redone with the latency floor added (1), combined as a p-norm (2), or nearly the larger (4)."""
    published = np.array([r.published for r in table])
    ratio = [i for i, r in enumerate(table) if r.id.startswith("1.ratio.") and "70B" not in r.id]
    out = []
    for m in (1.0, 2.0, 4.0):
        v, _ = fit_stages(table, train, {"floor_exponent": m}, start)
        err = predictions(table, v) / published - 1
        out.append((m, median_abs(err[train]), median_abs(err), float(err[ratio[0]]), float(err[ratio[1]])))
    return out


def leave_one_source_out(table: list[Row], train: np.ndarray, fitted: dict,
                         only: set[str] | None = None) -> tuple[np.ndarray, dict]:
    """(each row predicted by fits that never saw its source, in both stages, {source: those fits}); rows of
    sources outside the training set are out of sample already. This is the out-of-sample error the intervals of
    `recommend` take (benchmarks/datasheet_errors.py). `only`: leave out these sources alone (the others' rows keep
    `fitted`'s predictions: benchmarks/speedup_errors.py needs the fits of the sources with published speedups)."""
    loso, values = predictions(table, fitted), {}
    stage_one = {p.name for p in STAGE_ONE}
    first_stage_values = {k: x for k, x in fitted.items() if k in stage_one or k not in PRIORS}
    for s in sorted({r.source_id for r in table} & (only if only is not None else {r.source_id for r in table})):
        inside = np.array([r.source_id == s for r in table])
        if (inside & train).any():
            seen_by_stage_one = any(r.vllm_v1 for r, u in zip(table, inside) if u)
            held = None if seen_by_stage_one else {**PRIORS, **first_stage_values}
            values[s], _ = fit_stages(table, train & ~inside, start=fitted, held=held)
            seen = {r.engine for r, u in zip(table, train & ~inside) if u} - {VLLM}
            for engine in {r.engine for r, u in zip(table, inside) if u} - seen - {VLLM}:
                values[s] = {**values[s], **unseen_engine_terms(values[s], engine, seen)}
            loso[inside] = predictions([r for r, u in zip(table, inside) if u], values[s])
    return loso, values


def extrapolated(table: list[Row], train: np.ndarray) -> np.ndarray:
    """Per row: its leave-one-source-out prediction leans on a parameter no other training source fixes, its
    engine's own terms (no other source ran that engine: `params.unseen_engine_terms` stand in) or its GPU kind's
    scales (OWN_KIND). vLLM's terms are never alone: every first-stage source fits them."""
    out = []
    for r in table:
        others = {(o.engine, OWN_KIND.get(o.source_id)) for o, u in zip(table, train)
                  if u and o.source_id != r.source_id}
        engine_alone = r.engine != VLLM and r.engine not in {e for e, _ in others}
        kind = OWN_KIND.get(r.source_id)
        out.append(engine_alone or (kind is not None and kind not in {k for _, k in others}))
    return np.array(out)
