"""`vllm bench latency --output-json` files: the wall time of one batch of B prompts decoded together.

vLLM 0.32's writer (vllm/benchmarks/latency.py, `main`) keeps only {model_id, avg_latency, latencies, percentiles}:
not the batch size, the lengths or the speculative config. Those are in the companion file the same run writes
when SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1 is set: `<name>.pytorch.json`, a list of records whose
benchmark.extra_info.args is the run's whole argument namespace (vllm/benchmarks/lib/utils.py,
`convert_to_pytorch_benchmark_format`). So a latency file is read together with its companion, or not at all.
The bench samples at temperature 1.0 with random prompt ids and counts no acceptance, so a speculative latency
run cannot be interpreted here: its speculative side has to come from `vllm bench serve`, which saves the counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from advisor.errors import InputError
from advisor.fileio.json_input import read_json
from calibration.from_bench.runs import BenchRun, Load, Measured, bench_result, validation_problem


class LatencyResult(BaseModel):
    """`vllm bench latency --output-json` (vLLM 0.32)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # the writer's four keys, nothing else

    model_id: str
    avg_latency: float = Field(gt=0)
    latencies: list[float] = Field(min_length=1)  # s per iteration: one batch, prefill to last token
    percentiles: dict[str, float]


class LatencyArgs(BaseModel):
    """The arguments of the run, from the companion file (everything else in the namespace is ignored)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    model: str
    input_len: int = Field(ge=1)
    output_len: int = Field(ge=2)  # one token comes from prefill; decoding needs at least one more
    batch_size: int = Field(ge=1)
    n: int = 1
    use_beam_search: bool = False
    speculative_config: Any = None


def companion(path: str | Path) -> Path:
    """Where the run wrote its arguments: `os.path.splitext(output_json)[0] + ".pytorch.json"`."""
    path = Path(path)
    return path.with_name(path.stem + ".pytorch.json") if path.suffix else path.with_name(path.name + ".pytorch.json")


def read(path, raw: dict) -> BenchRun:
    result = bench_result(LatencyResult, raw, path, "vllm bench latency --output-json")
    if min(result.latencies) <= 0:
        raise InputError(f"{path}: a latency that is not positive (hand-edited?)")
    args = _args(path)
    if args.model != result.model_id:
        raise InputError(f"{path} ran {result.model_id}, but {companion(path)} says {args.model}: not the same run")
    if args.n != 1 or args.use_beam_search:
        beam = " with beam search" if args.use_beam_search else ""
        raise InputError(f"{path} generated {args.n} sequences per prompt{beam}; the advisor models one sampled "
                         "sequence per prompt")
    if args.speculative_config:
        raise InputError(f"{path} is a speculative `vllm bench latency` run: that bench counts no acceptance, so its "
                         "time cannot be split into steps; run the speculative side with `vllm bench serve "
                         "--save-result`, which saves the server's acceptance counts")
    load = Load(prompt_len=float(args.input_len), out_len=float(args.output_len), concurrency=float(args.batch_size))
    return BenchRun(path=str(path), kind="latency", model=result.model_id, load=load,
                    measured=Measured(e2e=float(np.median(result.latencies))))


def _args(path) -> LatencyArgs:
    side = companion(path)
    if not side.is_file():
        raise InputError(f"{path} does not record its batch size or lengths, and {side} is missing: rerun "
                         "`vllm bench latency` with SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1 so vLLM writes it beside")
    records = read_json_list(side)
    try:
        return LatencyArgs.model_validate(records[0]["benchmark"]["extra_info"]["args"])
    except (KeyError, TypeError, IndexError):
        raise InputError(f"{side} has no benchmark.extra_info.args record: not vLLM's pytorch-format file") from None
    except ValidationError as exc:
        raise InputError(f"{side}: the run's arguments are not what vLLM 0.32 records "
                         f"({validation_problem(exc)})") from None


def read_json_list(path: Path) -> list:
    """The companion is a JSON list (read_json wants an object)."""
    records = read_json(path, "vLLM's pytorch-format record list")
    if not isinstance(records, list) or not records:
        raise InputError(f"{path} is not vLLM's pytorch-format record list")
    return records

