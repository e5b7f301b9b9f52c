"""Every published speedup with a known acceptance (../shared/reference/, §1-§8), and the model's prediction of it.

A row is a measured speedup of speculative decoding over the same engine without it, at an acceptance the source
states, on a setup the model can express. Its prediction is the repo's own model (`Setup`, `request_times`) on the
datasheet's costs with the parameters of a fit that never saw the row's source (benchmarks/speedup_errors.py passes
them in); the acceptance is the published one, so what the row measures is the cost model's error on a speedup.
Each row says what it is of: the target's class (dense, MoE, hybrid: linear-attention layers beside full attention),
the method, the engine and the GPU generation, and whether its engine ran it as vLLM 0.32 does (`as_served`).

Rows whose sources the datasheet fit trains on (benchmarks/datasheet_fit/) are ratios of that fit's own rows; the
others are new here. What the reference publishes and these rows leave out, and why, is `LEFT_OUT`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from advisor.model.cost.engines import VLLM
from advisor.model.cost.speculative import Setup
from advisor.model.error.speedup import model_class
from advisor.model.gpu.kernels import generation
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles.catalog import load_model
from benchmarks import datasheet_fit as df
from benchmarks.datasheet_fit.params import engine_cost, for_engine
from benchmarks.datasheet_fit.s7_rows import DSR1, dsr1_step_ms
from benchmarks.datasheet_fit.sources import A40, A100_40, A100_80, B200, B300, DSR1_B200_MTP, DSV32


@dataclass(frozen=True)
class SpeedupRow:
    id: str
    source: str  # a source id: the datasheet fit's ("S6"), or this file's for a source only speedups come from
    label: str  # the source in words
    published: float  # speedup over the same engine without speculation, x
    acceptance: str  # the acceptance the source states, as it states it
    target: ModelSpec
    method: str
    engine: str  # advisor.model.cost.engines slug
    gpu: str  # the GPU generation whose costs price it (kernels.generation)
    predict: Callable[[dict], float]  # the fit's parameters (their engine's terms applied here) -> the speedup
    as_served: bool = True  # its engine verified as vLLM 0.32 does (a hybrid before 0.32: k+1 passes, not one)
    note: str = ""  # what was run, in words

    @property
    def model_class(self) -> str:
        return model_class(self.target)

    def predicted(self, values: dict) -> float:
        return float(self.predict(for_engine(values, self.engine)))


def _ratio(table: dict, spec: str, base: str) -> Callable[[dict], float]:
    """A speedup as the ratio of two datasheet-fit rows' predictions (tok/s rows: faster is larger)."""
    return lambda v: table[spec].predict(v) / table[base].predict(v)


# §8.1: Qwen3.8-27B (the layer layout of qwen3.5-27b: 48 Gated-DeltaNet + 16 full-attention layers, one MTP layer),
# W4A16 (AWQ, Marlin), one request at a ~29K-token prompt, max-num-seqs 4, on a 64 GB GA100 card (priced on the A100
# 80GB's datasheet), vLLM 0.27.1: MTP k, acceptance length, decode tok/s (no speculation: 57.0)
HYBRID_A100 = [(1, 1.87, 40.6), (2, 2.50, 36.0), (3, 3.06, 32.7)]
HYBRID_A100_BASE = 57.0
HYBRID_PROMPT, HYBRID_OUT = 29000, 500  # the output length is not given: 500 assumed (decode rate, at the mean context)
QWEN35_27B = load_model("qwen3.5-27b")  # served as W4A16: `dtype` int4-g128 below


def hybrid_as_published(v: dict, k: int, hw=A100_80, target: ModelSpec = QWEN35_27B, dtype: str = "int4-g128",
                        seqs: int | None = 4) -> Setup:
    """A hybrid target with MTP as the vLLM builds of §8.1 ran it: the verification as k+1 one-token passes run
    piecewise (`Setup.hybrid_one_pass` False), the MTP passes on the V1 model runner (piecewise), async scheduling on."""
    cost = engine_cost(hw, v, dtype, seqs)
    return Setup(target, cost, "mtp", target.mtp_draft(), cost, 1, async_scheduling=True, drafter_graphs=False,
                 hybrid_one_pass=False)


def hybrid_decode_speedup(v: dict, k: int, al: float) -> float:
    """The decode-rate speedup of §8.1's A100 rows: AL tokens per iteration against one decode step, at the mean
    context of a 29K-token prompt."""
    s = hybrid_as_published(v, k)
    context = HYBRID_PROMPT + HYBRID_OUT / 2
    return float(al * s.decode_step(1, context) / s.iteration_time(k, 1, context))


def rows() -> list[SpeedupRow]:
    """The published speedups with an acceptance, each with the model's prediction."""
    fit = {r.id: r for r in df.rows()}
    t8, q7 = df.sources.T8, load_model("qwen2.5-7b-instruct")
    e1 = "eagle"  # §3's vLLM PR rows ran EAGLE-1 heads (the datasheet fit's E8, E8_PRUNED)
    amp, bw = generation(A100_40), generation(B300)
    out = [
        SpeedupRow("5.a40.B1.k4", "S5", "vLLM PR #26504 comment (vLLM 0.6.3, A40)", 56.4 / 33.8,
                   "acceptance rate 0.86-0.91 (0.885 taken)", q7, "draft_model", "vllm-0.6", generation(A40),
                   _ratio(fit, "5.a40.spec.B1.k4", "5.a40.base.B1"), note="Qwen2.5-7B + its AWQ copy, k=4, batch 1"),
        SpeedupRow("5.a40.B32.best", "S5", "vLLM PR #26504 comment (vLLM 0.6.3, A40)", 715.1 / 867.8,
                   "acceptance rate 0.86-0.91 (0.885 taken)", q7, "draft_model", "vllm-0.6", generation(A40),
                   _ratio(fit, "5.a40.spec.B32.best", "5.a40.base.B32"), note="best k of 1-8, batch 32"),
        SpeedupRow("6.a100.k1.mtbench", "S6", "vLLM PR #29334 (A100-40GB, B=1)", 108.88 / 74.87, "AL 1.70", t8, e1,
                   VLLM, amp, _ratio(fit, "6.a100.eagle.k1.mtbench", "6.a100.base.mtbench"), note="EAGLE k=1"),
        SpeedupRow("6.a100.k1.gt4k", "S6", "vLLM PR #29334 (A100-40GB, B=1)", 75.52 / 72.73, "AL 1.76", t8, e1, VLLM,
                   amp, _ratio(fit, "6.a100.eagle.k1.gt4k", "6.a100.base.gt4k"), note="EAGLE k=1, prompts over 4K"),
        # §3: k = 32 is "34% slower than vanilla"; the vanilla rate is 48.32 / 0.66 [D], priced as S6's baseline row
        SpeedupRow("7.a100.pruned.k1", "S7", "vLLM PR #24343 (A100-40GB, B=1)", 108.45 / (48.32 / 0.66), "AL 1.63",
                   t8, e1, VLLM, amp, _ratio(fit, "7.a100.eagle-pruned.k1", "6.a100.base.mtbench"),
                   note="pruned-vocabulary EAGLE k=1; vanilla 48.32 / 0.66 tok/s [D]"),
        SpeedupRow("7.a100.pruned.k32", "S7", "vLLM PR #24343 (A100-40GB, B=1)", 0.66, "AL 2.18", t8, e1, VLLM, amp,
                   _ratio(fit, "7.a100.eagle-pruned.k32", "6.a100.base.mtbench"), note="k=32: '34% slower'"),
        SpeedupRow("9.b300.mtp1", "S9", "vLLM blog 2026-05-11 (8×B300, TP8)", 234 / 125, "~90% at k=1 (AL 1.9)",
                   DSV32, "mtp", VLLM, bw, fit["9.b300.dsv32.mtp1"].predict, note="DeepSeek-V3.2, concurrency 1"),
    ]
    base_tok_s = DSR1_B200_MTP[0][2]
    for k, al, tok_s in DSR1_B200_MTP[1:]:
        out.append(SpeedupRow(f"12.b200.mtp{k}", "S12", "TensorRT-LLM tech blog 1 (8×B200, concurrency 1)",
                              tok_s / base_tok_s, f"AL {al}", DSR1, "mtp", "trtllm", generation(B200),
                              lambda v, k=k, al=al: al * dsr1_step_ms(v, 0) / dsr1_step_ms(v, k),
                              note=f"DeepSeek-R1 NVFP4, MTP k={k}"))
    for k, al, tok_s in HYBRID_A100:
        out.append(SpeedupRow(f"81.a100.qwen3.8-27b.mtp{k}", "S81", "vLLM issue #35387 (vLLM 0.27.1, A100-class)",
                              tok_s / HYBRID_A100_BASE, f"AL {al}", QWEN35_27B, "mtp", VLLM, amp,
                              lambda v, k=k, al=al: hybrid_decode_speedup(v, k, al), as_served=False,
                              note=f"Qwen3.8-27B as qwen3.5-27b, W4A16, ~29K prompt, MTP k={k}"))
    return out


# What the reference publishes as a speedup and these rows leave out: (where, why)
LEFT_OUT = (
    ("§6 DeepSeek-V3 MTP on 8×MI300X (S8)", "no acceptance published (the datasheet fit prices it at the MTP prior)"),
    ("§3 gpt-fast Llama-2-70B + 7B, vLLM blog 2024-10-17, §4 MagicDec, §7 the SSD engine's Llama-3.1-70B + 1B",
     "no acceptance published"),
    ("§6 DeepSeek-V4-Flash (vLLM PR #41044)", "two speculative runs, no run without speculation"),
    ("§6 and §8.2 Qwen3.6-27B and Qwen3.6-35B-A3B on a Radeon 8060S (vLLM 0.26 ROCm)",
     "no profile of an RDNA 3.5 iGPU (gfx1151), whose floors and bandwidth share no source measured"),
    ("§6 Qwen3-8B + EAGLE-3 trees (gpustack)", "tree verification, which vLLM 0.32 runs only with "
                                               "speculative_token_tree"),
    ("§7 Inkling on 4×GB200", "no profile of its architecture"),
    ("§8.1 the DGX Spark row", "no acceptance published (tests/benchmarks/test_speedup_rows.py prices it at the MTP "
                               "prior)"),
    ("§8.1 GLM-OCR (zai-org/GLM-OCR #218)", "no profile of GLM-OCR"),
    ("§8.3 llama.cpp, §8.4", "no acceptance, or no run without speculation"),
    ("acceptance-measurements.md §2 vLLM PR #16035 (EAGLE-1 on Llama-3-8B)", "its GPU is not stated"),
)
