"""`specadvisor check` and `calibrate --from-bench`: the user's own `vllm bench` result files as a check of the
advisor and as calibration. The work is in calibration/from_bench/, imported when a command runs (it brings
scipy and pydantic, which `specadvisor --help` and `recommend` must not pay for)."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from advisor.cli.options import Method
from advisor.errors import InputError


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def _runs(files: list[str], before: Optional[str], after: Optional[str]):
    """The runs in `files`; /metrics scrapes, when given, replace the counts of the one speculative serve run."""
    from calibration.from_bench.read import read_run

    runs = [read_run(path) for path in files]
    if before is None and after is None:
        return runs
    from calibration.from_bench.scrapes import with_scrapes

    speculative = [i for i, run in enumerate(runs) if run.speculative and run.kind == "serve"]
    if len(speculative) != 1:
        raise InputError(f"--metrics-before/--metrics-after belong to one speculative `vllm bench serve` run; "
                         f"{len(speculative)} of the files are such runs")
    i = speculative[0]
    runs[i] = with_scrapes(runs[i], before, after)
    return runs


def calibrate_from_bench(files: list[str], *, target: Optional[str], draft: Optional[str], method: str, gpu: str,
                         out: Optional[str], metrics_before: Optional[str], metrics_after: Optional[str]) -> list[str]:
    """`calibrate --from-bench`: the summary lines to print."""
    from calibration.from_bench.profile import calibrate_from_bench as run

    _, lines = run(_runs(files, metrics_before, metrics_after), target=target, draft=draft, method=method, gpu=gpu,
                   out=out)
    return lines


def check(
    baseline: str = typer.Option(..., help="`vllm bench serve --save-result` JSON of the run without speculation."),
    spec: str = typer.Option(..., help="The same workload's run with --speculative-config on the server."),
    metrics_before: Optional[str] = typer.Option(None, help="/metrics scraped just before the speculative run (a "
                                                 "file or URL): exact acceptance counts instead of the file's rates."),
    metrics_after: Optional[str] = typer.Option(None, help="/metrics scraped just after it."),
    target: Optional[str] = typer.Option(None, help="Target: profile name or directory (default: the runs' --model)."),
    draft: Optional[str] = typer.Option(None, help="The draft model or EAGLE head the server ran (bench files do "
                                        "not record it)."),
    method: Method = typer.Option(Method.draft_model, help="How the server drafted."),
    gpu: str = typer.Option("auto", help="Hardware profile the runs were made on (auto: NVML, or this CPU)."),
    calibration: Optional[str] = typer.Option(None, help="Calibration profile (default: a matching one in "
                                              "profiles/calibrations, else the datasheet)."),
    format: Format = typer.Option(Format.text, "--format", help="text, json or markdown."),
) -> None:
    """The advisor's prediction for a baseline and a speculative `vllm bench serve` run, next to what they measured:
    TTFT, TPOT, ITL, latency and throughput, the errors, and whether the verdict would have been right."""
    from advisor.advice.resolve import check_pair, engine_costs
    from advisor.model.cost.speculative import Setup
    from advisor.profiles.catalog import load_hardware
    from calibration.calibrate.machine import detect_hardware
    from calibration.from_bench.check import check_runs, run_check
    from calibration.from_bench.check_report import markdown, text, to_json
    from calibration.from_bench.profile import models_of

    base_run, spec_run = _runs([baseline], None, None)[0], _runs([spec], metrics_before, metrics_after)[0]
    check_runs(base_run, spec_run)  # before the models: a wrong file is the likelier mistake
    _, target_spec, _, draft_spec = models_of([base_run, spec_run], target, draft, method.value)
    check_pair(target_spec, draft_spec, method.value, 1)
    hw = load_hardware(detect_hardware(gpu)[0])
    target_cost, draft_cost, source, cost_error = engine_costs(hw, target_spec, draft_spec, calibration, "bf16")
    setup = Setup(target=target_spec, target_cost=target_cost, method=method.value, draft=draft_spec,
                  draft_cost=draft_cost)
    result = run_check(base_run, spec_run, setup, source, cost_error)
    render = {Format.json: to_json, Format.markdown: markdown, Format.text: text}[format]
    typer.echo(render(result), nl=format is Format.json)
