"""`python -m benchmarks.datasheet_fit`: fit, leave-one-source-out, report (the package's docstring)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from . import __doc__ as package_doc
from .fit import fit_stages, floor_sensitivity, leave_one_source_out
from .report import report
from .rows import rows
from .sources import DOC, FITTED, ROOT


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=package_doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="no leave-one-source-out; print, do not write the doc")
    ap.add_argument("--all-rows", action="store_true", help="fit every expressed row (prints; does not write the doc)")
    ap.add_argument("--fits", type=Path, help="keep the fits in this JSON file and reuse them when it exists: the "
                    "doc rewritten after the shipped defaults move, without refitting (the fits do not depend on them)")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    table = rows()
    train = np.array([args.all_rows or r.source_id in FITTED for r in table])
    if args.fits and args.fits.exists():
        kept = json.loads(args.fits.read_text())
        fitted, dropped, loso_values = kept["fitted"], np.array(kept["dropped"]), kept["loso_values"]
        loso = None if kept["loso"] is None else np.array(kept["loso"])
        sensitivity = [tuple(x) for x in kept["sensitivity"]]
    else:
        fitted, dropped = fit_stages(table, train)
        loso, loso_values = (None, {}) if args.quick else leave_one_source_out(table, train, fitted)
        sensitivity = () if args.quick else floor_sensitivity(table, train, fitted)
        if args.fits:
            args.fits.write_text(json.dumps({"fitted": fitted, "dropped": dropped.tolist(), "loso_values": loso_values,
                                             "loso": None if loso is None else loso.tolist(),
                                             "sensitivity": [list(x) for x in sensitivity]}))
    text = report(table, fitted, dropped, train, loso, loso_values, args.all_rows, sensitivity)
    if args.quick or args.all_rows:
        print(text)
    else:
        DOC.write_text(text)
        print(f"wrote {DOC.relative_to(ROOT)}")
        print("\n".join(text.split("\n## Summary\n")[1].split("\n## Rows")[0].splitlines()[:40]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
