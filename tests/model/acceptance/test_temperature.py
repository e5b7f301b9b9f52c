import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.acceptance import conventions as acc
from advisor.model.acceptance.temperature import TEMPERATURE_SLOPE, carry, carry_per_position, carry_range
from tests.cli.test_fuzz import _run

TEMPS = st.floats(0.0, 2.0)


def _interval(argv: list[str]) -> dict:
    code, out, err = _run(["recommend", "--prompt-len", "1000", "--out-len", "200", *argv, "--format", "json"])
    assert code == 0, err
    return json.loads(out)


def test_alpha_measured_hot_is_not_certainty_cold_and_its_range_is_no_narrower():
    """Issue 36 #1: --alpha 0.85 at T = 1 served at T = 0 was α 1.00 with a point range and k = 16."""
    plain, hot = _interval(["--alpha", "0.85"]), _interval(["--alpha", "0.85", "--measured-temperature", "1"])
    assert hot["inputs"]["alpha"] < 1.0
    width = lambda r: r["interval"]["alpha_high"] - r["interval"]["alpha_low"]  # noqa: E731
    assert hot["interval"]["alpha_high"] < 1.0 and width(hot) >= width(plain) and width(hot) > 0.0
    assert any("extrapolated from T=1 to T=0" in n for n in hot["inputs"]["acceptance_notes"])


@settings(max_examples=300, derandomize=True)
@given(st.floats(0.0, 0.999), st.floats(0.0, 0.5), st.floats(0.0, 0.5), TEMPS, TEMPS)
def test_extrapolation_widens_the_range_holds_its_point_and_never_reaches_one(alpha, below, above, served, measured):
    low, high = max(alpha - below, 0.0), min(alpha + above, 0.999)
    point, new_low, new_high, _ = carry_range(alpha, low, high, served, measured, TEMPERATURE_SLOPE)
    assert 0.0 <= new_low <= point <= new_high < 1.0
    if served < measured:  # up: no narrower, unless the top sits at the ceiling (`carry`'s bound, above `high`)
        assert new_high - new_low >= (high - low) - 1e-12 or new_high >= high
    if served > measured:  # down: nothing bounds it but 0
        assert new_high - new_low >= min(high - low, point) - 1e-12


@given(st.floats(0.0, 1.0), st.floats(1.0, 2.0))
def test_carrying_up_keeps_a_rejection_and_down_is_the_plain_scale(alpha, scale):
    assert carry(alpha, scale) <= 1.0 and (alpha == 1.0 or carry(alpha, scale) < 1.0)
    assert carry(alpha, 1.0 / scale) == pytest.approx(alpha / scale)


def test_per_position_rates_stay_a_survival_curve_below_one():
    up = carry_per_position((0.9, 0.8, 0.7), 1.25)
    assert all(0.0 < p < 1.0 for p in up) and list(up) == sorted(up, reverse=True)
    assert carry_per_position((0.9, 0.8), 0.8) == pytest.approx((0.72, 0.8 * 0.72 / 0.9 * 0.8))


def test_a_measured_point_gains_a_range_when_carried():
    hot = acc.from_point(0.7, "x").at_temperature(0.0, 1.0)
    assert hot.low < hot.alpha < hot.high < 1.0
