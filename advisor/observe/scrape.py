"""Watching a live vLLM server: its /metrics at the start and the end of a window, and the running-requests gauge
in between. The only module of `observe` that does I/O (HTTP and the saved-window file); `traffic` does the math.

A window can be saved (`--record FILE`) and replayed (`specadvisor observe FILE`), so the advice over a recorded
window is reproducible and the tests and README run without a server.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from advisor.errors import InputError
from advisor.fileio.atomic_write import write_atomic
from advisor.fileio.json_input import read_json
from advisor.measured.metrics import MAX_BYTES, read_text

RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
WINDOW_FORMAT = "specadvisor-observe-window/1"
MIN_EVERY_S = 0.05  # sampling the gauge faster than this measures the scrape, not the server
MAX_SECONDS = 86_400.0  # a day: traffic longer than that is several windows (and a restart inside is likelier)
MAX_SAMPLES = 100_000  # gauge samples a window holds: a day at one a second, with room
# A saved window: two scrapes (MAX_BYTES each at most) and the samples, whole numbers of requests per engine
MAX_WINDOW_BYTES = 4 * MAX_BYTES
WINDOW_WHAT = "a window saved by `specadvisor observe --record`"


@dataclass(frozen=True, slots=True)
class Sample:
    t: float  # seconds since the window's first scrape
    running: float  # vllm:num_requests_running, summed over engines
    waiting: float  # vllm:num_requests_waiting, summed over engines
    per_engine: tuple[float, ...] = ()  # running per engine core (data-parallel rank), when there are several


@dataclass(frozen=True, slots=True)
class Window:
    origin: str  # the server's URL (or the file a window was replayed from)
    start: str  # Prometheus text at the start
    end: str  # ... and at the end
    seconds: float  # between the two scrapes
    samples: tuple[Sample, ...]  # the gauges, every --every seconds

    def __post_init__(self) -> None:
        if not math.isfinite(self.seconds) or not 0 < self.seconds <= 2 * MAX_SECONDS:
            raise InputError(f"{self.origin}: a window must last a positive time up to {2 * MAX_SECONDS:g} s, got "
                             f"{self.seconds:g} s")
        if len(self.samples) > MAX_SAMPLES:
            raise InputError(f"{self.origin} holds {len(self.samples)} gauge samples, more than the {MAX_SAMPLES} a "
                             "window takes")
        times = [s.t for s in self.samples]
        if any(not (math.isfinite(t) and 0 <= t <= self.seconds) for t in times) or times != sorted(times):
            raise InputError(f"{self.origin}: the gauge samples' times must rise from 0 to the window's "
                             f"{self.seconds:g} s")


def _engine_order(label: str) -> tuple:
    return (0, int(label), "") if label.isdigit() else (1, 0, label)


def gauges(text: str, origin: str) -> tuple[float, float, tuple[float, ...]]:
    """(running, waiting) requests in one scrape, summed over engines, and the running requests per engine when
    there are several; (nan, nan, ()) when the server has no such gauges (the traffic module then says it is not
    vLLM)."""
    found = {RUNNING: math.nan, WAITING: math.nan}
    per_engine: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in found:
                    found[sample.name] = (0.0 if math.isnan(found[sample.name]) else found[sample.name]) + sample.value
                if sample.name == RUNNING:
                    engine = sample.labels.get("engine", "")
                    per_engine[engine] = per_engine.get(engine, 0.0) + sample.value
    except ValueError as exc:
        raise InputError(f"{origin} is not Prometheus text ({exc})") from None
    engines = tuple(per_engine[e] for e in sorted(per_engine, key=_engine_order)) if len(per_engine) > 1 else ()
    return found[RUNNING], found[WAITING], engines


class Recorder:
    """A window in the making: `start`, `sample` as often as wanted, `finish`. `observe` drives it on a timer; a
    test drives it around a load it generates, so the window covers exactly that load."""

    def __init__(self, url: str, clock=time.monotonic) -> None:
        self.url, self.clock = url, clock
        self.begun = clock()
        self.first = read_text(url)
        gauges(self.first, url)  # not Prometheus text: say so now, not after the whole window
        self.samples: list[Sample] = []

    def sample(self) -> Sample:
        """The gauges now; NaN while the server does not answer (restarting): the window goes on."""
        try:
            running, waiting, per_engine = gauges(read_text(self.url), self.url)
        except InputError:
            running, waiting, per_engine = math.nan, math.nan, ()
        self.samples.append(Sample(self.clock() - self.begun, running, waiting, per_engine))
        return self.samples[-1]

    def finish(self) -> Window:
        last = read_text(self.url)
        return Window(self.url, self.first, last, max(self.clock() - self.begun, 1e-9), tuple(self.samples))


def record(url: str, seconds: float, every: float, clock=time.monotonic, sleep=time.sleep,
           progress=None) -> Window:
    """Scrape `url` now and after `seconds`, and its gauges every `every` seconds in between; `progress(elapsed,
    seconds, sample)` after each sample. Each scrape is bounded by metrics.HTTP_TIMEOUT_S, so the whole window by
    `seconds` plus two of those."""
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_SECONDS:
        raise InputError(f"--seconds must be positive and at most {MAX_SECONDS:g} (a day), got {seconds:g}")
    if not math.isfinite(every) or not MIN_EVERY_S <= every:
        raise InputError(f"--every must be at least {MIN_EVERY_S} s, got {every:g}")
    if seconds / every > MAX_SAMPLES:
        raise InputError(f"--seconds {seconds:g} at --every {every:g} is {seconds / every:.0f} gauge samples, more "
                         f"than the {MAX_SAMPLES} a window holds: sample less often (--every "
                         f"{math.ceil(seconds / MAX_SAMPLES)})")
    recorder = Recorder(url, clock)
    deadline = recorder.begun + seconds
    while (left := deadline - clock()) > 0:
        sleep(min(every, left))
        if clock() < deadline:
            sample = recorder.sample()
            if progress is not None:
                progress(min(sample.t, seconds), seconds, sample)
    return recorder.finish()


def save(window: Window, path: str | Path) -> None:
    """The window as JSON (atomically): both scrapes verbatim and the gauge samples."""
    samples = [[s.t, _whole(s.running), _whole(s.waiting), *([[_whole(v) for v in s.per_engine]] if s.per_engine
                                                               else [])] for s in window.samples]
    data = dict(format=WINDOW_FORMAT, origin=window.origin, seconds=window.seconds, start=window.start,
                end=window.end, samples=samples)
    write_atomic(path, json.dumps(data, separators=(",", ":")) + "\n")


def _whole(value: float):
    """A gauge of requests as an int (a window of many engines stays small); NaN (no answer) as null, which JSON
    has; a fraction as it is (the traffic module refuses those)."""
    if math.isnan(value):
        return None
    return int(value) if math.isfinite(value) and value == int(value) else value


def load(path: str | Path) -> Window:
    """A window saved by `save` (or `observe --record`)."""
    path = Path(path)
    data = read_json(path, WINDOW_WHAT, MAX_WINDOW_BYTES)
    try:
        if data.get("format") != WINDOW_FORMAT:
            raise ValueError(f"format is not {WINDOW_FORMAT}")
        if not all(isinstance(data[key], str) for key in ("origin", "start", "end")):
            raise ValueError("origin, start and end must be text")
        samples = tuple(_sample(*row) for row in data["samples"])
        return Window(f"{data['origin'][:200]} (saved in {path.name})", data["start"], data["end"],
                      _number(data["seconds"]), samples)
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise InputError(f"{path} is not {WINDOW_WHAT} ({exc})") from None


def _number(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{str(value)[:40]!r} is not a number")
    return float(value)


def _sample(t, running, waiting, per_engine=()) -> Sample:
    """A saved sample: [t, running, waiting] and, from a data-parallel server, [running per engine]; NaN (a
    sample the server did not answer) is saved as null."""
    def gauge(v):
        return math.nan if v is None else _number(v)
    return Sample(_number(t), gauge(running), gauge(waiting), tuple(gauge(v) for v in per_engine))
