"""The one-point anchor scales every step time by its factor, so it moves the predicted milliseconds and leaves
every speedup as it was."""

import numpy as np
import pytest

from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup, request_times
from advisor.observe.anchor import Anchor, anchored, predicted_tpot


@pytest.mark.parametrize("method", ["draft_model", "ngram"])
@pytest.mark.parametrize("factor", [0.37, 2.5])
def test_every_time_scales_by_the_factor_and_speedups_do_not_move(default_setup, llama8b, rtx6000, method, factor):
    setup = default_setup if method == "draft_model" else Setup(
        target=llama8b, target_cost=EngineCost.from_datasheet(rtx6000), method="ngram", draft_share=0.6)
    scaled = anchored(setup, factor)
    ks, batch, ctx = np.arange(0, 8), np.array([1.0, 7.0, 64.0, 300.0])[:, None], 900.0
    np.testing.assert_allclose(scaled.iteration_time(ks, batch, ctx), factor * setup.iteration_time(ks, batch, ctx),
                               rtol=1e-9)
    np.testing.assert_allclose(scaled.draft_prefill(batch, 2000.0, 3), factor * setup.draft_prefill(batch, 2000.0, 3),
                               rtol=1e-9)
    before = request_times(setup, 2.5, 4, 16, 3000, 200)
    after = request_times(scaled, 2.5, 4, 16, 3000, 200)
    assert after.e2e_spec == pytest.approx(factor * before.e2e_spec, rel=1e-9)
    assert after.e2e_baseline / after.e2e_spec == pytest.approx(before.e2e_baseline / before.e2e_spec, rel=1e-9)


def test_the_prediction_averages_per_request_as_the_servers_histogram_does(default_setup):
    E = np.array([[1.0, 1.8], [1.0, 1.5]])
    levels, shares = np.array([1.0, 8.0]), np.array([0.25, 0.75])
    contexts, weights = np.array([100.0, 2000.0]), np.array([0.5, 0.5])
    got = predicted_tpot(default_setup, E, 1, contexts, np.array([99.0, 9.0]), weights, levels, shares)
    want = sum(w * s * default_setup.iteration_time(1, c, ctx) / e
               for ctx, w, e in zip(contexts, weights, E[:, 1]) for c, s in zip(levels, shares))
    assert got == pytest.approx(float(want))
    anchor = Anchor(predicted=got, observed=2 * got, observed_low=1.5 * got, observed_high=2.5 * got, k=1)
    assert anchor.factor == pytest.approx(2.0) and anchor.factor_range == pytest.approx((1.5, 2.5))
