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
from advisor.fileio.json_input import parse_json
from advisor.measured.metrics import MAX_BYTES, read_text

RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
WINDOW_FORMAT = "specadvisor-observe-window/1"
MIN_EVERY_S = 0.05  # sampling the gauge faster than this measures the scrape, not the server


@dataclass(frozen=True, slots=True)
class Sample:
    t: float  # seconds since the window's first scrape
    running: float  # vllm:num_requests_running, summed over engines
    waiting: float  # vllm:num_requests_waiting, summed over engines


@dataclass(frozen=True, slots=True)
class Window:
    origin: str  # the server's URL (or the file a window was replayed from)
    start: str  # Prometheus text at the start
    end: str  # ... and at the end
    seconds: float  # between the two scrapes
    samples: tuple[Sample, ...]  # the gauges, every --every seconds

    def __post_init__(self) -> None:
        if not math.isfinite(self.seconds) or self.seconds <= 0:
            raise InputError(f"{self.origin}: a window must last a positive time, got {self.seconds} s")


def gauges(text: str, origin: str) -> tuple[float, float]:
    """(running, waiting) requests in one scrape, summed over engines; (nan, nan) when the server has no such
    gauges (the traffic module then says it is not vLLM)."""
    found = {RUNNING: math.nan, WAITING: math.nan}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in found:
                    found[sample.name] = (0.0 if math.isnan(found[sample.name]) else found[sample.name]) + sample.value
    except ValueError as exc:
        raise InputError(f"{origin} is not Prometheus text ({exc})") from None
    return found[RUNNING], found[WAITING]


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
            running, waiting = gauges(read_text(self.url), self.url)
        except InputError:
            running = waiting = math.nan
        self.samples.append(Sample(self.clock() - self.begun, running, waiting))
        return self.samples[-1]

    def finish(self) -> Window:
        last = read_text(self.url)
        return Window(self.url, self.first, last, max(self.clock() - self.begun, 1e-9), tuple(self.samples))


def record(url: str, seconds: float, every: float, clock=time.monotonic, sleep=time.sleep) -> Window:
    """Scrape `url` now and after `seconds`, and its gauges every `every` seconds in between."""
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"--seconds must be positive, got {seconds}")
    if not math.isfinite(every) or not MIN_EVERY_S <= every:
        raise InputError(f"--every must be at least {MIN_EVERY_S} s, got {every}")
    recorder = Recorder(url, clock)
    deadline = recorder.begun + seconds
    while (left := deadline - clock()) > 0:
        sleep(min(every, left))
        if clock() < deadline:
            recorder.sample()
    return recorder.finish()


def save(window: Window, path: str | Path) -> None:
    """The window as JSON (atomically): both scrapes verbatim and the gauge samples."""
    data = dict(format=WINDOW_FORMAT, origin=window.origin, seconds=window.seconds, start=window.start,
                end=window.end, samples=[[s.t, s.running, s.waiting] for s in window.samples])
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def load(path: str | Path) -> Window:
    """A window saved by `save` (or `observe --record`)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(3 * MAX_BYTES + 1)  # two scrapes and the samples
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    if len(raw) > 3 * MAX_BYTES:
        raise InputError(f"{path} is larger than a saved window can be")
    try:
        data = parse_json(raw.decode("utf-8"), str(path), "a window saved by `specadvisor observe --record`")
        if data.get("format") != WINDOW_FORMAT:
            raise ValueError(f"format is not {WINDOW_FORMAT}")
        samples = tuple(Sample(float(t), float(r), float(w)) for t, r, w in data["samples"])
        return Window(f"{data['origin']} (saved in {path.name})", str(data["start"]), str(data["end"]),
                      float(data["seconds"]), samples)
    except InputError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not a window saved by `specadvisor observe --record` ({exc})") from None
