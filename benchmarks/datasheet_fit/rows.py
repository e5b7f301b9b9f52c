"""The rows of §1-§5 (dense targets): each source's published numbers with the model's prediction of each."""

from __future__ import annotations

from advisor.model.acceptance.conventions import expected_tokens
from advisor.model.cost.costmodel import draft_pass, step_time
from advisor.profiles.catalog import load_model

from .moe_rows import moe_rows
from .params import engine_cost
from .predict import alpha_from_rate, setup, tok_per_s_batch1, tok_per_s_concurrency
from .row import Row
from .sources import (
    A40,
    A100_40,
    A100_80,
    B200,
    DFLASH_B200,
    E8_PRUNED,
    F_BOOKKEEPING,
    F_NGRAM_SHARE,
    H100,
    L_IC,
    T8,
    f_eagle,
    f_target,
)


def rows() -> list[Row]:
    out: list[Row] = []
    s1 = "S1 Liu et al. 2601.11580 (vLLM 0.10.1, H100)"

    for b, q in [(1, 1), (1, 4), (8, 4), (32, 1), (32, 4), (64, 4)]:
        out.append(Row(f"1.target.B{b}.q{q}", s1, f"target step B={b} q={q} L={L_IC} (N={b * q})",
                       f_target(b * L_IC, b * q) * 1e3, "ms",
                       lambda v, b=b, q=q: float(step_time(T8, engine_cost(H100, v), b, q, L_IC)) * 1e3))
    for b in (1, 32):
        out.append(Row(f"1.eagle.B{b}.k3", s1, f"EAGLE proposal k=3 B={b}", f_eagle(b * L_IC, 3 * b) * 1e3, "ms",
                       lambda v, b=b: float(setup(v).draft_time(3, b, L_IC)) * 1e3))
    for b in (1, 64):
        out.append(Row(f"1.bookkeeping.B{b}", s1, f"spec bookkeeping per step B={b}", F_BOOKKEEPING * 1e3, "ms",
                       lambda v, b=b: float(setup(v).bookkeeping(b)) * 1e3))
    for b in (1, 64):
        out.append(Row(f"1.ngram.B{b}.k3", s1, f"n-gram proposal k=3 B={b} (0.5875% of verify)",
                       F_NGRAM_SHARE * f_target(b * L_IC, 4 * b) * 1e6, "µs",
                       lambda v, b=b: float(setup(v, method="ngram", draft=None).draft_time(3, b, L_IC)) * 1e6))
    for tid, did, tp, val, note in [
            ("llama-3.1-8b-instruct", "llama-3.2-1b-instruct", 1, 0.375, ""),
            ("qwen3-8b", "qwen3-0.6b", 1, 0.375, "the text names Qwen3-0.6B and Llama-3.2-1B for 8B targets"),
            ("meta-llama-3-70b-instruct", "llama-3.2-1b-instruct", 4, 0.125, "draft not named; Llama-3.2-1B "
             "assumed, TP4 both")]:
        target, draft = load_model(tid), load_model(did)

        def ratio(v, target=target, draft=draft, tp=tp):
            s = setup(v, target=target, method="draft_model", draft=draft, tp=tp)
            return float(draft_pass(draft, s.draft_cost, 1, 1, L_IC, tp) / s.decode_step(1, L_IC))
        out.append(Row(f"1.ratio.{draft.name}/{target.name}", s1, f"draft pass / target forward, TP{tp}", val,
                       "ratio", ratio, note))

    s2 = "S2 EAGLE-3 paper Table 4 (SGLang, H100)"
    out.append(Row("2.sglang.h100.8b.B1", s2, "Llama-3.1-8B decode B=1, MT-bench", 158.34, "tok/s",
                   lambda v: tok_per_s_batch1(setup(v, method="ngram", draft=None), 130, 512), "P=130, O=512 assumed"))

    s3 = "S3 gpt-fast README (A100-80GB @330 W)"
    l7 = load_model("llama-2-7b-chat-hf")
    for dtype, val in [("bf16", 104.9), ("int4", 196.8)]:
        out.append(Row(f"3.gptfast.llama-2-7b.{dtype}", s3, f"Llama-2-7B {dtype} decode B=1", val, "tok/s",
                       lambda v, dtype=dtype: tok_per_s_batch1(setup(v, l7, A100_80, "ngram", None, dtype=dtype),
                                                               6, 200),
                       "P=6, O=200 (its default prompt); no engine around the model"))

    s4 = "S4 DFlash paper Table 5 (SGLang, B200)"
    for b, val in DFLASH_B200:
        out.append(Row(f"4.dflash.b200.B{b}", s4, f"Llama-3.1-8B GSM8K concurrency {b}", val, "tok/s",
                       lambda v, b=b: tok_per_s_concurrency(setup(v, hw=B200, method="ngram", draft=None), b, 128, 256),
                       "P=128, O=256 assumed"))

    s5 = "S5 vLLM PR #26504 comment (vLLM 0.6.3, A40)"
    q7 = load_model("qwen2.5-7b-instruct")
    alpha_a40 = alpha_from_rate(0.885, 4)  # acceptance 0.86-0.91 measured; the mid-point, taken at k = 4

    def a40(v, method="ngram"):
        return setup(v, q7, A40, method, q7 if method == "draft_model" else None, draft_dtype="int4")
    out.append(Row("5.a40.base.B1", s5, "Qwen2.5-7B fp16 ShareGPT B=1", 33.8, "tok/s",
                   lambda v: tok_per_s_batch1(a40(v), 220, 200), "ShareGPT P=220, O=200 assumed"))
    out.append(Row("5.a40.base.B32", s5, "Qwen2.5-7B fp16 ShareGPT B=32", 867.8, "tok/s",
                   lambda v: tok_per_s_concurrency(a40(v), 32, 220, 200), "ShareGPT P=220, O=200 assumed"))
    out.append(Row("5.a40.spec.B1.k4", s5, "+ AWQ copy as draft, k=4, B=1", 56.4, "tok/s",
                   lambda v: tok_per_s_batch1(a40(v, "draft_model"), 220, 200, 4, float(expected_tokens(alpha_a40, 4))),
                   "acceptance rate 0.885 at k=4 -> AL 4.54"))

    def best_k(v):
        spec = a40(v, "draft_model")
        return max(tok_per_s_concurrency(spec, 32, 220, 200, k, float(expected_tokens(alpha_a40, k)))
                   for k in range(1, 9))
    out.append(Row("5.a40.spec.B32.best", s5, "+ AWQ copy as draft, best k, B=32", 715.1, "tok/s", best_k,
                   "best over k=1..8 at the α of rate 0.885"))

    s6 = "S6 vLLM PR #29334 (A100-40GB, B=1)"
    for pid, p_len, base, spec, al in [("mtbench", 130, 74.87, 108.88, 1.70), ("gt4k", 5000, 72.73, 75.52, 1.76)]:
        out.append(Row(f"6.a100.base.{pid}", s6, f"Llama-3.1-8B baseline, {pid}", base, "tok/s",
                       lambda v, p_len=p_len: tok_per_s_batch1(setup(v, hw=A100_40, seqs=1), p_len, 1024),
                       f"P={p_len} assumed, O=1024, --max-num-seqs 1"))
        out.append(Row(f"6.a100.eagle.k1.{pid}", s6, f"+ EAGLE k=1, {pid}, AL {al}", spec, "tok/s",
                       lambda v, p_len=p_len, al=al: tok_per_s_batch1(setup(v, hw=A100_40, seqs=1), p_len, 1024, 1, al),
                       f"P={p_len} assumed, O=1024; EAGLE-1 head assumed"))

    s7 = "S7 vLLM PR #24343 (A100-40GB, B=1)"
    for k, val, al in [(1, 108.45, 1.63), (32, 48.32, 2.18)]:
        out.append(Row(f"7.a100.eagle-pruned.k{k}", s7, f"Llama-3.1-8B + pruned-vocab EAGLE k={k}, AL {al}", val,
                       "tok/s", lambda v, k=k, al=al: tok_per_s_batch1(setup(v, hw=A100_40, draft=E8_PRUNED, seqs=1),
                                                                       130, 1024, k, al),
                       "MT-bench-like P=130, O=1024 and a 32k pruned vocabulary assumed"))
    return out + moe_rows()


