"""The `interval` part of a recommendation describes the row the report shows (`Advice.shown_k`: the asked k, else the
best one, k = 1 when off), and is null where that row does not fit, as the row's own speedups are."""

import pytest

from advisor.advice.advise import advise
from advisor.advice.recommendation import from_advice
from advisor.advice.recommendation_interval import Band
from advisor.advice.resolve import AcceptanceInput, build_scenario

CASES = {
    "best k": dict(prompt_len=8000, out_len=200),
    "asked k": dict(prompt_len=8000, out_len=200, k=5),
    "off (k = 1 shown)": dict(prompt_len=8000, out_len=200, acceptance=AcceptanceInput(alpha=0.05)),
    "asked k = 0": dict(prompt_len=8000, out_len=200, k=0),
    "speculation does not fit": dict(prompt_len=20000, out_len=500, gpu="rtx-4090"),
}


def _check_describes_the_shown_row(a):
    r = from_advice(a)
    row, band = r.per_k[a.shown_k], r.interval
    if row.fits:
        for name in ("tpot", "e2e", "throughput"):
            point = row.e2e_speedup if name == "e2e" else getattr(row, f"{name}_speedup")
            assert getattr(band, name) == Band(point, getattr(row, f"{name}_low"), getattr(row, f"{name}_high")), name
        assert band.e2e_low <= band.e2e_high
    else:  # nothing runs at the shown k: no number from another k, nor a zero standing for one
        assert (band.tpot, band.e2e, band.throughput, band.e2e_low, band.e2e_high) == (None,) * 5
    return r


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_interval_is_taken_at_the_row_the_report_shows(case):
    _check_describes_the_shown_row(advise(build_scenario(**CASES[case])))


@pytest.mark.parametrize("k", [2, 12])
def test_an_asked_k_that_does_not_fit_has_no_interval_though_k_1_fits(squeezed, k):
    a = advise(build_scenario(k=k, **squeezed))
    assert a.concurrency[1] >= 1 > a.concurrency[k] and a.best_k == 0 and a.shown_k == k
    r = _check_describes_the_shown_row(a)
    assert r.per_k[1].fits and r.interval.e2e is None  # k = 1's numbers were shown here before
    assert r.shown_k == k and r.concurrency.speculative == 0
