"""The capacity-planning review: every workload of a plan on every candidate deployment.

Per pair: the request rate one replica sustains within the SLOs with and without speculation (`capacity`),
the GPUs and the $ per million output tokens that follow, and `advise`'s verdict at the concurrency the
planned load puts on a replica. The recommendation weighs capacity first:
  enable    speculation needs fewer GPUs, or only speculation meets the SLOs
  disable   it needs more GPUs, or it misses SLOs the baseline meets
  otherwise (same GPUs) `advise`'s latency verdict at the planned load.
A problem with one pair (unknown GPU, impossible SLO, no fit) is reported on that pair; the rest still runs.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.advice.advise import K_TABLE, advise
from advisor.advice.comparison import COMPARE, candidates
from advisor.advice.recommendation import Recommendation, from_advice
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.advice.schedule import schedule
from advisor.errors import InputError
from advisor.measured.from_metrics import acceptance_from_metrics
from advisor.model.cost import capacity as cap
from advisor.model.cost import memory
from advisor.profiles.catalog import load_model
from advisor.review.plan import Deployment, Plan, Workload
from advisor.vllm.command import speculative_config


@dataclass(frozen=True, slots=True)
class Side:
    """One way of serving a workload on a deployment: without (k = 0) or with speculation."""

    curve: cap.LoadCurve  # the replica's steady state at each concurrency
    best: cap.Sustainable  # the most load within the SLOs
    max_concurrency: int  # sequences the KV cache holds (capped at max_num_seqs)
    gpus: int | None  # GPUs to serve the workload's rate; None when the SLOs cannot be met
    usd_per_mtok: float | None  # $ per million output tokens at the sustainable load; None without a price
    k_cap: int = 0  # num_speculative_tokens: vLLM's schedule picks k ≤ this per batch size (0: no speculation)


@dataclass(frozen=True, slots=True)
class Cell:
    workload: str
    deployment: str
    recommendation: str  # enable | marginal | disable | does not fit | SLOs unreachable | error
    reason: str
    problems: tuple[str, ...] = ()  # what is wrong with this pair, in words
    shape: cap.Shape | None = None
    base: Side | None = None
    spec: Side | None = None
    gpus_spec_low_alpha: int | None = None  # GPUs with speculation at the low end of the acceptance range
    load_batch: float = 0.0  # mean concurrency per replica at the planned rate (over the pool's replicas)
    advice: Recommendation | None = None  # `advise` at load_batch, choosing k ≤ the capacity plan's k_cap
    speculative_config: dict = field(default_factory=dict)  # what the capacity plan runs; {} when speculation is off
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Review:
    plan: Plan
    source: str  # the plan file
    cells: list[Cell]

    def cell(self, workload: str, deployment: str) -> Cell:
        return next(c for c in self.cells if c.workload == workload and c.deployment == deployment)


def _acceptance(w: Workload, base_dir: Path) -> AcceptanceInput:
    a = w.acceptance
    if a.metrics is not None:
        return AcceptanceInput(metrics=str(base_dir / a.metrics), measured_temperature=a.measured_temperature)
    per_pos = None if a.per_position is None else ",".join(f"{p:g}" for p in a.per_position)
    return AcceptanceInput(alpha=a.alpha, rate=a.acceptance_rate, length=a.acceptance_length, measured_k=a.measured_k,
                           per_position=per_pos, task=a.task, measured_temperature=a.measured_temperature)


def _side(setup, E, shape: cap.Shape, w: Workload, d: Deployment, budget_at, max_k: int) -> Side:
    """Serve with draft lengths up to max_k (0: no speculation), vLLM's schedule picking k per batch size."""
    E = E[:max_k + 1]
    speculative = max_k > 0
    # The schedule's largest k sets the lookahead slots each sequence holds, so size memory at that k.
    seqs = setup.target_cost.max_num_seqs  # the deployment's, else vLLM's default for the GPU class
    probe = cap.load_curve(setup, E, shape, seqs, speculative)
    held = budget_at(int(probe.k.max()))
    fits = held.max_concurrency_spec if speculative else held.max_concurrency_baseline
    limit = min(fits, seqs)
    bound = f"KV cache ({fits} sequences)" if fits < seqs else f"max_num_seqs ({seqs})"
    curve = cap.load_curve(setup, E, shape, limit, speculative) if limit >= 1 else probe
    best = cap.sustainable(curve, w.slo.ttft_ms / 1e3, w.slo.tpot_ms / 1e3, bound) if limit >= 1 else \
        cap.Sustainable(0, 0.0, float("nan"), float("nan"), 0, "does not fit")
    gpus = math.ceil(w.rate / best.rate) * d.tensor_parallel if best.rate > 0 else None
    usd = None
    if d.usd_per_gpu_hour is not None and best.rate > 0:
        usd = d.usd_per_gpu_hour * d.tensor_parallel / (best.rate * shape.out_mean * 3600) * 1e6
    return Side(curve, best, max(limit, 0), gpus, usd, max_k)


def _best_spec(setup, E, shape, w, d, budget_at) -> Side:
    """The speculative side at the num_speculative_tokens (cap on k) that carries the most load: the schedule
    picks k by decode speed alone, but where TTFT binds a shorter longest k (shorter mixed steps) can carry more."""
    sides = [_side(setup, E, shape, w, d, budget_at, max_k) for max_k in range(1, len(E))]
    return max(sides, key=lambda side: side.best.rate)  # first (smallest cap) among equals


def review_pair(w: Workload, d: Deployment, base_dir: Path) -> Cell:
    (p_mean, p90), (o_mean, _) = w.prompt.stats(), w.output.stats()
    shape = cap.Shape(p_mean, p90, o_mean)
    try:
        scenario = build_scenario(
            target=d.target, draft=d.draft, method=d.method, gpu=d.gpu, num_gpus=d.tensor_parallel, batch=1,
            prompt_len=round(p_mean), out_len=max(round(o_mean), 1), temperature=w.temperature,
            acceptance=_acceptance(w, base_dir), gpu_memory_utilization=d.gpu_memory_utilization,
            calibration=None if d.calibration is None else str(base_dir / d.calibration),
            max_num_seqs=d.max_num_seqs, read_metrics=acceptance_from_metrics,
            tp_flag=f"tensor_parallel = {d.tensor_parallel} (deployment {d.name!r})")
    except InputError as exc:
        return Cell(w.name, d.name, "error", str(exc), (str(exc),))
    setup, acc = scenario.setup, scenario.acceptance

    def budget_at(k: int) -> memory.MemoryBudget:
        return memory.budget_for(setup, scenario.hardware, k, prompt_len=round(p_mean), out_len=round(o_mean),
                                 gpu_memory_utilization=d.gpu_memory_utilization)

    problems: list[str] = []
    replicas = d.count // d.tensor_parallel
    if replicas == 0:
        problems.append(f"{d.name} has {d.count} GPUs, fewer than one replica of tensor_parallel {d.tensor_parallel}")
    if not budget_at(0).fits:
        reason = budget_at(0).reason()
        return Cell(w.name, d.name, "does not fit", reason, (*problems, f"does not fit: {reason}"), shape)
    ks = list(range(K_TABLE + 1))
    E = scenario.tokens_per_step(ks)  # over the mean output
    base = _side(setup, E, shape, w, d, budget_at, 0)
    spec = _best_spec(setup, E, shape, w, d, budget_at)
    E_low = scenario.tokens_per_step(ks, acc.low)  # a measured curve is rescaled to the low end, as `advise` does
    low = _best_spec(setup, E_low, shape, w, d, budget_at) if acc.low < acc.alpha else spec

    for side, label in ((base, "without speculation"), (spec, "with speculation")):
        if side.best.batch == 0 and side.max_concurrency >= 1:
            problems += [f"{label}: {why}" for why in cap.unreachable(side.curve, w.slo.ttft_ms / 1e3,
                                                                      w.slo.tpot_ms / 1e3, shape)]
    served = base if base.best.batch else spec
    per_replica = w.rate / max(replicas, 1)
    notes = []
    if served.best.rate == 0:
        load_batch = 1.0
        notes.append("no load meets the SLOs: the advice is for one request at a time")
    else:
        load_batch = cap.concurrency_at(served.curve, min(per_replica, served.best.rate))
    if served.best.rate and replicas and per_replica > served.best.rate:
        notes.append(f"the pool's {replicas} replica(s) carry {served.best.rate * replicas:.2f} req/s within the "
                     f"SLOs, short of the planned {w.rate:g} req/s: the advice is at full load")
    advice = from_advice(advise(dataclasses.replace(scenario, batch=max(math.ceil(load_batch - 1e-9), 1),
                                                    k_limit=spec.k_cap)))
    verdict, why = _recommend(base, spec, advice)
    # The flags of the plan that was sized: k ≤ k_cap, the best per batch size up to what the KV cache holds.
    runs = schedule(setup, E, shape.context, np.arange(1, spec.k_cap + 1), max(spec.max_concurrency, 1), (0, 0))
    config = speculative_config(setup, spec.k_cap, runs) if verdict in ("enable", "marginal") else {}
    return Cell(w.name, d.name, verdict, why, tuple(problems), shape, base, spec, low.gpus, load_batch, advice,
                speculative_config=config, notes=tuple(notes))


# Why speculation can carry less load, by what bounds it (capacity.Sustainable.bound).
WHY_SLOWER = {
    "TTFT SLO": "TTFT binds, and speculation adds the drafter's prefill and longer mixed steps to every prompt",
    "TPOT SLO": "at this concurrency verification costs more than the accepted tokens save",
    "KV cache": "the draft's weights and KV cache leave room for fewer sequences",
    "max_num_seqs": "the drafter's prefill takes engine time from decoding",
}


def _recommend(base: Side, spec: Side, advice: Recommendation) -> tuple[str, str]:
    b, s = base.best, spec.best
    if b.batch == 0 and s.batch == 0:
        return "SLOs unreachable", "neither configuration meets the SLOs even with one request at a time"
    if b.batch == 0:
        return "enable", f"only speculation meets the SLOs (k={s.k} at capacity)"
    if s.batch == 0:
        return "disable", "speculation misses SLOs the baseline meets"
    gain = s.rate / b.rate - 1.0
    if spec.gpus < base.gpus:
        return "enable", f"{base.gpus - spec.gpus} fewer GPUs: {gain:+.0%} sustainable rate (k={s.k} at capacity)"
    if spec.gpus > base.gpus:
        return "disable", f"{spec.gpus - base.gpus} more GPUs: {gain:+.0%} sustainable rate; {WHY_SLOWER[s.bound.split(' (')[0]]}"
    e2e = advice.speedup.e2e_latency  # None where the advised k does not fit at the planned load
    return advice.verdict, (f"same GPUs ({gain:+.0%} rate); at the planned load: k={advice.best_k}, "
                            + (f"{e2e:.2f}x end-to-end latency" if e2e is not None else "does not fit"))


# A pair takes ~20-60 ms on one core (most of it `advise` at the planned load and the capacity curves): 5,000
# pairs is a few minutes. A larger plan is several reviews (or a typo in a generated one).
MAX_PAIRS = 5_000


def review(plan: Plan, source: str | Path, progress=None) -> Review:
    """Every workload on every deployment; `progress(done, pairs, workload, deployment)` before each pair."""
    base_dir = Path(source).resolve().parent
    plan = compared(plan)
    pairs = [(w, d) for w in plan.workload for d in plan.deployment]
    if len(pairs) > MAX_PAIRS:
        raise InputError(f"{source}: {len(plan.workload)} workloads on {len(plan.deployment)} deployments are "
                         f"{len(pairs)} pairs, more than the {MAX_PAIRS} one review takes: split the plan")
    cells = []
    for done, (w, d) in enumerate(pairs):
        if progress is not None:
            progress(done, len(pairs), w.name, d.name)
        cells.append(review_pair(w, d, base_dir))
    return Review(plan, str(source), cells)


def compared(plan: Plan) -> Plan:
    """A deployment with `method = "compare"` becomes one deployment per method that applies to its target
    (`advisor.advice.comparison.candidates`), named "NAME: method (drafter)", each sized like any other. A measured
    acceptance belongs to one drafter, so such a plan's workloads must name a task prior."""
    if all(d.method.strip().lower() != COMPARE for d in plan.deployment):
        return plan
    measured = [w.name for w in plan.workload if w.acceptance.task is None]
    if measured:
        raise InputError(f"a deployment compares methods, so every workload's acceptance must be a task prior (a "
                         f"measured one belongs to one drafter): {', '.join(measured)}")
    out = []
    for d in plan.deployment:
        if d.method.strip().lower() != COMPARE:
            out.append(d)
            continue
        for method, draft in candidates(load_model(d.target), d.draft):
            name = f"{d.name}: {method}" + (f" ({draft})" if draft else "")
            out.append(d.model_copy(update={"name": name, "method": method, "draft": draft}))
    return plan.model_copy(update={"deployment": out})


def totals(r: Review) -> list[dict]:
    """Per deployment: GPUs and $/hour to serve the workloads (each on its own replicas), with and without
    speculation. Sums run over the workloads both sides can serve, so the two stay comparable; the others are
    listed in `left_out` with the reason."""
    out = []
    for d in r.plan.deployment:
        cells = [c for c in r.cells if c.deployment == d.name]
        both = [c for c in cells if c.base is not None and c.base.gpus is not None and c.spec.gpus is not None]
        left_out = [f"{c.workload} ({_left_out_why(c)})" for c in cells if c not in both]
        gpus_b = sum(c.base.gpus for c in both) if both else None
        gpus_s = sum(c.spec.gpus for c in both) if both else None
        price = d.usd_per_gpu_hour
        out.append(dict(deployment=d.name, pool=d.count, gpus_base=gpus_b, gpus_spec=gpus_s, left_out=left_out,
                        usd_hour_base=None if price is None or gpus_b is None else gpus_b * price,
                        usd_hour_spec=None if price is None or gpus_s is None else gpus_s * price))
    return out


def _left_out_why(c: Cell) -> str:
    if c.base is None:
        return c.recommendation
    if c.base.gpus is None and c.spec.gpus is not None:
        return f"only with speculation: {c.spec.gpus} GPUs"
    if c.spec.gpus is None and c.base.gpus is not None:
        return f"only without speculation: {c.base.gpus} GPUs"
    return "SLOs unreachable"
