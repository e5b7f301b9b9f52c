"""`specadvisor calibrate --from-bench FILE...`: read the runs, fit, and write a normal calibration profile.

The profile is the one `calibrate` writes (calibration/calibrate/profile_file.py), so `recommend` reads it the same
way and picks it up from profiles/calibrations when hardware and architectures match. What differs is recorded in
it: no microbenchmark points (`points` is empty), the runs and every observation with its fitted prediction under
`settings`, which parameters the runs identified and why the others kept their defaults, and as the held-out error
the leave-one-out error over the runs' numbers (in-sample when there is only one number).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from advisor.errors import InputError
from advisor.model.cost.enginecost import EngineCost, calibrated_fields, is_cpu
from advisor.profiles.calibrated import arch_of, calibrations_dir, shown
from advisor.profiles.catalog import load_hardware, load_model
from calibration.calibrate import profile_file as prof
from calibration.calibrate.fit import MAX_HELDOUT_MEDIAN_ERROR
from calibration.calibrate.machine import CPU_PLANNING_COST, detect_hardware
from calibration.calibrate.run import default_name, model_config
from calibration.from_bench.fit import BenchFit, fit_runs
from calibration.from_bench.runs import BenchRun

FORMAT = "vllm bench"  # settings["source"] of a profile fitted from bench files


def models_of(runs: list[BenchRun], target: str | None, draft: str | None, method: str):
    """(target source, target spec, draft source, draft spec): --target defaults to the runs' --model."""
    served = sorted({run.model for run in runs})
    if len(served) > 1:
        raise InputError(f"the bench files ran different models ({', '.join(served)}): give runs of one model")
    target = target or served[0]
    try:
        target_spec = load_model(target)
    except InputError as exc:
        raise InputError(f"{exc} (the runs served {served[0]}; pass --target NAME|DIR)") from None
    speculative = any(run.speculative for run in runs)
    if speculative and method != "ngram" and draft is None:
        raise InputError("the runs used speculation, and the bench files do not say with which draft: pass --draft "
                         "NAME|DIR (or --method ngram)")
    draft_spec = load_model(draft) if draft is not None and method != "ngram" else None
    return target, target_spec, (draft if draft_spec is not None else None), draft_spec


def default_start(hardware: str) -> tuple[EngineCost, str, dict[str, str]]:
    """The values kept for parameters the runs do not identify: the hardware's datasheet roofline with the
    advisor's default efficiencies and overheads (a CPU outside the profiles: calibrate's generic CPU guess); and
    the fields that do not apply on this hardware (CUDA-graph floors on a CPU), which are not fitted."""
    try:
        hw = load_hardware(hardware)
    except InputError:
        return CPU_PLANNING_COST, "a generic CPU guess", {}
    fixed = ({f.name: "does not apply on a CPU engine" for f in calibrated_fields() if f.how.cpu is not None}
             if is_cpu(hw) else {})
    return EngineCost.from_datasheet(hw), f"the {hw.slug} datasheet defaults", fixed


def calibrate_from_bench(runs: list[BenchRun], *, target: str | None, draft: str | None, method: str, gpu: str,
                         out: str | None) -> tuple[Path, list[str]]:
    """Fit and save; (the profile's path, the summary lines to print)."""
    target, target_spec, draft, draft_spec = models_of(runs, target, draft, method)
    hardware, device = detect_hardware(gpu)
    start, basis, fixed = default_start(hardware)
    specs = {"target": target_spec, **({"draft": draft_spec} if draft_spec is not None else {})}
    path = Path(out) if out else calibrations_dir() / default_name(hardware, specs)
    if path.exists():
        raise InputError(f"{path} exists: pass --out another file (a fit from bench files is never merged into one)")
    fit = fit_runs(runs, target_spec, draft_spec, method, start, fixed)
    stored = _fit_record(fit)
    profile = prof.new(
        status="fitted", created=datetime.now(timezone.utc).isoformat(timespec="seconds"), hardware=hardware,
        device={**device, "source": "vllm bench result files"},
        vllm_version="unknown (vllm bench files do not record it)",
        settings={"source": FORMAT, "method": method, "runs": [run.describe() for run in runs],
                  "fitted": list(fit.fitted), "kept_defaults": dict(fit.kept), "defaults": basis,
                  "observations": [{"file": o.run.path, "quantity": o.quantity, "measured_s": o.measured,
                                    "fitted_s": p} for o, p in zip(fit.observations, fit.predicted)],
                  "heldout": "leave-one-out over the runs' numbers" if fit.loo_errors else "in-sample (one number)",
                  "draft_cost": "the target's: one engine runs both"},
        target=_model_run(target, target_spec, stored),
        draft=_model_run(draft, draft_spec, stored) if draft_spec is not None else None)
    prof.save(profile, path)
    return path, summary(path, fit, basis, target, draft)


def _fit_record(fit: BenchFit) -> dict:
    errors = np.abs(fit.errors)
    held = np.abs(np.array(fit.loo_errors)) if fit.loo_errors else errors
    return {**{f.name: getattr(fit.cost, f.name) for f in calibrated_fields()},
            "train_median_error": float(np.median(errors)), "train_worst_error": float(errors.max()),
            "heldout_median_error": float(np.median(held)), "heldout_worst_error": float(held.max())}


def _model_run(source: str, spec, fit: dict) -> dict:
    return {"name": spec.name, "source": source, "arch": arch_of(spec), "config": model_config(source),
            "points": [], "fit": fit}


def shown_value(name: str, value: float) -> str:
    """A field's value in the unit people quote it in (its fit unit says which)."""
    how = {f.name: f.how for f in calibrated_fields()}[name]
    value = 0.0 if abs(value) < 1e-9 * (how.unit or 1.0) else value  # a fit at its bound of 0 reads as 0
    if "bandwidth" in name:
        return f"{value / 1e9:.3g} GB/s"
    if name == "flops":
        return f"{value / 1e12:.3g} TFLOP/s"
    unit = {1e-3: "ms", 1e-6: "µs"}.get(how.unit)
    return f"{value / how.unit:.3g} {unit}" if unit else f"{value:.3g}"


def summary(path: Path, fit: BenchFit, basis: str, target: str, draft: str | None) -> list[str]:
    c = fit.cost
    lines = [f"calibration saved to {shown(path)}",
             "  fitted from the runs: " + ", ".join(f"{n} {shown_value(n, getattr(c, n))}" for n in fit.fitted)]
    reasons: dict[str, list[str]] = {}
    for name, why in fit.kept.items():
        reasons.setdefault(why, []).append(f"{name} {shown_value(name, getattr(c, name))}")
    lines.append(f"  kept at {basis}:")
    lines += [f"    {', '.join(names)} ({why})" for why, names in reasons.items()]
    for o, p, e in zip(fit.observations, fit.predicted, fit.errors):
        lines.append(f"  {o.run.path} {o.quantity.upper()}: measured {o.measured * 1e3:.4g} ms, fitted "
                     f"{p * 1e3:.4g} ms ({100 * e:+.1f}%)")
    if not fit.loo_errors:
        lines.append("  one measured number: the fit reproduces it exactly and says nothing yet about other shapes")
    if fit.loo_errors:
        loo = float(np.median(np.abs(fit.loo_errors)))
        lines.append(f"  leave-one-out median error {100 * loo:.1f}% (each number predicted by a fit without it)"
                     + (f": over {100 * MAX_HELDOUT_MEDIAN_ERROR:.0f}%, so check it against another run "
                        "(`specadvisor check`) before trusting it" if loo > MAX_HELDOUT_MEDIAN_ERROR else ""))
    lines.append(f"use it: specadvisor recommend --target {target} " + (f"--draft {draft} " if draft else "")
                 + f"--calibration {shown(path)} ...")
    return lines
