"""The validation's noise figures from runs whose scatter is put in by hand: an engine instance's own speed, and
per-call scatter, each recovered by `instance_spread`; drift and spread as the report quotes them."""

import math

import pytest

from calibration.validation.grid import Run
from calibration.validation.noise import drift, instance_spread, pass_spread, passes_run

SHAPES = [(b, p) for b in (1, 4, 16) for p in (32, 128)]  # six shapes per engine, as the validation grid has


def runs(factor) -> list[Run]:
    """Two engines (k = 1, 2) in three passes; factor(pass, shape index) multiplies a 10 ms TPOT."""
    return [Run("draft_model", 0.1, k, b, p, 64, tokens=64, tpot_s=0.01 * factor(i, j), pass_index=i)
            for i in range(3) for k in (1, 2) for j, (b, p) in enumerate(SHAPES)]


def test_an_instance_slower_on_every_shape_is_an_instance_effect():
    d = 0.15
    split = instance_spread(runs(lambda i, j: math.exp((i - 1) * d)))  # pass 0 fast, 1 typical, 2 slow, all shapes
    assert split["per_call"] == pytest.approx(0.0, abs=1e-12)
    # six instances (two engines × three passes) with mean residuals -d, -d, 0, 0, +d, +d: sample sd d·√(4/5)
    assert split["per_instance"] == pytest.approx(d * math.sqrt(4 / 5), rel=1e-9)
    assert pass_spread(runs(lambda i, j: math.exp((i - 1) * d))) == pytest.approx(math.exp(2 * d) - 1)


def test_scatter_from_call_to_call_is_per_call():
    e = 0.1
    # Within each instance the shapes alternate ±e; the other passes mirror it, so every instance averages to zero.
    split = instance_spread(runs(lambda i, j: math.exp(e * (-1) ** j * (i - 1))))
    assert split["per_instance"] == pytest.approx(0.0, abs=1e-9)
    assert split["per_call"] == pytest.approx(e * math.sqrt(6 / 5), rel=1e-9)  # sample sd of ±e over six shapes


def test_one_pass_cannot_split_and_drift_compares_first_and_last_baseline():
    assert instance_spread([r for r in runs(lambda i, j: 1.0) if r.pass_index == 0]) is None
    base = [Run("baseline", None, 0, 1, 32, 64, tokens=64, tpot_s=t) for t in (0.010, 0.011, 0.012)]
    assert drift(base) == pytest.approx(0.2)


def test_a_run_stopped_part_way_reports_the_passes_it_made():
    whole = runs(lambda i, j: 1.0)
    assert passes_run(whole) == (3, True)
    assert passes_run(whole[:-3]) == (3, False)  # the third pass lost its last three points
    assert passes_run([]) == (0, True)
