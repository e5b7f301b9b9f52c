"""Measure every model's grid: one engine per model in turn, rounds over its points, a progress bar.

Each round visits every point once, in a fresh shuffled order, and the point's time is the median over rounds.
Spreading the repeats of a point over the whole run (instead of back to back) means a burst of load from another
process spoils one sample of several points, which the median discards, rather than every sample of one point.
That only works while the burst is shorter than the run: a tiny draft's whole grid takes ~3 s on a CPU, and two
busy loops started with its first sample raised its held-out error from ~4% to 4.7-8.7% (4 s of load) and 24%
(8 s). So rounds continue past `repeats` until the model has been measured for `min_seconds`; over 20 s the same
bursts left 2.1% and 3.1%. The profile is saved after every point.

One engine at a time: on a GPU both would compete for memory, and on a CPU for the same cores. The bar of each
phase advances by the predicted seconds of each finished sample, so its ETA weighs a 2 s prefill as 2 s and a
20 ms decode as 20 ms rather than counting them alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from advisor.errors import InputError
from advisor.vllm.runner import DRAFT_MODEL_CUDAGRAPH_MODE, UNIFORM_VERIFY_METHOD
from calibration.calibrate import allreduce, bench
from calibration.calibrate import profile_file as prof
from calibration.calibrate.bench import point_of
from calibration.calibrate.budget import another_round_fits, time_ratio
from calibration.engine.platform import on_cpu, step_graph_mode
from calibration.engine.vllm_engine import open_engine

MAX_ROUNDS = 100  # however quick the grid, the profile stays small (and each save quick)


def next_round(counts: list[int], seconds: float, repeats: int, min_seconds: float,
               budget: float = float("inf")) -> int | None:
    """The round to measure next given each point's sample count and the seconds measured so far, or None when
    the run is complete: a round an interruption cut short is finished first, then the `repeats` rounds asked
    for, then more until `min_seconds` of measuring (at most MAX_ROUNDS, and none that would overrun `budget`)."""
    done = min(counts, default=0)
    if not counts or (done >= repeats and done == max(counts) and (
            seconds >= min_seconds or done >= MAX_ROUNDS or not another_round_fits(seconds, done, budget))):
        return None
    return done


def round_due(run, repeats: int, min_seconds: float, budget: float = float("inf"),
              only: Callable = lambda m: True) -> int | None:
    """`next_round` for a profile's model run (the points `only` keeps: those one engine measures)."""
    return next_round([len(m.samples) for m in run.points if only(m)], run.engine_seconds, repeats, min_seconds,
                      budget)


def snap_contexts(run, block_size: int) -> None:
    """The contexts of `run`'s points not yet measured, rounded down to whole KV blocks of the engine that will
    measure them: the grid is planned in bench.PLAN_BLOCK tokens, but vLLM enlarges the block of a hybrid model so
    one block's attention KV matches a Mamba/GDN state page (vllm/model_executor/models/config.py
    `HybridAttentionMambaModelConfig.verify_and_update_config`: qwen3-next's is hundreds of tokens), and a prefix
    is only served from the cache in whole blocks. Points that then coincide with another are dropped; a grid left
    without two distinct cached contexts cannot be fitted and is refused in one line."""
    if all(m.context % block_size == 0 for m in run.points):
        return
    seen, kept = set(), []
    for m in run.points:
        if not m.samples and m.context % block_size:
            m.context = m.context // block_size * block_size
        key = (m.kind, m.batch, m.new_tokens, m.context)
        if key not in seen:
            seen.add(key)
            kept.append(m)
    if len({m.context for m in kept if m.kind != "prefill"}) < 2:
        raise InputError(f"the engine's KV block is {block_size} tokens (a hybrid model's is enlarged to hold its "
                         f"state), so the grid's contexts leave fewer than two whole blocks: raise --max-context to "
                         f"at least {2 * block_size}")
    run.points[:] = kept


def measure_run(engine, run, *, repeats: int, min_seconds: float, seed: int,
                save: Callable[[], None], budget: float = float("inf"),
                only: Callable = lambda m: True) -> Iterator[tuple[int, int]]:
    """Add samples to `run.points[i].samples` (those `only` keeps) round by round (see `next_round`), recording the
    CUDA-graph mode each ran in, calling `save()` after each and yielding (i, round) so the caller can show
    progress."""
    points = [point_of(m) for m in run.points]
    rng = np.random.default_rng(seed)
    bench.warm_up(engine, rng)
    prefixes = bench.prefixes_for(points, engine.vocab_size, seed)
    if prefixes:
        engine.generate(prefixes, 1)  # prime the prefix cache once for every decode and verify point
    while (round_ := round_due(run, repeats, min_seconds, budget, only)) is not None:
        for i in np.random.default_rng(seed + 1 + round_).permutation(len(points)):
            m = run.points[i]
            if len(m.samples) > round_ or not only(m):
                continue  # measured before an interruption, or by another engine
            start = time.monotonic()
            m.samples.append(bench.measure(engine, points[i], prefixes, 1, rng)[0])
            run.engine_seconds += time.monotonic() - start
            m.graph_mode = step_graph_mode(engine.vllm_config, m.batch * m.new_tokens, points[i].repeated)
            save()
            yield int(i), round_


def run_models(profile, specs: dict, sources: dict, cost, *, repeats: int, min_seconds: float, seed: int,
               save, console=None, gpu_memory_utilization: float | None = None,
               budgets: dict[str, float] | None = None, replan: Callable[[float], bool] | None = None) -> None:
    """Start each model's engine in turn and measure its grid (see `measure_run`) under a progress bar.
    `budgets`: seconds of measuring per role, past which no extra round starts. `replan(ratio)`: called once the
    target has measured its first points (calibration/calibrate/budget.py), with their measured/planned time; when
    it re-sizes the profile's grid (True), the target goes on with the new one, its samples kept where points
    stayed."""
    console = console or Console(stderr=True)
    budgets = budgets or {}
    gpu = not on_cpu()
    with Progress(*_columns(), console=console, transient=False) as progress:
        for role in ("target", "draft"):
            if getattr(profile, role) is None:
                continue
            for job in engine_jobs(role, lambda: getattr(profile, role), gpu):
                run, budget = getattr(profile, role), budgets.get(role, float("inf"))
                if round_due(run, repeats, min_seconds, budget, job.measures) is None:
                    continue
                _run_job(progress, job, profile, role, specs[role], sources[role], cost, repeats=repeats,
                         min_seconds=min_seconds, seed=seed, save=save, budget=budget, replan=replan,
                         gpu_memory_utilization=gpu_memory_utilization)
            getattr(profile, role).engine["graph_modes"] = graph_modes(getattr(profile, role))
            save()


@dataclass(frozen=True, slots=True)
class EngineJob:
    """One engine a model's grid is measured in, and the points it measures."""

    label: str  # what the progress bars and the profile call it
    options: dict  # open_engine keywords beyond the grid's (speculative_config, cudagraph_mode)
    q: int = 0  # the uniform verification width it times (0: the model's own engine, every other point)

    def measures(self, m) -> bool:
        return m.uniform and m.new_tokens == self.q if self.q else not m.uniform


def engine_jobs(role: str, run_of: Callable, gpu: bool) -> Iterator[EngineJob]:
    """The engines a model is measured in, as vLLM 0.32's V2 runner runs a draft_model step on a GPU: the draft with
    cudagraph_mode NONE (advisor.vllm.runner DRAFT_MODEL_CUDAGRAPH_MODE); the target in its own engine, then, on a
    GPU, one engine per verification width q among its uniform points (k = q - 1 drafts for every sequence:
    advisor.vllm.runner UNIFORM_VERIFY_METHOD). Lazy: the widths are read after the target's engine, which may re-size
    the grid."""
    yield EngineJob(role, {"cudagraph_mode": DRAFT_MODEL_CUDAGRAPH_MODE} if gpu and role == "draft" else {})
    if role == "target":
        for q in sorted({m.new_tokens for m in run_of().points if m.uniform}):
            yield EngineJob(f"target verify q={q}", {"speculative_config": {
                "method": UNIFORM_VERIFY_METHOD, "num_speculative_tokens": q - 1}}, q)


def graph_modes(run) -> dict[str, str]:
    """Which CUDA-graph modes each kind of point ran in ("verify (uniform)": the target's uniform verification)."""
    modes: dict[str, set] = {}
    for m in run.points:
        if m.graph_mode:
            modes.setdefault(m.kind + (" (uniform)" if m.uniform else ""), set()).add(m.graph_mode)
    return {kind: "+".join(sorted(found)) for kind, found in modes.items()}


def _run_job(progress, job: EngineJob, profile, role: str, spec, source: str, cost, *, repeats: int,
             min_seconds: float, seed: int, save, budget: float, replan, gpu_memory_utilization) -> None:
    """Start `job`'s engine, record it, measure its points (re-sizing the grid once if `replan` says so), close it."""
    settings, run = profile.settings, getattr(profile, role)
    starting = progress.add_task(f"{job.label}: starting vLLM", total=None)
    began = time.monotonic()
    engine = _open(source, settings, seed, gpu_memory_utilization, **job.options)
    progress.update(starting, total=1, completed=1, description=f"{job.label}: vLLM started")
    try:
        if job.q:
            run.engine.setdefault("verify_engines", {})[str(job.q)] = {
                "startup_seconds": round(time.monotonic() - began, 1), "vllm_config": dict(engine.vllm_config)}
        else:
            _record(profile, run, engine, time.monotonic() - began, settings)
            snap_contexts(run, engine.block_size)
        if not job.q and role == "target" and engine.tensor_parallel_size > 1 and profile.allreduce is None:
            timing = progress.add_task("target: timing vLLM's all-reduce", total=None)
            widest = min(run.chunk_tokens, max(m.batch * m.new_tokens for m in run.points))
            profile.allreduce = prof.AllReduce.model_validate(allreduce.measure(engine, widest))
            progress.update(timing, total=1, completed=1)
        save()
        probe = replan if role == "target" and not job.q and not any(m.samples for m in run.points) else None
        while _measure(progress, engine, profile, role, spec, cost, repeats=repeats, min_seconds=min_seconds,
                       seed=seed, save=save, budget=budget, replan=probe, job=job):
            probe = None  # re-sized once: measure the new grid
            snap_contexts(profile.target, engine.block_size)
            save()
    finally:
        engine.close()


def _measure(progress, engine, profile, role: str, spec, cost, *, repeats: int, min_seconds: float, seed: int,
             save, budget: float, replan, job: EngineJob) -> bool:
    """Measure `job`'s points under its bars; True when `replan` re-sized the grid and measuring must start over."""
    run, tp = getattr(profile, role), profile.settings.get("tensor_parallel_size", 1)
    points = [point_of(m) for m in run.points]
    weights = list(bench.sample_seconds(spec, cost, points, run.chunk_tokens, tp))
    total = sum(w * max(0, repeats - len(m.samples)) for w, m in zip(weights, run.points) if job.measures(m))
    mine = sum(job.measures(m) for m in run.points)
    task = progress.add_task(f"{job.label}: measuring {mine} points × {repeats}", total=total)
    more = None  # the bar for rounds past `repeats`, in measured seconds, made when one starts
    for i, round_ in measure_run(engine, run, repeats=repeats, min_seconds=min_seconds, seed=seed, save=save,
                                 budget=budget, only=job.measures):
        if replan is not None and (ratio := time_ratio(run, spec, cost, tp)) is not None:
            if replan(ratio):
                progress.update(task, visible=False)
                return True
            replan = None
        if round_ < repeats:
            progress.advance(task, weights[i])
            continue
        if more is None:
            progress.update(task, completed=total)
            more = progress.add_task(f"{job.label}: more rounds until {min_seconds:.0f} s measured", total=min_seconds)
        progress.update(more, completed=min(run.engine_seconds, min_seconds))
    progress.update(task, completed=total)
    if more is not None:
        progress.update(more, completed=min_seconds)
    return False


def _columns():
    return (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())


def _open(source: str, settings: dict, seed: int, gpu_memory_utilization: float | None = None, **options):
    # Room for the longest context, the verified tokens, the decode steps, and a margin for the warm-up.
    # Prompts are token ids, so the engine needs no tokenizer (a generated test pair has none, real weights or not).
    longest = settings["max_context"] + settings["max_k"] + 1 + bench.DECODE_STEPS + bench.WARMUP_TOKENS
    return open_engine(source, dummy_weights=settings["dummy_weights"], max_model_len=longest, seed=seed,
                       skip_tokenizer_init=True,
                       tensor_parallel_size=settings.get("tensor_parallel_size", 1),
                       gpu_memory_utilization=gpu_memory_utilization, **options)


def _record(profile, run, engine, startup_s: float, settings: dict) -> None:
    need = settings["max_batch"] * (settings["max_context"] + settings["max_k"] + bench.DECODE_STEPS + 2)
    if engine.kv_capacity_tokens and need > engine.kv_capacity_tokens:
        raise InputError(f"the engine's KV cache holds {engine.kv_capacity_tokens} tokens but the grid needs {need}: "
                         "lower --max-batch or --max-context (or give vLLM more KV memory)")
    profile.vllm_version = engine.vllm_version
    run.chunk_tokens = engine.max_num_batched_tokens
    run.engine = {"args": {k: v for k, v in engine.engine_args.items()}, "dtype": engine.dtype,
                  "block_size": engine.block_size, "kv_capacity_tokens": engine.kv_capacity_tokens,
                  "max_num_batched_tokens": engine.max_num_batched_tokens, "max_num_seqs": engine.max_num_seqs,
                  "startup_seconds": round(startup_s, 1), "vllm_config": dict(engine.vllm_config)}
