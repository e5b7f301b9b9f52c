"""Scenario + Deployment -> the answer at scale: per k, one DP rank's step, TPOT and output tokens/s per decode GPU
at the deployment's concurrency, the best k with its interval, and what bounds the requests per rank.

`--batch` is the whole instance's concurrency, spread evenly over the DP ranks (the busiest rank holds
`Deployment.imbalance` times the mean, and every rank steps at its size: `scale.padded_batch`). Under PD
(`Deployment.disaggregated`) the instance only decodes: its GPUs' throughput is decode alone, and the prefill pool's
time for one prompt is reported apart. Aggregated, every rank also prefills its own requests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.advice.advise import candidates
from advisor.advice.scenario import Scenario
from advisor.advice.verdict import fastest, rule
from advisor.errors import InputError
from advisor.model.cost.costmodel import draft_pass, pnorm, prefill_time
from advisor.model.cost.enginecost import is_cpu
from advisor.model.cost.speculative import Setup
from advisor.model.parallel.deployment import Deployment
from advisor.model.parallel.scale import (
    DBO_OVERLAP,
    DP_SYNC_ACROSS_NODES_S,
    DP_SYNC_IN_NODE_S,
    RankShape,
    padded_batch,
    target_step,
)
from advisor.scale import fit
from advisor.scale.pools import Load, PrefillPool
from advisor.vllm.defaults import batch_defaults
from advisor.vllm.methods import TEXT_LOOKUP
from advisor.vllm.parallel import (
    DBO_DECODE_TOKEN_THRESHOLD,
    DBO_DRAFTS_FULL_GRAPHS,
    DP_SYNCS_DRAFTER,
    all2all_runs,
    dbo_splits,
    limits,
    requests_per_rank_cap,
)
from advisor.vllm.runner import async_scheduling_default

K_TABLE = 8  # the k shown and chosen among, unless --k asks for more


@dataclass(frozen=True, slots=True)
class AtK:
    """One k at the deployment's concurrency (k = 0: speculation off)."""

    k: int
    tokens_per_step: float  # E over the request's decode
    requests_per_rank: float  # mean running requests per DP rank: min(demand, token cap, max_num_seqs, KV memory)
    padded_requests: int  # the busiest rank's, at which every rank steps
    bound_by: str  # what caps requests_per_rank: "batch", "token cap", "max_num_seqs", "memory"
    step_s: float  # one rank's engine step (draft + verify), s
    all2all_s: float  # of it, the target pass's all-to-all (before any DBO overlap), s
    tpot_s: float  # step / E
    decode_tokens_per_gpu: float  # output tok/s per decode GPU from decode steps
    tokens_per_gpu: float  # output tok/s per GPU of this instance (aggregated: with its prefills)
    gain: float  # tokens_per_gpu over k = 0's
    gain_low: float  # at the acceptance range's low end
    gain_high: float  # ... its high end


@dataclass(frozen=True, slots=True)
class ScaleAdvice:
    scenario: Scenario
    deployment: Deployment
    rows: tuple[AtK, ...]
    best_k: int  # the k pasted: one fixed k (vLLM drops a per-batch schedule at DP > 1)
    verdict: str  # advisor.advice.verdict.rule on the best k's gain per GPU and its range: enable, marginal or disable
    token_cap: int  # tokens per rank per step (max_num_batched_tokens in force)
    prefill_s: float  # one prompt's prefill (target and drafter) on a prefill rank of tp GPUs, s
    weights_gb_per_gpu: float  # target (and drafter) weights per GPU with experts split over the EP group
    max_num_seqs: int  # requests per rank vLLM admits at this shape unless told (`advisor.vllm.parallel.limits`)
    does_not_fit: str = ""  # why the target alone holds no request on a GPU, and what would; "" when it fits
    k_allowed: int = K_TABLE  # the longest k the acceptance speaks for (`advice.advise.candidates`, as recommend)
    prefill_pool: PrefillPool | None = None  # under PD: the prefill side the decode pool needs (`advisor.scale.load`)
    load: Load | None = None  # --request-rate: what it puts on the instance (`advisor.scale.load`)

    @property
    def limits_pasted(self) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs) the pasted command runs at best_k: the token cap, and the most
        requests a rank was priced at, at most ⌊cap/(k+1)⌋ (every request verifies each step, as priced)."""
        return self.token_cap, min(self.max_num_seqs, requests_per_rank_cap(self.token_cap, self.best_k))

    def row(self, k: int) -> AtK:
        return self.rows[k]


def shape_of(d: Deployment, s: Scenario, dbo_overlap: float = DBO_OVERLAP) -> RankShape:
    """The rank's view of the deployment. An MoE target at DP > 1 shares its experts over tp × dp GPUs, with EP or
    not (vLLM shards MoE layers over TP × DP: `ParallelConfig.data_parallel_size`); a dense one with DP runs
    independent replicas (`reconfigure_for_independent_dp_rank`): no sharing, no all-to-all, no lock-step."""
    moe = s.setup.target.moe_layers > 0
    shared = d.data_parallel_size if moe else 1
    # no all-to-all at DP = 1 (`all2all_runs`): TP + EP there combines the experts in the TP all-reduce
    group = d.gpus if moe and all2all_runs(d.data_parallel_size) else 1
    sync = 0.0 if shared == 1 else (DP_SYNC_ACROSS_NODES_S if d.nodes > 1 else DP_SYNC_IN_NODE_S)
    return RankShape(tp=d.tensor_parallel_size, ep_ranks=shared, group=group, gpus_per_node=d.gpus_per_node,
                     backend=d.all2all_backend, dbo=d.enable_dbo and dbo_splits(d.data_parallel_size),
                     dbo_threshold=DBO_DECODE_TOKEN_THRESHOLD, dp_sync=sync, dbo_overlap=dbo_overlap)


def iteration(setup: Setup, shape: RankShape, k, batch, context) -> np.ndarray:
    """One rank's engine step at draft length k over `batch` (padded) requests, s: draft k, verify k+1, the host's
    speculative bookkeeping and DP token syncs where they outlast the GPU (async scheduling). A model drafter's
    passes pay their own MoE layer's all-to-all (MTP) and are never microbatched. At dp = 1 without EP, exactly
    `Setup.iteration_time` for a drafter that drafts for every sequence (and `Setup.decode_step` at k = 0)."""
    target, cost = setup.target, setup.target_cost
    verify = target_step(target, cost, shape, batch, k + 1.0, context)
    if k == 0:
        return verify + _hidden(setup, shape, verify, 0.0, drafted=False)
    if setup.method in TEXT_LOOKUP or setup.cost_ratio is not None or setup.parallel_drafting:
        drafting = setup.draft_time(k, batch, context)  # a block drafter's one pass (dense heads: no all-to-all)
    else:
        drafting = _model_drafts(setup, shape, k, batch, context)
    gpu = drafting + verify
    return gpu + _hidden(setup, shape, gpu, setup.bookkeeping(batch), drafted=setup.method not in TEXT_LOOKUP)


def _model_drafts(setup: Setup, shape: RankShape, k: int, batch, context) -> np.ndarray:
    """k draft passes (as `Setup.draft_time`), each with experts shared over the EP group and its all-to-all."""
    draft, cost, graph = setup.draft, setup.draft_cost, setup.full_graph_drafts
    ep = shape.ep_ranks if draft.moe_layers else 1
    q1 = float(setup.first_pass_tokens(k))
    first = draft_pass(draft, cost, batch, q1, context, setup.tp, fusion_tokens=batch * q1 if draft.fusion_params
                       else 0.0, graph=graph, ep_ranks=ep) + shape.comm(draft, batch * q1)
    rest = draft_pass(draft, cost, batch, 1.0, context + 1.0, setup.tp, fusion_tokens=batch if draft.fuses_every_pass
                      else 0.0, graph=graph, launched=not graph, ep_ranks=ep) + shape.comm(draft, batch)
    later = k - 1
    return first + later * rest + (cost.draft_pass_overhead if graph and later > 0 else 0.0)


def _hidden(setup: Setup, shape: RankShape, gpu, host, drafted: bool) -> np.ndarray:
    """The host's share a step waits for (`Setup.visible_bookkeeping`), with the step's DP token syncs added."""
    cost = setup.target_cost
    host = host + (shape.dp_sync * (1 + (DP_SYNCS_DRAFTER if drafted else 0)) if shape.ep_ranks > 1 else 0.0)
    method = setup.method if np.any(np.asarray(host) > 0) and drafted else None
    hidden = setup.async_scheduling if setup.async_scheduling is not None else \
        async_scheduling_default(method, cpu=cost.on_cpu)
    if not hidden or cost.on_cpu:
        return np.asarray(host, dtype=float)
    return pnorm(gpu, host, cost.floor_exponent) - gpu


def advise_scale(s: Scenario, d: Deployment, dbo_overlap: float = DBO_OVERLAP) -> ScaleAdvice:
    """The answer at scale; `dbo_overlap` other than the fitted one: only for fitting it."""
    setup, acc = s.setup, s.acceptance
    if d.enable_expert_parallel and setup.target.moe_layers == 0:
        raise InputError(f"--enable-expert-parallel needs a mixture-of-experts target; {setup.target.name} is dense")
    if setup.method == "draft_model":
        raise InputError("a separate draft model at DP/EP scale is not modelled (its own parallel layout): use "
                         "--method mtp, eagle or eagle3, or ngram")
    setup, cap, seqs = priced_setup(s, d)
    # a prompt's prefill: under PD on a prefill instance with the scenario's own token budget, aggregated in chunks
    # of the rank's cap (its all-to-all in those chunks is not charged)
    prefill = float(prefill_time(setup.target, (s.setup if d.disaggregated else setup).target_cost, 1,
                                 s.prompt_len, setup.tp))
    shape = shape_of(d, s, dbo_overlap)
    ks = np.arange(0, max(K_TABLE, s.k or 0) + 1)
    allowed = candidates(s, ks)  # the k recommend may choose for this acceptance: the same rule at scale
    per_alpha = [s.tokens_per_step(ks), *(s.tokens_per_step(ks, alpha) for alpha in (acc.low, acc.high))]
    weights, draft_w = fit.weights(setup, d)
    missing = fit.what_fits(s, setup, d)
    rows, reference = [], None
    for k in ks:
        mean, padded, bound, step, comm = _running(s, d, setup, shape, int(k)) if not missing else \
            (0.0, 0, "memory", float("nan"), 0.0)
        drafter_prefill = float(setup.draft_prefill(1, s.prompt_len, k)) if k else 0.0
        rates = [_rate(s, d, mean, float(E[k]), step, prefill + drafter_prefill) for E in per_alpha]
        reference = reference or rates[0]
        gains = [r / reference if reference else 0.0 for r in rates]
        rows.append(AtK(k=int(k), tokens_per_step=float(per_alpha[0][k]), requests_per_rank=mean,
                        padded_requests=padded, bound_by=bound, step_s=step, all2all_s=comm,
                        tpot_s=step / float(per_alpha[0][k]) if padded else float("nan"),
                        decode_tokens_per_gpu=_rate(s, d, mean, float(per_alpha[0][k]), step, 0.0),
                        tokens_per_gpu=rates[0], gain=gains[0], gain_low=min(gains[1:]), gain_high=max(gains[1:])))
    running = [r for r in rows if r.k > 0 and r.padded_requests > 0 and allowed[r.k] and rows[0].padded_requests]
    if s.k is not None:
        best = next((r for r in rows if r.k == s.k), None)
    else:  # the largest gain, the smallest k among ties (advisor.advice.verdict.fastest)
        best = running[int(fastest(np.array([r.gain for r in running])))] if running else None
    # the one decision rule (advisor.advice.verdict.rule) on the gain per decode GPU at the deployment's concurrency,
    # which at a fixed concurrency is also each request's decode speedup; an n-gram prior, or a kind no published
    # run measured, is at most marginal (Scenario.ceiling)
    runs = best is not None and best.k > 0 and best.padded_requests > 0 and rows[0].padded_requests > 0
    verdict = str(rule(best.gain, best.gain_low, best.gain, s.ceiling)) if runs else "disable"
    pasted = best.k if runs and (verdict != "disable" or s.k is not None) else 0
    return ScaleAdvice(scenario=s, deployment=d, rows=tuple(rows), best_k=pasted, verdict=verdict,
                       token_cap=cap, prefill_s=prefill, weights_gb_per_gpu=(weights + draft_w) / 1e9,
                       max_num_seqs=seqs, does_not_fit=missing, k_allowed=int(ks[allowed].max(initial=0)))


def priced_setup(s: Scenario, d: Deployment) -> tuple[Setup, int, int]:
    """The scenario's Setup as one DP rank runs it: the token budget and max_num_seqs vLLM sets at this shape
    (`limits`), drafts on the V1 runner under DBO; and those two limits."""
    hw, setup = s.hardware, s.setup
    cap, seqs = limits(batch_defaults(hw.memory_gib, hw.name, cpu=is_cpu(hw)), d.all2all_backend,
                       d.enable_expert_parallel, d.data_parallel_size,
                       d.token_cap(setup.target_cost.max_num_batched_tokens),
                       d.max_num_seqs if d.max_num_seqs is not None else _user_seqs(s))
    setup = replace(setup, target_cost=replace(setup.target_cost, max_num_batched_tokens=cap, max_num_seqs=seqs))
    if d.enable_dbo:  # vLLM runs the V1 model runner under DBO, whose drafts are piecewise (DBO_DRAFTS_FULL_GRAPHS)
        setup = replace(setup, drafter_graphs=DBO_DRAFTS_FULL_GRAPHS and setup.full_graph_drafts)
    return setup, cap, seqs


def _user_seqs(s: Scenario) -> int | None:
    """The scenario's max_num_seqs where it is not the GPU's `vllm serve` default (a calibration's, or the user's
    when the Deployment does not carry it); None: vLLM's default at this shape."""
    hw = s.hardware
    seqs = s.setup.target_cost.max_num_seqs
    return None if seqs == batch_defaults(hw.memory_gib, hw.name, cpu=is_cpu(hw))[1] else seqs


def _rate(s: Scenario, d: Deployment, mean: float, tokens_per_step: float, step: float, prefill: float) -> float:
    """Output tok/s per GPU of the instance, its ranks each running `mean` requests: decode steps alone under PD (or
    `prefill` 0); aggregated, each request's `prefill` s also runs on its rank's GPUs, so a rank turns its requests
    over once per their prefills plus out_len − 1 tokens of steps."""
    if not mean:
        return 0.0
    decode = (s.out_len - 1) / tokens_per_step * step
    if d.disaggregated or not prefill or s.out_len < 2:
        return mean * tokens_per_step / step / d.tensor_parallel_size
    return mean * s.out_len / (mean * prefill + decode) / d.tensor_parallel_size


def _running(s: Scenario, d: Deployment, setup: Setup, shape: RankShape, k: int):
    """(mean running requests per rank, the busiest rank's, what bounds them, step s, all-to-all s) at draft
    length k; 0 requests (step nan) where none fits. The KV cache per GPU is the one-GPU-group rule's
    (`fit.budget`: each DP rank holds its own requests' KV, the MTP layer's included) with the weights this
    deployment puts on a GPU."""
    budget = fit.budget(s, setup, d, k)
    if k:
        free, per_request = budget.kv_budget_spec, budget.kv_per_token_spec * budget.tokens_per_sequence_spec
    else:
        free, per_request = budget.kv_budget_baseline, budget.kv_per_token_baseline * budget.tokens_per_sequence
    limits_ = {"batch": s.batch / d.data_parallel_size,
               "token cap": requests_per_rank_cap(setup.target_cost.max_num_batched_tokens, k),
               "max_num_seqs": setup.target_cost.max_num_seqs,
               "memory": max(free // per_request, 0) if per_request > 0 else 0}
    bound = min(limits_, key=limits_.get)
    mean = float(limits_[bound])
    imbalance = d.imbalance if shape.ep_ranks > 1 else 1.0  # independent replicas do not wait for each other
    padded = int(min(padded_batch(mean, imbalance), max(int(min(list(limits_.values())[1:])), 0)))
    if padded < 1:
        return 0.0, 0, bound, float("nan"), 0.0
    step = float(iteration(setup, shape, k, padded, s.context))
    return mean, padded, bound, step, float(shape.comm(setup.target, padded * (k + 1)))
