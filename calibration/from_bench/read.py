"""Which `vllm bench` result a file is, read by its format's reader into a BenchRun."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import InputError
from calibration.from_bench import latency_file, serve_file
from calibration.from_bench.runs import BenchRun, read_json


def read_run(path: str | Path) -> BenchRun:
    """A serve --save-result or latency --output-json file (told apart by their keys); InputError if neither."""
    raw = read_json(path)
    if "avg_latency" in raw:
        return latency_file.read(path, raw)
    if "duration" in raw or "backend" in raw:
        return serve_file.read(path, raw)
    raise InputError(f"{path} is not a vllm bench result this specadvisor reads: expected the JSON of `vllm bench "
                     "serve --save-result` or `vllm bench latency --output-json`")

