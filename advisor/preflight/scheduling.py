"""The pre-flight checks on how vLLM 0.32 schedules a speculative engine: the per-batch k schedule, the token budget
a step of k+1-token verifications needs, the DeepEP low-latency cap, async scheduling, and k against the acceptance
evidence. Same contract as `advisor.preflight.checks`."""

from __future__ import annotations

from advisor.preflight.checks import Context, Finding
from advisor.vllm.defaults import batch_defaults
from advisor.vllm.parallel import limits
from advisor.vllm.runner import async_scheduling_default, v2_runner


def _schedule(c: Context):
    return c.serve.speculative.get("num_speculative_tokens_per_batch_size")


def schedule_graph_mode(c: Context) -> Finding | None:
    """A per-batch k schedule on the V1 model runner. vLLM 0.32 overrides the CUDA-graph mode from
    FULL_AND_PIECEWISE to PIECEWISE there ("Dynamic speculative decoding changes the target verification length at
    runtime": vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`); Model Runner V2 keeps full graphs.
    A problem when the command asks for full graphs itself (--compilation-config), a note otherwise."""
    if not _schedule(c) or c.cpu or v2_runner(c.serve.method, cpu=False, parallel_drafting=c.serve.parallel_drafting):
        return None
    asked = str((c.serve.compilation or {}).get("cudagraph_mode", "")).upper()
    explicit = asked.startswith("FULL")
    return Finding("schedule_graph_mode", explicit, f"{c.serve.method} runs on the V1 model runner, where a "
                   "per-batch schedule turns every target step's CUDA graphs to PIECEWISE"
                   + (f" (--compilation-config asked {asked})" if explicit else ""),
                   "config/vllm.py _maybe_override_dynamic_sd_cudagraph_mode",
                   "drop num_speculative_tokens_per_batch_size (one k), unless `specadvisor recommend` priced the "
                   "schedule on this runner and it still pays")


def schedule_data_parallel(c: Context) -> Finding | None:
    """A per-batch k schedule under data parallelism. vLLM 0.32 drops it and runs the static
    num_speculative_tokens (DP ranks would pick different k and deadlock: vllm/config/vllm.py
    `_maybe_disable_dynamic_sd_for_data_parallel`)."""
    if not _schedule(c) or c.serve.dp <= 1:
        return None
    return Finding("schedule_data_parallel", True, f"--data-parallel-size {c.serve.dp}: vLLM drops "
                   f"num_speculative_tokens_per_batch_size and runs k={c.serve.k} at every batch",
                   "config/vllm.py _maybe_disable_dynamic_sd_for_data_parallel",
                   "set num_speculative_tokens to the k the schedule gives at the batch each rank runs")


def k_beyond_measured(c: Context) -> Finding | None:
    """num_speculative_tokens beyond the k the acceptance was measured at. vLLM 0.32 counts acceptance per draft
    position only up to the k it runs (v1/spec_decode/metrics.py, `num_accepted_tokens_per_pos`), so a measurement
    at k says nothing of positions past k: a longer k rests on an extrapolation. A problem past --measured-k; a note
    past the longest k the drafter catalog's published figures for the drafter were taken at."""
    if not c.serve.speculative:
        return None
    k = c.serve.k
    if c.measured_k is not None:
        if k <= c.measured_k:
            return None
        return Finding("k_beyond_measured", True, f"num_speculative_tokens {k} is beyond the k={c.measured_k} the "
                       f"acceptance was measured at: positions {c.measured_k + 1}-{k} are unmeasured",
                       "v1/spec_decode/metrics.py (acceptance per position < k)",
                       f"num_speculative_tokens {c.measured_k}, or measure at {k} (`specadvisor acceptance measure`)")
    if c.published_k is None or k <= c.published_k:
        return None
    return Finding("k_beyond_measured", False, f"num_speculative_tokens {k}: the published figures for this drafter "
                   f"stop at k={c.published_k} (`specadvisor list drafters`), so positions {c.published_k + 1}-{k} "
                   "are extrapolated", "v1/spec_decode/metrics.py (acceptance per position < k)",
                   f"measure at k={k} on your traffic (`specadvisor acceptance measure`), then give --measured-k")


def token_budget(c: Context) -> Finding | None:
    """max_num_batched_tokens below max_num_seqs·(k+1). vLLM 0.32 schedules each decoding request's k+1 tokens (plus
    its drafting slots: a draft model's one, DFlash's K, DSpark's and P-EAGLE's K - 1) out of one step's
    max_num_batched_tokens (v1/core/sched/scheduler.py `schedule`,
    token_budget; vllm/config/vllm.py warns only below 8192), so past budget/(k+1) requests the rest wait a step.
    A problem when the command sets either limit (it asks for more verifications a step than it allows); a note
    under vLLM's device defaults, whose max_num_seqs most workloads never reach. DeepEP low latency: its own check."""
    if not c.serve.speculative or c.batched_dp_moe:
        return None
    budget, seqs = c.limits
    per_request = c.serve.k + 1 + c.serve.drafting_slots
    if budget >= seqs * per_request:
        return None
    explicit = c.serve.max_num_batched_tokens is not None or c.serve.max_num_seqs is not None
    return Finding("token_budget", explicit, f"max_num_batched_tokens {budget} < max_num_seqs {seqs} x {per_request} "
                   f"tokens a verification: at most {budget // per_request} requests verify per step",
                   "v1/core/sched/scheduler.py schedule (token_budget)",
                   f"--max-num-batched-tokens {seqs * per_request}, or --max-num-seqs {budget // per_request}")


def deepep_token_cap(c: Context) -> Finding | None:
    """DeepEP low-latency (or NIXL EP) expert parallelism over DP > 1. vLLM 0.32 sizes the all2all buffers per DP
    rank at max_num_batched_tokens (model_executor/layers/fused_moe/layer.py, FusedMoEConfig max_num_tokens) and
    defaults that to 256 tokens there, with an unset max_num_seqs cut to it (vllm/engine/arg_utils.py,
    `DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP`, `_set_default_max_num_seqs_and_batched_tokens_args`;
    `advisor.vllm.parallel.limits`): a rank verifies at most 256/(k+1) requests a step. A problem when the command
    sets either limit (it asks for more verifications a step than it allows), a note under vLLM's own."""
    s = c.serve
    if not s.speculative or not c.batched_dp_moe:
        return None
    device = batch_defaults(c.gpu.memory_gib, c.gpu.name, cpu=c.cpu, ranks=s.tp)
    budget, seqs = limits(device, s.all2all_backend, s.expert_parallel, s.dp, s.max_num_batched_tokens,
                          s.max_num_seqs)
    per_request = s.k + 1 + s.drafting_slots
    if budget >= seqs * per_request:
        return None
    explicit = s.max_num_batched_tokens is not None or s.max_num_seqs is not None
    return Finding("deepep_token_cap", explicit, f"{s.all2all_backend} caps a DP rank's step at {budget} tokens: "
                   f"at k={s.k}, {budget // per_request} of max_num_seqs {seqs} requests verify per step",
                   "model_executor/layers/fused_moe/layer.py (max_num_tokens = max_num_batched_tokens; 256 by "
                   "default under use_batched_dp_moe)",
                   f"--max-num-seqs {budget // per_request}, --max-num-batched-tokens {seqs * per_request} (more "
                   "all2all buffer), or a smaller k")


def async_off(c: Context) -> Finding | None:
    """A method vLLM 0.32 will not schedule asynchronously (vllm/config/vllm.py `VllmConfig.__post_init__`: only
    EAGLE/MTP, draft_model, ngram_gpu, DSpark and DFlash). With --async-scheduling it refuses to start ("Currently,
    async scheduling is only supported with ..."): a problem. Left to vLLM it turns async scheduling off with a
    warning, and every step then waits for the host's scheduling: a note (ngram has ngram_gpu, the same drafter
    scheduled asynchronously)."""
    method = c.serve.method
    if method is None or c.cpu or async_scheduling_default(method, cpu=False) or c.serve.async_scheduling is False:
        return None
    forced = c.serve.async_scheduling is True
    alternative = " or use method ngram_gpu (the same lookup, async)" if method == "ngram" else ""
    return Finding("async_off", forced, f"{method} runs synchronously: " + (
        "with --async-scheduling vLLM refuses to start" if forced else
        "vLLM turns async scheduling off, so each step waits for the host's scheduling"),
        "config/vllm.py VllmConfig.__post_init__ (async_scheduling)",
        ("drop --async-scheduling" if forced else "expect the host's step time on every step") + alternative)
