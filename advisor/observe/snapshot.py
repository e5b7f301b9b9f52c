"""One scrape of a vLLM server's /metrics, read per engine core and summed over the deployment, and the difference
of two scrapes (a window). Pure: Prometheus text in, numbers out.

vLLM 0.32's families (vllm/v1/metrics/loggers.py, `PrometheusStatLogger`): the per-request histograms
vllm:request_prompt_tokens and vllm:request_generation_tokens (bucket bounds from vllm/v1/metrics/buckets.py,
1-2-5 steps up to max_model_len), vllm:request_time_per_output_token_seconds (each finished request's mean TPOT),
vllm:time_to_first_token_seconds, vllm:request_inference_time_seconds, the counters vllm:request_success,
vllm:generation_tokens, vllm:prompt_tokens, vllm:prefix_cache_queries / _hits (tokens), the gauge
vllm:num_requests_running, and the spec-decode counters (advisor/measured/metrics.py). Every series carries an
`engine` label: one engine core each, a data-parallel rank. As vLLM keeps them, each engine's series are its own
and the deployment's are their sum (its AggregatedLoggingStatLogger logs "N Engines Aggregated" the same way).

A window is the difference of two scrapes. Counters only grow, so an engine whose request counters went down was
restarted inside the window: what the end scrape counts is then exactly the traffic since the restart, and that is
used. Any other counter going down while the requests still rose is no restart (a restart resets them all): the
window is refused, naming the series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from advisor.errors import InputError
from advisor.measured.counter_checks import check_counter, check_requests_gauge, shown
from advisor.observe.scrape import RUNNING, WAITING

PROMPT, OUTPUT = "vllm:request_prompt_tokens", "vllm:request_generation_tokens"
TPOT, TTFT = "vllm:request_time_per_output_token_seconds", "vllm:time_to_first_token_seconds"
INFERENCE, E2E = "vllm:request_inference_time_seconds", "vllm:e2e_request_latency_seconds"
SUCCESS = "vllm:request_success_total"
GENERATED, PREFILLED = "vllm:generation_tokens_total", "vllm:prompt_tokens_total"
CACHE_QUERIES, CACHE_HITS = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"
# what a restart resets and only a restart lowers: the finished requests and their per-request histograms' counts
REQUEST_COUNTERS = (SUCCESS, PROMPT + "_count", OUTPUT + "_count")


@dataclass(frozen=True, slots=True)
class Snapshot:
    values: dict  # counter sample name -> value, summed over labels other than `le` (and engines, for a deployment)
    buckets: dict  # histogram name -> {upper bound: cumulative count}
    models: frozenset  # model_name labels seen
    engines: frozenset = frozenset()  # engine labels (data-parallel engine cores) summed in
    gauges: dict | None = None  # gauge name -> value (running and waiting requests, ...)

    def gauge(self, name: str) -> float:
        return (self.gauges or {}).get(name, math.nan)


EMPTY = Snapshot({}, {}, frozenset())


def engines_of(text: str, origin: str) -> dict[str, Snapshot]:
    """One scrape per engine label ("" for series without one); InputError when it is not Prometheus text, not
    from vLLM, or holds a counter no server reports (counter_checks)."""
    found: dict[str, tuple[dict, dict, dict, set]] = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.endswith("_created") or not s.name.startswith("vllm:"):
                    continue
                engine = s.labels.get("engine", "")
                values, buckets, gauges, models = found.setdefault(engine, ({}, {}, {}, set()))
                models.update([s.labels["model_name"]] if "model_name" in s.labels else [])
                if family.type == "gauge" or s.name in (RUNNING, WAITING):
                    if s.name in (RUNNING, WAITING):
                        check_requests_gauge(shown(s.name, s.labels), s.value, origin)
                    gauges[s.name] = gauges.get(s.name, 0.0) + s.value
                    continue
                check_counter(s.name, s.labels, s.value, origin, whole=not s.name.endswith("_sum"))
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
    if not any(values or buckets for values, buckets, _, _ in found.values()):
        raise InputError(f"{origin} has no vllm:* metrics: this is not a vLLM server's /metrics")
    if not any(PROMPT in buckets and OUTPUT in buckets for _, buckets, _, _ in found.values()):
        raise InputError(f"{origin} lacks {PROMPT} and {OUTPUT}: a vLLM older than the V1 engine's metrics?")
    return {engine: Snapshot(values, buckets, frozenset(models), frozenset([engine]), gauges)
            for engine, (values, buckets, gauges, models) in sorted(found.items())}


def engine_count(per_engine: dict[str, Snapshot]) -> int:
    """How many engines served a scrape: its engine labels. Series without one are the front end's (vLLM 0.32's
    vllm:admission_rejections, labelled by model and reason only: v1/metrics/loggers.py) or a server's that labels
    none: no engine of their own."""
    return max(sum(1 for engine in per_engine if engine), 1)


def total(per_engine: dict[str, Snapshot]) -> Snapshot:
    """The deployment: every engine's values, buckets and gauges summed."""
    values: dict[str, float] = {}
    buckets: dict[str, dict[float, float]] = {}
    gauges: dict[str, float] = {}
    for snap in per_engine.values():
        for name, v in snap.values.items():
            values[name] = values.get(name, 0.0) + v
        for name, hist in snap.buckets.items():
            into = buckets.setdefault(name, {})
            for le, v in hist.items():
                into[le] = into.get(le, 0.0) + v
        for name, v in (snap.gauges or {}).items():
            gauges[name] = gauges.get(name, 0.0) + v
    return Snapshot(values, buckets, frozenset().union(*(s.models for s in per_engine.values())),
                    frozenset().union(*(s.engines for s in per_engine.values())), gauges)


def snapshot(text: str, origin: str) -> Snapshot:
    """One scrape, summed over engines."""
    return total(engines_of(text, origin))


def _counters(snap: Snapshot) -> dict:
    """Every value that only grows: counters, histogram sums and counts, bucket counts."""
    flat = dict(snap.values)
    flat.update({(name, le): v for name, hist in snap.buckets.items() for le, v in hist.items()})
    return flat


def fallen(start: Snapshot, end: Snapshot) -> list[tuple[object, float, float]]:
    """(series, before, after) of every counter that went down between the scrapes (one missing at the end: 0)."""
    after = _counters(end)
    return [(key, value, after.get(key, 0.0)) for key, value in _counters(start).items()
            if after.get(key, 0.0) < value - 1e-9]


def difference(start: Snapshot, end: Snapshot, engine: str = "") -> tuple[Snapshot, bool]:
    """end − start, and whether the server restarted in between (its request counters went down: then the end
    scrape alone, which counts from the restart); InputError when another counter went down and they did not."""
    down = fallen(start, end)
    if not down:
        values = {n: v - start.values.get(n, 0.0) for n, v in end.values.items()}
        buckets = {n: {le: v - start.buckets.get(n, {}).get(le, 0.0) for le, v in h.items()}
                   for n, h in end.buckets.items()}
        return Snapshot(values, buckets, end.models, end.engines, end.gauges), False
    if any(key in REQUEST_COUNTERS for key, _, _ in down):
        return end, True
    key, before, after = down[0]
    labels = {"engine": engine} if engine else {}
    if isinstance(key, tuple):
        series = shown(f"{key[0]}_bucket", {**labels, "le": f"{key[1]:g}"})
    else:
        series = shown(key, labels)
    raise InputError(f"{series} went down from {before:g} to {after:g} while the requests finished rose: "
                     "counters fall only when the server restarts, and then they all do")


def window(starts: dict[str, Snapshot], ends: dict[str, Snapshot], origin: str) -> tuple[dict[str, Snapshot], bool]:
    """Per engine, what the window added, and whether the server restarted inside it (any engine's request
    counters fell, or an engine vanished: the whole server restarts, so every engine counts from its end scrape)."""
    deltas, restarted = {}, False
    for engine in sorted(set(starts) | set(ends)):
        try:
            deltas[engine], again = difference(starts.get(engine, EMPTY), ends.get(engine, EMPTY), engine)
        except InputError as exc:
            raise InputError(f"{origin}: {exc}") from None
        restarted = restarted or again
    if restarted:
        return {engine: snap for engine, snap in ends.items()}, True
    return {engine: deltas[engine] for engine in ends}, False
