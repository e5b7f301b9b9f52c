"""`specadvisor observe URL|WINDOW.json`: watch a vLLM server's /metrics for a while and advise for the traffic it
got. Thin: recording (observe.scrape), the traffic (observe.traffic), the pair (observe.setup), the advice
(observe.answer), the report (render.observe_report) and the picture (render.observe_plot) live elsewhere."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from advisor.errors import InputError

# Every output flag says this (issue 49: `observe W.json --save-plan W.json` replaced the window with a plan).
NOT_AN_INPUT = "Refused when it names a file this command reads or another output: nothing is overwritten."


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


def observe(
    source: str = typer.Argument(..., help="The server (http://host:8000, its /metrics is read; each read is given "
                                 "up after 10 s) or a window saved with --record."),
    seconds: float = typer.Option(60.0, "--seconds", help="How long to watch: at most 86400 (a day), at most "
                                  "100000 samples of --every."),
    every: float = typer.Option(1.0, "--every", help="Seconds between samples of the running-requests gauge."),
    target: Optional[str] = typer.Option(None, "--target", help="The served model: a profile name or a directory "
                                         "with config.json (default: the profile the metrics' model name matches)."),
    draft: Optional[str] = typer.Option(None, "--draft", help="Draft model / EAGLE head (profile or directory)."),
    method: str = typer.Option("draft_model", "--method", help="How drafts are (or would be) proposed: "
                               "draft_model, eagle, eagle3, mtp, ngram or another of `specadvisor list methods`."),
    gpu: str = typer.Option("auto", "--gpu", help="GPU profile (`specadvisor list hardware`), or auto (NVML)."),
    num_gpus: int = typer.Option(1, "--num-gpus", help="The server's tensor-parallel size."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature the traffic uses."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="Acceptance α when the server does not speculate "
                                          "(default: the --task prior)."),
    task: Optional[str] = typer.Option(None, "--task", help="Acceptance prior (`specadvisor list tasks`)."),
    max_num_seqs: Optional[int] = typer.Option(None, "--max-num-seqs", help="The server's --max-num-seqs (default: "
                                               "vLLM's for the GPU); its running-requests gauge never exceeds it."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help="Calibration profile of this pair."),
    record_to: Optional[str] = typer.Option(None, "--record", help="Also save the window watched on a server (both "
                                            "scrapes and the gauge samples) to this JSON file, for `specadvisor "
                                            "observe FILE`. " + NOT_AN_INPUT),
    save_plan: Optional[str] = typer.Option(None, "--save-plan", help="Write the traffic as a plan (TOML) that "
                                            "`specadvisor review` reads. " + NOT_AN_INPUT),
    format: Format = typer.Option(Format.text, "--format", help="text, json or markdown."),
    plot: Optional[str] = typer.Option(None, "--plot", help="PNG or SVG: the traffic mix and the predicted gain per "
                                       "concurrency. " + NOT_AN_INPUT),
) -> None:
    """Advise on speculative decoding from the traffic a running vLLM server really gets: its /metrics at the
    start and end of a window, the running requests every --every seconds. A data-parallel server's engines are
    read one by one (vLLM's engine label) and the advice is per DP rank."""
    from advisor.cli.options import check_counts
    from advisor.cli.progress import Progress
    from advisor.fileio.atomic_write import refuse_overwriting
    from advisor.observe import scrape
    from advisor.observe.answer import answer
    from advisor.observe.plan_file import write_plan
    from advisor.observe.setup import scenario_for, served_model
    from advisor.observe.traffic import traffic
    from advisor.render import observe_report

    check_counts(dict(num_gpus=num_gpus, max_num_seqs=max_num_seqs))
    live = source.startswith(("http://", "https://"))
    if record_to is not None and not live:
        raise InputError(f"--record saves the window watched on a live server; {source} is a saved window already")
    refuse_overwriting({"--record": record_to, "--save-plan": save_plan, "--plot": plot},
                       {"the window": None if live else source, "the calibration": calibration})
    if plot is not None:  # a wrong suffix is said before the window is watched, not after
        from advisor.render.plot_style import FORMATS

        if Path(plot).suffix.lower() not in FORMATS:
            raise InputError(f"--plot {plot}: the suffix picks the format; use .png or .svg")
    if live:
        with Progress() as shown:
            def progress(elapsed: float, total: float, sample) -> None:
                shown(f"watching {source}: {elapsed:.0f} of {total:.0f} s, {sample.running:.0f} requests running")

            window = scrape.record(source, seconds, every, progress=progress)
        if record_to is not None:
            scrape.save(window, record_to)
    else:
        window = scrape.load(source)
    seen = traffic(window)
    scenario = scenario_for(seen, target=target, draft=draft, method=method, gpu=gpu, num_gpus=num_gpus,
                            temperature=temperature, alpha=alpha, task=task, calibration=calibration,
                            max_num_seqs=max_num_seqs)
    result = answer(seen, scenario)
    if save_plan is not None:
        write_plan(result, Path(save_plan), target=target or served_model(seen.model), draft=draft, gpu=gpu,
                   method=method, num_gpus=num_gpus, alpha=alpha, task=task)
    if plot is not None:
        from advisor.render.observe_plot import figure
        from advisor.render.plot_style import save

        save(figure(result), plot)
    if format is Format.json:
        typer.echo(observe_report.to_json(result))
    elif format is Format.markdown:
        typer.echo(observe_report.markdown(result), nl=False)
    else:
        typer.echo(observe_report.text(result), nl=False)
