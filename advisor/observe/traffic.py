"""What a window of a vLLM server's /metrics says about its traffic (pure: Prometheus text in, numbers out).

vLLM 0.32's families (vllm/v1/metrics/loggers.py, `PrometheusStatLogger`): the per-request histograms
vllm:request_prompt_tokens and vllm:request_generation_tokens (bucket bounds from vllm/v1/metrics/buckets.py,
1-2-5 steps up to max_model_len), vllm:request_time_per_output_token_seconds (each finished request's mean TPOT),
vllm:time_to_first_token_seconds, vllm:request_inference_time_seconds, the counters vllm:request_success,
vllm:prefix_cache_queries / _hits (tokens), the gauge vllm:num_requests_running, and the spec-decode counters
(advisor/measured/metrics.py). Every series carries model_name and engine labels; we sum over engines.

A window is the difference of two scrapes. Counters only grow, so one that went down means the server restarted
inside the window: what the end scrape counts is then exactly the traffic since the restart, and that is used.
vLLM's length histograms are marginals (no joint prompt × output), so the mix pairs them as independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from advisor.errors import InputError
from advisor.measured.counter_checks import check_counter, check_requests_gauge, shown
from advisor.measured.counts import Counts
from advisor.measured.metrics import PREFIX as SPEC_PREFIX
from advisor.measured.metrics import parse as parse_spec
from advisor.model.uncertainty import Z90  # two-sided 90%: the interval on a mean of many requests
from advisor.observe.scrape import RUNNING, WAITING, Window

PROMPT, OUTPUT = "vllm:request_prompt_tokens", "vllm:request_generation_tokens"
TPOT, TTFT = "vllm:request_time_per_output_token_seconds", "vllm:time_to_first_token_seconds"
INFERENCE, SUCCESS = "vllm:request_inference_time_seconds", "vllm:request_success_total"
CACHE_QUERIES, CACHE_HITS = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"
GAUGES = (RUNNING, WAITING, "vllm:kv_cache_usage_perc", "vllm:cache_config_info")
# the families `observe` reads (capture_observe.py keeps these in the recorded windows)
READ = (PROMPT, OUTPUT, "vllm:num_requests_", "vllm:request_success", "vllm:prefix_cache_", TPOT,
        "vllm:inter_token_latency_seconds", TTFT, "vllm:e2e_request_latency_seconds", INFERENCE, SPEC_PREFIX,
        "vllm:cache_config_info", "vllm:generation_tokens", "vllm:prompt_tokens")


@dataclass(frozen=True, slots=True)
class Snapshot:
    values: dict  # sample name -> value summed over engines (and other labels, `le` aside)
    buckets: dict  # histogram name -> {upper bound: cumulative count}, summed over engines
    models: frozenset  # model_name labels seen
    engines: frozenset = frozenset()  # engine labels seen (data-parallel engine cores)


def snapshot(text: str, origin: str) -> Snapshot:
    """One scrape, summed over engines; InputError when it is not Prometheus text or not from vLLM."""
    values: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    models: set[str] = set()
    engines: set[str] = set()
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.endswith("_created") or not s.name.startswith("vllm:"):
                    continue
                if s.name in (RUNNING, WAITING):
                    check_requests_gauge(shown(s.name, s.labels), s.value, origin)
                elif s.name not in GAUGES and (family.type != "gauge" or not math.isfinite(s.value)):
                    check_counter(s.name, s.labels, s.value, origin, whole=not s.name.endswith("_sum"))
                models.update([s.labels["model_name"]] if "model_name" in s.labels else [])
                engines.update([s.labels["engine"]] if "engine" in s.labels else [])
                if s.name.endswith("_bucket") and "le" in s.labels:
                    hist = buckets.setdefault(s.name.removesuffix("_bucket"), {})
                    le = float(s.labels["le"])
                    hist[le] = hist.get(le, 0.0) + s.value
                else:
                    values[s.name] = values.get(s.name, 0.0) + s.value
    except InputError:
        raise
    except ValueError as exc:
        raise InputError(f"{origin} is not Prometheus text ({exc})") from None
    if not values and not buckets:
        raise InputError(f"{origin} has no vllm:* metrics: this is not a vLLM server's /metrics")
    if PROMPT not in buckets or OUTPUT not in buckets:
        raise InputError(f"{origin} lacks {PROMPT} and {OUTPUT}: a vLLM older than the V1 engine's metrics?")
    return Snapshot(values, buckets, frozenset(models), frozenset(engines))


def _counters(snap: Snapshot) -> dict:
    """Every value that only grows: counters, histogram sums and counts, bucket counts."""
    flat = {name: v for name, v in snap.values.items() if name not in GAUGES}
    flat.update({(name, le): v for name, hist in snap.buckets.items() for le, v in hist.items()})
    return flat


def difference(start: Snapshot, end: Snapshot) -> tuple[Snapshot, bool]:
    """end − start, and whether the server restarted in between (some counter went down: then the end scrape
    alone, which counts from the restart)."""
    before, after = _counters(start), _counters(end)
    if any(after.get(key, 0.0) < value - 1e-9 for key, value in before.items()):
        return end, True
    values = {n: v - start.values.get(n, 0.0) if n not in GAUGES else v for n, v in end.values.items()}
    buckets = {n: {le: v - start.buckets.get(n, {}).get(le, 0.0) for le, v in h.items()} for n, h in end.buckets.items()}
    return Snapshot(values, buckets, end.models, end.engines), False


@dataclass(frozen=True, slots=True)
class Histogram:
    """A length (or time) distribution from Prometheus buckets: per bucket (lo, hi] its count and a
    representative value, placed so the counts' weighted mean is the exact observed mean (`_sum / _count`)."""

    lo: np.ndarray
    hi: np.ndarray  # +inf for the last bucket
    counts: np.ndarray
    values: np.ndarray  # representative value per bucket
    mean: float  # exact: the histogram's _sum / _count

    @property
    def total(self) -> int:
        return int(round(self.counts.sum()))

    def share(self) -> np.ndarray:
        return self.counts / self.counts.sum()

    def quantile(self, q: float) -> float:
        """The representative value of the bucket that holds the q-quantile (as a plan's bucket list reads it)."""
        cum = np.cumsum(self.counts) / self.counts.sum()
        return float(self.values[min(int(np.searchsorted(cum, q - 1e-12)), len(cum) - 1)])

    def quantile_bound(self, q: float) -> float:
        """The upper edge of the bucket that holds the q-quantile: what the histogram vouches the q-quantile is
        under (its representative for the open last bucket)."""
        cum = np.cumsum(self.counts) / self.counts.sum()
        i = min(int(np.searchsorted(cum, q - 1e-12)), len(cum) - 1)
        return float(self.hi[i] if math.isfinite(self.hi[i]) else self.values[i])

    def spread(self) -> float:
        """Standard deviation of the values, each bucket's spread about its representative plus a uniform spread
        over its width (what the buckets do not show is taken as wide as they allow)."""
        if self.total < 2:
            return 0.0
        width = np.where(np.isfinite(self.hi), self.hi - self.lo, self.lo)
        square = (self.values - self.mean) ** 2 + width ** 2 / 12.0
        return float(np.sqrt((self.counts * square).sum() / (self.counts.sum() - 1)))


def histogram(snap: Snapshot, name: str, zeros: float = 0.0) -> Histogram:
    """The window's histogram `name`; representatives lo + t·(hi − lo) with one t for all buckets, solved so the
    mean is exact (clipped to the buckets: t ∈ [0, 1]). The open last bucket is taken as (lo, 2·lo]. `zeros`
    observations of 0 are taken out of the first bucket (vLLM records a TPOT of 0 for one-token requests)."""
    cum = snap.buckets.get(name, {})
    bounds = np.array(sorted(cum), dtype=float)
    per = np.diff(np.concatenate([[0.0], [cum[b] for b in bounds]]))
    if per.size:
        per[0] = max(per[0] - zeros, 0.0)
    lo = np.concatenate([[0.0], bounds[:-1]])
    n, total = per.sum(), snap.values.get(name + "_sum", 0.0)
    keep = per > 0.5
    lo, hi, per = lo[keep], bounds[keep], per[keep]
    if n < 0.5:
        return Histogram(lo, hi, per, lo.copy(), float("nan"))
    width = np.where(np.isfinite(hi), hi - lo, lo)
    t = (total - (per * lo).sum()) / max((per * width).sum(), 1e-300)
    values = lo + float(np.clip(t, 0.0, 1.0)) * width
    return Histogram(lo, hi, per, values, total / n)


@dataclass(frozen=True, slots=True)
class Traffic:
    origin: str
    model: str  # the served model name (model_name label)
    seconds: float
    restarted: bool  # a counter went down: the window is the part after the restart
    requests: int  # finished in the window
    prompt: Histogram  # tokens per prompt
    output: Histogram  # tokens per output
    concurrency: tuple  # ((running requests, share of the window's samples), ...), ascending
    little_concurrency: float  # Σ inference time / window: the mean running requests by Little's law
    tpot: Histogram  # seconds per output token after the first, per finished request
    ttft: Histogram  # seconds to the first token
    prefix_hit_share: float | None  # prefill tokens served from the prefix cache (None: no queries)
    counts: Counts | None  # spec-decode counters in the window (None: speculation off)
    engines: int = 1  # engine cores the server runs (data parallel), each holding up to max_num_seqs requests

    @property
    def rate(self) -> float:
        """Finished requests per second."""
        return self.requests / self.seconds

    @property
    def mean_running(self) -> float:
        return float(sum(c * s for c, s in self.concurrency))

    def tpot_interval(self) -> tuple[float, float, float]:
        """(mean, low, high) seconds per output token: the 90% normal interval on the mean over requests."""
        half = Z90 * self.tpot.spread() / math.sqrt(max(self.tpot.total, 1))
        return self.tpot.mean, max(self.tpot.mean - half, 0.0), self.tpot.mean + half


def concurrency_mix(running: list[float], fallback: float) -> tuple:
    """Share of the samples at each number of running requests; one point at `fallback` with no samples."""
    values = np.rint(np.asarray(running, dtype=float)) if running else np.array([max(round(fallback), 1)], float)
    levels, counts = np.unique(values, return_counts=True)
    return tuple((int(c), float(n / counts.sum())) for c, n in zip(levels, counts))


def traffic(window: Window) -> Traffic:
    """The traffic in a window; InputError for a window that holds none or a server that is not vLLM."""
    for sample in window.samples:  # NaN: the server did not answer that sample
        for name, value in ((RUNNING, sample.running), (WAITING, sample.waiting)):
            if not math.isnan(value):
                check_requests_gauge(name, value, f"{window.origin} at {sample.t:g} s")
    start, end = snapshot(window.start, f"{window.origin} (first scrape)"), snapshot(window.end, window.origin)
    delta, restarted = difference(start, end)
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
    little = delta.values.get(INFERENCE + "_sum", 0.0) / seconds
    running = [s.running for s in window.samples if math.isfinite(s.running)]
    return Traffic(window.origin, models[0] if models else "?", seconds, restarted,
                   round(delta.values.get(SUCCESS, output.total)), prompt, output, concurrency_mix(running, little),
                   little, tpot, histogram(delta, TTFT),
                   delta.values.get(CACHE_HITS, 0.0) / queries if queries > 0 else None,
                   _spec_counts(window, restarted), max(len(end.engines), 1))


def _spec_counts(window: Window, restarted: bool) -> Counts | None:
    """The spec-decode counters accrued in the window, through the parser `recommend --metrics` uses."""
    if SPEC_PREFIX not in window.end:
        return None
    end = parse_spec(window.end, window.origin).counts
    if restarted or SPEC_PREFIX not in window.start:
        return end if end.drafts else None
    counts = end.minus(parse_spec(window.start, window.origin).counts)
    return counts if counts.drafts else None
