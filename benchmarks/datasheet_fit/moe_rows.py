"""The rows of §6 and §7: big MoE targets with MTP, and the baseline step times under them."""

from __future__ import annotations

from advisor.profiles.catalog import load_model

from .predict import mi300x_latency, mtp_tokens, setup, tok_per_s_batch1
from .row import Row
from .s7_rows import s7_rows
from .sources import B300, B300_TOK_S, DSV32, H100, MI300X_MTP


def moe_rows() -> list[Row]:
    """§6: big MoE targets with MTP, and the baseline step times under them."""
    out: list[Row] = []
    s8 = "S8 lmsys/AMD blog 2025-09-02 (SGLang 0.4.10, 8×MI300X)"
    al2 = mtp_tokens(2)

    def latency(v, b, k=0):
        return mi300x_latency(v, b, k, al2 if k else 1.0)
    for b, base, spec in MI300X_MTP:
        out.append(Row(f"8.mi300x.dsv3.base.c{b}", s8, f"DeepSeek-V3 e2e latency, concurrency {b}, random 1024/1024",
                       base, "ms", lambda v, b=b: latency(v, b), "fp8, TP8"))
        out.append(Row(f"8.mi300x.dsv3.mtp2.c{b}", s8, f"MTP k=2 speedup, concurrency {b}", base / spec, "x",
                       lambda v, b=b: latency(v, b) / latency(v, b, 2), f"AL {al2:.2f} (MTP prior: 0.9, reuse decay)"))
    s9 = "S9 vLLM blog 2026-05-11 (8×B300, TP8)"

    def b300(v):
        return setup(v, DSV32, B300, "mtp", DSV32.mtp_draft(), 8, "fp8", "fp8", overlap=None)
    base, mtp = B300_TOK_S
    out.append(Row("9.b300.dsv32.base", s9, "DeepSeek-V3.2 decode, concurrency 1", base, "tok/s",
                   lambda v: tok_per_s_batch1(b300(v), 1024, 1024), "P=1024, O=1024 assumed; vLLM 0.32 engine"))
    out.append(Row("9.b300.dsv32.mtp1", s9, "MTP k=1 at ~90% acceptance: speedup", mtp / base, "x",
                   lambda v: tok_per_s_batch1(b300(v), 1024, 1024, 1, 1.9) / tok_per_s_batch1(b300(v), 1024, 1024),
                   "AL 1.9; async scheduling (vLLM 0.32)"))
    s10 = "S10 gpustack lab (SGLang 0.5.3, H100)"
    q8 = load_model("qwen3-8b")
    out.append(Row("10.h100.qwen3-8b-fp8.c4", s10, "Qwen3-8B-FP8 TPOT, concurrency 4, ShareGPT", 5.65, "ms",
                   lambda v: float(setup(v, q8, H100, "ngram", None, dtype="fp8").decode_step(4, 233 + 110)) * 1e3,
                   "mean context 233 + 221/2"))
    return out + s7_rows()


