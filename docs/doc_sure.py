"""The figures docs/recommend.md's "How sure" quotes: the interval's level, how often the datasheet fit's
leave-one-source-out intervals cover the published rows (profiles/model-error.json, benchmarks/datasheet_errors.py)
and the published speedups (profiles/speedup-error.json, benchmarks/speedup_errors.py), and how wide the datasheet
path's interval is at batch 1. `SURE_VALUES`: name -> how to say it."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
from doc_pages import ROOT

from advisor.advice.advise import advise
from advisor.advice.resolve import build_scenario
from advisor.model.cost.enginecost import is_cpu
from advisor.model.uncertainty import LEVEL, Z80
from advisor.profiles.catalog import load_hardware, names

# The default pair and acceptance prior on every GPU profile (CPUs aside), at three request shapes, batch 1; the
# 80% interval of the end-to-end speedup at the advised k, as ± around it.
WIDTH_SHAPES = ((8000, 200), (1000, 500), (200, 2000))


@cache
def _widths() -> tuple[float, float]:
    """(median half-width of the whole 80% interval, of the cost model's part alone), as fractions."""
    whole, cost = [], []
    for gpu in names("hardware"):
        if is_cpu(load_hardware(gpu)):
            continue
        for prompt, out in WIDTH_SHAPES:
            a = advise(build_scenario(gpu=gpu, prompt_len=prompt, out_len=out, calibration="datasheet"))
            k, b = a.shown_k, a.bands.e2e
            if b.low[k] <= 0:  # nothing runs at this k (the pair does not fit): no interval to speak of
                continue
            whole.append(float(np.sqrt(b.high[k] / b.low[k]) - 1))
            cost.append(float(np.expm1(Z80 * b.sigma_cost[k])))
    return float(np.median(whole)), float(np.median(cost))


@cache
def _errors() -> dict:
    return json.loads((ROOT / "profiles" / "model-error.json").read_text())


def _coverage() -> dict:
    return _errors()["coverage"]


@cache
def _speedups() -> dict:
    """profiles/speedup-error.json (benchmarks/speedup_errors.py): the published speedups' errors and coverage."""
    return json.loads((ROOT / "profiles" / "speedup-error.json").read_text())


SURE_VALUES = {
    "sure.level": lambda: f"{LEVEL:.0%}",
    "sure.width": lambda: f"±{_widths()[0]:.0%}",
    "sure.width_cost": lambda: f"±{_widths()[1]:.0%}",
    "sure.coverage": lambda: f"{_coverage()['training_fraction']:.0%}",
    "sure.coverage_rows": lambda: str(_coverage()['training_rows']),
    "sure.loso": lambda: f"{_errors()['loso_both_stages_median']:.1%}",
    "sure.coverage_strict": lambda: f"{_coverage()['source_out_training_fraction']:.0%}",
    "sure.speedup_rows": lambda: str(len(_speedups()["rows"])),
    "sure.speedup_min_rows": lambda: str(_speedups()["min_rows"]),
    "sure.speedup_median": lambda: f"{_speedups()['median_abs_error']:.1%}",
    "sure.speedup_coverage": lambda: f"{_speedups()['coverage']:.0%}",
}
