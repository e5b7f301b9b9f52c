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

from advisor.cli.acceptance import acceptance_app
from advisor.cli.calibrate import calibrate
from advisor.cli.options import Method, scenario_command  # noqa: F401  (Method: kept importable from here)
from advisor.errors import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Should I turn on speculative decoding in vLLM, with which k, and what will I gain?")
app.add_typer(acceptance_app, name="acceptance")


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"


@app.command()
@scenario_command
def recommend(
    scenario: "Scenario",
    format: Format = typer.Option(Format.text, "--format", help="text, json or markdown."),
) -> None:
    """Go/no-go on speculative decoding for one workload, with the vLLM flags to paste."""
    from advisor.advise import advise
    from advisor.recommendation import from_advice
    from advisor.render.report import markdown, text

    result = from_advice(advise(scenario))
    if format is Format.json:
        from advisor.recommendation_json import to_json

        typer.echo(to_json(result))
    elif format is Format.markdown:
        typer.echo(markdown(result), nl=False)
    else:
        typer.echo(text(result), nl=False)


class PlotKind(str, Enum):
    alpha = "alpha"
    batch = "batch"
    lengths = "lengths"
    memory = "memory"


@app.command()
@scenario_command
def plot(
    scenario: "Scenario",
    kind: PlotKind = typer.Argument(..., help="alpha: speedup vs α per k; batch: vs concurrency; lengths: go/no-go "
                                    "map over prompt x output length; memory: the VRAM budget."),
    out: Optional[str] = typer.Option(None, "--out", help="PNG or SVG file (the suffix decides). "
                                      "Default: specadvisor-KIND.png"),
) -> None:
    """Draw one picture of a scenario (same flags as `recommend`)."""
    from advisor.advise import advise
    from advisor.render.plot_style import save
    from advisor.render.plots import FIGURES

    typer.echo(save(FIGURES[kind.value](advise(scenario)), out or f"specadvisor-{kind.value}.png"))


@app.command()
def review(
    plan: str = typer.Argument(..., help="Plan file (TOML): workloads and candidate deployments."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for review.md, review.html and the plots. "
                            "Default: ./PLAN-review (PLAN: the plan file's name)."),
) -> None:
    """Capacity-planning review of a traffic mix: per workload and deployment, the verdict, the request rate
    within the SLOs, GPUs needed with and without speculation, and $ per million output tokens."""
    from advisor.render.review_files import write_review

    for line in write_review(plan, out):
        typer.echo(line)


@app.command("make-test-pair")
def make_test_pair(
    out: str = typer.Option(..., "--out", help="Folder for target/ and draft/ (safetensors + config.json)."),
    scale: float = typer.Option(..., help="Residual-branch scale of the target: 0.01 -> acceptance ~0.9, 0.4 -> ~0.1."),
    draft_layers: int = typer.Option(1, help="The draft is the target's first N layers (8 = an exact copy)."),
    seed: int = typer.Option(0, help="Weight seed (the same seed gives the same bytes)."),
) -> None:
    """Write a tiny Llama target/draft pair with generated weights and a dialled acceptance rate."""
    from calibration.engine.testpair import PairSpec, make_pair

    pair = make_pair(out, PairSpec(scale=scale, draft_layers=draft_layers, seed=seed))
    typer.echo(f"target {pair.target_dir}\ndraft  {pair.draft_dir}")


@app.command()
def validate(
    out: str = typer.Option("validation", "--out", help="Folder for validation.json, validation.md and the plots."),
    scales: str = typer.Option("0.4,0.1,0.02,0.01", help="Test-pair residual scales (one acceptance level each)."),
    ks: str = typer.Option("1,2,3,5", help="Draft lengths."),
    batches: str = typer.Option("1,4,16", help="Batch sizes."),
    prompt_lens: str = typer.Option("32,128", help="Prompt lengths, tokens."),
    out_lens: str = typer.Option("64", help="Output lengths, tokens."),
    temperatures: str = typer.Option("0", help="Sampling temperatures (0: greedy)."),
    ngram: bool = typer.Option(True, help="Also validate the n-gram proposer."),
    passes: int = typer.Option(1, help="Run the whole grid this many times on fresh engines; each point takes its "
                               "median (3 or more on a shared CPU: there one engine instance can run 20-30% "
                               "faster than the next)."),
    repeats: int = typer.Option(1, help="Generate calls per shape on each engine (rounds with their own prompts); "
                                "a point takes the median over passes × repeats."),
    calibration: Optional[str] = typer.Option(None, help="Calibration profile of the test pair (default: a matching "
                                              "one in profiles/calibrations)."),
    from_json: Optional[str] = typer.Option(None, help="Re-analyse the measurements in this validation.json."),
    more_passes: int = typer.Option(0, help="With --from-json or --resume: run this many more passes of its grid "
                                    "and add them (each point then takes its median over all passes)."),
    resume: bool = typer.Option(False, help="Continue the interrupted run saved in --out (its validation.json is "
                                "rewritten after every engine)."),
) -> None:
    """Run baseline and speculative vLLM engines over a grid and compare the advisor's predictions with them."""
    from calibration.validation.write import validate_command

    for line in validate_command(out=out, scales=scales, ks=ks, batches=batches, prompt_lens=prompt_lens,
                                 out_lens=out_lens, temperatures=temperatures, ngram=ngram, passes=passes,
                                 calibration=calibration, from_json=from_json, more_passes=more_passes,
                                 resume=resume, repeats=repeats):
        typer.echo(line)


app.command("calibrate")(calibrate)


class Kind(str, Enum):
    hardware = "hardware"
    models = "models"


@app.command("list")
def list_profiles(kind: Kind = typer.Argument(..., help="hardware or models")) -> None:
    """List the shipped profiles."""
    from advisor.profiles.catalog import names

    for name in names(kind.value):
        typer.echo(name)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; turn every user error (ours or click's) into one line on stderr, exit 2."""
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv if argv is not None else sys.argv[1:], prog_name="specadvisor",
                            standalone_mode=False)
    except InputError as exc:
        return _fail(str(exc))
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click_errors.UsageError as exc:
        return _fail(exc.format_message().replace("\n", " "))
    except click_errors.ClickException as exc:
        return _fail(exc.format_message())
    except typer.Abort:
        return _fail("aborted")
    return code if isinstance(code, int) else 0  # typer.Exit(n) (Ctrl-C is Exit(130)) comes back as n


def _fail(message: str) -> int:
    print(f"specadvisor: error: {message}", file=sys.stderr)
    return 2


def run() -> None:
    """The console script."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()
