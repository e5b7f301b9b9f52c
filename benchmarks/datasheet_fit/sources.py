"""The published sources: the GPUs and models they ran, which of them the fit trains on, and their numbers
(../shared/reference/gpu-measurements.md; § numbers are that file's)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from advisor.model.cost.engines import ENGINES
from advisor.model.gpu.hardware import Hardware
from advisor.profiles.catalog import load_hardware, load_model

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "datasheet-fit.md"

H100, A100_40, A100_80, B200, B300, MI300X = (load_hardware(n) for n in (
    "h100-sxm", "a100-40gb-sxm", "a100-80gb-sxm", "b200", "b300", "mi300x"))
# Not among profiles/hardware: NVIDIA A40 datasheet, 48 GB GDDR6, 696 GB/s, 149.7 TFLOP/s dense bf16 (299.4 sparse).
A40 = Hardware(slug="a40", name="NVIDIA A40 48GB", vendor="nvidia", memory_gib=48, memory_bandwidth_gbs=696,
               memory="GDDR6", architecture="sm_86",
               bf16_tflops=149.7, interconnect="PCIe 4.0", interconnect_gbs=32,
               source="https://images.nvidia.com/content/Solutions/data-center/a40/nvidia-a40-datasheet.pdf")

T8, D1 = load_model("llama-3.1-8b-instruct"), load_model("llama-3.2-1b-instruct")
DSV3 = load_model("deepseek-v3")
# DeepSeek-V3.2 as §6's fit was made: V3's architecture plus the sparse-attention indexer's kernels in every layer
# (config index_topk 2048). Its own profile (deepseek-v3.2) also counts the indexer's weights, keys and reads, which
# the fit predates; the lead decides whether to refit on it.
DSV32 = replace(DSV3, name="DeepSeek-V3.2", index_topk=2048, index_layers=DSV3.num_layers)
E8 = load_model("eagle-llama3.1-instruct-8b")  # EAGLE-1: one layer, the target's 128k lm_head, fc 2h -> h
# vLLM PR #24343's pruned-vocabulary EAGLE-1 head: the pruned size is not in the reference; 32k assumed (the size
# EAGLE-3 heads use for Llama 3). Its lm_head is what shrinks (an EAGLE-1 head keeps its 2h -> h fusion).
E8_PRUNED = replace(E8, name="EAGLE-LLaMA3.1-8B, 32k pruned vocabulary", vocab_size=32000)
# An EAGLE-3 head for Llama-3.1-8B (32k draft vocabulary, 3h -> h fusion on the first pass), for the k-by-batch view
E3 = replace(E8, name="EAGLE-3 head for Llama-3.1-8B", lm_head_vocab=32000)

L_IC = 512  # InstructCoder context assumed for sampling the §1 formulas (prompt + half the output)
# The engine each source ran (params.ENGINE_TERMS: each has its own per-step, per-token, per-draft-pass and
# bookkeeping terms; the physics is shared). "vllm": vLLM's V1 engine, 0.10 on (its V1 model runner, and the 2026
# blogs' builds, priced with vLLM 0.32's async scheduling and full-graph drafting where the row says so);
# "vllm-0.6": vLLM 0.6.3's V0 engine; "ssd": the SSD research engine (FlashInfer-ROCm with HIP graphs).
ENGINE = dict(sorted(((s, e.slug) for e in ENGINES.values() for s in e.sources), key=lambda x: int(x[0][1:])))
VLLM_V1 = tuple(s for s, engine in ENGINE.items() if engine == "vllm")
# The GPU kinds whose bandwidth share (and floors) the second stage fits on their own rows (params.PHYSICS: GDDR's,
# CDNA3's); the other sources ran NVIDIA HBM GPUs, which the first stage's vLLM rows fix
OWN_KIND = {"S5": "gddr", "S8": "cdna3", "S13": "cdna3"}


def vendor(source_id: str) -> str:
    """The GPU vendor a source's rows ran on, as profiles/hardware names it: AMD for the CDNA3 (MI300X) sources,
    NVIDIA for every other."""
    return "amd" if OWN_KIND.get(source_id) == "cdna3" else "nvidia"
# Fitted: every source. The first stage fits the physics and vLLM's terms on vLLM's rows on NVIDIA HBM GPUs; the
# second, with those held, each other engine's terms on its own rows, and the scales of a GPU kind only other engines
# measured (GDDR: S5's A40; CDNA3: S8's and S13's MI300X). Issue 24 predicted SGLang's rows out of sample instead:
# fitted into the shared rates, S4's B200 steps (63 µs per added sequence, 5x an 8B token's matmuls at B200's peak)
# gave every Blackwell GPU 9x too little matmul throughput. As an engine's own per-token term they stay SGLang's.
FITTED = tuple(ENGINE)
V1_FIT = ("every source: the physics and vLLM's terms on vLLM's rows on NVIDIA HBM GPUs (" + ", ".join(VLLM_V1)
          + "; first stage), then each other engine's terms on its rows and the GDDR (S5) and CDNA3 (S8, S13) "
          "bandwidth scales and CDNA3's floors (second stage)")


F_PER_TOKEN_S = 2.10103129e-5  # §1: what each batched token adds to a target forward, s


def f_target(n_kv: float, n_batched: float) -> float:
    """§1: target forward, s."""
    return 3.92645679e-8 * n_kv + F_PER_TOKEN_S * n_batched + 5.88590713e-3


def f_eagle(n_kv: float, n_spec: float) -> float:
    """§1: EAGLE proposal (all of a step's draft passes), s."""
    return 2.37768493e-9 * n_kv + 8.41429603e-7 * n_spec + 2.13526175e-3


F_BOOKKEEPING = 1.20683946e-3  # §1, s per speculative step
F_NGRAM_SHARE = 0.005875  # §1: n-gram proposal / verification time

DFLASH_B200 = [(1, 249), (4, 923), (8, 1739), (16, 3245), (32, 5349)]  # §2: concurrency, total tok/s
B300_TOK_S = (125, 234)  # §6: DeepSeek-V3.2 on 8×B300 at concurrency 1, without and with MTP k = 1
MI300X_MTP = [(1, 17348, 8229), (2, 17162, 8408), (4, 17948, 9737), (8, 19919, 11743), (16, 23709, 15483),
              (32, 30868, 21399), (64, 43848, 35074)]  # §6: concurrency, e2e ms without and with MTP k = 2


# §7 (added 2026-12-03)
# one FusedMoE layer, µs by tokens in the step, TP8/EP1, Triton (vLLM's default kernel); 1024 tokens left out: there
# Triton's default config runs at 653 µs where CUTLASS takes 438 (tests/model/cost/test_gemm.py)
HY3_FUSED_MOE_TRITON_US = [(4, 56.4), (16, 124.2), (32, 184.3), (64, 374.9), (128, 302.9), (256, 310.9), (512, 331.6)]
HY3_H20_TPOT = [(1, 8.00), (4, 11.14), (8, 13.49), (16, 17.98), (32, 24.13), (64, 31.10)]  # batch, ms (default)
DSR1_B200_MTP = [(0, 1.00, 111), (1, 1.92, 198), (2, 2.58, 250), (3, 2.82, 253), (4, 2.99, 245),
                 (5, 3.01, 239)]  # MTP k, AL, tok/s per user (TensorRT-LLM, concurrency 1)
MI300X_L70_TOK_S = [(1, 21.41), (2, 32.87), (4, 52.32)]  # TP, autoregressive tok/s at batch 1 (SSD engine)
