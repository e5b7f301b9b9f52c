"""The summary benchmarks/gpu_smoke.sh prints last, whatever failed before it: the steps and their exit codes, what
each engine ran (runner, CUDA-graph mode, async scheduling, attention backend, block size) and how long it took to
start, the calibration's held-out errors (also when they missed the fit's gate) and validation's errors.
    python benchmarks/gpu_smoke_summary.py OUT_DIR [STEP=RC:SECONDS ...]
It reads whatever OUT_DIR holds (a partial or unfit cal.json, a validation.json without a report) and never fails
for a missing file: the run it summarises may have stopped anywhere.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _pct(value) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def ran(c: dict) -> str:
    """What an engine ran, from its recorded `vllm_config` (calibration/engine/platform.py resolved_config)."""
    return (f"runner {c.get('model_runner')}, CUDA graphs {c.get('cudagraph_mode')}, async scheduling "
            f"{c.get('async_scheduling')}, attention {c.get('attention_backend')}, block {c.get('block_size')}")


def calibration_lines(cal: dict | None) -> list[str]:
    if cal is None:
        return ["calibrate: no cal.json written"]
    lines = [f"calibration on {cal.get('device', {}).get('gpu')} ({cal.get('hardware')}, vLLM "
             f"{cal.get('vllm_version') or '?'}): status {cal.get('status')}"
             + (f" ({cal['note']})" if cal.get("note") else "")]
    for role in ("target", "draft"):
        run = cal.get(role) or {}
        engine = run.get("engine") or {}
        if not engine:
            lines.append(f"  {role}: its engine never started")
            continue
        lines.append(f"  {role}: started in {engine.get('startup_seconds', '?')} s; "
                     f"{ran(engine.get('vllm_config', {}))}")
        for q, verify in sorted(engine.get("verify_engines", {}).items()):
            lines.append(f"  {role} verify q={q}: started in {verify.get('startup_seconds', '?')} s; "
                         f"{ran(verify.get('vllm_config', {}))}")
        modes = engine.get("graph_modes")
        if modes:
            lines.append("    timed as: " + ", ".join(f"{kind} {mode}" for kind, mode in sorted(modes.items())))
        fit = run.get("fit")
        if fit:
            lines.append(f"    held-out error: median {_pct(fit.get('heldout_median_error'))}, worst "
                         f"{_pct(fit.get('heldout_worst_error'))} (the gate: median within 15%)")
        else:
            measured = sum(bool(m.get("samples")) for m in run.get("points", []))
            lines.append(f"    no fit: {measured} of {len(run.get('points', []))} points measured")
    return lines


def validation_lines(val: dict | None) -> list[str]:
    if val is None:
        return ["validate: no validation.json written"]
    engine = val.get("engine", {})
    lines = [f"validate {method}: {ran(c)}" for method, c in engine.get("vllm_config", {}).items()]
    lines += [f"  {label}: started in {seconds} s" for label, seconds in engine.get("startup_seconds", {}).items()]
    s = val.get("summary")
    if s is None:
        lines.append(f"validation: {len(val.get('runs', []))} runs measured, no report (see logs/validate.log)")
        return lines
    costs = val.get("costs", {})
    lines.append(f"validation: TPOT error median {_pct(s.get('tpot_median_abs_error'))}, p90 "
                 f"{_pct(s.get('tpot_p90_abs_error'))}; e2e error median {_pct(s.get('e2e_median_abs_error'))}; "
                 f"failed points {s.get('failed_points')}")
    lines.append(f"n-gram: measured sync-scheduling host time {1e3 * costs.get('sync_host', 0.0):.3f} ms/step, "
                 f"bookkeeping {1e3 * costs.get('spec_overhead', 0.0):.3f} ms/step")
    return lines


def summary(out: Path, steps: list[str]) -> str:
    lines = ["", "== summary"]
    for entry in steps:
        name, _, rest = entry.partition("=")
        rc, _, seconds = rest.partition(":")
        lines.append(f"step {name}: {'ok' if rc == '0' else f'FAILED (exit {rc})'} in {seconds} s")
    lines += calibration_lines(_read(out / "cal.json"))
    lines += validation_lines(_read(out / "validation" / "validation.json"))
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]), sys.argv[2:]))
