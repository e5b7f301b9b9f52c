"""`specadvisor review`: load the plan, review it, draw the pictures, write review.md + review.html + PNGs."""

from __future__ import annotations

from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.atomic_write import refuse_overwriting, write_atomic
from advisor.render.plot_style import render
from advisor.render.review_document import blocks, html, markdown
from advisor.render.review_plots import FIGURES
from advisor.review.evaluate import review
from advisor.review.plan import load_plan

PICTURES = {"overview": "GPUs and $ per million output tokens, with and without speculation",
            "curves": "TPOT vs request rate per replica, with the SLOs"}


def write_review(plan_path: str, out: str | None, progress=None) -> list[str]:
    """Write the review and return what to tell the user (the files, and the summary per pair); `progress` as
    `review.evaluate.review` calls it."""
    if out is not None and not out.strip():
        raise InputError("--out \"\": give a folder name, or leave --out out")
    plan = load_plan(plan_path)
    folder = Path(out) if out else Path.cwd() / (Path(plan_path).stem + "-review")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out {folder} is a file: give a folder")
    files = {name: f"{name}.png" for name in PICTURES}
    base = Path(plan_path).parent
    reads = {"the plan": plan_path,
             **{f"the metrics of workload {w.name!r}": base / w.acceptance.metrics for w in plan.workload
                if w.acceptance.metrics},
             **{f"the calibration of deployment {d.name!r}": base / d.calibration for d in plan.deployment
                if d.calibration}}
    refuse_overwriting({f"--out's {name}": folder / name for name in (*files.values(), "review.md", "review.html")},
                       reads)
    r = review(plan, plan_path, progress)
    pngs = {name: render(FIGURES[name](r), "png") for name in PICTURES}
    doc = blocks(r, PICTURES)
    written = [write_atomic(folder / files[name], data) for name, data in pngs.items()]
    written.append(write_atomic(folder / "review.md", markdown(doc, files)))
    written.append(write_atomic(folder / "review.html", html(doc, pngs)))
    lines = [f"{c.workload} on {c.deployment}: {c.recommendation} ({c.reason})" for c in r.cells]
    return lines + [f"wrote {p}" for p in written]
