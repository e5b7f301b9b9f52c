"""The stable JSON shape of a recommendation (documented in the README). Change it only by adding fields.
Extra keys are refused, so the schema and `summary.summarize` cannot drift apart unnoticed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from advisor.recommendation import SCHEMA_VERSION


class Speedup(BaseModel):
    tpot: float  # decode time per output token, baseline / speculative
    e2e_latency: float  # whole request (prefill + decode) at the given batch
    throughput: float  # output tokens/s, each side capped by the concurrency its memory allows


class PerK(BaseModel):
    k: int
    expected_tokens_per_step: float  # over this request's out_len - 1 decode tokens (its last step cut at max_tokens)
    tpot_speedup: float
    e2e_speedup: float
    throughput_speedup: float


class Memory(BaseModel):
    gpu_memory_utilization: float
    usable_gb: float
    target_weights_gb: float
    draft_weights_gb: float
    runtime_reserve_gb: float
    kv_bytes_per_token_baseline: float
    kv_bytes_per_token_spec: float
    kv_budget_baseline_gb: float
    kv_budget_spec_gb: float
    max_concurrency_baseline: int
    max_concurrency_spec: int
    fits: bool
    fits_spec: bool
    reason: str


class TimeSplit(BaseModel):
    prefill_fraction_baseline: float
    decode_fraction_baseline: float
    prefill_s: float
    draft_prefill_s: float
    decode_baseline_s: float
    decode_spec_s: float
    tpot_baseline_ms: float
    tpot_spec_ms: float


class CheckOut(BaseModel):
    name: str
    ok: bool
    detail: str


class Vllm(BaseModel):
    serve_command: str
    speculative_config: dict
    per_batch_size_schedule: list[tuple[int, int, int]]


class Interval(BaseModel):
    e2e_low: float  # e2e speedup at best k at the low end of the acceptance range
    e2e_high: float
    alpha_low: float
    alpha_high: float


class Inputs(BaseModel):
    target: str
    draft: str | None
    method: str
    gpu: str
    num_gpus: int
    batch: int
    prompt_len: int
    out_len: int
    temperature: float
    k: int | None
    gpu_memory_utilization: float
    alpha: float
    acceptance_source: str
    acceptance_notes: list[str]
    cost_ratio: float | None


class Recommendation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    verdict: str
    reasons: list[str]
    best_k: int
    speedup: Speedup
    interval: Interval
    per_k: list[PerK]
    break_even_alpha: float | None
    critical_batch: int | None
    memory: Memory
    time_split: TimeSplit
    checks: list[CheckOut]
    vllm: Vllm
    cost_source: str
    inputs: Inputs


def validated(summary: dict) -> Recommendation:
    """Check a `summary.summarize` dict against the documented schema."""
    return Recommendation.model_validate(summary)

