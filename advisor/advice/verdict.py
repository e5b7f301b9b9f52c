"""The judgement: four checks from the talk's checklist, each with its numbers, and the go/no-go verdict.

The verdict rests on the end-to-end request speedup at the evaluated k and its 80% interval (the acceptance range
and the cost model's own error: advisor/advice/confidence.py), with each side at the concurrency it can hold (`rule`,
the one decision rule: `recommend`, the length map, the review and the validation all apply it):
  enable    the low end of the interval clears ENABLE_THRESHOLD, and throughput does not fall
  marginal  the point estimate gains, but the interval straddles the threshold (the reasons then say what would
            narrow it most), memory costs throughput, the acceptance is an n-gram prior (how often your text
            repeats is not known until measured), or no published run of the answer's kind supports its number
            (`Scenario.unpublished`: a new class of model, or a method no published speedup measured)
  disable   no k gains, the evaluated k does not, or the pair does not fit
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.advice.scenario import Scenario
from advisor.model.cost.memory import MemoryBudget

ENABLE_THRESHOLD = 1.10  # a gain under 10% rarely pays for a second model's VRAM, moving parts and tail risk
DECODE_SHARE_OK = 0.5  # below this, prefill dominates the request and caps what speculation can gain
# Why a sliding-window model can hold more requests with n-gram or suffix speculation than without (issue 25):
# vllm/config/vllm.py `VllmConfig.__post_init__` turns async scheduling off for them, which halves
# `max_in_flight_tokens`, the room a sliding-window layer reserves per request (`memory.in_flight_tokens`).
SYNC_WINDOW = ("more requests fit with speculation than without: vLLM turns async scheduling off for this method, "
               "halving the in-flight tokens a sliding-window layer must hold room for")
VERDICTS = ("disable", "marginal", "enable")
# Draft lengths whose central gains differ by under this share are a tie, settled for the smaller k: the report prints
# gains to two decimals (a 1.36x beside a 1.36x reads equal), and the smaller k drafts and verifies fewer tokens,
# leans on fewer positions' acceptance (its interval is narrower) and loses less when the batch grows.
K_TIE = 0.005


@dataclass(frozen=True, slots=True)
class Check:
    name: str  # predictability | vram | concurrency | decode_share
    ok: bool
    detail: str


def fastest(gains: np.ndarray, axis: int = -1) -> np.ndarray:
    """The index of the largest gain along `axis` (draft lengths in ascending order), the first of those within K_TIE
    of it: the smallest k among ties. Broadcasts; -inf marks a k not to choose."""
    top = np.max(gains, axis=axis, keepdims=True)
    return np.argmax(gains >= top * (1.0 - K_TIE), axis=axis)


def rule(point, low, throughput, ceiling: str = "enable") -> np.ndarray:
    """The verdict from end-to-end speedups at the chosen k: `point` at the acceptance estimate, `low` the low end
    of its 80% interval, `throughput` the throughput speedup; never above `ceiling`. Broadcasts; VERDICTS names."""
    point, low, throughput = (np.asarray(x, dtype=float) for x in (point, low, throughput))
    enable = (low >= ENABLE_THRESHOLD) & (throughput >= 1.0) & (ceiling == "enable")
    return np.where(point <= 1.0, "disable", np.where(enable, "enable", "marginal"))


def _gb(b: float) -> str:
    return f"{b / 1e9:.1f} GB"


def _ranges(ranges: list[tuple[int, int]]) -> str:
    return " and ".join(f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)


def binding(s: Scenario, conc: np.ndarray, k: int) -> str:
    """What memory (or vLLM's scheduler limits) does to the user's batch, in words; empty when both sides hold it."""
    base, spec = int(conc[0]), int(conc[k])
    if base < 1:
        return "memory binds: not one request fits, even without speculation"
    if spec < 1:
        return (f"memory binds: {base} of the batch's {s.batch} requests fit at once without speculation, not one "
                f"with k={k}")
    cap = s.setup.max_running(np.array([0, k]))
    if (base < s.batch and base >= cap[0]) or (base >= s.batch > spec >= cap[1]):
        c = s.setup.target_cost
        return (f"vLLM's scheduler binds: it runs {base} of the batch's {s.batch} requests at once without "
                f"speculation and {spec} with k={k} (max_num_seqs {c.max_num_seqs}, max_num_batched_tokens "
                f"{c.max_num_batched_tokens}: --max-num-seqs, --max-num-batched-tokens); the others wait for a slot, "
                "and the end-to-end speedup counts that wait")
    if base < s.batch:
        more = (f"; {SYNC_WINDOW}, so end to end and throughput can gain more than the k+1 = {k + 1} tokens a step "
                "yields" if spec > base else "")  # issue 36 #6: e2e above k+1 with nothing said
        return (f"memory binds: {base} of the batch's {s.batch} requests fit at once without speculation ({spec} "
                f"with k={k}); the others wait for a slot, and the end-to-end speedup counts that wait{more}")
    if spec < s.batch:
        return (f"memory binds with speculation: the draft's weights and KV leave room for {spec} of the batch's "
                f"{s.batch} requests at k={k}; the others wait for a slot, and the end-to-end speedup counts that "
                "wait")
    return ""


def checks(s: Scenario, m: MemoryBudget, break_even_alpha: float | None, ranges: list[tuple[int, int]],
           prefill_fraction: float, conc: np.ndarray, k: int, throughput: float, limit: int,
           draft_prefill: tuple[float, float] = (0.0, 0.0)) -> list[Check]:
    """The four checks at the evaluated k (k = 1 when off, to show what the draft would cost), each about the
    requests that run at once (`conc[k]`), over the batches 1..`limit` that can. Where speculation at k does not
    fit, no check passes: there is no speedup for any of them to speak of. `draft_prefill`: (seconds the drafter
    spends on the prompts, seconds speculation saves in decode) at k, for the batch running at once; decode_share
    fails when the first is the larger (a long prompt the draft must prefill too)."""
    acc = s.acceptance
    running = int(conc[k])
    fits = m.fits and conc[0] >= 1 and running >= 1
    nothing = ("the target does not fit (see vram)" if not m.fits or conc[0] < 1
               else f"speculation at k={k} does not fit (see vram)")
    alpha = f"α {acc.alpha:.2f}" + (f" (range {acc.low:.2f}-{acc.high:.2f})" if acc.high > acc.low else "")
    if not fits:
        pred = Check("predictability", False, f"{alpha}, but {nothing}: no decode step runs to speed up")
    elif s.decode_tokens < 1:
        pred = Check("predictability", False, f"{alpha}, but --out-len 1 has no decode step to speed up: its one "
                     "token comes from prefill")
    elif break_even_alpha is None:
        pred = Check("predictability", False, f"{alpha}, but no α pays with {running} running at once: drafting "
                     "and verification cost more than the tokens they could save")
    else:
        pred = Check("predictability", acc.low >= break_even_alpha,
                     f"{alpha} vs break-even α {break_even_alpha:.2f} with {running} running at once; source: "
                     f"{acc.source}")
    # The draft fits when it runs at all and either costs no concurrency or still gains throughput despite it.
    vram_ok = fits and (conc[k] >= conc[0] or throughput >= 1.0)
    vram_detail = m.reason() or (
        f"{'target ' + _gb(m.target_weights)} + draft {_gb(m.draft_weights)} weights per GPU, "
        f"KV {m.kv_per_token_baseline / 1e3:.0f} -> {m.kv_per_token_spec / 1e3:.0f} KB/token; "
        f"max concurrency at {m.tokens_per_sequence} tokens/request: {m.max_concurrency_baseline} "
        f"-> {m.max_concurrency_spec} with speculation (batch {s.batch})")
    if m.max_concurrency_spec > m.max_concurrency_baseline and m.fits:
        vram_detail += f"; {SYNC_WINDOW}"
    bound = binding(s, conc, k) if fits else ""  # where nothing runs, m.reason() above already says why
    if bound:
        vram_detail += f"; {bound}"
    if fits:
        where = f"decoding gains at batches {_ranges(ranges)}" if ranges else "decoding gains at no batch"
        conc_check = Check("concurrency", any(lo <= running <= hi for lo, hi in ranges),
                           f"batch {s.batch}, {running} running at once: {where} (of 1-{limit}: what memory and "
                           "max_num_seqs let run); outside them verification costs more than the accepted tokens save")
    else:
        conc_check = Check("concurrency", False, f"batch {s.batch}: {nothing}, so no request runs with it")
    decode = 1.0 - prefill_fraction
    ceiling = f"{1.0 / prefill_fraction:.2f}x" if prefill_fraction > 0.01 else "over 100x"
    dominant = "prefill dominates" if decode < DECODE_SHARE_OK else "decode dominates"
    split = (f"{dominant}: decode is {decode:.0%} of the baseline request, prefill {prefill_fraction:.0%} "
             f"({s.prompt_len} prompt -> {s.out_len} output tokens)")
    cost, saved = draft_prefill
    if fits and 0.0 < saved <= cost:
        share = Check("decode_share", False, f"{split}; the drafter prefills the prompts too: "
                      f"{cost * 1e3:.0f} ms, more than the {saved * 1e3:.0f} ms speculation at k={k} saves in decode")
    elif fits:
        share = Check("decode_share", decode >= DECODE_SHARE_OK,
                      f"{split}; speculation only speeds up decode, so even infinitely fast decoding would gain at "
                      f"most {ceiling} end to end")
    else:
        share = Check("decode_share", False, f"{nothing}, so it speeds up no decode" +
                      (f"; without it, {split}" if m.fits and conc[0] >= 1 else ""))
    return [pred, Check("vram", vram_ok, vram_detail), conc_check, share]


def decide(s: Scenario, m: MemoryBudget, k: int, e2e: np.ndarray, low: float, throughput: float,
           conc: np.ndarray, choosable: np.ndarray | None = None, narrow: str = "") -> tuple[str, list[str]]:
    """(verdict, reasons) for the evaluated draft length k, given the end-to-end speedup per k (`e2e`), the low
    end of its 80% interval at k (`advisor/advice/confidence.py`: the acceptance's range and the cost model's error),
    the throughput speedup at k, each k's concurrency (`conc`), which k the advisor may choose (`choosable`,
    `advise.candidates`: default every k), and what would narrow the interval most (`narrow`, said when marginal)."""
    if not m.fits:
        fits_spec = [f"k={int(i) + 1}" for i in np.flatnonzero(conc[1:] >= 1)[:1]]
        return "disable", [f"does not fit: {m.reason()}"] + [
            f"with speculation from {k} one request would fit ({SYNC_WINDOW.split(': ', 1)[1]}), but with no "
            "baseline running there is no speedup to weigh: give the target room first (--gpu-memory-utilization, "
            "--num-gpus)" for k in fits_spec]
    if s.decode_tokens < 1:
        return "disable", ["--out-len 1: the only output token comes from prefill, so there is no decode for "
                           "speculation to speed up"]
    if k == 0 and s.k == 0:
        return "disable", ["--k 0 evaluates the baseline: speculation off, every speedup 1.00x"]
    if k == 0 and not (conc[1:] >= 1).any():
        return "disable", [f"no draft length fits: {m.reason() or 'no request runs with speculation'}"]
    if k == 0:
        return "disable", _none_gains(e2e, np.ones(len(e2e), bool) if choosable is None else choosable, m)
    if conc[k] < 1:
        return "disable", [f"k={k} does not fit: {m.reason()}"]
    point = float(e2e[k])
    bound = binding(s, conc, k)
    verdict = str(rule(point, low, throughput, s.ceiling))
    if verdict == "disable":
        return verdict, ([f"k={k} is {point:.2f}x end to end: slower than no speculation"] + ([bound] if bound else [])
                         + _fillers(s))
    reasons = []
    if verdict == "enable":
        reasons.append(f"k={k} gains {point:.2f}x end to end ({low:.2f}x even at the low end of its 80% interval)")
    if low < ENABLE_THRESHOLD:
        reasons += _straddles(k, point, low, narrow)
    if throughput < 1.0:
        reasons.append(f"throughput falls to {throughput:.2f}x: the draft's memory leaves room for fewer "
                       "concurrent requests")
    if s.unpublished and low >= ENABLE_THRESHOLD and throughput >= 1.0:
        reasons.append(f"k={k} gains {point:.2f}x ({low:.2f}x at the low end of its 80% interval), but no published "
                       "run of this kind supports the number: measure it (`vllm bench serve` with and without "
                       "speculation, then `specadvisor calibrate --from-bench`) before enabling")
    if s.unmeasured_ngram:
        reasons.append("n-gram acceptance here is a task prior, and how often your text repeats decides n-gram's "
                       "gain: measure it with `specadvisor acceptance ngram --corpus FILE` before enabling")
    return verdict, reasons + ([bound] if bound else []) + _fillers(s)


def _fillers(s: Scenario) -> list[str]:
    """Where n-gram verifies every sequence (`Setup.verified_share`: Model Runner V2 on a GPU), say so: the steps
    without a match cost a verification too."""
    setup = s.setup
    if setup.verified_share < 1.0 or setup.draft_share >= 1.0:
        return []
    return [f"on a GPU vLLM 0.32 (Model Runner V2) verifies k drafts for every sequence at every step, filling the "
            f"{1.0 - setup.draft_share:.0%} of steps without a match with the last token: every step is priced as "
            "a verification of k+1 tokens"]


def _straddles(k: int, point: float, low: float, narrow: str) -> list[str]:
    """Why a gain is only marginal: its interval reaches under the bar; and what would narrow it most."""
    said = (f"k={k} gains {point:.2f}x, but {low:.2f}x at the low end of its 80% interval: under the "
            f"{ENABLE_THRESHOLD:.2f}x bar")
    return [said + "; " + narrow] if narrow else [said + "; measure acceptance before enabling"]


def _none_gains(e2e: np.ndarray, choosable: np.ndarray, m: MemoryBudget) -> list[str]:
    """Why no k was chosen, in numbers: the best of the k the advisor may choose, and, when longer drafts it may
    not choose (past the positions an acceptance is known for, or a plan's cap) would gain, that they would."""
    ks = np.arange(len(e2e))
    mine, others = choosable & (ks > 0), ~choosable & (ks > 0)
    memory = f"; {m.reason()}" if m.reason() else ""
    if not others.any():
        return [f"no draft length gains end to end (the best k>0 reaches {float(e2e[1:].max()):.2f}x at the "
                f"concurrency each side holds){memory}"]
    best = f"{float(e2e[mine].max()):.2f}x" if mine.any() else "nothing"
    reasons = [f"no draft length it may choose gains end to end (k <= {int(ks[mine].max()) if mine.any() else 0}: "
               f"the best reaches {best} at the concurrency each side holds){memory}"]
    if float(e2e[others].max()) > 1.0:
        longer = int(ks[others][np.argmax(e2e[others])])
        reasons.append(f"k={longer} would reach {float(e2e[longer]):.2f}x if acceptance held past the positions "
                       "known; measure it (--metrics, --acceptance-per-pos) before choosing it")
    return reasons
