"""vLLM's speculative-decoding counters in Prometheus text: read them (a server's /metrics or a file), and write
them (so a measurement or a simulation can be saved and fed to `recommend --metrics FILE` like a server's).

Names as a vLLM server exposes them (vllm/v1/spec_decode/metrics.py; counters gain `_total` in the text format):
  vllm:spec_decode_num_drafts_total, vllm:spec_decode_num_draft_tokens_total,
  vllm:spec_decode_num_accepted_tokens_total, vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}
with labels model_name and engine (one series per engine core: we sum them). Files we write add two series of
our own: specadvisor:decode_steps_total (every decode step, drafted or not) and specadvisor:measured_temperature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from advisor.errors import InputError
from advisor.fileio.http_get import TIMEOUT_S as HTTP_TIMEOUT_S
from advisor.fileio.http_get import checked_url, get
from advisor.measured.counter_checks import check_counter, check_spec_totals, shown
from advisor.measured.counts import Counts
from advisor.model.acceptance.conventions import alpha_from_rate
from advisor.model.acceptance.temperature import MAX_TEMPERATURE

PREFIX = "vllm:spec_decode_"
DRAFTS, DRAFT_TOKENS, ACCEPTED, PER_POS = (PREFIX + n for n in (
    "num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos"))
STEPS, TEMPERATURE = "specadvisor:decode_steps", "specadvisor:measured_temperature"
# A vLLM server's /metrics is ~100-300 kB (one engine, every histogram); 16 MiB holds dozens of engines and LoRA
# adapters. Past it the answer is not a metrics page (a file download, a misrouted proxy): reading on would only
# fill memory.
MAX_BYTES = 16 * 2**20


@dataclass(frozen=True, slots=True)
class Scrape:
    counts: Counts  # the speculative-decoding counters, summed over engines
    origin: str  # where they came from, for the report
    measured_temperature: float | None = None  # set in files we wrote; a live server does not say


def read_text(where: str, timeout: float | None = None) -> str:
    """The Prometheus text at a URL (http(s)://host:port[/metrics]), read whole within one deadline, or in a file."""
    if where.startswith(("http://", "https://")):
        url = where.rstrip("/") + "/metrics" if _path(checked_url(where)) in ("", "/") else where
        body = get(url, max_bytes=MAX_BYTES, timeout_s=HTTP_TIMEOUT_S if timeout is None else timeout)
        return _capped(body, url)
    path = Path(where)
    try:
        if not path.is_file():
            raise InputError(f"no metrics file {where!r}: give a file of Prometheus text or a URL starting with "
                             "http://")
        with path.open("rb") as f:
            return _capped(f.read(MAX_BYTES + 1), where)
    except OSError as exc:
        raise InputError(f"cannot read {where[:200]}: {exc.strerror or exc}") from None


def _path(url: str) -> str:
    return urlsplit(url).path


def _capped(data: bytes, origin: str) -> str:
    """The text of a read of at most MAX_BYTES + 1 bytes; one byte more than the cap means there was more."""
    if len(data) > MAX_BYTES:
        raise InputError(f"{origin} sent more than {MAX_BYTES // 2**20} MiB: that is not a vLLM /metrics page")
    if b"\0" in data:
        raise InputError(f"{origin} holds binary data, not the Prometheus text of a vLLM /metrics page")
    return data.decode("utf-8", errors="replace")


def parse(text: str, origin: str) -> Scrape:
    """The speculative-decoding counters in Prometheus text, summed over engines (labels other than `position`)."""
    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    models: set[str] = set()
    source, temperature = None, None
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                name = sample.name.removesuffix("_total")
                if sample.name.endswith("_created"):
                    continue  # prometheus_client's creation timestamps, not counts
                if name == TEMPERATURE:
                    temperature = _temperature(sample, origin)
                if not (name.startswith(PREFIX) or name == STEPS):
                    continue
                check_counter(sample.name, sample.labels, sample.value, origin)
                if "model_name" in sample.labels:
                    models.add(sample.labels["model_name"])
                source = sample.labels.get("source", source)
                if name == PER_POS:
                    position = _position(sample, origin)
                    per_pos[position] = per_pos.get(position, 0.0) + sample.value
                else:
                    totals[name] = totals.get(name, 0.0) + sample.value
    except InputError:  # ours, about a value (an InputError is a ValueError too)
        raise
    except ValueError as exc:  # the parser's only complaint: a line that is not Prometheus text
        raise InputError(f"{origin} is not Prometheus text ({exc})") from None
    if not any(name.startswith(PREFIX) for name in totals) and not per_pos:
        raise InputError(f"{origin} has no vllm:spec_decode_* counters: the server runs without speculative decoding "
                         "(start it with --speculative-config) or this is not a vLLM /metrics endpoint")
    missing = [n for n in (DRAFTS, DRAFT_TOKENS, ACCEPTED) if n not in totals]
    if missing:
        raise InputError(f"{origin} lacks {', '.join(missing)}: is this a vLLM server's /metrics?")
    if len(models) > 1:
        raise InputError(f"{origin} mixes several models ({', '.join(sorted(models))}): scrape one server")
    if sorted(per_pos) != list(range(len(per_pos))):
        raise InputError(f"{origin}: per-position counters cover positions {sorted(per_pos)}, not 0..k-1")
    named = {n + "_total": totals[n] for n in (DRAFTS, DRAFT_TOKENS, ACCEPTED)}  # as the text names them
    check_spec_totals(named, [per_pos[i] for i in sorted(per_pos)], origin, *named, PER_POS + "_total")
    drafts, draft_tokens, accepted = round(totals[DRAFTS]), round(totals[DRAFT_TOKENS]), round(totals[ACCEPTED])
    unknown = ""
    if per_pos:
        positions = tuple(round(per_pos[i]) for i in sorted(per_pos))
    else:
        positions, unknown = _geometric_positions(drafts, draft_tokens, accepted)
    counts = Counts(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted, per_position=positions,
                    decode_steps=round(totals[STEPS]) if STEPS in totals else None)
    return Scrape(counts, (f"{source} (from {origin})" if source else f"vLLM metrics {origin}") + unknown, temperature)


def _geometric_positions(drafts: int, draft_tokens: int, accepted: int) -> tuple[tuple[int, ...], str]:
    """Per-position counts for a scrape without vLLM's per-position counters (and what to say about them): k is
    the mean draft length rounded up (exact when every draft is full, as a model drafter's are), α the mean the
    accepted/drafted rate implies at that k, and position i credited drafts·α^(i+1): i.i.d. acceptance, assumed."""
    if drafts <= 0 or draft_tokens <= 0 or accepted > draft_tokens:
        return (0,), " (no per-position counters, and no drafts to take a mean from)"
    k = max(1, math.ceil(draft_tokens / drafts))
    alpha = alpha_from_rate(accepted / draft_tokens, k)
    counts = tuple(min(round(drafts * alpha ** (i + 1)), drafts) for i in range(k))
    return counts, (f" (no per-position counters: mean α {alpha:.3f} from {accepted}/{draft_tokens} accepted draft "
                    f"tokens at k={k}, the mean draft length; per-position rates unknown, taken as geometric)")


def _shown(sample) -> str:
    return shown(sample.name, sample.labels)


def _position(sample, origin: str) -> int:
    label = sample.labels.get("position")
    if label is None or not label.isdigit():
        raise InputError(f"{origin}: {_shown(sample)} needs a position label 0, 1, 2, ... (got {label!r})")
    return int(label)


def _temperature(sample, origin: str) -> float:
    """The temperature a saved measurement was sampled at: one vLLM samples at, as --measured-temperature is."""
    if not 0.0 <= sample.value <= MAX_TEMPERATURE:  # NaN fails too
        raise InputError(f"{origin}: {_shown(sample)} is {sample.value:g}, not a sampling temperature vLLM takes "
                         f"(0 to {MAX_TEMPERATURE:g})")
    return sample.value


def window_counts(first: Counts, later: Counts, origin: str) -> Counts:
    """What accrued between two scrapes of one server (counters that fell are the caller's to judge first), held
    to the same agreement as one scrape's (`Counts`: a draft proposes at least one token and at most k, ...)."""
    try:
        return later.minus(first)
    except InputError as exc:
        raise InputError(f"{origin}: what the {PREFIX}* counters added between the scrapes disagrees: {exc}") from None


def scrape(where: str, second: str | None = None) -> Scrape:
    """Counters at `where`; with `second`, what accrued between the two scrapes (a window of live traffic)."""
    found = parse(read_text(where), where)
    if second is not None:
        later = parse(read_text(second), second)
        _no_decrease(found.counts, later.counts, where, second)
        delta = window_counts(found.counts, later.counts, f"between {where} and {second}")
        found = Scrape(delta, f"vLLM metrics delta {where} -> {second}", later.measured_temperature)
    if found.counts.drafts == 0:
        raise InputError(f"{found.origin}: no speculative drafts were counted; has the server generated anything "
                         + ("between the two scrapes?" if second else "since it started?"))
    return found


def _no_decrease(first: Counts, later: Counts, where: str, second: str) -> None:
    """Counters never go down but at a restart, after which the delta of two scrapes means nothing."""
    pairs = [(DRAFTS, first.drafts, later.drafts), (DRAFT_TOKENS, first.draft_tokens, later.draft_tokens),
             (ACCEPTED, first.accepted, later.accepted), (STEPS, first.decode_steps or 0, later.decode_steps or 0),
             *((f'{PER_POS}{{position="{i}"}}', a, b) for i, (a, b) in enumerate(zip(first.per_position,
                                                                                  later.per_position)))]
    for name, before, after in pairs:
        if after < before:
            raise InputError(f"{name.replace('{', '_total{') if '{' in name else name + '_total'} went down from "
                             f"{before} ({where}) to {after} ({second}): the server restarted between the scrapes; "
                             "take both from one run")


def render(counts: Counts, source: str, measured_temperature: float | None = None) -> str:
    """Prometheus text with vLLM's counter names (and our two extras), which `parse` reads back."""
    class Saved:
        def collect(self):
            for name, value, doc in ((DRAFTS, counts.drafts, "Number of spec decoding drafts."),
                                     (DRAFT_TOKENS, counts.draft_tokens, "Number of draft tokens."),
                                     (ACCEPTED, counts.accepted, "Number of accepted tokens.")):
                family = CounterMetricFamily(name, doc, labels=["source"])
                family.add_metric([source], value)
                yield family
            family = CounterMetricFamily(PER_POS, "Accepted tokens per draft position.", labels=["source", "position"])
            for i, value in enumerate(counts.per_position):
                family.add_metric([source, str(i)], value)
            yield family
            if counts.decode_steps is not None:
                family = CounterMetricFamily(STEPS, "Decode steps, with or without a draft.", labels=["source"])
                family.add_metric([source], counts.decode_steps)
                yield family
            if measured_temperature is not None:
                yield GaugeMetricFamily(TEMPERATURE, "Sampling temperature of the measurement.",
                                        value=measured_temperature)

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Saved())
    return generate_latest(registry).decode()
