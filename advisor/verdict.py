"""The judgement: four checks from the talk's checklist, each with its numbers, and the go/no-go verdict.

The verdict rests on the end-to-end request speedup at the best k, over the whole acceptance range:
  enable    the low end of the range clears ENABLE_THRESHOLD (and throughput does not fall)
  marginal  the point estimate gains, but the range straddles the threshold, or memory caps throughput
  disable   no k gains, or the pair does not fit
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.advise import Advice

ENABLE_THRESHOLD = 1.10  # a gain under 10% rarely pays for a second model's VRAM, moving parts and tail risk
DECODE_SHARE_OK = 0.5  # below this, prefill dominates the request and caps what speculation can gain


@dataclass(frozen=True, slots=True)
class Check:
    name: str  # predictability | vram | concurrency | decode_share
    ok: bool
    detail: str


def _gb(b: float) -> str:
    return f"{b / 1e9:.1f} GB"


def checks(a: "Advice") -> list[Check]:
    s, acc, m = a.scenario, a.scenario.acceptance, a.memory
    alpha = f"α {acc.alpha:.2f}" + (f" (range {acc.low:.2f}-{acc.high:.2f})" if acc.high > acc.low else "")
    if a.break_even_alpha is None:
        pred = Check("predictability", False, f"{alpha}, but no α pays at batch {s.batch}: drafting and "
                     "verification cost more than the tokens they could save")
    else:
        pred = Check("predictability", acc.low >= a.break_even_alpha,
                     f"{alpha} vs break-even α {a.break_even_alpha:.2f} at batch {s.batch}; source: {acc.source}")
    vram_ok = m.fits and m.fits_spec and m.max_concurrency_spec >= s.batch
    vram_detail = (f"{'target ' + _gb(m.target_weights)} + draft {_gb(m.draft_weights)} weights per GPU, "
                   f"KV {m.kv_per_token_baseline / 1e3:.0f} -> {m.kv_per_token_spec / 1e3:.0f} KB/token; "
                   f"max concurrency at {m.tokens_per_sequence} tokens/request: {m.max_concurrency_baseline} "
                   f"-> {m.max_concurrency_spec} with speculation (batch {s.batch})")
    if m.reason():
        vram_detail = m.reason()
    cb = a.critical_batch
    if cb is None:
        conc = Check("concurrency", True, f"batch {s.batch}: decoding still gains at every batch that fits in "
                     f"memory (up to {max(m.max_concurrency_spec, s.batch)}), so concurrency does not rule it out")
    else:
        conc = Check("concurrency", s.batch <= cb, f"batch {s.batch} vs critical batch {cb}: above it the "
                     "verification step turns compute-bound and speculation costs more than it saves")
    decode = 1.0 - a.prefill_fraction
    ceiling = f"{1.0 / a.prefill_fraction:.2f}x" if a.prefill_fraction > 0.01 else "over 100x"
    dominant = "prefill dominates" if decode < DECODE_SHARE_OK else "decode dominates"
    share = Check("decode_share", decode >= DECODE_SHARE_OK,
                  f"{dominant}: decode is {decode:.0%} of the baseline request, prefill {a.prefill_fraction:.0%} "
                  f"({s.prompt_len} prompt -> {s.out_len} output tokens); speculation only speeds up decode, so "
                  f"even infinitely fast decoding would gain at most {ceiling} end to end")
    return [pred, Check("vram", vram_ok, vram_detail), conc, share]


def decide(a: "Advice") -> "Advice":
    found = checks(a)
    m = a.memory
    point = a.at_best(a.e2e_speedup)
    low = min(a.e2e_range)
    reasons: list[str] = []
    if not m.fits:
        verdict = "disable"
        reasons.append(f"does not fit: {m.reason()}")
    elif a.best_k == 0:
        verdict = "disable"
        best_any = float(a.e2e_speedup[1:].max())
        reasons.append(f"no draft length gains end to end (best k>0 reaches {best_any:.2f}x)"
                       + (f"; {m.reason()}" if m.reason() else ""))
    elif point < 1.0:
        verdict = "disable"
        reasons.append(f"k={a.best_k} is {point:.2f}x end to end: slower than no speculation")
    elif low >= ENABLE_THRESHOLD and a.at_best(a.throughput_speedup) >= 1.0:
        verdict = "enable"
        reasons.append(f"k={a.best_k} gains {point:.2f}x end to end ({low:.2f}x even at the low end of α)")
    else:
        verdict = "marginal"
        if low < ENABLE_THRESHOLD:
            reasons.append(f"k={a.best_k} gains {point:.2f}x, but {low:.2f}x at the low end of α: under the "
                           f"{ENABLE_THRESHOLD:.2f}x bar; measure acceptance before enabling")
        if a.at_best(a.throughput_speedup) < 1.0:
            reasons.append(f"throughput falls to {a.at_best(a.throughput_speedup):.2f}x: the draft's memory "
                           "leaves room for fewer concurrent requests")
    return replace(a, checks=found, verdict=verdict, reasons=reasons)
