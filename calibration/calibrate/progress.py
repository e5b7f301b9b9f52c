"""Start one engine per model in turn, measure its grid with a progress bar, and record what the engine allocated.

One engine at a time: on a GPU both would compete for memory, and on a CPU for the same cores. The bar of each
phase advances by the predicted seconds of each finished sample, so its ETA weighs a 2 s prefill as 2 s and a
20 ms decode as 20 ms rather than counting them alike.
"""

from __future__ import annotations

import time

from advisor.errors import InputError

from calibration.calibrate import bench
from calibration.calibrate.runner import measure_run, point_of, round_due


def _columns():
    from rich.progress import (BarColumn, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    return (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())


def run_models(profile, specs: dict, sources: dict, cost, *, repeats: int, min_seconds: float, seed: int,
               save, console=None) -> None:
    from rich.console import Console
    from rich.progress import Progress

    console = console or Console(stderr=True)
    settings = profile.settings
    with Progress(*_columns(), console=console, transient=False) as progress:
        for role, run in (("target", profile.target), ("draft", profile.draft)):
            if run is None or round_due(run, repeats, min_seconds) is None:
                continue
            starting = progress.add_task(f"{role}: starting vLLM", total=None)
            began = time.monotonic()
            engine = _open(sources[role], settings, seed)
            progress.update(starting, total=1, completed=1, description=f"{role}: vLLM started")
            try:
                _record(profile, run, engine, time.monotonic() - began, settings)
                save()
                points = [point_of(m) for m in run.points]
                weights = list(bench.predict(specs[role], cost, points, run.chunk_tokens)
                               * [bench.DECODE_STEPS + 1 if p.kind == "decode" else 1 for p in points])
                total = sum(w * max(0, repeats - len(m.samples)) for w, m in zip(weights, run.points))
                task = progress.add_task(f"{role}: measuring {len(points)} points × {repeats}", total=total)
                more = None  # the bar for rounds past `repeats`, in measured seconds, made when one starts
                for i, round_ in measure_run(engine, run, repeats=repeats, min_seconds=min_seconds, seed=seed,
                                             save=save):
                    if round_ < repeats:
                        progress.advance(task, weights[i])
                        continue
                    if more is None:
                        progress.update(task, completed=total)
                        more = progress.add_task(f"{role}: more rounds until {min_seconds:.0f} s measured",
                                                 total=min_seconds)
                    progress.update(more, completed=min(run.engine_seconds, min_seconds))
                progress.update(task, completed=total)
                if more is not None:
                    progress.update(more, completed=min_seconds)
            finally:
                engine.close()


def _open(source: str, settings: dict, seed: int):
    from calibration.engine.vllm_engine import open_engine

    # Room for the longest context, the verified tokens, the decode steps, and a margin for the warm-up.
    longest = settings["max_context"] + settings["max_k"] + 1 + bench.DECODE_STEPS + bench.WARMUP_TOKENS
    return open_engine(source, dummy_weights=settings["dummy_weights"], max_model_len=longest, seed=seed)


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
                  "startup_seconds": round(startup_s, 1)}
