"""`specadvisor calibrate`: its flags; the work is in calibration/calibrate/run.py, imported when the command runs
(it brings vLLM's engine layer, scipy and pydantic, which `specadvisor --help` and `recommend` must not pay for)."""

from __future__ import annotations

import os
from typing import Optional

import typer

from advisor.cli.needs import GPU_MEMORY_HELP, engine_imports, require
from advisor.cli.options import Method
from advisor.errors import InputError

# Each model is measured at least this long (more rounds when its grid is quicker). Its rounds are the samples a
# median picks from, so they must outlast a burst of load: the target's ~17 s of CPU rounds never missed in CI,
# the tiny draft's ~3 s missed the 10% held-out bar in 3 CI runs (see calibration/calibrate/measure.py).
MIN_SECONDS = 20.0


def calibrate(
    target: Optional[str] = typer.Option(None, help="Target model: a profile name or a directory with config.json "
                                         "(with --from-bench: default the runs' --model)."),
    draft: Optional[str] = typer.Option(None, help="Draft model: a profile name or a directory (omit for a target-only run)."),
    dummy_weights: bool = typer.Option(False, help="Time the architecture from config.json alone (random weights, "
                                       "no download, token-id prompts)."),
    max_batch: Optional[int] = typer.Option(None, help="Largest batch timed (default 64 on a GPU, 16 on a CPU; "
                                            "shrunk to the budget)."),
    max_context: Optional[int] = typer.Option(None, help="Longest cached context timed, tokens (default 4096 GPU, "
                                              "1024 CPU; shrunk to the budget)."),
    max_k: int = typer.Option(7, help="Verification steps are timed for q = 1 .. max_k + 1 new tokens."),
    repeats: Optional[int] = typer.Option(None, help="Rounds over the grid; each point's time is the median "
                                          "(default 3 on a GPU, 5 on a CPU)."),
    min_seconds: float = typer.Option(MIN_SECONDS, help="Keep adding rounds until each model has been measured this "
                                      "long, so a burst of load from another process spoils only a minority of them."),
    budget_seconds: float = typer.Option(120.0, help="Engine time the default grid is sized to (start-up excluded)."),
    out: Optional[str] = typer.Option(None, help="Profile to write (default profiles/calibrations/<hw>__<models>.json)."),
    resume: bool = typer.Option(False, help="Continue the interrupted run saved in --out (same flags)."),
    gpu: str = typer.Option("auto", help="Hardware profile the timings belong to (auto: NVML, or this CPU)."),
    num_gpus: int = typer.Option(1, help="Tensor-parallel size: target and draft each run on this many GPUs through "
                                 "vLLM's multiprocess executor (on a CPU, worker processes over groups of its cores), "
                                 "and vLLM's all-reduce is timed for the cost model's link terms."),
    from_bench: Optional[list[str]] = typer.Option(None, "--from-bench", help="Fit to these `vllm bench serve "
                                                   "--save-result` / `vllm bench latency --output-json` files "
                                                   "instead of timing vLLM (repeat the flag for each file)."),
    method: Method = typer.Option(Method.draft_model, help="With --from-bench: how the speculative runs drafted."),
    metrics_before: Optional[str] = typer.Option(None, help="With --from-bench: /metrics scraped just before the "
                                                 "speculative serve run (file or URL), for exact acceptance counts."),
    metrics_after: Optional[str] = typer.Option(None, help="With --from-bench: /metrics scraped just after it."),
    gpu_memory_utilization: Optional[float] = typer.Option(None, help=GPU_MEMORY_HELP),
) -> None:
    """Measure prefill, decode and verification step times through vLLM and fit the advisor's cost model (or, with
    --from-bench, fit it to benchmark runs you already have)."""
    if from_bench and num_gpus != 1:
        raise InputError("--num-gpus times vLLM at that tensor-parallel size; it does not apply to --from-bench")
    if from_bench:  # no engine runs: the bench files are the measurements
        from advisor.cli.bench import calibrate_from_bench

        for line in calibrate_from_bench(from_bench, target=target, draft=draft, method=method.value, gpu=gpu,
                                         out=out, metrics_before=metrics_before, metrics_after=metrics_after):
            typer.echo(line)
        return
    if target is None:
        raise InputError("calibrate needs --target (or --from-bench FILE)")
    # vLLM's INFO logs would bury the progress bar; the user can still ask for them with VLLM_LOGGING_LEVEL.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("PYTHONWARNINGS", "ignore::FutureWarning")
    require("calibrate", "vllm")
    with engine_imports("calibrate"):
        from calibration.calibrate.run import run_calibration, summary

        path = run_calibration(target=target, draft=draft, dummy_weights=dummy_weights, max_batch=max_batch,
                               max_context=max_context, max_k=max_k, repeats=repeats, min_seconds=min_seconds,
                               budget_seconds=budget_seconds, out=out, resume=resume, gpu=gpu, num_gpus=num_gpus,
                               gpu_memory_utilization=gpu_memory_utilization)
    typer.echo(summary(path))
