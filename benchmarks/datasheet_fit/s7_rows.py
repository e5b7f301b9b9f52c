"""The rows of §7: a Hopper MoE under load (Hy3 on 8×H20, vLLM), a Blackwell MTP k sweep (DeepSeek-R1 on 8×B200,
TensorRT-LLM) and a second CDNA3 source (Llama-3.1-70B on MI300X at TP1/2/4, the SSD research engine)."""

from __future__ import annotations

from dataclasses import replace

from advisor.model.cost.costmodel import grouped_gemm_time, pnorm
from advisor.model.gpu.kernels import MOE_DISPATCH
from advisor.profiles.catalog import load_hardware, load_model

from .params import engine_cost
from .predict import setup, tok_per_s_batch1
from .row import Row
from .sources import B200, DSR1_B200_MTP, DSV3, HY3_FUSED_MOE_TRITON_US, HY3_H20_TPOT, MI300X, MI300X_L70_TOK_S

H20 = load_hardware("h20")
HY3 = load_model("hy3")
# DeepSeek-R1 as TensorRT-LLM's blog ran it: V3's architecture, NVFP4 MoE and MLP weights, BF16 attention (and MTP)
DSR1 = replace(DSV3, name="DeepSeek-R1 NVFP4", unquantized=("attention",))
L70 = load_model("llama-3.1-70b-instruct")
HY3_CONTEXT = 1024 + 2048  # prompt not given: 1K assumed, plus half the 4K output
DSR1_CONTEXT = 1024 + 1024  # ISL 1K, half the 2K output
L70_PROMPT, L70_OUT = 256, 512  # the four datasets' prompts are not given: 256 assumed; 512 output tokens


def dsr1_step_ms(v: dict, k: int) -> float:
    """One TensorRT-LLM engine step of DeepSeek-R1 on 8×B200 at concurrency 1 with k MTP drafts (k = 0: a decode
    step), ms: the target's verification of k+1 tokens plus k passes of the reused MTP module, each its own launch
    (`draft_pass_overhead@trtllm` per pass, where vLLM 0.32 fuses the later passes into one graph). Scheduled
    asynchronously: the blog states the overlap scheduler."""
    s = replace(setup(v, DSR1, B200, "mtp", DSR1.mtp_draft(), 8, "nvfp4", "bf16"), async_scheduling=True)
    return float(s.decode_step(1, DSR1_CONTEXT) if k == 0 else s.iteration_time(k, 1, DSR1_CONTEXT)) * 1e3


def fused_moe_us(v: dict, tokens: int) -> float:
    """One Hy3 FusedMoE layer on one of 8 H20s (TP8/EP1), µs: the grouped GEMMs under the MoE kernels' floors, as
    `costmodel.forward_pass` adds them (tests/model/cost/test_gemm.py checks the same against the shipped defaults)."""
    cost = engine_cost(H20, v, "fp8")
    gemm = grouped_gemm_time(HY3, cost, tokens, 8) / HY3.moe_layers
    return float(pnorm(gemm, MOE_DISPATCH * cost.moe_kernel_floor, cost.floor_exponent)) * 1e6


def s7_rows() -> list[Row]:
    out: list[Row] = []
    s11 = "S11 vLLM blog 2026-07-06 HPC-Ops (vLLM, 8×H20)"
    for tokens, us in HY3_FUSED_MOE_TRITON_US:
        out.append(Row(f"11.h20.hy3.fusedmoe.n{tokens}", s11, f"one FusedMoE layer, {tokens} tokens, Triton", us, "µs",
                       lambda v, tokens=tokens: fused_moe_us(v, tokens), "TP8/EP1, FP8"))
    for b, tpot in HY3_H20_TPOT:
        out.append(Row(f"11.h20.hy3.B{b}", s11, f"Hy3-FP8 TPOT, batch {b}, default backends", tpot, "ms",
                       lambda v, b=b: float(setup(v, HY3, H20, "ngram", None, 8, "fp8", overlap=None)
                                            .decode_step(b, HY3_CONTEXT)) * 1e3,
                       f"TP8, context {HY3_CONTEXT} (prompt 1K assumed, 4K output)"))
    s12 = "S12 TensorRT-LLM tech blog 1 (8×B200, concurrency 1)"
    for k, al, tok_s in DSR1_B200_MTP:
        out.append(Row(f"12.b200.dsr1.mtp{k}", s12, f"DeepSeek-R1 ms per step, MTP k={k} (AL {al})", al / tok_s * 1e3,
                       "ms", lambda v, k=k: dsr1_step_ms(v, k), "NVFP4 MoE, BF16 attention/MTP; attention TP8"))
    s13 = "S13 ROCm blog 2026-05-29 SSD (MI300X, batch 1)"
    for tp, tok_s in MI300X_L70_TOK_S:
        out.append(Row(f"13.mi300x.l70.tp{tp}", s13, f"Llama-3.1-70B autoregressive, TP{tp}", tok_s, "tok/s",
                       lambda v, tp=tp: tok_per_s_batch1(setup(v, L70, MI300X, "ngram", None, tp, overlap=None),
                                                         L70_PROMPT, L70_OUT),
                       f"bf16; P={L70_PROMPT} assumed, O={L70_OUT}; HIP graphs"))
    return out
