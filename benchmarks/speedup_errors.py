"""The cost model's error on published speedups it was not fitted to: profiles/speedup-error.json (the spread
`recommend` widens a speedup's interval to) and its section of docs/datasheet-fit.md.

    python -m benchmarks.speedup_errors [--fits F.json]  # F.json: the LOSO fits `python -m benchmarks.datasheet_fit
                                                         # --fits F.json` kept (else refitted); writes the file and
                                                         # the doc's section (after datasheet_fit, datasheet_errors)
    python -m benchmarks.speedup_errors --fits F.json --print

Every published speedup with a known acceptance (benchmarks/speedup_rows.py) is predicted with the parameters of
the datasheet fit that never saw its source (its leave-one-source-out fit; a source outside the fit: the shipped
defaults), at the published acceptance; its residual is r = log(published / predicted). The rows are grouped by the
target's class (dense, MoE, hybrid), the regime `recommend` takes a speedup's spread from, and reported by method,
engine and GPU generation too. A class's spread is sigma = q80(|r|) / z80 (Weibull plotting position, as
benchmarks/datasheet_errors.py); a class with fewer than MIN_ROWS rows borrows the widest of its own and its
neighbours' (`NEIGHBOURS`: the classes it departs from or that depart from it by one step) and says so. Coverage is
the share of published speedups inside predicted x exp(+-z80 sigma): in every group of MIN_ROWS rows or more (by
class, method, engine or GPU generation) its own sigma's interval must hold 70-90% of its rows
(tests/benchmarks/test_speedup_errors.py recomputes it from the committed file's fits); the share the class spreads
`recommend` uses hold is reported beside it. Where no published run of its class (as vLLM 0.32 runs it) or method exists, an
answer takes the widest spread and says so (`seen` in the file; advisor/model/error/speedup.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from advisor.fileio.atomic_write import write_atomic  # noqa: E402
from advisor.model.error.speedup import CLASSES, MIN_ROWS, NEIGHBOURS  # noqa: E402
from advisor.model.uncertainty import LEVEL, Z80  # noqa: E402
from benchmarks import datasheet_fit as df  # noqa: E402
from benchmarks import speedup_rows as sr  # noqa: E402
from benchmarks.datasheet_errors import sigma_of  # noqa: E402

OUT = df.ROOT / "profiles" / "speedup-error.json"
GROUPS = ("class", "method", "engine", "gpu")  # what a row is grouped by: SpeedupRow's model_class, method, ...
COVERAGE_BAND = (0.70, 0.90)  # issue 46: the 80% interval holds 70-90% of the rows of every group this large


def attribute(row: sr.SpeedupRow, group: str) -> str:
    return row.model_class if group == "class" else getattr(row, group)


def class_sigmas(r: np.ndarray, classes: np.ndarray) -> dict[str, dict]:
    """Per class: its own sigma (None under 2 rows), and the sigma it uses: its own with MIN_ROWS rows or more,
    else the widest of its own and its neighbours' own, naming the class it borrowed from."""
    own = {c: (sigma_of(r[classes == c]) if (classes == c).sum() >= 2 else None) for c in CLASSES}
    out = {}
    for c in CLASSES:
        n = int((classes == c).sum())
        if n >= MIN_ROWS:
            out[c] = {"rows": n, "sigma_own": own[c], "sigma_log": own[c], "borrowed_from": None}
            continue
        candidates = [(s, name) for name in (c, *NEIGHBOURS[c]) if (s := own[name]) is not None]
        sigma, name = max(candidates) if candidates else (max(s for s in own.values() if s is not None), "all")
        out[c] = {"rows": n, "sigma_own": own[c], "sigma_log": sigma, "borrowed_from": name if name != c else None}
    return out


def evaluate(rows: list[sr.SpeedupRow], values: dict[str, dict]) -> dict:
    """Each row predicted with its source's leave-one-source-out parameters (`values`; a source outside the fit:
    the shipped defaults); every group's own spread and how many of its rows its own 80% interval holds; the class
    spreads `recommend` uses (`class_sigmas`) and how many rows of each group those hold; what the rows have seen."""
    predicted = np.array([row.predicted(values.get(row.source, df.SHIPPED)) for row in rows])
    published = np.array([row.published for row in rows])
    r = np.log(published / predicted)
    classes = np.array([row.model_class for row in rows])
    spread = class_sigmas(r, classes)
    used = np.abs(r) <= Z80 * np.array([spread[c]["sigma_log"] for c in classes])
    groups = {}
    for group in GROUPS:
        keys = np.array([attribute(row, group) for row in rows])
        groups[group] = {}
        for k in dict.fromkeys(keys):
            mine = keys == k
            own = sigma_of(r[mine]) if mine.sum() >= 2 else None
            groups[group][k] = {
                "rows": int(mine.sum()), "median_abs_error": round(float(np.median(np.abs(np.expm1(-r[mine])))), 4),
                "sigma_own": None if own is None else round(own, 4),
                "coverage_own": None if own is None else round(float((np.abs(r[mine]) <= Z80 * own).mean()), 3),
                "coverage_used": round(float(used[mine].mean()), 3)}
    for c, entry in spread.items():
        g = groups["class"].get(c, {})
        entry.update(median_abs_error=g.get("median_abs_error"), coverage=g.get("coverage_used"),
                     sigma_log=round(entry["sigma_log"], 4),
                     sigma_own=None if entry["sigma_own"] is None else round(entry["sigma_own"], 4))
    served = [row for row in rows if row.as_served]
    return {"predicted": predicted, "r": r, "inside": used, "classes": spread, "groups": groups,
            "widest": round(max(e["sigma_log"] for e in spread.values()), 4),
            "seen": {"classes": sorted({row.model_class for row in served}),
                     "methods": sorted({row.method for row in served})}}


def loso_values(fits: Path | None, sources: set[str]) -> dict[str, dict]:
    """{source: the datasheet fit without it} for `sources` (those the fit trains on): from the fits `datasheet_fit
    --fits` kept, else refitted (the full fit, then one per source: some minutes each)."""
    if fits is not None:
        kept = json.loads(fits.read_text())["loso_values"]
        return {s: kept[s] for s in sorted(sources) if s in kept}
    table = df.rows()
    train = np.array([row.source_id in df.FITTED for row in table])
    fitted, _ = df.fit_stages(table, train)
    return df.leave_one_source_out(table, train, fitted, only=sources & set(df.FITTED))[1]


def compute(fits: Path | None) -> dict:
    """The file's content, from the leave-one-source-out fits that `datasheet_fit --fits` kept (None: refitted)."""
    rows = sr.rows()
    values = loso_values(fits, {row.source for row in rows} & set(df.FITTED))
    e = evaluate(rows, values)
    return {
        "kind": "specadvisor-speedup-error", "schema_version": 1,
        "written_by": "benchmarks/speedup_errors.py (do not edit by hand)",
        "what": "log-normal spread (sigma of log(published / predicted)) of the datasheet cost model's speedup, "
                "from published speedups with a known acceptance, each predicted by the datasheet fit that never "
                "saw its source",
        "level": LEVEL, "min_rows": MIN_ROWS, "coverage_band": list(COVERAGE_BAND),
        "classes": e["classes"], "groups": e["groups"], "widest": e["widest"], "seen": e["seen"],
        "median_abs_error": round(float(np.median(np.abs(np.expm1(-e["r"])))), 4),
        "coverage": round(float(e["inside"].mean()), 3),
        "loso_values": values,
        "rows": [{"id": row.id, "source": row.source, "class": row.model_class, "method": row.method,
                  "engine": row.engine, "gpu": row.gpu, "as_served": row.as_served, "published": round(row.published, 4),
                  "predicted": round(float(p), 4), "log_residual": round(float(x), 4), "inside": bool(ok)}
                 for row, p, x, ok in zip(rows, e["predicted"], e["r"], e["inside"])],
        "left_out": [{"what": what, "why": why} for what, why in sr.LEFT_OUT],
    }


SECTION = "## How sure of a speedup: published speedups (benchmarks/speedup_errors.py)"


def section(d: dict) -> str:
    """The speedup section of docs/datasheet-fit.md, from the file's content."""
    lo, hi = d["coverage_band"]
    lines = [SECTION, "",
             "The step-time spreads above say how far a step time misses; a user reads the interval on a speedup. "
             "Every published speedup with a known acceptance (`benchmarks/speedup_rows.py`) is predicted here at "
             "that acceptance by the fit that never saw its source (a source outside the fit: the shipped "
             "defaults); error = predicted / published − 1. `recommend` widens a speedup's cost-model interval to "
             "at least its target class's spread (`profiles/speedup-error.json`): a class with fewer than "
             f"{d['min_rows']} rows borrows the widest of its own and its neighbours' (dense and MoE, MoE and "
             "hybrid) and says so; an answer whose class (as vLLM 0.32 runs it) or method no published row ran "
             "takes the widest of all, says \"no published run of this kind\", and is never ENABLE.", "",
             "| row | source | class | method | engine | GPU | published | predicted | error | inside |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in d["rows"]:
        served = "" if row["as_served"] else " (not as vLLM 0.32 runs it)"
        lines.append(f"| `{row['id']}` | {row['source']} | {row['class']}{served} | {row['method']} | "
                     f"{row['engine']} | {row['gpu']} | {row['published']:.3f}x | {row['predicted']:.3f}x | "
                     f"{row['predicted'] / row['published'] - 1:+.1%} | {'yes' if row['inside'] else 'no'} |")
    lines += ["", "| class | rows | median abs error | σ (log), its own | σ used | 80% interval | coverage |",
              "|---|---|---|---|---|---|---|"]
    for name, c in d["classes"].items():
        own = "-" if c["sigma_own"] is None else f"{c['sigma_own']:.3f}"
        used = f"{c['sigma_log']:.3f}" + (f" (borrowed: {c['borrowed_from']}'s)" if c["borrowed_from"] else "")
        med = "-" if c["median_abs_error"] is None else f"{c['median_abs_error']:.1%}"
        cov = "-" if c["coverage"] is None else f"{c['coverage']:.0%}"
        lines.append(f"| {name} | {c['rows']} | {med} | {own} | {used} | ×/÷ {np.exp(Z80 * c['sigma_log']):.2f} | "
                     f"{cov} |")
    lines += ["", f"By group: each group's own σ and how many of its rows its own {d['level']:.0%} interval holds "
              f"(checked to lie in {lo:.0%}-{hi:.0%} wherever a group has {d['min_rows']} rows or more), and how "
              "many the class spreads `recommend` uses hold:", "",
              "| group | rows | median abs error | σ (log), its own | inside its own interval | inside the class's, "
              "as used |", "|---|---|---|---|---|---|"]
    for group, members in d["groups"].items():
        for name, g in members.items():
            mark = "" if g["rows"] >= d["min_rows"] else " (under " + str(d["min_rows"]) + " rows)"
            own = "-" if g["sigma_own"] is None else f"{g['sigma_own']:.3f}"
            inside = "-" if g["coverage_own"] is None else f"{g['coverage_own']:.0%}"
            lines.append(f"| {group} {name}{mark} | {g['rows']} | {g['median_abs_error']:.1%} | {own} | {inside} | "
                         f"{g['coverage_used']:.0%} |")
    lines += ["", f"All {len(d['rows'])} rows: median |error| **{d['median_abs_error']:.1%}**, **{d['coverage']:.0%}** "
              f"inside their 80% interval. Published runs as vLLM 0.32 runs them: classes "
              f"{', '.join(d['seen']['classes'])}; methods {', '.join(d['seen']['methods'])}. Left out:", ""]
    lines += [f"- {x['what']}: {x['why']}." for x in d["left_out"]]
    return "\n".join(lines) + "\n"


def with_section(doc: str, d: dict) -> str:
    """docs/datasheet-fit.md with the speedup section before "## Parameters" (replaced if there)."""
    if SECTION in doc:
        head, rest = doc.split(SECTION, 1)
        doc = head.rstrip("\n") + "\n" + (rest[rest.find("\n## "):] if "\n## " in rest else "")
    marker = "\n## Parameters"
    head, tail = doc.split(marker, 1) if marker in doc else (doc, None)
    return head.rstrip("\n") + "\n\n" + section(d) + (marker + tail if tail is not None else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fits", type=Path, help="the fits `python -m benchmarks.datasheet_fit --fits F.json` kept (its "
                    "LOSO fits); without it, the fits without each source of a published speedup are redone")
    ap.add_argument("--print", action="store_true", help="print instead of writing")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    d = compute(args.fits)
    if args.print:
        print(json.dumps({k: v for k, v in d.items() if k != "loso_values"}, indent=1) + "\n\n" + section(d))
        return 0
    write_atomic(OUT, json.dumps(d, indent=1) + "\n")
    write_atomic(df.DOC, with_section(df.DOC.read_text(), d))
    print(f"wrote {OUT.relative_to(df.ROOT)} and the speedup section of {df.DOC.relative_to(df.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
