"""What benchmarks/gpu_smoke.sh will start, said before it starts anything: the engines each step opens, counted by
the code that opens them, and their start-up time. On a GPU each start takes 15-75 s (weights, torch.compile,
CUDA-graph capture; calibration/calibrate/budget.py START_SECONDS_GPU), and the starts, not the measuring, fill
the 10-minute device call the script is sized for.
    python benchmarks/gpu_smoke_plan.py calibrate FLAGS... -- validate FLAGS...
The flags are the ones the script gives each command, read by the command's own parser (advisor/cli/app.py).
"""

from __future__ import annotations

import sys
from dataclasses import replace

from typer.main import get_command

from advisor.cli.app import app
from advisor.vllm.runner import async_scheduling_default
from calibration.calibrate.budget import START_SECONDS_GPU, engine_starts
from calibration.calibrate.grid import Grid
from calibration.calibrate.run import GPU_DEFAULTS
from calibration.engine.testpair import pair_family
from calibration.validation.grid import Grid as ValidationGrid
from calibration.validation.write import new_grid


def flags(command: str, args: list[str]) -> dict:
    """`args` as `specadvisor COMMAND` parses them (its defaults filled in)."""
    return get_command(app).commands[command].make_context(command, list(args)).params


def calibration_grid(args: list[str]) -> tuple[Grid, bool]:
    """The grid `calibrate` times on a GPU with these flags (before any re-sizing to the budget, which changes batch
    and context, never the verification widths), and whether it has a draft."""
    f = flags("calibrate", args)
    grid = Grid(max_batch=f["max_batch"] or GPU_DEFAULTS["max_batch"],
                max_context=f["max_context"] or GPU_DEFAULTS["max_context"], max_k=f["max_k"],
                dummy_weights=f["dummy_weights"], seed=0, tensor_parallel_size=f["num_gpus"], uniform_verify=True)
    return grid, f["draft"] is not None


def calibration_engines(args: list[str]) -> tuple[int, list[int]]:
    """(engines `calibrate` starts on a GPU, the verification widths it times one engine each)."""
    grid, draft = calibration_grid(args)
    points = {role: grid.points(role) for role in ("target", "draft")[:1 + draft]}
    widths = sorted({p.new_tokens for p in points["target"] if p.kind == "verify" and p.new_tokens > 1})
    return engine_starts(points, gpu=True), widths


def validation_grid(args: list[str]) -> ValidationGrid:
    """The grid `validate` runs on a GPU with these flags, the synchronous baseline included where vLLM schedules
    ngram synchronously beside an async baseline (calibration/validation/write.py `sync_ngram`)."""
    f = flags("validate", args)
    grid = new_grid(scales=f["scales"], ks=f["ks"], batches=f["batches"], prompt_lens=f["prompt_lens"],
                    out_lens=f["out_lens"], temperatures=f["temperatures"], ngram=f["ngram"], passes=f["passes"],
                    repeats=f["repeats"], family=pair_family(f["family"], f["moe"]), draft_layers=f["draft_layers"],
                    num_gpus=f["num_gpus"])
    sync = async_scheduling_default(None, cpu=False) != async_scheduling_default("ngram", cpu=False)
    return replace(grid, sync_baseline=f["ngram"] and sync)


def validation_engines(args: list[str]) -> list[str]:
    """One label per engine `validate` starts on a GPU, in order, over all its passes."""
    grid = validation_grid(args)
    return [f"{method}" + (f" k={k}" if k else "") for _ in range(grid.passes) for method, _, k in grid.engines()]


def plan(calibrate_args: list[str], validate_args: list[str]) -> str:
    starts, widths = calibration_engines(calibrate_args)
    engines = validation_engines(validate_args)
    total = starts + len(engines)
    return "\n".join([
        f"plan: {total} engine starts at ~{START_SECONDS_GPU:.0f} s each on a GPU: about "
        f"{total * START_SECONDS_GPU / 60:.0f} minutes of start-up before any measuring",
        f"  calibrate: {starts} engines: the target, one per verification width q = "
        f"{', '.join(map(str, widths))}" + (", the draft" if starts > 1 + len(widths) else ""),
        f"  validate: {len(engines)} engines: {', '.join(engines)}"])


def split(argv: list[str]) -> tuple[list[str], list[str]]:
    """`calibrate FLAGS... -- validate FLAGS...` into the two flag lists."""
    cut = argv.index("--")
    if argv[0] != "calibrate" or argv[cut + 1] != "validate":
        raise SystemExit("usage: gpu_smoke_plan.py calibrate FLAGS... -- validate FLAGS...")
    return argv[1:cut], argv[cut + 2:]


if __name__ == "__main__":
    print(plan(*split(sys.argv[1:])))
