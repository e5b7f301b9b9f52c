"""The rows of §7: a Hopper MoE under load (Hy3 on 8×H20, vLLM), a Blackwell MTP k sweep (DeepSeek-R1 on 8×B200,
TensorRT-LLM) and a second CDNA3 source (Llama-3.1-70B on MI300X at TP1/2/4, the SSD research engine)."""

from __future__ import annotations

from dataclasses import replace

from advisor.profiles.catalog import load_hardware, load_model

from .predict import setup, tok_per_s_batch1
from .row import Row
from .sources import B200, DSR1_B200_MTP, DSV3, HY3_H20_TPOT, MI300X, MI300X_L70_TOK_S

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
    step), ms: the target's verification of k+1 tokens plus k passes of the reused MTP module. Priced as vLLM 0.32
    runs it (async scheduling, drafts in full graphs): the blog states CUDA graphs and the overlap scheduler."""
    s = setup(v, DSR1, B200, "mtp", DSR1.mtp_draft(), 8, "nvfp4", "bf16", overlap=None)
    return float(s.decode_step(1, DSR1_CONTEXT) if k == 0 else s.iteration_time(k, 1, DSR1_CONTEXT)) * 1e3


def s7_rows() -> list[Row]:
    out: list[Row] = []
    s11 = "S11 vLLM blog 2026-07-06 HPC-Ops (vLLM, 8×H20)"
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
