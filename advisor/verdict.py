"""The judgement: four checks from the talk's checklist, each with its numbers, and the go/no-go verdict.

The verdict rests on the end-to-end request speedup at the best k, over the whole acceptance range (`rule`, the one
decision rule: `recommend`, the length map, the review and the validation all apply it):
  enable    the low end of the range clears ENABLE_THRESHOLD (and throughput does not fall)
  marginal  the point estimate gains, but the range straddles the threshold, or memory caps throughput
  disable   no k gains, or the pair does not fit
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.model.memory import MemoryBudget
from advisor.scenario import Scenario

ENABLE_THRESHOLD = 1.10  # a gain under 10% rarely pays for a second model's VRAM, moving parts and tail risk
DECODE_SHARE_OK = 0.5  # below this, prefill dominates the request and caps what speculation can gain
VERDICTS = ("disable", "marginal", "enable")


@dataclass(frozen=True, slots=True)
class Check:
    name: str  # predictability | vram | concurrency | decode_share
    ok: bool
    detail: str


def rule(point, low, throughput) -> np.ndarray:
    """The verdict from end-to-end speedups at the chosen k: `point` at the acceptance estimate, `low` at the low
    end of its range, `throughput` the throughput speedup. Broadcasts; returns VERDICTS names."""
    point, low, throughput = (np.asarray(x, dtype=float) for x in (point, low, throughput))
    enable = (low >= ENABLE_THRESHOLD) & (throughput >= 1.0)
    return np.where(point <= 1.0, "disable", np.where(enable, "enable", "marginal"))


def _gb(b: float) -> str:
    return f"{b / 1e9:.1f} GB"


def checks(s: Scenario, m: MemoryBudget, break_even_alpha: float | None, critical_batch: int | None,
           prefill_fraction: float) -> list[Check]:
    acc = s.acceptance
    alpha = f"α {acc.alpha:.2f}" + (f" (range {acc.low:.2f}-{acc.high:.2f})" if acc.high > acc.low else "")
    if break_even_alpha is None:
        pred = Check("predictability", False, f"{alpha}, but no α pays at batch {s.batch}: drafting and "
                     "verification cost more than the tokens they could save")
    else:
        pred = Check("predictability", acc.low >= break_even_alpha,
                     f"{alpha} vs break-even α {break_even_alpha:.2f} at batch {s.batch}; source: {acc.source}")
    vram_ok = m.fits and m.fits_spec and m.max_concurrency_spec >= s.batch
    vram_detail = (f"{'target ' + _gb(m.target_weights)} + draft {_gb(m.draft_weights)} weights per GPU, "
                   f"KV {m.kv_per_token_baseline / 1e3:.0f} -> {m.kv_per_token_spec / 1e3:.0f} KB/token; "
                   f"max concurrency at {m.tokens_per_sequence} tokens/request: {m.max_concurrency_baseline} "
                   f"-> {m.max_concurrency_spec} with speculation (batch {s.batch})")
    if m.reason():
        vram_detail = m.reason()
    if critical_batch is None:
        conc = Check("concurrency", True, f"batch {s.batch}: decoding still gains at every batch that fits in "
                     f"memory (up to {max(m.max_concurrency_spec, s.batch)}), so concurrency does not rule it out")
    else:
        conc = Check("concurrency", s.batch <= critical_batch, f"batch {s.batch} vs critical batch {critical_batch}: "
                     "above it the verification step turns compute-bound and speculation costs more than it saves")
    decode = 1.0 - prefill_fraction
    ceiling = f"{1.0 / prefill_fraction:.2f}x" if prefill_fraction > 0.01 else "over 100x"
    dominant = "prefill dominates" if decode < DECODE_SHARE_OK else "decode dominates"
    share = Check("decode_share", decode >= DECODE_SHARE_OK,
                  f"{dominant}: decode is {decode:.0%} of the baseline request, prefill {prefill_fraction:.0%} "
                  f"({s.prompt_len} prompt -> {s.out_len} output tokens); speculation only speeds up decode, so "
                  f"even infinitely fast decoding would gain at most {ceiling} end to end")
    return [pred, Check("vram", vram_ok, vram_detail), conc, share]


def decide(m: MemoryBudget, best_k: int, e2e: np.ndarray, low: float, throughput: float) -> tuple[str, list[str]]:
    """(verdict, reasons) for draft length `best_k`, given the end-to-end speedup per k (`e2e`), its low end over
    the acceptance range at best_k, and the throughput speedup at best_k."""
    point = float(e2e[best_k])
    if not m.fits:
        return "disable", [f"does not fit: {m.reason()}"]
    if best_k == 0:
        return "disable", [f"no draft length gains end to end (best k>0 reaches {float(e2e[1:].max()):.2f}x)"
                           + (f"; {m.reason()}" if m.reason() else "")]
    verdict = str(rule(point, low, throughput))
    if verdict == "disable":
        return verdict, [f"k={best_k} is {point:.2f}x end to end: slower than no speculation"]
    if verdict == "enable":
        return verdict, [f"k={best_k} gains {point:.2f}x end to end ({low:.2f}x even at the low end of α)"]
    reasons = []
    if low < ENABLE_THRESHOLD:
        reasons.append(f"k={best_k} gains {point:.2f}x, but {low:.2f}x at the low end of α: under the "
                       f"{ENABLE_THRESHOLD:.2f}x bar; measure acceptance before enabling")
    if throughput < 1.0:
        reasons.append(f"throughput falls to {throughput:.2f}x: the draft's memory leaves room for fewer "
                       "concurrent requests")
    return verdict, reasons
