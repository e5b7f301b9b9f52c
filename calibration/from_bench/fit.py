"""Fit the advisor's EngineCost to `vllm bench` runs, as far as those runs identify it.

A microbenchmark grid times dozens of step shapes; a user's bench runs give a handful of numbers: a serve run its
mean TTFT and TPOT, a latency run one batch's wall time. Each is predicted by `predict` (the advisor's model of
that run), so the fit is of the same EngineCost parameters that `calibrate` fits (calibration/calibrate/fit.py:
the same unknowns, units, bounds, log-ratio residuals and soft-L1 loss), with one engine cost for target and draft
(both run in the same vLLM engine; the draft's cost only shows in speculative runs, mixed with the target's).

Which parameters the runs identify is read off the Jacobian of the log-predictions: a parameter is identified
when its effect on the measured numbers is not (nearly) a combination of the effects of those already picked,
i.e. the sine of the angle between its column and their span is at least MIN_INDEPENDENCE (a column-pivoted QR,
Golub & Van Loan, Matrix Computations, §5.4.1, whose first pivot is the parameter that accounts for most of the
predicted time). At most n - 1 parameters are fitted to n numbers, so one degree of freedom is left to measure
the error. The others keep their defaults (the datasheet's), and the result says why: no run depends on them (an
overhead no run pays, a rate that moves no prediction), or their effect is confounded with a fitted one. The
selection is redone at the fitted point (which side of the roofline a step is on moves with the fit) and the fit
repeated if it changed. Errors are reported in-sample and leave-one-out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import least_squares

from advisor.errors import InputError
from advisor.model.cost.enginecost import CalibratedField, EngineCost, calibrated_fields
from advisor.model.cost.speculative import Setup
from advisor.model.shape.modelspec import ModelSpec
from calibration.calibrate.fit import LOSS_SCALE, _unknown, _value  # the microbenchmark fit's units and loss
from calibration.from_bench.predict import predict
from calibration.from_bench.runs import BenchRun

MIN_INDEPENDENCE = 0.1  # sine of the angle between a field's effect and those of the fields already fitted
TIE = 0.9  # fields within 10% of the most independent one count as tied
NO_EFFECT = 1e-3  # a rate whose e-fold change moves no prediction by 0.1% is one no run depends on
DIFF_STEP = 1e-2  # finite-difference step in the fit's units (1% of a rate, 10 µs of a ms-unit overhead)


def candidates(fixed: dict[str, str]) -> tuple[CalibratedField, ...]:
    """Every EngineCost field a fit solves for (a unit), less those `fixed` (e.g. CUDA-graph floors on a CPU).
    Unlike calibrate's grid, bench runs do see the speculative overheads: they time whole speculative steps."""
    return tuple(f for f in calibrated_fields() if f.how.unit is not None and f.name not in fixed)


@dataclass(frozen=True, slots=True)
class Observation:
    run: BenchRun
    quantity: str  # "ttft" | "tpot" (serve), "e2e" (latency)
    measured: float  # s


@dataclass(frozen=True, slots=True)
class BenchFit:
    cost: EngineCost  # fitted parameters, the others at their defaults
    fitted: tuple[str, ...]  # EngineCost fields the runs identified
    kept: dict[str, str]  # field -> why the runs do not identify it
    observations: tuple[Observation, ...]
    predicted: tuple[float, ...]  # s, by the fitted cost, one per observation
    loo_errors: tuple[float, ...]  # predicted/measured - 1 when that observation was left out of the fit; () if n = 1

    @property
    def errors(self) -> np.ndarray:
        return np.array(self.predicted) / np.array([o.measured for o in self.observations]) - 1.0


def observations(runs: list[BenchRun]) -> list[Observation]:
    found = []
    for run in runs:
        if run.kind == "latency":
            found.append(Observation(run, "e2e", run.measured.e2e))
        else:
            found += [Observation(run, "ttft", run.measured.ttft), Observation(run, "tpot", run.measured.tpot)]
    return found


class Model:
    """The observations as a function of the fitted parameters (the solver's vector over `names`)."""

    def __init__(self, obs: list[Observation], target: ModelSpec, draft: ModelSpec | None, method: str,
                 start: EngineCost, fields: tuple[CalibratedField, ...]) -> None:
        self.obs, self.target, self.draft, self.method, self.start = obs, target, draft, method, start
        self.fields, self.how = fields, {f.name: f.how for f in fields}
        self.measured = np.array([o.measured for o in obs])

    def unknowns(self, cost: EngineCost, names: tuple[str, ...]) -> np.ndarray:
        return np.array([_unknown(getattr(cost, n), self.how[n]) for n in names])

    def cost(self, x: np.ndarray, names: tuple[str, ...]) -> EngineCost:
        how = self.how
        return replace(self.start, **{name: _value(xi, how[name]) for name, xi in zip(names, x)})

    def predict(self, x: np.ndarray, names: tuple[str, ...], use: np.ndarray | None = None) -> np.ndarray:
        cost = self.cost(x, names)
        setup = Setup(target=self.target, target_cost=cost, method=self.method, draft=self.draft,
                      draft_cost=cost if self.draft is not None else None)
        chosen = self.obs if use is None else [o for o, u in zip(self.obs, use) if u]
        return np.array([getattr(predict(setup, o.run), o.quantity) for o in chosen])

    def jacobian(self, cost: EngineCost) -> np.ndarray:
        """d log(prediction) / d(unknown) for every fitted EngineCost field, at `cost` (forward differences:
        overheads sit on their lower bound 0)."""
        names = tuple(f.name for f in self.fields)
        x0 = self.unknowns(cost, names)
        base = np.log(self.predict(x0, names))
        columns = []
        for i in range(len(x0)):
            x = x0.copy()
            x[i] += DIFF_STEP
            columns.append((np.log(self.predict(x, names)) - base) / DIFF_STEP)
        return np.column_stack(columns)


def identified(jac: np.ndarray, cost: EngineCost, fields: tuple[CalibratedField, ...],
               most: int) -> tuple[tuple[str, ...], dict[str, str]]:
    """(fields the data pin down, in the order picked; field -> why not, for the rest). The first pick is the
    field that accounts for most of the predicted time (largest elasticity d log T / d log θ), the next ones the
    fields whose effect on the observations is least explained by those picked (Gram-Schmidt on the unit
    columns: a column-pivoted QR with that first pivot)."""
    names = [f.name for f in fields]
    scale = np.array([1.0 if f.how.log else getattr(cost, f.name) / f.how.unit for f in fields])
    elasticity = np.linalg.norm(jac * scale, axis=0)
    norms = np.linalg.norm(jac, axis=0)
    # a rate the roofline's max() never picks moves nothing; an overhead counts wherever it is paid at all
    depends = np.where([f.how.log for f in fields], norms > NO_EFFECT, norms > 0)
    if not depends.any():
        raise InputError("the bench runs do not depend on any engine-cost parameter (no decode was timed?)")
    residual = jac / np.where(norms > 0, norms, 1.0)
    chosen: list[int] = [int(np.argmax(np.where(depends, elasticity, -1.0)))]
    independence = np.zeros(len(names))
    while True:
        q = residual[:, chosen[-1]] / np.linalg.norm(residual[:, chosen[-1]])
        residual = residual - np.outer(q, q @ residual)
        independence = np.where(depends, np.linalg.norm(residual, axis=0), 0.0)
        independence[chosen] = 0.0
        if len(chosen) >= most or independence.max() < MIN_INDEPENDENCE:
            break
        # near-ties (confounded fields, equally new) go to the one declared first in EngineCost
        chosen.append(int(np.argmax(independence >= TIE * independence.max())))
    unit = jac / np.where(norms > 0, norms, 1.0)
    kept = {}
    for j, name in enumerate(names):
        if j in chosen:
            continue
        if not depends[j]:
            kept[name] = "these runs do not depend on it"
        elif independence[j] >= MIN_INDEPENDENCE:
            kept[name] = f"{jac.shape[0]} measured numbers fit at most {most} parameters"
        else:
            closest = max(chosen, key=lambda c: abs(unit[:, c] @ unit[:, j]))
            kept[name] = f"confounded with {names[closest]} in these runs"
    return tuple(names[j] for j in chosen), kept


def _solve(model: Model, names: tuple[str, ...], x0: np.ndarray, use: np.ndarray) -> np.ndarray:
    how = model.how
    lower = [np.log(how[n].bounds[0]) if how[n].log else how[n].bounds[0] for n in names]
    upper = [np.log(how[n].bounds[1]) if how[n].log else how[n].bounds[1] for n in names]
    try:
        result = least_squares(lambda x: np.log(model.predict(x, names, use) / model.measured[use]),
                               np.clip(x0, lower, upper), bounds=(lower, upper), loss="soft_l1", f_scale=LOSS_SCALE,
                               x_scale="jac", max_nfev=400)
    except ValueError as exc:  # scipy's word for predictions that are not finite at the start
        raise InputError(f"the cost model cannot be fitted to these runs ({exc})") from None
    return result.x


def fit_runs(runs: list[BenchRun], target: ModelSpec, draft: ModelSpec | None, method: str,
             start: EngineCost, fixed: dict[str, str] | None = None) -> BenchFit:
    """Fit the fields the runs identify, from `start` (which also holds every other field's value); `fixed`:
    fields not to fit, with the reason."""
    obs = observations(runs)
    if any(not np.isfinite(o.measured) or o.measured <= 0 for o in obs):
        raise InputError("a bench run reports a time that is not a positive number (hand-edited?)")
    fields = candidates(fixed or {})
    if draft is None and not any(run.speculative for run in runs):
        method = "ngram"  # only plain runs, so no drafter is ever evaluated; Setup wants one for the model methods
    model = Model(obs, target, draft, method, start, fields)
    every = np.ones(len(obs), dtype=bool)
    most = max(1, len(obs) - 1)
    cost, names = start, ()
    for _ in range(3):  # select at the start, refit if the selection at the fitted point differs
        chosen, why = identified(model.jacobian(cost), cost, fields, most)
        if chosen == names:
            break
        names, kept = chosen, {**why, **(fixed or {})}
        cost = model.cost(_solve(model, names, model.unknowns(cost, names), every), names)
    x = model.unknowns(cost, names)
    loo = []
    if len(obs) > 1:
        for i in range(len(obs)):
            use = every.copy()
            use[i] = False
            held = _solve(model, names, x, use)
            loo.append(float(model.predict(held, names)[i] / model.measured[i] - 1.0))
    predicted = model.predict(x, names)
    if not np.all(np.isfinite(predicted)):
        raise InputError("the fit did not converge to finite predictions: the runs contradict each other")
    return BenchFit(cost=cost, fitted=names, kept=kept, observations=tuple(obs),
                    predicted=tuple(float(p) for p in predicted), loo_errors=tuple(loo))
