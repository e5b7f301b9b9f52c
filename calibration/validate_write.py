"""`specadvisor validate`: run (or reload) the grid, predict, and write validation.json, validation.md and plots.

The JSON keeps every raw measurement, so `--from-json` re-analyses a run without an engine (after a cost-model
change, or with another calibration). Files are written atomically; the folder's other files are left alone.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from advisor.errors import InputError

from .validate import Grid, Measured, Run, run_grid
from .validate_report import Costs, analyse

REPORT_VERSION = 1


def parse_list(text: str, flag: str, kind=int) -> tuple:
    try:
        return tuple(kind(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise InputError(f"{flag} takes comma-separated numbers, got {text!r}") from None


def load_costs(calibration: str | None, target_dir: Path, draft_dir: Path) -> Costs:
    """The pair's calibrated costs: from --calibration, else a profile in profiles/calibrations that matches the
    pair's architecture on this hardware. Validation without measured costs would test the datasheet, not the
    model: refuse, and say how to calibrate."""
    from advisor.profiles import load_hardware, load_model

    from .hardware import detect_hardware
    from .profile import costs_for

    target, draft = load_model(str(target_dir)), load_model(str(draft_dir))
    slug, _ = detect_hardware("auto")
    try:
        hw = load_hardware(slug)
    except InputError:
        hw = None
    found = costs_for(calibration, target, draft, hw) if (calibration or hw is not None) else None
    if found is None:
        raise InputError("no calibration matches the test pair on this machine: run `specadvisor make-test-pair --out "
                         "DIR --scale 0.1` and `specadvisor calibrate --target DIR/target --draft DIR/draft "
                         "--dummy-weights --out FILE`, then `specadvisor validate --from-json OUT/validation.json "
                         "--calibration FILE`")
    target_cost, draft_cost, source = found
    return Costs(target=target, draft=draft, target_cost=target_cost, draft_cost=draft_cost, source=source)


def validate_command(*, out: str, scales: str, ks: str, batches: str, prompt_lens: str, out_lens: str,
                     temperatures: str, ngram: bool, calibration: str | None, from_json: str | None,
                     passes: int = 1, more_passes: int = 0) -> list[str]:
    out_dir = Path(out)
    if more_passes < 0 or (more_passes and from_json is None):
        raise InputError("--more-passes N (N >= 1) adds passes to the measurements of --from-json FILE")
    if from_json is not None:
        grid, measured, meta = read_measurements(from_json)
        if more_passes:
            grid, measured, meta = add_passes(grid, measured, meta, more_passes)
            _write_measurements(out_dir, grid, measured.runs, meta)
    else:
        grid = Grid(scales=parse_list(scales, "--scales", float), ks=parse_list(ks, "--ks"),
                    batches=parse_list(batches, "--batches"), prompt_lens=parse_list(prompt_lens, "--prompt-lens"),
                    out_lens=parse_list(out_lens, "--out-lens"),
                    temperatures=parse_list(temperatures, "--temperatures", float), ngram=ngram, passes=passes)
        load_before = os.getloadavg()
        measured = run_grid(grid, progress=_progress)
        meta = {"engine": measured.engine, "measured": _now(), "device": _device(),
                "load_average": {"before": load_before, "after": os.getloadavg()}}
        _write_measurements(out_dir, grid, measured.runs, meta)
    return write_report(out_dir, grid, measured.runs, grid_costs(grid, calibration), meta)


def add_passes(grid: Grid, measured: Measured, meta: dict, more: int) -> tuple[Grid, Measured, dict]:
    """Run `more` passes of an earlier run's grid (the same generated pairs and prompts: same seed) and append
    them, numbered on from the earlier ones and alternating direction as if they had run in one go. When they ran
    is kept in meta["more_passes"]: a machine that changed in between shows as a larger pass spread."""
    from dataclasses import replace

    done = max((r.pass_index for r in measured.runs), default=-1) + 1
    grid = replace(grid, passes=done + more)
    load_before = os.getloadavg()
    runs = measured.runs + run_grid(grid, progress=_progress, first_pass=done).runs
    added = {"passes": [done + 1, done + more], "measured": _now(), "device": _device(),
             "load_average": {"before": load_before, "after": os.getloadavg()}}
    return grid, Measured(runs=runs), {**meta, "more_passes": [*meta.get("more_passes", []), added]}


def _write_measurements(out_dir: Path, grid: Grid, runs: list[Run], meta: dict) -> None:
    """The raw measurements first: if no calibration applies, they survive for --from-json."""
    from advisor.files import write_atomic

    write_atomic(out_dir / "validation.json", json.dumps(_document(grid, runs, meta), indent=1) + "\n")


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def grid_costs(grid: Grid, calibration: str | None) -> Costs:
    """The calibrated costs of the grid's test pair (every pair of a grid has the same architecture)."""
    import tempfile

    from .testpair import PairSpec, make_pair

    with tempfile.TemporaryDirectory() as scratch:  # configs only: the costs depend on the architecture
        pair = make_pair(scratch, PairSpec(scale=grid.scales[0], draft_layers=grid.draft_layers, seed=grid.seed))
        return load_costs(calibration, pair.target_dir, pair.draft_dir)


def write_report(out_dir: Path, grid: Grid, runs: list[Run], costs: Costs, meta: dict) -> list[str]:
    from advisor.files import write_atomic

    from .validate_markdown import markdown
    from .validate_plots import alpha_figure, parity_figure

    costs, rows, decided, summary = analyse(runs, costs)
    doc = {**_document(grid, runs, meta), "cost_source": costs.source,
           "costs": {"target": asdict(costs.target_cost), "draft": asdict(costs.draft_cost),
                     "spec_overhead": costs.spec_overhead, "spec_seq_overhead": costs.spec_seq_overhead},
           "summary": summary, "comparison": rows, "decisions": decided}
    written = [write_atomic(out_dir / "validation.json", json.dumps(doc, indent=1, default=_plain) + "\n"),
               write_atomic(out_dir / "validation.md", markdown(doc))]
    from advisor.plot_style import save

    written.append(Path(save(parity_figure(rows), out_dir / "predicted-vs-measured.png")))
    written.append(Path(save(alpha_figure(rows, costs), out_dir / "speedup-vs-alpha.png")))
    return [str(p) for p in written]


def _document(grid: Grid, runs: list[Run], meta: dict) -> dict:
    return {"kind": "specadvisor-validation", "version": REPORT_VERSION, **meta, "grid": asdict(grid),
            "runs": [asdict(r) for r in runs]}


def read_measurements(path: str) -> tuple[Grid, Measured, dict]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read validation measurements {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "specadvisor-validation":
        raise InputError(f"{path} is not a specadvisor validation.json")
    grid = Grid(**{k: tuple(v) if isinstance(v, list) else v for k, v in doc["grid"].items()})
    runs = [Run(**{**r, "per_position": tuple(r["per_position"])}) for r in doc["runs"]]
    meta = {k: doc[k] for k in ("engine", "measured", "device", "load_average", "more_passes") if k in doc}
    return grid, Measured(runs=runs), meta


def _device() -> dict:
    from .bench import system_info

    return system_info()


def _plain(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON: {type(value).__name__}")
