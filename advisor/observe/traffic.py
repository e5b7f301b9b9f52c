"""What a window of a vLLM server's /metrics says about its traffic, for one data-parallel rank (pure: Prometheus
text in, numbers out). The scrapes are read per engine core and summed (snapshot), each engine's window checked for
physical sense before it is believed (sense), and the per-request histograms become length and time
distributions (histogram). vLLM's length histograms are marginals (no joint prompt × output), so the mix pairs
them as independent.

A data-parallel server runs one engine core per rank, each with its own scheduler, batch and KV cache
(vllm/v1/engine/core.py `DPEngineCoreProc`); the API server spreads the requests over them. So the per-request
histograms pool every engine's requests (the mix), while concurrency and rates are an engine's: a rank's
concurrency is what its own engine's running gauge shows, its request rate the deployment's over the engines. The
advice is for one rank, as `recommend --data-parallel-size` gives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.errors import InputError
from advisor.measured.counter_checks import check_requests_gauge
from advisor.measured.counts import Counts
from advisor.measured.metrics import PREFIX as SPEC_PREFIX
from advisor.measured.metrics import parse as parse_spec
from advisor.measured.metrics import window_counts
from advisor.model.uncertainty import Z90  # two-sided 90%: the interval on a mean of many requests
from advisor.observe.histogram import Histogram, histogram
from advisor.observe.scrape import RUNNING, WAITING, Sample, Window
from advisor.observe.sense import check_scrape, check_window
from advisor.observe.snapshot import CACHE_HITS, CACHE_QUERIES, INFERENCE, OUTPUT, PROMPT, TPOT, TTFT, engine_count
from advisor.observe.snapshot import engines_of, total
from advisor.observe.snapshot import window as window_of

# the families `observe` reads (capture_observe.py keeps these in the recorded windows)
READ = (PROMPT, OUTPUT, "vllm:num_requests_", "vllm:request_success", "vllm:prefix_cache_", TPOT,
        "vllm:inter_token_latency_seconds", TTFT, "vllm:e2e_request_latency_seconds", INFERENCE, SPEC_PREFIX,
        "vllm:cache_config_info", "vllm:generation_tokens", "vllm:prompt_tokens")


@dataclass(frozen=True, slots=True)
class Traffic:
    origin: str
    model: str  # the served model name (model_name label)
    seconds: float
    restarted: bool  # the request counters went down: the window is the part after the restart
    requests: int  # finished in the window, over the whole deployment
    prompt: Histogram  # tokens per prompt
    output: Histogram  # tokens per output
    concurrency: tuple  # ((running requests on one engine, share of the window's samples), ...), ascending
    little_concurrency: float  # Σ inference time / window / engines: an engine's mean running requests (Little)
    tpot: Histogram  # seconds per output token after the first, per finished request
    ttft: Histogram  # seconds to the first token
    prefix_hit_share: float | None  # prefill tokens served from the prefix cache (None: no queries)
    counts: Counts | None  # spec-decode counters in the window (None: speculation off)
    engines: int = 1  # engine cores (data-parallel ranks) the server runs, each holding up to max_num_seqs requests

    @property
    def rate(self) -> float:
        """Finished requests per second, the whole deployment."""
        return self.requests / self.seconds

    @property
    def rank_rate(self) -> float:
        """Finished requests per second on one engine (data-parallel rank)."""
        return self.rate / self.engines

    @property
    def mean_running(self) -> float:
        """An engine's mean running requests over the samples."""
        return float(sum(c * s for c, s in self.concurrency))

    def tpot_interval(self) -> tuple[float, float, float]:
        """(mean, low, high) seconds per output token: the 90% normal interval on the mean over requests."""
        half = Z90 * self.tpot.spread() / math.sqrt(max(self.tpot.total, 1))
        return self.tpot.mean, max(self.tpot.mean - half, 0.0), self.tpot.mean + half


def concurrency_mix(running: list[float], fallback: float, weights: list[float] | None = None) -> tuple:
    """Share of the samples (each of `weights`, default 1) at each number of running requests; one point at
    `fallback` with no samples."""
    if not running:
        return ((int(max(round(fallback), 1)), 1.0),)
    values = np.rint(np.asarray(running, dtype=float))
    w = np.ones(len(values)) if weights is None else np.asarray(weights, dtype=float)
    levels, where = np.unique(values, return_inverse=True)
    shares = np.bincount(where, weights=w) / w.sum()
    return tuple((int(c), float(s)) for c, s in zip(levels, shares))


def per_engine_running(samples: tuple[Sample, ...], engines: int) -> tuple[list[float], list[float]]:
    """(running requests on one engine, weight) per sample and engine: each engine's own gauge where the sample
    kept them (each 1/engines of the sample), else the deployment's sum over the engines."""
    values, weights = [], []
    for s in samples:
        seen = [v for v in s.per_engine if math.isfinite(v)]
        if seen:
            values += seen
            weights += [1.0 / len(seen)] * len(seen)
        elif math.isfinite(s.running):
            values.append(s.running / engines)
            weights.append(1.0)
    return values, weights


def _check_samples(window: Window) -> None:
    for sample in window.samples:  # NaN: the server did not answer that sample
        where = f"{window.origin} at {sample.t:g} s"
        for name, value in ((RUNNING, sample.running), (WAITING, sample.waiting),
                            *((f"{RUNNING} (one engine)", v) for v in sample.per_engine)):
            if not math.isnan(value):
                check_requests_gauge(name, value, where)


def traffic(window: Window) -> Traffic:
    """The traffic in a window, per rank; InputError for a window that holds none, one that could not have happened
    (naming the series), or a server that is not vLLM."""
    _check_samples(window)
    starts = engines_of(window.start, f"{window.origin} (first scrape)")
    ends = engines_of(window.end, window.origin)
    check_scrape(starts, f"{window.origin} (first scrape)")
    check_scrape(ends, window.origin)
    deltas, restarted = window_of(starts, ends, window.origin)
    check_window(deltas, window.seconds, window.origin)
    delta = total(deltas)
    engines = engine_count(ends)
    prompt, output = histogram(delta, PROMPT), histogram(delta, OUTPUT)
    if output.total == 0:
        raise InputError(f"{window.origin}: no request finished in the {window.seconds:.0f} s window"
                         + (" after the server restarted" if restarted else "")
                         + "; observe longer (--seconds) or while the server has traffic")
    # a request of one output token has no decode: vLLM observes TPOT 0 for it (vllm/v1/metrics/stats.py)
    tpot = histogram(delta, TPOT, zeros=delta.buckets.get(OUTPUT, {}).get(1.0, 0.0))
    if tpot.total == 0 or not math.isfinite(tpot.mean):
        raise InputError(f"{window.origin}: no request in the window decoded past its first token, so there is no "
                         "time per output token to anchor on (and nothing for speculation to speed up)")
    models = sorted(delta.models)
    if len(models) > 1:
        raise InputError(f"{window.origin} serves several models ({', '.join(models)}): observe one at a time")
    queries = delta.values.get(CACHE_QUERIES, 0.0)
    seconds = window.seconds  # after a restart, an upper bound on the time since it (rates are then lower bounds)
    little = delta.values.get(INFERENCE + "_sum", 0.0) / seconds / engines
    running, weights = per_engine_running(window.samples, engines)
    return Traffic(window.origin, models[0] if models else "?", seconds, restarted,
                   round(delta.values.get(OUTPUT + "_count", output.total)), prompt, output,
                   concurrency_mix(running, little, weights), little, tpot, histogram(delta, TTFT),
                   delta.values.get(CACHE_HITS, 0.0) / queries if queries > 0 else None,
                   _spec_counts(window, restarted), engines)


def _spec_counts(window: Window, restarted: bool) -> Counts | None:
    """The spec-decode counters accrued in the window, through the parser `recommend --metrics` uses."""
    if SPEC_PREFIX not in window.end:
        return None
    end = parse_spec(window.end, window.origin).counts
    if restarted or SPEC_PREFIX not in window.start:
        return end if end.drafts else None
    counts = window_counts(parse_spec(window.start, window.origin).counts, end, window.origin)
    return counts if counts.drafts else None
