"""`specadvisor validate`: run (or reload) the grid, predict, and write validation.json, validation.md and plots.

The JSON keeps every raw measurement, so `--from-json` re-analyses a run without an engine (after a cost-model
change, or with another calibration). Files are written atomically; the folder's other files are left alone.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import asdict, replace
from datetime import datetime, timezone
from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.atomic_write import write_atomic
from advisor.fileio.json_input import read_json
from advisor.profiles.calibrated import costs_for
from advisor.profiles.catalog import load_hardware, load_model
from advisor.render.plot_style import save
from advisor.vllm.runner import async_scheduling_default
from calibration.calibrate.machine import detect_hardware, device_info
from calibration.engine.platform import on_cpu
from calibration.engine.testpair import family_arch, write_configs
from calibration.validation.grid import Grid, Run
from calibration.validation.markdown import markdown
from calibration.validation.plots import alpha_figure, parity_figure
from calibration.validation.report import Costs, analyse
from calibration.validation.run import Measured, run_grid

REPORT_VERSION = 1


def parse_list(text: str, flag: str, kind=int) -> tuple:
    try:
        return tuple(kind(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"{flag} takes comma-separated numbers, got {text!r}") from None


def load_costs(calibration: str | None, target_dir: Path, draft_dir: Path, tp: int = 1) -> Costs:
    """The pair's calibrated costs: from --calibration, else a profile in profiles/calibrations that matches the
    pair's architecture on this hardware. Validation without measured costs would test the datasheet, not the
    model: refuse, and say how to calibrate."""
    target, draft = load_model(str(target_dir)), load_model(str(draft_dir))
    try:  # a GPU no profile describes is refused by --gpu auto: then only --calibration can say
        hw = load_hardware(detect_hardware("auto")[0])
    except InputError:
        hw = None
    found = costs_for(calibration, target, draft, hw, tp) if (calibration or hw is not None) else None
    if found is None:
        raise InputError("no calibration matches the test pair on this machine: run `specadvisor make-test-pair --out "
                         "DIR --scale 0.1` and `specadvisor calibrate --target DIR/target --draft DIR/draft "
                         "--dummy-weights --out FILE`, then `specadvisor validate --from-json OUT/validation.json "
                         "--calibration FILE` (with --family and --num-gpus as the run had them)")
    target_cost, draft_cost, source = found
    return Costs(target=target, draft=draft, target_cost=target_cost, draft_cost=draft_cost, source=source, tp=tp)


def validate_command(*, out: str, scales: str, ks: str, batches: str, prompt_lens: str, out_lens: str,
                     temperatures: str, ngram: bool, calibration: str | None, from_json: str | None,
                     passes: int = 1, more_passes: int = 0, resume: bool = False, repeats: int = 1,
                     family: str = "llama", draft_layers: int | None = None, num_gpus: int = 1,
                     gpu_memory_utilization: float | None = None) -> list[str]:
    out_dir = Path(out)
    if more_passes < 0 or (more_passes and from_json is None and not resume):
        raise InputError("--more-passes N (N >= 1) adds passes to earlier measurements: give --from-json FILE "
                         "or --resume")
    if resume and from_json is None and not (out_dir / "validation.json").exists():
        raise InputError(f"--resume: there is no {out_dir / 'validation.json'} to continue")
    from_json = str(out_dir / "validation.json") if resume and from_json is None else from_json
    if from_json is not None:
        grid, measured, meta = read_measurements(from_json)
        if more_passes or resume:
            share = gpu_memory_utilization or meta.get("gpu_memory_utilization")  # as the interrupted run had it
            grid, measured, meta = measure_more(grid, measured, meta, more_passes, out_dir, share)
    else:
        grid = new_grid(scales=scales, ks=ks, batches=batches, prompt_lens=prompt_lens, out_lens=out_lens,
                        temperatures=temperatures, ngram=ngram, passes=passes, repeats=repeats, family=family,
                        draft_layers=draft_layers, num_gpus=num_gpus)
        if (out_dir / "validation.json").exists():
            raise InputError(f"{out_dir / 'validation.json'} exists: pass --resume to continue it, or another --out")
        costs = grid_costs(grid, calibration)  # before measuring: no calibration, no report, so no run
        grid = replace(grid, sync_baseline=ngram and sync_ngram())
        load_before = os.getloadavg()
        device = device_info()
        measured = run_grid(grid, progress=_progress, gpu_memory_utilization=gpu_memory_utilization,
                            saved=lambda m: _write_measurements(out_dir, grid, m.runs, {
                                "engine": m.engine, "measured": _now(), "device": device, "partial": True,
                                **({"gpu_memory_utilization": gpu_memory_utilization}
                                   if gpu_memory_utilization else {})}))
        meta = {"engine": measured.engine, "measured": _now(), "device": device,
                "load_average": {"before": load_before, "after": os.getloadavg()},
                **({"gpu_memory_utilization": gpu_memory_utilization} if gpu_memory_utilization else {})}
        _write_measurements(out_dir, grid, measured.runs, meta)
        return write_report(out_dir, grid, measured.runs, costs, meta)
    return write_report(out_dir, grid, measured.runs, grid_costs(grid, calibration), meta)


def new_grid(*, scales: str, ks: str, batches: str, prompt_lens: str, out_lens: str, temperatures: str, ngram: bool,
             passes: int, repeats: int, family: str, draft_layers: int | None, num_gpus: int) -> Grid:
    """The grid validate's flags ask for (the synchronous baseline is added where vLLM runs one: `sync_ngram`)."""
    return Grid(scales=parse_list(scales, "--scales", float), ks=parse_list(ks, "--ks"),
                batches=parse_list(batches, "--batches"), prompt_lens=parse_list(prompt_lens, "--prompt-lens"),
                out_lens=parse_list(out_lens, "--out-lens"),
                temperatures=parse_list(temperatures, "--temperatures", float), ngram=ngram, passes=passes,
                repeats=repeats, family=family, tensor_parallel_size=num_gpus,
                draft_layers=family_arch(family, draft_layers)[1])


def sync_ngram() -> bool:
    """Whether vLLM here runs ngram synchronously beside an async baseline (a GPU: advisor.vllm.runner
    `async_scheduling_default`), so validate adds a synchronous baseline to compare n-gram with."""
    cpu = on_cpu()
    return async_scheduling_default(None, cpu=cpu) != async_scheduling_default("ngram", cpu=cpu)


def measure_more(grid: Grid, measured: Measured, meta: dict, more: int, out_dir: Path,
                 gpu_memory_utilization: float | None = None) -> tuple[Grid, Measured, dict]:
    """Measure what an earlier run of this grid lacks: the engines an interruption left out, then `more` passes
    on top, numbered on from the earlier ones and alternating direction as if they had run in one go (the same
    pairs and prompts: same seed), each engine taking `gpu_memory_utilization` of the GPU. When they ran is logged
    in meta["more_passes"]: a machine that changed in between shows as a larger pass spread."""
    grid = replace(grid, passes=grid.passes + more)
    load_before, device = os.getloadavg(), device_info()

    def with_log(m: Measured, **fields) -> dict:
        engines = (len(m.runs) - len(measured.runs)) // grid.runs_per_engine()
        entry = {"passes": grid.passes, "engines": engines, "measured": _now(), "device": device, **fields}
        return {**meta, "engine": meta.get("engine") or m.engine,
                "more_passes": [*meta.get("more_passes", []), *([entry] if engines else [])]}

    new = run_grid(grid, progress=_progress, before=measured.runs, gpu_memory_utilization=gpu_memory_utilization,
                   saved=lambda m: _write_measurements(out_dir, grid, m.runs, {**with_log(m), "partial": True}))
    meta = with_log(new, load_average={"before": load_before, "after": os.getloadavg()})
    _write_measurements(out_dir, grid, new.runs, meta)
    return grid, Measured(runs=new.runs), meta


def _write_measurements(out_dir: Path, grid: Grid, runs: list[Run], meta: dict) -> None:
    """The raw measurements, before any analysis: if no calibration applies (or the run is interrupted), they
    survive for --from-json (or --resume)."""
    write_atomic(out_dir / "validation.json", json.dumps(_document(grid, runs, meta), indent=1) + "\n")


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def grid_costs(grid: Grid, calibration: str | None) -> Costs:
    """The calibrated costs of the grid's test pair (every pair of a grid has the same architecture)."""
    with tempfile.TemporaryDirectory() as scratch:  # configs only: the costs depend on the architecture
        pair = write_configs(scratch, grid.pair_spec(grid.scales[0]))
        return load_costs(calibration, pair.target_dir, pair.draft_dir, grid.tensor_parallel_size)


def write_report(out_dir: Path, grid: Grid, runs: list[Run], costs: Costs, meta: dict) -> list[str]:
    costs, rows, decided, summary = analyse(runs, costs)
    doc = {**_document(grid, runs, meta), "cost_source": costs.source,
           "costs": {"target": asdict(costs.target_cost), "draft": asdict(costs.draft_cost),
                     "spec_overhead": costs.spec_overhead, "spec_seq_overhead": costs.spec_seq_overhead,
                     "sync_host": costs.sync_host},
           "summary": summary, "comparison": rows, "decisions": decided}
    written = [write_atomic(out_dir / "validation.json", json.dumps(doc, indent=1, default=_plain) + "\n"),
               write_atomic(out_dir / "validation.md", markdown(doc))]
    written.append(Path(save(parity_figure(rows), out_dir / "predicted-vs-measured.png")))
    written.append(Path(save(alpha_figure(rows, costs), out_dir / "speedup-vs-alpha.png")))
    return [str(p) for p in written]


def _document(grid: Grid, runs: list[Run], meta: dict) -> dict:
    return {"kind": "specadvisor-validation", "version": REPORT_VERSION, **meta, "grid": asdict(grid),
            "runs": [asdict(r) for r in runs]}


def read_measurements(path: str) -> tuple[Grid, Measured, dict]:
    doc = read_json(path, "a specadvisor validation.json")
    if not isinstance(doc, dict) or doc.get("kind") != "specadvisor-validation":
        raise InputError(f"{path} is not a specadvisor validation.json")
    grid = Grid(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc["grid"].items()})
    runs = [Run(**{**r, "per_position": tuple(r["per_position"])}) for r in doc["runs"]]
    meta = {k: doc[k] for k in ("engine", "measured", "device", "load_average", "more_passes", "gpu_memory_utilization")
            if k in doc}
    return grid, Measured(runs=runs), meta


def _plain(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")
