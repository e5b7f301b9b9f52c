"""`vllm bench serve --save-result` files: one serving run's load, its latencies and, with speculation, its
acceptance counts.

Read against the writer of vLLM 0.32 (vllm/benchmarks/serve.py: `main_async` writes the setup keys, `benchmark` the
results). The keys read here are the ones it always writes; `mean_ttft_ms`, `mean_tpot_ms` and `mean_itl_ms` only
appear when the bench had a tokenizer and --percentile-metrics kept ttft,tpot,itl (the default), and the
`spec_decode_*` keys only when the server's /metrics counted drafts during the run (the bench scrapes it before
and after). Other keys (percentiles, per-request lists from --save-detailed, --metadata) are ignored.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from advisor.errors import InputError
from advisor.measured.counts import Counts
from calibration.from_bench.runs import BenchRun, Load, Measured, bench_result

MS = 1e-3


class ServeResult(BaseModel):
    """The keys of a `vllm bench serve --save-result` file that the advisor reads (vLLM 0.32)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    backend: str
    model_id: str
    num_prompts: int = Field(ge=1)
    request_rate: float | Literal["inf"]  # "inf" (as the bench writes it): every request sent at once
    burstiness: float = Field(gt=0)
    max_concurrency: int | None = Field(ge=1)
    duration: float = Field(gt=0)  # s, first request sent to last one finished
    completed: int = Field(ge=0)
    failed: int = Field(ge=0)
    total_input_tokens: int = Field(ge=0)
    total_output_tokens: int = Field(ge=0)
    request_throughput: float = Field(ge=0)  # completed requests / duration
    output_throughput: float = Field(ge=0)  # output tokens / duration
    latencies: list[float]  # s per request (0 for failed ones)
    mean_ttft_ms: float | None = Field(default=None, ge=0)
    mean_tpot_ms: float | None = Field(default=None, ge=0)
    mean_itl_ms: float | None = Field(default=None, ge=0)
    spec_decode_num_drafts: int | None = Field(default=None, ge=0)
    spec_decode_draft_tokens: int | None = Field(default=None, ge=0)
    spec_decode_accepted_tokens: int | None = Field(default=None, ge=0)
    spec_decode_per_position_acceptance_rates: list[float] | None = None


def read(path, raw: dict) -> BenchRun:
    """A BenchRun from the parsed JSON of `path`; InputError (one line) when it is not a clean, complete run."""
    result = bench_result(ServeResult, raw, path, "vllm bench serve --save-result")
    if result.failed or not result.completed:
        raise InputError(f"{path}: {result.failed} of {result.failed + result.completed} requests failed; "
                         "only a run where every request completed measures the engine")
    if len(result.latencies) != result.completed or min(result.latencies) <= 0:
        raise InputError(f"{path}: {len(result.latencies)} latencies for {result.completed} completed requests, "
                         "or a latency that is not positive (hand-edited?)")
    if None in (result.mean_ttft_ms, result.mean_tpot_ms, result.mean_itl_ms):
        raise InputError(f"{path} has no mean TTFT/TPOT/ITL: vllm bench serve writes them only with a tokenizer "
                         "(not --skip-tokenizer-init) and with ttft,tpot,itl in --percentile-metrics")
    out_len = result.total_output_tokens / result.completed
    if out_len < 2:
        raise InputError(f"{path}: {out_len:.1f} output tokens per request; a run needs at least 2 to time decoding")
    rate = None if result.request_rate == "inf" else float(result.request_rate)
    if rate is not None and rate <= 0:
        raise InputError(f"{path}: request_rate {rate} is not positive")
    load = Load(prompt_len=result.total_input_tokens / result.completed, out_len=out_len,
                concurrency=float(min(result.max_concurrency or result.num_prompts, result.num_prompts)),
                request_rate=rate, burstiness=result.burstiness)
    measured = Measured(e2e=float(np.mean(result.latencies)), ttft=result.mean_ttft_ms * MS,
                        tpot=result.mean_tpot_ms * MS, itl=result.mean_itl_ms * MS,
                        throughput=result.output_throughput, request_rate=result.request_throughput)
    return BenchRun(path=str(path), kind="serve", model=result.model_id, load=load, measured=measured,
                    counts=_counts(path, result))


def _counts(path, result: ServeResult) -> Counts | None:
    """The run's spec-decode counters. The file keeps the per-position accepts as rates over the drafts, so the
    counts are rebuilt as rate × drafts; they must then add up to the accepted tokens (vLLM counts each accepted
    token at its position), within rounding."""
    keys = (result.spec_decode_num_drafts, result.spec_decode_draft_tokens, result.spec_decode_accepted_tokens,
            result.spec_decode_per_position_acceptance_rates)
    if all(value is None for value in keys):
        return None
    if any(value is None for value in keys):
        raise InputError(f"{path} has some spec_decode_* keys but not all four (hand-edited?)")
    drafts, draft_tokens, accepted, rates = keys
    per_position = tuple(round(rate * drafts) for rate in rates)
    if abs(sum(per_position) - accepted) > len(rates):
        raise InputError(f"{path}: per-position acceptance rates x {drafts} drafts add up to {sum(per_position)} "
                         f"accepted tokens, but spec_decode_accepted_tokens says {accepted} (hand-edited?)")
    try:
        return Counts(drafts=drafts, draft_tokens=draft_tokens, accepted=accepted, per_position=per_position)
    except InputError as exc:  # Counts checks they are counts vLLM could have made
        raise InputError(f"{path}: {exc}") from None
