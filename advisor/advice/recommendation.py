"""The recommendation: what `recommend` reports, as frozen dataclasses (the documented JSON shape, schema version 1).

Change the shape only by adding fields. `from_advice` builds one from an `Advice`, with plain Python numbers; the
text and Markdown reports and the review read its attributes. JSON and its schema come from these classes through
`recommendation_json` (pydantic, imported only for `--format json`, so the CLI starts fast).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.advice.advise import Advice
from advisor.advice.comparison import Comparison
from advisor.advice.recommendation_interval import Closed as _Closed
from advisor.advice.recommendation_interval import Interval, interval_of, optional
from advisor.advice.schedule import describe, runner_line
from advisor.model.cost.enginecost import is_cpu
from advisor.vllm.command import serve_command, speculative_config
from advisor.vllm.defaults import batch_defaults

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Speedup(_Closed):
    """Baseline over speculative, at best_k; null where it does not fit (nothing runs, so no speedup)."""

    tpot: float | None  # decode time per output token, baseline / speculative, both at the speculative concurrency
    e2e_latency: float | None  # whole request (prefill + decode) at the given batch, each side at its concurrency
    throughput: float | None  # output tokens/s, each side capped by the concurrency its memory allows


@dataclass(frozen=True, slots=True)
class PerK(_Closed):
    """One row of the per-k table; its speedups are null where it does not fit."""

    k: int  # draft length (0: speculation off)
    expected_tokens_per_step: float  # over this request's out_len - 1 decode tokens (its last step cut at max_tokens)
    tpot_speedup: float | None  # as Speedup.tpot, at this k (both sides at `concurrency`); null: does not fit
    e2e_speedup: float | None  # as Speedup.e2e_latency, at this k
    throughput_speedup: float | None  # as Speedup.throughput, at this k
    fits: bool  # at least one request runs at this k (k = 0: the target alone)
    concurrency: int  # requests running at once at this k: min(batch, what memory and the scheduler hold)
    tpot_low: float | None  # low end of tpot_speedup's 80% interval (acceptance range and cost model's error)
    tpot_high: float | None  # ... its high end
    e2e_low: float | None  # low end of e2e_speedup's 80% interval
    e2e_high: float | None  # ... its high end
    throughput_low: float | None  # low end of throughput_speedup's 80% interval
    throughput_high: float | None  # ... its high end


@dataclass(frozen=True, slots=True)
class Memory(_Closed):
    """The VRAM budget per GPU at shown_k (best_k or --k; k = 1 when speculation is off, to show its cost)."""

    gpu_memory_utilization: float  # vLLM's --gpu-memory-utilization
    usable_gb: float  # per GPU: its memory × gpu_memory_utilization
    target_weights_gb: float  # per GPU (weights split over tensor parallel ranks)
    draft_weights_gb: float  # per GPU; 0 for ngram
    runtime_reserve_gb: float  # activations peak + runtime
    kv_bytes_per_token_baseline: float  # target KV cache per token, per GPU
    kv_bytes_per_token_spec: float  # target + draft KV cache per token, per GPU
    kv_budget_baseline_gb: float  # left for the KV cache without speculation
    kv_budget_spec_gb: float  # left for the KV cache with the draft loaded
    max_concurrency_baseline: int  # full-length requests the KV cache holds without speculation
    max_concurrency_spec: int  # ... and with it
    fits: bool  # the target alone serves at least one full-length request
    fits_spec: bool  # ... and so does target + draft
    reason: str  # why it does not fit, in numbers; empty when both fit


@dataclass(frozen=True, slots=True)
class TimeSplit(_Closed):
    """Where one request's time goes, at the given batch."""

    prefill_fraction_baseline: float  # of the baseline request time
    decode_fraction_baseline: float  # 1 - prefill_fraction_baseline
    prefill_s: float  # target prefill of one request, s
    draft_prefill_s: float  # the drafter's prefill of the same prompt, s
    decode_baseline_s: float  # decode without speculation, s
    decode_spec_s: float  # decode with speculation at best_k, s
    tpot_baseline_ms: float  # time per output token without speculation, ms
    tpot_spec_ms: float  # ... with speculation at best_k, ms


@dataclass(frozen=True, slots=True)
class CheckOut(_Closed):
    """One of the four checks, with its numbers."""

    name: str  # predictability | vram | concurrency | decode_share
    ok: bool  # passed
    detail: str  # the numbers behind it, in words


@dataclass(frozen=True, slots=True)
class Vllm(_Closed):
    """What to paste into vLLM."""

    serve_command: str  # `vllm serve ...` to paste (no --speculative-config when off; "" when the target does not fit)
    speculative_config: dict  # vLLM's --speculative-config ({} when speculation is off)
    per_batch_size_schedule: tuple[tuple[int, int, int], ...]  # (start_bs, end_bs, k) ranges, pinned to best_k at
    # the batch evaluated; empty when a fixed --k is pasted alone, or where the schedule does not pay for itself
    model_runner: str = ""  # the vLLM model runner the paste assumes ("" when speculation is off)
    schedule_check: str = ""  # what a per-batch schedule costs on that runner, and whether it was pasted


@dataclass(frozen=True, slots=True)
class PriorOut(_Closed):
    """Where a prior acceptance came from (the drafter catalog, profiles/drafters/)."""

    kind: str  # the drafter kind, in words ("EAGLE-3 heads")
    drafter: str  # the catalog drafter whose published figures set it; "" when the kind's spread did
    task: str  # the task named; "" when none (a general prior)
    published: str  # the published acceptance it spans, in words ("AL 2.20-2.80 at k=3")
    sources: tuple[str, ...]  # where those figures were read


@dataclass(frozen=True, slots=True)
class Inputs(_Closed):
    """The resolved inputs."""

    target: str  # target model's name
    draft: str | None  # draft model's name; None for ngram
    method: str  # draft_model | ngram | eagle (speculative.METHODS)
    gpu: str  # hardware name
    num_gpus: int  # tensor parallel size
    batch: int  # concurrent requests
    prompt_len: int  # tokens per prompt
    out_len: int  # tokens generated per request
    temperature: float  # sampling temperature
    k: int | None  # the draft length asked for; None: choose one
    gpu_memory_utilization: float  # vLLM's --gpu-memory-utilization
    alpha: float  # per-token acceptance, point estimate
    acceptance_source: str  # where α came from
    acceptance_notes: tuple[str, ...]  # caveats (e.g. a temperature extrapolation)
    cost_ratio: float | None  # expert override: draft step time / target decode step time
    acceptance_prior: PriorOut | None  # the prior's origin; null when acceptance was measured
    engine: str  # whose per-step terms priced the steps: vllm (the default) | sglang | trtllm (--engine)


@dataclass(frozen=True, slots=True)
class Concurrency(_Closed):
    """How many of the batch's requests run at once on each side: every speedup is taken there."""

    batch: int  # the requests asked for
    baseline: int  # running at once without speculation: min(batch, what the KV cache holds)
    speculative: int  # ... with speculation at shown_k
    binds: str  # what memory does to the batch, in words; empty when both sides hold it


@dataclass(frozen=True, slots=True)
class Recommendation(_Closed):
    """Go/no-go on speculative decoding for one workload, with the vLLM flags to paste."""

    schema_version: int  # SCHEMA_VERSION
    verdict: str  # enable | marginal | disable
    reasons: tuple[str, ...]  # why, in words
    best_k: int  # 0 = leave speculation off
    shown_k: int  # the row the report shows (--k, else best_k; 1 when 0): interval, memory, concurrency are at it
    speedup: Speedup  # at best_k
    interval: Interval  # how sure, at shown_k: the speedups over the acceptance range and their 80% intervals
    per_k: tuple[PerK, ...]  # k = 0..MAX_K (advisor.vllm.defaults: also the largest --k)
    break_even_alpha: float | None  # below it no k pays; None: no α pays, or speculation does not fit
    critical_batch: int | None  # end of the paying range from batch 1 (0: batch 1 loses; None: gains up to the limit)
    memory: Memory  # the VRAM budget at shown_k
    time_split: TimeSplit  # where one request's time goes
    checks: tuple[CheckOut, ...]  # predictability, vram, concurrency, decode_share
    vllm: Vllm  # what to paste into vLLM
    cost_source: str  # where the step costs came from (datasheet roofline or a calibration file)
    inputs: Inputs  # the resolved inputs
    paying_batches: tuple[tuple[int, int], ...]  # (first, last) batch ranges where best k's decode gains
    concurrency: Concurrency  # the requests each side runs at once
    # what the answer takes for the GPU beyond its sources and measured rows: derived or borrowed figures the costs
    # use, another generation's kernel floors, another memory kind's share of peak, memory shared with the CPU
    gpu_caveats: tuple[str, ...]
    warnings: tuple[str, ...]  # what makes the answer suspect before any number (a mis-served head, acceptance far
    # below what the drafter reaches elsewhere); empty when nothing does
    # "no published run of this kind: ..." when no published speedup of the target's class or the method supports
    # the number (its interval then takes the widest published spread, and the verdict is at most marginal); "" else
    unpublished: str
    # `--method compare`: every method at its best k, and which one this recommendation is for; null otherwise
    comparison: Comparison | None = None


def _gb(nbytes: float) -> float:
    return round(float(nbytes) / 1e9, 3)


def from_advice(a: Advice) -> Recommendation:
    """The recommendation for an Advice: its numbers as plain Python values, and the vLLM flags at its best k."""
    acc, k = a.scenario.acceptance, int(a.best_k)
    return Recommendation(
        schema_version=SCHEMA_VERSION, verdict=a.verdict, reasons=tuple(a.reasons), best_k=k, shown_k=int(a.shown_k),
        speedup=Speedup(tpot=_ran(a, a.tpot_speedup, k), e2e_latency=_ran(a, a.e2e_speedup, k),
                        throughput=_ran(a, a.throughput_speedup, k)),
        interval=interval_of(a),
        per_k=tuple(PerK(k=int(kk), expected_tokens_per_step=float(a.tokens_per_step[i]),
                         tpot_speedup=_ran(a, a.tpot_speedup, i), e2e_speedup=_ran(a, a.e2e_speedup, i),
                         throughput_speedup=_ran(a, a.throughput_speedup, i), fits=a.runs(i),
                         concurrency=int(a.concurrency[i]),
                         **{f"{name}_{end}": _ran(a, getattr(getattr(a.bands, name), end), i)
                            for name in ("tpot", "e2e", "throughput") for end in ("low", "high")})
                    for i, kk in enumerate(a.ks)),
        break_even_alpha=optional(float, a.break_even_alpha), critical_batch=optional(int, a.critical_batch),
        memory=_memory(a), time_split=_time_split(a),
        checks=tuple(CheckOut(name=c.name, ok=bool(c.ok), detail=c.detail) for c in a.checks),
        vllm=_vllm(a), cost_source=a.scenario.cost_source, inputs=_inputs(a),
        paying_batches=tuple((int(lo), int(hi)) for lo, hi in a.paying_batches),
        concurrency=Concurrency(batch=int(a.scenario.batch), baseline=int(a.concurrency[0]),
                                speculative=int(a.concurrency[a.shown_k]),
                                binds=a.binds),
        gpu_caveats=tuple(a.scenario.gpu_caveats),
        warnings=tuple(acc.warnings), unpublished=a.scenario.unpublished)


def _ran(a: Advice, values, k: int) -> float | None:
    """The speedup at k, or None where k does not fit, or the target alone does not: a speedup needs both sides."""
    return float(values[k]) if a.runs(k) and a.runs(0) else None


def _memory(a: Advice) -> Memory:
    m = a.memory
    return Memory(
        gpu_memory_utilization=float(a.scenario.gpu_memory_utilization), usable_gb=_gb(m.usable),
        target_weights_gb=_gb(m.target_weights), draft_weights_gb=_gb(m.draft_weights),
        runtime_reserve_gb=_gb(m.reserve), kv_bytes_per_token_baseline=float(m.kv_per_token_baseline),
        kv_bytes_per_token_spec=float(m.kv_per_token_spec), kv_budget_baseline_gb=_gb(m.kv_budget_baseline),
        kv_budget_spec_gb=_gb(m.kv_budget_spec), max_concurrency_baseline=int(m.max_concurrency_baseline),
        max_concurrency_spec=int(m.max_concurrency_spec), fits=bool(m.fits), fits_spec=bool(m.fits_spec),
        reason=m.reason())


def _time_split(a: Advice) -> TimeSplit:
    base, spec = a.baseline_times, a.speculative_times  # each at the concurrency its side holds
    return TimeSplit(
        prefill_fraction_baseline=float(a.prefill_fraction), decode_fraction_baseline=float(1 - a.prefill_fraction),
        prefill_s=float(base.prefill), draft_prefill_s=float(spec.draft_prefill),
        decode_baseline_s=float(base.decode_baseline), decode_spec_s=float(spec.decode_spec),
        tpot_baseline_ms=1e3 * float(base.tpot_baseline), tpot_spec_ms=1e3 * float(spec.tpot_spec))


def _vllm(a: Advice) -> Vllm:
    """The flags of the evaluated recommendation: speculation at best_k (with the schedule, pinned to best_k at the
    evaluated batch) unless the verdict is disable; no command at all when the target does not fit."""
    s = a.scenario
    if not a.memory.fits:
        return Vllm(serve_command="", speculative_config={}, per_batch_size_schedule=())
    k = a.best_k if a.speculating else 0
    hw = s.hardware  # vLLM's defaults there: a limit set otherwise (--max-num-seqs, ...) is pasted
    defaults = batch_defaults(hw.memory_gib, hw.name, cpu=is_cpu(hw))
    return Vllm(serve_command=serve_command(s.setup, k, max_model_len=s.prompt_len + s.out_len,
                                            gpu_memory_utilization=s.gpu_memory_utilization, schedule=a.schedule,
                                            defaults=defaults),
                speculative_config=speculative_config(s.setup, k, a.schedule),
                per_batch_size_schedule=tuple((int(start), int(end), int(kk)) for start, end, kk in a.schedule),
                model_runner=runner_line(s.setup.method, cpu=s.setup.target_cost.on_cpu,
                                         parallel_drafting=s.setup.parallel_drafting) if k else "",
                schedule_check=describe(a.schedule_price, k) if k and a.schedule_price is not None else "")


def _inputs(a: Advice) -> Inputs:
    s, setup, acc = a.scenario, a.scenario.setup, a.scenario.acceptance
    return Inputs(
        target=setup.target.name, draft=setup.draft.name if setup.draft else None, method=setup.method,
        gpu=s.hardware.name, num_gpus=int(setup.tp), batch=int(s.batch), prompt_len=int(s.prompt_len),
        out_len=int(s.out_len), temperature=float(s.temperature), k=optional(int, s.k),
        gpu_memory_utilization=float(s.gpu_memory_utilization), alpha=float(acc.alpha),
        acceptance_source=acc.source, acceptance_notes=tuple(acc.notes), cost_ratio=optional(float, setup.cost_ratio),
        acceptance_prior=None if acc.origin is None else PriorOut(
            kind=acc.origin.kind, drafter=acc.origin.drafter, task=acc.origin.task, published=acc.origin.published,
            sources=tuple(acc.origin.sources)), engine=s.engine)
