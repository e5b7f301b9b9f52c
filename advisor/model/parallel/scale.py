"""One decode (or draft-then-verify) step of one DP rank in a deployment beyond one GPU group: data-parallel
attention, expert parallelism (EP), the MoE all-to-all, dual batch overlap (DBO). Pure numpy; every time in s.

How vLLM 0.32 runs it (../shared/reference/scale-notes.md §1 reads the source):
- every DP rank is an engine with its own batch, lock-stepped with the others before every target and draft pass
  (`coordinate_batch_across_dp`): all run at the busiest rank's token count (`padded_batch`);
- a rank's attention, dense layers, shared experts and lm_head run on its own batch with its tp GPUs (today's
  `costmodel.forward_pass`); the routed experts are split over the tp × dp GPUs, each GPU streaming its share of the
  experts that *all* ranks' tokens touch (`forward_pass(..., ep_ranks=dp)`): at EP, each expert sees the global
  batch's tokens, so verifying k+1 tokens multiplies expert FLOPs instead of riding on one weight read;
- every MoE layer pays one dispatch and one combine (`all2all_time`), the MTP head's MoE layer too;
- DBO splits the target pass into two microbatches whose all-to-all overlaps the other's compute, only from
  `DBO_DECODE_TOKEN_THRESHOLD` tokens, never in draft passes ("DBO ubatching not implemented for EAGLE").
At dp = 1 without EP every term is today's model and the all-to-all is zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model.cost.costmodel import forward_pass
from advisor.model.cost.enginecost import EngineCost
from advisor.model.shape.modelspec import WIDE_BYTES, ModelSpec

# FP8 dispatch carries one fp32 scale per 128 hidden values (DeepEP low-latency kernels, FP8 block checkpoints)
FP8_SCALE_GROUP = 128
SCALE_BYTES = 4


@dataclass(frozen=True, slots=True)
class All2AllLink:
    """One direction (dispatch or combine) of one MoE layer's all-to-all: a fixed floor plus its payload over the
    GPU's links, where DeepEP's "bandwidth" counts every routed copy (tokens × top-k × bytes per token)."""

    floor: float  # s per direction per MoE layer, whatever the tokens
    nvlink_bandwidth: float  # B/s of routed payload to GPUs in the same node
    rdma_bandwidth: float  # B/s of routed payload to other nodes (one NIC per GPU)


# Fitted (benchmarks/scale_fit.py, log-error least squares) to DeepEP's low-latency table at 128 tokens, EP 8-256,
# dispatch and combine (deepseek-ai/DeepEP docs/legacy.md, H800, one 400 Gb/s CX7 NIC per GPU, NVLink used within
# a node): 31.3 µs, 183 GB/s NVLink, 47.4 GB/s RDMA (the NIC's 50 GB/s). Held out, it predicts DeepEP's pure-RDMA
# table at EP 256 within 2% and pplx's 1-token NVLink floor (41.6 µs) 24% low.
DEEPEP_LL = All2AllLink(floor=31.3e-6, nvlink_bandwidth=182.6e9, rdma_bandwidth=47.4e9)
# The share of the shorter of a DBO step's compute and all-to-all that the two microbatches actually hide: fitted by
# benchmarks/scale_rows.py to scale-notes §2.4's per-GPU decode rows (every source's rows predicted with it fitted
# to the others' in docs/scale.md). Perfect overlap (1) predicts the rows ~2x too fast: in-situ all-to-all waits on
# the slowest rank, and DBO's two microbatches do not pipeline perfectly (SGLang's ablation: +25.5% at 256 tokens).
DBO_OVERLAP = 0.18
# DP token-count all-reduce per coordinated pass, host side (Gloo on the CPU under async scheduling). No published
# figure (scale-notes §2.2): a guess, one TCP round trip within a node and across nodes; async scheduling hides it
# under any GPU step longer than the host's work.
DP_SYNC_IN_NODE_S = 30e-6
DP_SYNC_ACROSS_NODES_S = 100e-6


def nvlink_share(group: int, gpus_per_node: int) -> float:
    """Share of a GPU's routed copies that stay in its node under uniform routing: gpus_per_node / group (≤ 1)."""
    return min(1.0, gpus_per_node / group)


def all2all_time(model: ModelSpec, tokens_per_gpu, group: int, gpus_per_node: int, backend: str,
                 link: All2AllLink = DEEPEP_LL, fp8_dispatch: bool = True) -> np.ndarray:
    """Dispatch + combine of one MoE layer, s, for `tokens_per_gpu` tokens on each of `group` GPUs (tp × dp; with
    tp > 1 vLLM splits a rank's tokens over its GPUs: sequence-parallel MoE). 0 for a group of one.

    deepep_low_latency: each direction floor + tokens·top-k·bytes / bandwidth, the bytes split by the share of
    destinations in the node (NVLink) and beyond (RDMA). Dispatch bytes per copy H + H/128·4 in FP8 (else 2H),
    combine 2H in BF16 (scale-notes §1.2: 7.57 MB and 14.68 MB at 128 DeepSeek-V3 tokens).
    allgather_reducescatter (vLLM's default, `AgRsAll2AllManager`): dispatch all-gathers every GPU's hidden states,
    combine reduce-scatters them, (group − 1)·tokens·2H bytes each way whatever top-k, from the other GPUs of the
    node over NVLink and the rest over RDMA, with the same floor (a guess: no NCCL all-gather latency at this size
    is published for these links)."""
    tokens = np.asarray(tokens_per_gpu, dtype=float)
    if group <= 1:
        return np.zeros_like(tokens)
    h = model.hidden_size
    if backend == "deepep_low_latency":
        dispatch = h + h / FP8_SCALE_GROUP * SCALE_BYTES if fp8_dispatch else WIDE_BYTES * h
        share = nvlink_share(group, gpus_per_node)
        per_byte = share / link.nvlink_bandwidth + (1.0 - share) / link.rdma_bandwidth
        return 2.0 * link.floor + tokens * model.experts_per_token * (dispatch + WIDE_BYTES * h) * per_byte
    if backend == "allgather_reducescatter":
        share = (min(gpus_per_node, group) - 1) / (group - 1)
        per_byte = share / link.nvlink_bandwidth + (1.0 - share) / link.rdma_bandwidth
        return 2.0 * (link.floor + (group - 1) * tokens * WIDE_BYTES * h * per_byte)
    raise ValueError(f"all-to-all backend {backend!r} is not modelled")


def padded_batch(mean_requests, imbalance: float) -> np.ndarray:
    """Requests on the busiest DP rank, which every lock-stepped rank runs at: ⌈mean · imbalance⌉ (vLLM pads the
    others' token counts to its count when CUDA graphs or DBO are on, `coordinate_batch_across_dp`)."""
    return np.ceil(np.asarray(mean_requests, dtype=float) * imbalance - 1e-9)


@dataclass(frozen=True, slots=True)
class RankShape:
    """What one DP rank's step depends on in the deployment (advisor.model.parallel.deployment.Deployment, reduced)."""

    tp: int  # GPUs per DP rank
    ep_ranks: int  # DP ranks sharing the routed experts (1: the experts serve this rank alone)
    group: int  # GPUs one MoE layer's all-to-all spans (tp × dp; 1: no all-to-all)
    gpus_per_node: int  # GPUs per node: the share of the all-to-all on NVLink
    backend: str  # --all2all-backend
    dbo: bool  # --enable-dbo
    dbo_threshold: int  # tokens per rank from which DBO splits a step
    dp_sync: float  # s per DP token all-reduce (host), 0 without DP
    dbo_overlap: float  # share of the shorter of compute and all-to-all DBO hides (`DBO_OVERLAP`)

    def comm(self, model: ModelSpec, tokens) -> np.ndarray:
        """All-to-all of every MoE layer of `model` in one pass over `tokens` tokens on this rank, s."""
        return model.moe_layers * model.pass_fraction * all2all_time(model, np.asarray(tokens, dtype=float) / self.tp,
                                                                     self.group, self.gpus_per_node, self.backend)


def overhead(cost: EngineCost, batch, tokens) -> np.ndarray:
    """An engine step's fixed host costs (as `costmodel.step_time`), s."""
    return cost.step_overhead + cost.seq_overhead * batch + cost.token_overhead * tokens


def target_step(model: ModelSpec, cost: EngineCost, shape: RankShape, batch, new_tokens, context) -> np.ndarray:
    """One rank's uniform decode (q = 1) or verification (q = k+1) step at `batch` requests (the padded count), s:
    the engine's fixed costs, the forward pass with experts shared over the EP group, and the all-to-all, added
    without DBO; with DBO and at least `dbo_threshold` tokens, two microbatches of half the batch each (their
    compute pays the weights and floors twice) whose all-to-all overlaps the other's compute: their compute plus
    their all-to-all less `dbo_overlap` of the shorter of the two (1: the longer of the two alone, perfect overlap;
    scale-notes §4.1 item 4). At dp = 1 without EP exactly `costmodel.step_time` of a uniform step."""
    batch = np.asarray(batch, dtype=float)
    q = np.asarray(new_tokens, dtype=float)
    tokens = batch * q
    graph = cost.fits_cudagraph(tokens, q)
    whole = forward_pass(model, cost, batch, q, context, sampled=tokens, graph=graph, tp=shape.tp,
                         ep_ranks=shape.ep_ranks)
    plain = whole + shape.comm(model, tokens)
    if not shape.dbo:
        return overhead(cost, batch, tokens) + plain
    half = forward_pass(model, cost, batch / 2.0, q, context, sampled=tokens / 2.0, graph=graph, tp=shape.tp,
                        ep_ranks=shape.ep_ranks)
    compute, comm = 2.0 * half, 2.0 * shape.comm(model, tokens / 2.0)
    overlapped = compute + comm - shape.dbo_overlap * np.minimum(compute, comm)
    return overhead(cost, batch, tokens) + np.where(tokens >= shape.dbo_threshold, overlapped, plain)


def rank_weight_bytes(model: ModelSpec, dtype: str, tp: int, ep_size: int, redundant_experts: int = 0) -> float:
    """Weights one GPU holds, bytes: the routed experts split over `ep_size` GPUs (the EP group, or TP × DP without
    EP; at most tp: tensor parallelism splits them too), with EPLB's `redundant_experts` extra replicas per MoE layer
    split alike (vLLM's docs: ~2.4 GB per redundant expert per rank for DeepSeek-V3), the rest over the rank's tp
    GPUs."""
    experts = float(model.expert_weight_bytes_read(np.inf, dtype)) / model.pass_fraction
    replicas = (model.num_experts + redundant_experts) / model.num_experts if model.num_experts > 1 else 1.0
    return (model.weight_bytes(dtype) - experts) / tp + experts * replicas / max(ep_size, tp)
