"""The interval math (advisor/model/uncertainty.py): quantile arithmetic checked against its definitions."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.model.uncertainty import (
    COST,
    TARGET_REGIMES,
    Z80,
    Z90,
    CostError,
    band,
    cost_sigma,
    from_median_error,
    ridge_tokens,
    target_sigma,
)

SIGMA = {"dense_memory_bound": 0.1, "compute_bound": 0.2, "moe": 0.3, "long_context": 0.25, "drafter": 0.4}


def test_a_cost_spread_alone_gives_the_log_normal_80_percent_interval():
    b = band(2.0, 2.0, 2.0, 0.1)  # acceptance exact
    assert float(b.low) == pytest.approx(2.0 * np.exp(-Z80 * 0.1))
    assert float(b.high) == pytest.approx(2.0 * np.exp(Z80 * 0.1))
    assert str(b.dominant) == COST


def test_an_acceptance_range_alone_keeps_its_quantiles_at_the_80_percent_level():
    # the range is a 90% interval: its ends sit z90 spreads away; the 80% interval z80 spreads
    b = band(1.5, 1.2, 1.8, 0.0)
    assert float(b.low) == pytest.approx(1.5 * (1.2 / 1.5) ** (Z80 / Z90))
    assert float(b.high) == pytest.approx(1.5 * (1.8 / 1.5) ** (Z80 / Z90))
    assert 1.2 < float(b.low) < 1.5 < float(b.high) < 1.8


def test_the_two_spreads_add_in_quadrature_and_widen_the_band():
    alone, both = band(1.5, 1.2, 1.8, 0.0), band(1.5, 1.2, 1.8, 0.2)
    assert float(both.low) < float(alone.low) and float(both.high) > float(alone.high)
    s_down = np.log(1.5 / 1.2) / Z90
    assert float(both.low) == pytest.approx(1.5 * np.exp(-Z80 * np.hypot(s_down, 0.2)))


def test_band_broadcasts_and_leaves_nothing_running_at_zero():
    b = band(np.array([1.0, 0.0, 2.0]), np.array([1.0, 0.0, 1.5]), np.array([1.0, 0.0, 2.5]), np.array([0.0, 0.3, 0.3]))
    assert b.low.shape == (3,) and float(b.low[1]) == 0.0 and float(b.high[1]) == 0.0
    assert float(b.low[0]) == float(b.high[0]) == 1.0


def test_an_error_common_to_every_target_step_cancels_in_a_memory_bound_ratio():
    err = CostError(SIGMA, "test", "datasheet")
    # no drafter share and a verify step as long as a decode step: nothing of the target's error is left
    assert float(cost_sigma(err, 0.3, 0.0, 1.0)) == 0.0
    # the drafter's share carries its own error and the target's; compute-bound verification adds its extra work's
    assert float(cost_sigma(err, 0.2, 0.5, 1.0)) == pytest.approx(0.5 * np.hypot(0.4, 0.2))
    assert float(cost_sigma(err, 0.2, 0.0, 2.0)) == pytest.approx(0.5 * 0.2)


def test_regimes_apply_in_order_moe_then_long_context_then_compute_bound():
    err = CostError(SIGMA, "test", "datasheet", long_context=4096, compute_bound=0.5)
    ridge = ridge_tokens(1e15, 2e12)  # 500 tokens at 2 bytes a weight
    assert ridge == pytest.approx(500.0)
    got = target_sigma(err, False, np.array([100, 100, 5000]), np.array([10, 300, 300]), ridge)
    assert list(got) == [0.1, 0.2, 0.25]
    assert float(target_sigma(err, True, 100, 10, ridge)) == 0.3


def test_a_calibration_median_error_maps_to_the_log_normal_spread():
    err = from_median_error(0.05, 0.10, "cal")
    # half of |N(0, σ)| lies under 0.6745 σ: the spread's median absolute log error is log(1.05)
    draws = np.random.default_rng(0).normal(0, err.sigma["dense_memory_bound"], 200_000)
    assert np.median(np.abs(draws)) == pytest.approx(np.log1p(0.05), rel=0.02)
    assert err.sigma["drafter"] > err.sigma["compute_bound"] == err.sigma["moe"]


def test_a_cost_error_refuses_a_missing_regime():
    with pytest.raises(ValueError, match="every regime"):
        CostError({"drafter": 0.1}, "x", "datasheet")


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(1.0, 20.0), st.floats(0.0, 1.0))
def test_a_cost_error_with_a_speedup_spread_is_never_narrower_than_it(speedup, share, ratio, target):
    # issue 46: a datasheet answer's spread is at least its class's published speedups' (CostError.speedup)
    err = CostError({**{r: 0.05 for r in TARGET_REGIMES}, "drafter": 0.1}, "t", "datasheet", speedup=speedup)
    plain = CostError({**{r: 0.05 for r in TARGET_REGIMES}, "drafter": 0.1}, "t", "datasheet")
    sigma = float(cost_sigma(err, target, share, ratio))
    assert sigma == pytest.approx(max(float(cost_sigma(plain, target, share, ratio)), speedup))
