import numpy as np
import pytest

from advisor.errors import InputError
from advisor.model import priors


def test_task_priors_are_ranges_with_sources():
    for task, (low, high, source) in priors.TASK_PRIORS.items():
        assert 0.0 < low < high < 1.0, task
        assert source
        prior = priors.from_task(task)
        assert prior.low == low and prior.high == high and low < prior.alpha < high
        assert prior.prior and prior.match_share == 1.0


def test_ngram_has_its_own_priors_for_every_task_with_a_share_of_steps_without_a_match():
    assert set(priors.NGRAM_PRIORS) == set(priors.TASK_PRIORS)
    for task, (low, high, share, source) in priors.NGRAM_PRIORS.items():
        prior = priors.from_ngram_task(task)
        assert prior.prior and source and 0.0 < share < 1.0 and prior.match_share == share
        # copying tasks match more often than free text
        assert prior.alpha <= priors.from_task(task).alpha, task
    assert priors.NGRAM_PRIORS["code"][2] > priors.NGRAM_PRIORS["chat"][2] > priors.NGRAM_PRIORS["creative"][2]


@pytest.mark.parametrize("make", [priors.from_task, priors.from_ngram_task])
def test_unknown_task_is_one_clear_error(make):
    with pytest.raises(InputError, match="unknown --task 'poetry'"):
        make("poetry")


def test_mtp_prior_covers_the_first_position_only():
    # DeepSeek-V3 report §5.4.3: 85-90% of second-token predictions accepted; midpoint 0.875
    prior = priors.for_method("mtp", "chat")
    assert (prior.low, prior.alpha, prior.high) == pytest.approx((0.85, 0.875, 0.90))
    assert prior.per_position == pytest.approx((0.875,)) and prior.prior and prior.known_positions == 1
    assert priors.for_method("mtp", "code").alpha == prior.alpha  # the same for every task
    # at k = 1: E = 1 + 0.875 = 1.875 tokens per step
    assert float(prior.expected_tokens(1)) == pytest.approx(1.875)


def test_text_lookups_share_the_ngram_priors_and_heads_the_task_priors():
    for method in ("ngram", "ngram_gpu", "suffix"):
        assert priors.for_method(method, "code") == priors.from_ngram_task("code")
    for method in ("eagle", "eagle3", "draft_model"):
        assert priors.for_method(method, "code") == priors.from_task("code")


def test_the_mtp_reuse_decay_is_the_least_squares_fit_of_the_published_acceptance_lengths():
    """§6 (Qwen3.6-27B, one MTP layer reused): AL 1.9 / 2.4 / 2.8 at k = 1 / 2 / 3; α = 0.9 from k = 1."""
    from advisor.model.acceptance import Acceptance

    def lengths(decay):
        acc = Acceptance(0.9, 0.9, 0.9, "§6", known_positions=1, beyond_decay=decay)
        return np.array([float(acc.expected_tokens(k)) for k in (2, 3)])

    grid = np.linspace(0.3, 1.0, 701)
    best = grid[np.argmin([np.sum((lengths(d) - [2.4, 2.8]) ** 2) for d in grid])]
    assert priors.MTP_REUSE_DECAY == pytest.approx(best, abs=0.01)
    assert lengths(1.0)[1] > 3.3  # i.i.d. would promise far more at k = 3


def test_an_mtp_acceptance_is_known_for_its_measured_positions_and_decays_past_them():
    prior = priors.for_method("mtp", "chat")
    assert prior.known_positions == 1 and prior.beyond_decay == priors.MTP_REUSE_DECAY
    a = prior.alpha
    assert float(prior.expected_tokens(2)) == pytest.approx(1 + a + a * a * priors.MTP_REUSE_DECAY)
    assert any("known for k ≤ 1" in note for note in prior.notes)
