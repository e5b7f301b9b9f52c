"""One `vllm bench` run as the advisor sees it: the load it applied, what it measured, its acceptance counts.

Each file format has its own small reader (serve_file, latency_file); both produce a BenchRun, and everything
downstream (the fit, `check`) works on BenchRuns only. `read.read_run` tells the formats apart by their keys.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ValidationError

from advisor.errors import InputError
from advisor.fileio.json_input import parse_json, read_text
from advisor.measured.counts import Counts


@dataclass(frozen=True, slots=True)
class Load:
    """What the benchmark asked of the engine."""

    prompt_len: float  # mean prompt tokens per request
    out_len: float  # mean output tokens per request
    concurrency: float | None  # requests kept in flight (serve: --max-concurrency; latency: --batch-size)
    request_rate: float | None = None  # serve with a finite --request-rate: requests/s sent (open loop)
    burstiness: float = 1.0  # serve: 1 = Poisson arrivals


@dataclass(frozen=True, slots=True)
class Measured:
    """What the benchmark measured, in seconds and tokens/s (means over requests)."""

    e2e: float  # request latency (latency runs: one whole batch, median over iterations)
    ttft: float | None = None  # time to first token (serve only)
    tpot: float | None = None  # (latency - TTFT) / (output tokens - 1), per request
    itl: float | None = None  # gap between streamed chunks; with speculation one chunk carries several tokens
    throughput: float | None = None  # output tokens per second over the run
    request_rate: float | None = None  # requests completed per second


@dataclass(frozen=True, slots=True)
class BenchRun:
    path: str  # the file, as given
    kind: Literal["serve", "latency"]
    model: str  # vLLM's --model of the run (a Hugging Face id or a directory)
    load: Load
    measured: Measured
    counts: Counts | None = None  # speculative-decoding counters over the run; None: it ran without speculation
    counts_source: str = "its spec_decode_* keys"  # where `counts` came from

    @property
    def speculative(self) -> bool:
        return self.counts is not None

    @property
    def k(self) -> int:
        return 0 if self.counts is None else self.counts.k

    def describe(self) -> str:
        load = self.load
        if self.kind == "latency":
            shape = f"batch {load.concurrency:g}"
        elif load.request_rate is not None:
            shape = f"{load.request_rate:g} requests/s"
        else:
            shape = f"{load.concurrency:g} concurrent"
        spec = f", k={self.k}" if self.speculative else ", no speculation"
        lengths = f"{load.prompt_len:.0f} -> {load.out_len:.0f} tokens"
        return f"{self.path} (vllm bench {self.kind}: {shape}, {lengths}{spec})"


def read_json(path: str | Path) -> dict:
    """A bench result file's JSON object; InputError (one line) when it is missing, truncated or not an object."""
    path = Path(path)
    text = read_text(path, "a vllm bench result")
    try:
        raw = parse_json(text, str(path), "a vllm bench result")
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # `vllm bench serve --append-result` writes one JSON document per line
            raise InputError(f"{path} holds more than one result (--append-result?): save one run per file") from None
        raise InputError(f"{path} is not valid JSON (truncated or hand-edited? {exc})") from None
    if not isinstance(raw, dict):
        raise InputError(f"{path} is not a vllm bench result (expected a JSON object)")
    return raw


def validation_problem(exc: ValidationError) -> str:
    """pydantic's first complaint, as `field: message`."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "the top level"
    return f"{where}: {first['msg']}"


Result = TypeVar("Result", bound=BaseModel)


def bench_result(model: type[Result], raw: dict, path, command: str) -> Result:
    """`raw` validated as `command`'s result file (e.g. "vllm bench serve --save-result"), or one InputError line
    saying which field is off."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path} is not a `{command}` file as vLLM 0.32 writes it ({validation_problem(exc)}): "
                         "another vLLM version's, or hand-edited?") from None
