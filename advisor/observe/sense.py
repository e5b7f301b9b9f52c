"""Whether a window of a vLLM server's metrics could have happened, checked per engine core before any of it is
believed. A scrape's cumulative buckets grow with their bound and end at _count; a window's histogram sums lie
within what its bucket counts allow; its per-request histograms count the same finished requests as
vllm:request_success; each request's TPOT is at most its inference time (vLLM's
`IterationStats.update_from_finished_request`: TPOT = decode time / (tokens − 1), decode time ≤ inference time);
and no engine generates, prefills or finishes more than a GPU could serve. A window that fails is one InputError
line naming the series and its engine. (The speculative counters are held to drafted ≤ k × drafts where they are
read: advisor/measured/counter_checks.py.)
"""

from __future__ import annotations

import math

import numpy as np

from advisor.errors import InputError
from advisor.measured.counter_checks import shown
from advisor.observe.snapshot import E2E, GENERATED, INFERENCE, OUTPUT, PREFILLED, PROMPT, SUCCESS, TPOT, TTFT, Snapshot
from advisor.vllm.defaults import MAX_K, MAX_SCHEDULE_BATCH

# Tokens one engine core can process in a second, prompt or output: 64 B200s at their dense FP8 peak (4.5 PFLOP/s
# each) running a 0.1B-parameter model (0.2 GFLOP a token) reach 1.4e9, and no real deployment comes near that;
# seven times it leaves room for the GPUs to come.
MAX_TOKENS_PER_S = 1e10
# The shortest GPU step there is: a CUDA graph's launch and a small model's weights read take ~0.3 ms. A step emits
# at most MAX_K + 1 tokens of one request, so no request sees a time per output token below a half of that share:
# below it the TPOT _sum is not a time.
MIN_STEP_S = 0.3e-3
MIN_TPOT_S = MIN_STEP_S / (MAX_K + 1) / 2
# No context reaches 2**24 tokens (the longest in profiles/models is 2**20; Llama 4 Scout claims 10M): the bound
# on a token histogram's open last bucket.
MAX_REQUEST_TOKENS = 2**24
# One scrape reads the series one after another; requests finishing in between (one step's worth per engine, at
# most max_num_seqs, rarely over MAX_SCHEDULE_BATCH) are in one and not yet the other.
IN_FLIGHT = MAX_SCHEDULE_BATCH
_SAME_REQUESTS = (PROMPT + "_count", TPOT + "_count", INFERENCE + "_count", E2E + "_count", SUCCESS)
# the histograms whose sums observe reads, each observation >= 0 (vLLM's stats.py: token counts, and times between
# monotonic timestamps taken in order)
_SUMMED = (PROMPT, OUTPUT, TPOT, TTFT, INFERENCE, E2E)


def _named(name: str, engine: str, **labels) -> str:
    return shown(name, {**({"engine": engine} if engine else {}), **labels})


def _cumulative(hist: dict, name: str, engine: str, origin: str) -> None:
    """Cumulative bucket counts never fall as the bound grows (nor, in a window, does any bucket's own count)."""
    bounds = sorted(hist)
    for lower, upper in zip(bounds, bounds[1:]):
        if hist[upper] < hist[lower] - 1e-9:
            raise InputError(f"{origin}: {_named(name + '_bucket', engine, le=f'{upper:g}')} reads "
                             f"{hist[upper]:g}, below the {hist[lower]:g} of le=\"{lower:g}\": a histogram's "
                             "buckets count every observation up to their bound, so they only grow with it")


def check_scrape(per_engine: dict[str, Snapshot], origin: str) -> None:
    """Each engine's histograms in one scrape: cumulative, and _count equal to the +Inf bucket."""
    for engine, snap in per_engine.items():
        for name, hist in snap.buckets.items():
            _cumulative(hist, name, engine, origin)
            count = snap.values.get(name + "_count")
            if count is not None and math.inf in hist and abs(count - hist[math.inf]) > 1e-9:
                raise InputError(f"{origin}: {_named(name + '_count', engine)} reads {count:g} but its +Inf bucket "
                                 f"{hist[math.inf]:g}: both count every observation")


def _sum_within_buckets(d: Snapshot, name: str, engine: str, origin: str) -> None:
    hist, total = d.buckets[name], d.values.get(name + "_sum")
    if total is None or not hist:
        return
    bounds = np.array(sorted(hist))
    per = np.diff(np.concatenate([[0.0], [hist[b] for b in bounds]]))
    lo = np.concatenate([[0.0], bounds[:-1]])
    top = MAX_REQUEST_TOKENS if name in (PROMPT, OUTPUT) else math.inf
    hi = np.where(np.isfinite(bounds), bounds, top)
    held = per > 0  # an empty open bucket bounds nothing (0 x inf)
    low, high = float((per * lo).sum()), float((per[held] * hi[held]).sum())
    slack = 1e-6 * max(low, 1.0)
    if not low - slack <= total <= high * (1 + 1e-9) + slack:
        raise InputError(f"{origin}: {_named(name + '_sum', engine)} reads {total:g}, outside the {low:g} to "
                         f"{high:g} its buckets' {per.sum():g} observations allow")


def _requests_agree(d: Snapshot, engine: str, origin: str) -> None:
    finished = d.values.get(OUTPUT + "_count", 0.0)
    for name in _SAME_REQUESTS:
        if name in d.values and abs(d.values[name] - finished) > IN_FLIGHT:
            raise InputError(f"{origin}: {_named(name, engine)} counts {d.values[name]:g} finished requests in the "
                             f"window but {_named(OUTPUT + '_count', engine)} {finished:g}: vLLM records every "
                             "finished request in both")


def _tpot(d: Snapshot, engine: str, origin: str) -> None:
    tpot, inference = d.values.get(TPOT + "_sum"), d.values.get(INFERENCE + "_sum")
    if tpot is None:
        return
    if inference is not None and tpot > inference * (1 + 1e-6) + 1e-6:
        raise InputError(f"{origin}: {_named(TPOT + '_sum', engine)} reads {tpot:g} s, above the {inference:g} s "
                         f"of {_named(INFERENCE + '_sum', engine)}: a request's time per output token is at most "
                         "its inference time")
    one_token = d.buckets.get(OUTPUT, {}).get(1.0, 0.0)  # TPOT 0: requests of one output token decode nothing
    decoded = d.values.get(TPOT + "_count", 0.0) - one_token
    if decoded >= 1 and tpot / decoded < MIN_TPOT_S:
        raise InputError(f"{origin}: {_named(TPOT + '_sum', engine)} reads {tpot:g} s over {decoded:g} requests "
                         f"that decoded: {tpot / decoded * 1e3:.4f} ms per output token, faster than any GPU "
                         f"decodes (at least {MIN_TPOT_S * 1e3:.4f} ms)")


def _rates(d: Snapshot, seconds: float, engine: str, origin: str) -> None:
    for name, what in ((GENERATED, "generated tokens"), (PREFILLED, "prompt tokens"),
                       (OUTPUT + "_count", "finished requests")):
        rate = d.values.get(name, 0.0) / seconds
        if rate > MAX_TOKENS_PER_S:
            raise InputError(f"{origin}: {_named(name, engine)} grew by {d.values[name]:g} in {seconds:g} s: "
                             f"{rate:.3g} {what} a second on one engine, past what any GPU serves "
                             f"({MAX_TOKENS_PER_S:.0e})")


def check_window(deltas: dict[str, Snapshot], seconds: float, origin: str) -> None:
    """Each engine's window (a scrape difference, or the end scrape after a restart) could have happened."""
    for engine, d in deltas.items():
        for name, hist in d.buckets.items():
            _cumulative(hist, name, engine, origin)
            if name in _SUMMED:
                _sum_within_buckets(d, name, engine, origin)
        _requests_agree(d, engine, origin)
        _tpot(d, engine, origin)
        _rates(d, seconds, engine, origin)
