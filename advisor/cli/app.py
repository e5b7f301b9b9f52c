"""The `specadvisor` command line: a thin layer over build -> advise -> report.

Every user error ends as one line on stderr and exit code 2 (see `main`). Command modules keep heavy imports
(vLLM, scipy, matplotlib) inside their functions so `specadvisor recommend` starts fast.
"""

from __future__ import annotations

import signal
import sys
from enum import Enum
from typing import Optional

import typer

try:  # typer >= 0.26 vendors its own copy of click; older releases use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

from advisor.cli import fast_path
from advisor.cli.acceptance import acceptance_app
from advisor.cli.bench import check
from advisor.cli.calibrate import calibrate
from advisor.cli.needs import GPU_MEMORY_HELP, engine_imports, require
from advisor.cli.observe import observe
from advisor.cli.options import Method, scenario_command  # noqa: F401  (Method: kept importable from here)
from advisor.cli.preflight import preflight
from advisor.cli.scale import deployment_options
from advisor.errors import InputError

# rich_markup_mode=None: click's plain help, which wraps to the terminal; rich's panels cut long option names and
# defaults with "…" at 80 columns.
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="Should I turn on speculative decoding in vLLM, with which k, and what will I gain?")
app.add_typer(acceptance_app, name="acceptance", short_help="Measure acceptance: metrics, vLLM, or n-gram replay.")


class Format(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    llm_d = "llm-d"  # at scale: the llm-d Kustomize overlay and scheduler values (advisor.scale.llmd)
    ray = "ray"  # at scale: a Ray Serve LLM config (advisor.scale.ray_serve)


@app.command(short_help="Go/no-go, k, and the vLLM flags for one workload (or every method compared).")
@scenario_command(compares=True)
@deployment_options
def recommend(
    scenario: "Scenario",
    format: Format = typer.Option(Format.text, "--format", help="text, json or markdown; at scale also llm-d or "
                                  "ray (deployment files)."),
) -> None:
    """Go/no-go on speculative decoding for one workload, with the vLLM flags to paste. --method compare: every
    method that applies, each at its best k, and the one its interval separates from the rest (if any). Beyond one
    GPU group (`advisor.cli.scale`: DP, EP, PD, nodes), per decode GPU with one command per node."""
    from advisor.advice.advise import advise
    from advisor.advice.recommendation import Recommendation, from_advice
    from advisor.render.comparison import comparison_markdown, comparison_text
    from advisor.render.report import markdown, text

    result = scenario if isinstance(scenario, Recommendation) else from_advice(advise(scenario))
    if format is Format.json:
        from advisor.advice.recommendation_json import to_json

        typer.echo(to_json(result))
    elif format is Format.markdown:
        typer.echo(comparison_markdown(result) + markdown(result), nl=False)
    else:
        typer.echo(comparison_text(result) + text(result), nl=False)


class PlotKind(str, Enum):
    alpha = "alpha"
    batch = "batch"
    lengths = "lengths"
    memory = "memory"


@app.command(short_help="Draw a scenario: vs α, batch, lengths, or memory.")
@scenario_command
def plot(
    scenario: "Scenario",
    kind: PlotKind = typer.Argument(..., help="alpha: speedup vs α per k; batch: vs concurrency; lengths: go/no-go "
                                    "map over prompt x output length; memory: the VRAM budget."),
    out: Optional[str] = typer.Option(None, "--out", help="PNG or SVG file (the suffix decides). "
                                      "Default: specadvisor-KIND.png"),
) -> None:
    """Draw one picture of a scenario (same flags as `recommend`)."""
    from advisor.advice.advise import advise
    from advisor.render.plot_style import save
    from advisor.render.plots import FIGURES

    if out is not None and not out.strip():
        raise InputError("--out \"\": give a file name ending .png or .svg, or leave --out out")
    typer.echo(save(FIGURES[kind.value](advise(scenario)), out or f"specadvisor-{kind.value}.png"))


@app.command(short_help="Size a fleet for a traffic mix (a plan file).")
def review(
    plan: str = typer.Argument(..., help="Plan file (TOML): workloads and candidate deployments."),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for review.md, review.html and the plots. "
                            "Default: ./PLAN-review (PLAN: the plan file's name). Refused when a file it would "
                            "write is one the plan reads: nothing is overwritten."),
) -> None:
    """Capacity-planning review of a traffic mix: per workload and deployment, the verdict, the request rate
    within the SLOs, GPUs needed with and without speculation, and $ per million output tokens. At most 5000
    workload x deployment pairs; progress is shown on a terminal."""
    from advisor.cli.progress import Progress
    from advisor.render.review_files import write_review
    from advisor.render.wrap import paragraph, terminal_width

    width = terminal_width()
    with Progress() as shown:
        def progress(done: int, pairs: int, workload: str, deployment: str) -> None:
            shown(f"review: {done} of {pairs} pairs done; now {workload} on {deployment}")

        lines = write_review(plan, out, progress)
    for line in lines:
        typer.echo(paragraph(line, width, rest="  "))


FAMILY_HELP = ("llama (8 layers × 512), qwen2 (12 layers × 640, 2 KV heads), mixtral (sparse MoE, 32 experts top-4, "
               "as --moe) or mixtral-wide (8 experts top-2, the same expert weights).")
MOE_HELP = "A sparse MoE pair: Mixtral-style, 32 experts, top-4 (the same as --family mixtral)."


@app.command("make-test-pair", short_help="Write a tiny Llama, Qwen2-style or MoE pair with a chosen acceptance.")
def make_test_pair(
    out: str = typer.Option(..., "--out", help="Folder for target/ and draft/ (safetensors + config.json)."),
    scale: float = typer.Option(..., help="Residual-branch scale of the target: 0.01 -> acceptance ~0.9, 0.4 -> ~0.1."),
    family: str = typer.Option("llama", help=FAMILY_HELP),
    moe: bool = typer.Option(False, "--moe", help=MOE_HELP),
    draft_layers: Optional[int] = typer.Option(None, help="The draft is the target's first N layers (default: 1 for "
                                                          "llama, 2 otherwise; all of them: an exact copy)."),
    seed: int = typer.Option(0, help="Weight seed (the same seed gives the same bytes)."),
) -> None:
    """Write a tiny target/draft pair (Llama, Qwen2-style or a sparse MoE) with generated weights and a dialled
    acceptance rate."""
    if not 0 <= seed < 2**63:  # torch's generator takes a 64-bit seed: beyond it a ValueError, not a message
        raise InputError(f"--seed must be in 0..{2**63 - 1}, got {seed}")
    require("make-test-pair", "torch", "safetensors")
    with engine_imports("make-test-pair"):
        from calibration.engine.testpair import PairSpec, family_arch, make_pair, pair_family

        arch, layers = family_arch(pair_family(family, moe), draft_layers)
        pair = make_pair(out, PairSpec(scale=scale, draft_layers=layers, seed=seed, arch=arch))
    typer.echo(f"target {pair.target_dir}\ndraft  {pair.draft_dir}")


@app.command(short_help="Compare predictions with real vLLM runs.")
def validate(
    out: str = typer.Option("validation", "--out", help="Folder for validation.json, validation.md and the plots."),
    scales: str = typer.Option("0.4,0.1,0.02,0.01", help="Test-pair residual scales (one acceptance level each)."),
    ks: str = typer.Option("1,2,3,5", help="Draft lengths."),
    batches: str = typer.Option("1,4,16", help="Batch sizes."),
    prompt_lens: str = typer.Option("32,128", help="Prompt lengths, tokens."),
    out_lens: str = typer.Option("64", help="Output lengths, tokens."),
    temperatures: str = typer.Option("0", help="Sampling temperatures (0: greedy)."),
    ngram: bool = typer.Option(True, help="Also validate the n-gram proposer."),
    family: str = typer.Option("llama", help="Test-pair architecture: llama, qwen2, mixtral or mixtral-wide (see make-test-pair)."),
    moe: bool = typer.Option(False, "--moe", help=MOE_HELP),
    draft_layers: Optional[int] = typer.Option(None, help="Draft depth in target layers (default: the family's)."),
    num_gpus: int = typer.Option(1, "--num-gpus", help="Tensor parallelism of every engine (on a CPU: worker "
                                                     "processes over groups of its cores)."),
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
    gpu_memory_utilization: Optional[float] = typer.Option(None, help=GPU_MEMORY_HELP),
) -> None:
    """Run baseline and speculative vLLM engines over a grid and compare the advisor's predictions with them."""
    if from_json is None or more_passes:  # re-analysing saved measurements runs no engine
        require("validate", "vllm")
    with engine_imports("validate"):
        from calibration.engine.testpair import pair_family
        from calibration.validation.write import validate_command

        for line in validate_command(out=out, scales=scales, ks=ks, batches=batches, prompt_lens=prompt_lens,
                                     out_lens=out_lens, temperatures=temperatures, ngram=ngram, passes=passes,
                                     calibration=calibration, from_json=from_json, more_passes=more_passes,
                                     resume=resume, repeats=repeats, family=pair_family(family, moe),
                                     draft_layers=draft_layers,
                                     num_gpus=num_gpus, gpu_memory_utilization=gpu_memory_utilization):
            typer.echo(line)


app.command("calibrate", short_help="Fit the cost model to your vLLM's step times.")(calibrate)
app.command("check", short_help="Predicted vs measured on your own vllm bench serve runs.")(check)
app.command("observe", short_help="Advice from the traffic a running vLLM server gets.")(observe)
app.command("preflight", short_help="Check a vllm serve command against what vLLM 0.32 refuses or drops.")(preflight)


class Kind(str, Enum):
    hardware = "hardware"
    models = "models"
    methods = "methods"
    tasks = "tasks"
    drafters = "drafters"


@app.command("list", short_help="List GPU and model profiles, speculative methods, drafters, or task priors.")
def list_profiles(kind: Optional[Kind] = typer.Argument(None, help="hardware, models, methods, drafters or "
                                                                   "tasks.")) -> None:
    """List the shipped GPU and model profiles, the speculative methods, the drafter catalog (published acceptance
    per drafter), or the --task acceptance priors."""
    if kind is None:  # click's own message for a missing choice is tab-indented and names no example
        raise InputError("say what to list: hardware, models, methods, drafters or tasks (e.g. `specadvisor list "
                         "hardware`)")
    import importlib.util

    from advisor.render.drafter_listing import drafter_lines, task_lines
    from advisor.render.listing import hardware_lines, method_lines, model_lines
    from advisor.render.wrap import paragraph, terminal_width

    if kind is Kind.methods:
        lines = method_lines()
    elif kind is Kind.hardware:
        lines = hardware_lines()
    elif kind is Kind.drafters:
        lines = drafter_lines()
    elif kind is Kind.tasks:
        lines = task_lines()
    else:
        # the model_types a config.json may have, once advisor/model/shape/config_reader.py exposes them
        supported = ()
        if importlib.util.find_spec("advisor.model.shape.config_reader") is not None:
            from advisor.model.shape.architectures_2026 import DESCRIBED_2026
            from advisor.model.shape.config_reader import SUPPORTED_MODEL_TYPES

            supported = (*SUPPORTED_MODEL_TYPES, *DESCRIBED_2026)
        lines = model_lines(supported)
    width = terminal_width()
    for line in lines:
        typer.echo(paragraph(line, width, rest=" " * 4))


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app; turn every user error (ours or click's) into one line on stderr, exit 2.
    `recommend` with plain flags skips typer's per-parameter coercion (`fast_path`: ~0.3 s of its start-up)."""
    args = argv if argv is not None else sys.argv[1:]
    fast = fast_path.parse(recommend, args[1:]) if args[:1] == ["recommend"] else None
    try:
        if fast is not None:
            recommend(**fast)
            return 0
        code = typer.main.get_command(app).main(args=args, prog_name="specadvisor", standalone_mode=False)
    except KeyboardInterrupt:  # as click turns it into Abort
        return _fail("aborted")
    except InputError as exc:
        return _fail(str(exc))
    except click_errors.NoArgsIsHelpError as exc:
        typer.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click_errors.ClickException as exc:  # UsageError among them; click indents its lists with tabs
        return _fail(" ".join(exc.format_message().split()))
    except typer.Abort:
        return _fail("aborted")
    return code if isinstance(code, int) else 0  # typer.Exit(n) (Ctrl-C is Exit(130)) comes back as n


def _fail(message: str) -> int:
    """One line whatever the message quotes (a label's newline, raw bytes): control characters escaped."""
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in message)
    print(f"specadvisor: error: {shown}", file=sys.stderr)
    return 2


def run() -> None:
    """The console script. A SIGTERM (`kill`, a scheduler stopping the job) unwinds like Ctrl-C does: the engines
    `calibrate` and `validate` started are shut down on the way out, not left running without their parent, and
    what was measured is already saved (both resume with --resume)."""
    signal.signal(signal.SIGTERM, _terminated)
    raise SystemExit(main())


def _terminated(signum: int, _frame) -> None:
    print("specadvisor: terminated", file=sys.stderr)
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    run()
