"""The `specadvisor` command line: a thin layer over build -> advise -> report.

Every user error ends as one line on stderr and exit code 2 (see `main`). Command modules keep heavy imports
(vLLM, scipy, matplotlib) inside their functions so `specadvisor recommend` starts fast.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Optional

import typer

try:  # typer >= 0.26 vendors its own copy of click; older releases use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

from .errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Should I turn on speculative decoding in vLLM, with which k, and what will I gain?")


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


class Method(str, Enum):
    draft_model = "draft_model"
    ngram = "ngram"
    eagle = "eagle"


@app.command()
def recommend(
    prompt_len: int = typer.Option(..., help="Prompt tokens per request."),
    out_len: int = typer.Option(..., help="Output tokens per request."),
    target: str = typer.Option("llama-3.1-8b-instruct", help="Target: a profile name or a directory with config.json."),
    draft: Optional[str] = typer.Option(None, help="Draft model / EAGLE head: profile name or directory. "
                                        "Default: Llama-3.2-1B for the default target, else a same-family model."),
    method: Method = typer.Option(Method.draft_model, help="How drafts are proposed."),
    gpu: str = typer.Option("rtx-pro-6000-blackwell", help="GPU profile name (`specadvisor list hardware`)."),
    num_gpus: int = typer.Option(1, help="GPUs for tensor parallelism."),
    batch: int = typer.Option(1, help="Concurrent requests."),
    temperature: float = typer.Option(0.0, help="Sampling temperature served."),
    k: Optional[int] = typer.Option(None, help="Evaluate this draft length (0..32) instead of choosing one."),
    gpu_memory_utilization: float = typer.Option(0.9, help="vLLM's --gpu-memory-utilization."),
    alpha: Optional[float] = typer.Option(None, help="Per-token acceptance probability α (Leviathan et al.)."),
    acceptance_rate: Optional[float] = typer.Option(None, help="vLLM's accepted/drafted tokens (needs --measured-k)."),
    acceptance_length: Optional[float] = typer.Option(None, help="Mean tokens per step incl. bonus (needs --measured-k)."),
    measured_k: Optional[int] = typer.Option(None, help="The k that --acceptance-rate/--acceptance-length were measured at."),
    acceptance_per_pos: Optional[str] = typer.Option(None, help="vLLM per-position acceptance rates a1,a2,..."),
    task: Optional[str] = typer.Option(None, help="Acceptance prior: structured|code|json|sql|chat|summarization|rag|creative."),
    measured_temperature: Optional[float] = typer.Option(None, help="Temperature the acceptance was measured at."),
    cost_ratio: Optional[float] = typer.Option(None, help="Expert override: draft step time / target step time."),
    calibration: Optional[str] = typer.Option(None, help="Calibration profile JSON from `specadvisor calibrate`."),
    format: Format = typer.Option(Format.text, "--format", help="text, json or markdown."),
) -> None:
    """Go/no-go on speculative decoding for one workload, with the vLLM flags to paste."""
    from .advise import advise
    from .build import AcceptanceInput, build_scenario
    from .report import markdown, text
    from .summary import summarize

    scenario = build_scenario(
        target=target, draft=draft, method=method.value, gpu=gpu, num_gpus=num_gpus, batch=batch,
        prompt_len=prompt_len, out_len=out_len, temperature=temperature, k=k,
        gpu_memory_utilization=gpu_memory_utilization, cost_ratio=cost_ratio, calibration=calibration,
        acceptance=AcceptanceInput(alpha=alpha, rate=acceptance_rate, length=acceptance_length, measured_k=measured_k,
                                   per_position=acceptance_per_pos, task=task,
                                   measured_temperature=measured_temperature))
    result = summarize(advise(scenario))
    if format is Format.json:
        from .schema import validated

        typer.echo(validated(result).model_dump_json(indent=2))
    elif format is Format.markdown:
        typer.echo(markdown(result), nl=False)
    else:
        typer.echo(text(result), nl=False)


class Kind(str, Enum):
    hardware = "hardware"
    models = "models"


@app.command("list")
def list_profiles(kind: Kind = typer.Argument(..., help="hardware or models")) -> None:
    """List the shipped profiles."""
    from .profiles import names

    for name in names(kind.value):
        typer.echo(name)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; turn every user error (ours or click's) into one line on stderr, exit 2."""
    command = typer.main.get_command(app)
    try:
        command.main(args=argv if argv is not None else sys.argv[1:], prog_name="specadvisor", standalone_mode=False)
    except InputError as exc:
        return _fail(str(exc))
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click_errors.UsageError as exc:
        return _fail(exc.format_message().replace("\n", " "))
    except click_errors.ClickException as exc:
        return _fail(exc.format_message())
    except click_errors.Abort:
        return _fail("aborted")
    except KeyboardInterrupt:
        return _fail("interrupted")
    return 0


def _fail(message: str) -> int:
    print(f"specadvisor: error: {message}", file=sys.stderr)
    return 2


def run() -> None:
    """The console script."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()
