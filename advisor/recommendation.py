"""An Advice as plain data in the documented JSON shape. `schema.Recommendation` validates it for --format json;
text and Markdown render it directly, without importing pydantic, so the CLI starts fast."""

from __future__ import annotations

from advisor.advise import Advice, times_at
from advisor.vllm import serve_command, speculative_config

SCHEMA_VERSION = 1


def _gb(nbytes: float) -> float:
    return round(nbytes / 1e9, 3)


def summarize(a: Advice) -> dict:
    s, m, setup, acc, k = a.scenario, a.memory, a.scenario.setup, a.scenario.acceptance, a.best_k
    times = times_at(a)
    per_k = [dict(k=int(kk), expected_tokens_per_step=float(a.tokens_per_step[i]),
                  tpot_speedup=float(a.tpot_speedup[i]), e2e_speedup=float(a.e2e_speedup[i]),
                  throughput_speedup=float(a.throughput_speedup[i])) for i, kk in enumerate(a.ks)]
    memory = dict(
        gpu_memory_utilization=s.gpu_memory_utilization, usable_gb=_gb(m.usable),
        target_weights_gb=_gb(m.target_weights), draft_weights_gb=_gb(m.draft_weights),
        runtime_reserve_gb=_gb(m.reserve), kv_bytes_per_token_baseline=m.kv_per_token_baseline,
        kv_bytes_per_token_spec=m.kv_per_token_spec, kv_budget_baseline_gb=_gb(m.kv_budget_baseline),
        kv_budget_spec_gb=_gb(m.kv_budget_spec), max_concurrency_baseline=m.max_concurrency_baseline,
        max_concurrency_spec=m.max_concurrency_spec, fits=m.fits, fits_spec=m.fits_spec, reason=m.reason())
    time_split = dict(
        prefill_fraction_baseline=a.prefill_fraction, decode_fraction_baseline=1 - a.prefill_fraction,
        prefill_s=float(times.prefill), draft_prefill_s=float(times.draft_prefill),
        decode_baseline_s=float(times.decode_baseline), decode_spec_s=float(times.decode_spec),
        tpot_baseline_ms=1e3 * float(times.tpot_baseline), tpot_spec_ms=1e3 * float(times.tpot_spec))
    vllm = dict(
        serve_command=serve_command(setup, k, max_model_len=s.prompt_len + s.out_len,
                                    gpu_memory_utilization=s.gpu_memory_utilization, schedule=a.schedule),
        speculative_config=speculative_config(setup, k, a.schedule), per_batch_size_schedule=a.schedule)
    inputs = dict(
        target=setup.target.name, draft=setup.draft.name if setup.draft else None, method=setup.method,
        gpu=s.hardware.name, num_gpus=setup.tp, batch=s.batch, prompt_len=s.prompt_len, out_len=s.out_len,
        temperature=s.temperature, k=s.k, gpu_memory_utilization=s.gpu_memory_utilization, alpha=acc.alpha,
        acceptance_source=acc.source, acceptance_notes=list(acc.notes), cost_ratio=setup.cost_ratio)
    return dict(
        schema_version=SCHEMA_VERSION, verdict=a.verdict, reasons=a.reasons, best_k=k,
        speedup=dict(tpot=a.at_best(a.tpot_speedup), e2e_latency=a.at_best(a.e2e_speedup),
                     throughput=a.at_best(a.throughput_speedup)),
        interval=dict(e2e_low=min(a.e2e_range), e2e_high=max(a.e2e_range), alpha_low=acc.low, alpha_high=acc.high),
        per_k=per_k, break_even_alpha=a.break_even_alpha, critical_batch=a.critical_batch, memory=memory,
        time_split=time_split, checks=[dict(name=c.name, ok=c.ok, detail=c.detail) for c in a.checks], vllm=vllm,
        cost_source=s.cost_source, inputs=inputs)
