"""Priors from the drafter catalog: the kind's shape and spread, a known drafter's figures, the task, temperature."""

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.model.acceptance import priors
from advisor.model.acceptance.conventions import Acceptance, alpha_from_length, expected_tokens
from advisor.model.acceptance.published import TASKS
from advisor.profiles.drafters import all_kinds, kind_for, load_kind


def _drafter(kind, name):
    return next(d for d in kind.drafters if d.name == name)


# Issue 34, done when: with no task and nothing measured, the prior's AL at k = 3 lies inside the kind's published
# range, and its 80% interval covers that range (EAGLE-3 2.2-2.8, MTP 2.3-3.1, n-gram 1.1-1.6 tokens per step)
@pytest.mark.parametrize("method, low, high", [("eagle3", 2.2, 2.8), ("mtp", 2.3, 3.1), ("ngram", 1.1, 1.6)])
def test_34_a_general_prior_lies_in_the_kinds_published_range_and_its_80_interval_covers_it(method, low, high):
    prior = priors.kind_prior(kind_for(method), None)
    lo80, point, hi80 = priors.al_interval(prior, 3)
    assert low < point < high
    assert lo80 <= low + 1e-9 and hi80 >= high - 1e-9
    assert prior.prior and priors.NO_TASK in prior.notes
    assert prior.origin.drafter == "" and prior.origin.task == "" and "at k=3" in prior.origin.published


def test_level_for_inverts_length_for_every_shape():
    for kind in all_kinds():
        share = kind.share_for("general")
        levels = np.linspace(0.05, 0.95, 19)
        for k in (1, 3, 7):
            als = priors.length(levels, k, kind.conditional, share)
            assert priors.level_for(als, k, kind.conditional, share) == pytest.approx(levels, abs=1e-9)


def test_a_flat_shape_is_leviathans_formula():
    assert priors.length(0.7, 5, (1.0,)) == pytest.approx(float(expected_tokens(0.7, 5)))


def test_eagle_heads_draw_flat_mtp_falls_past_its_first_position():
    eagle3, mtp = priors.kind_prior(kind_for("eagle3"), None), priors.kind_prior(kind_for("mtp"), None)
    assert eagle3.per_position is None  # i.i.d. α: a flat conditional rate
    p = np.asarray(mtp.per_position)
    conditional = p[1:] / p[:-1]
    assert p[0] == pytest.approx(mtp.alpha) and np.all(np.diff(conditional) < 0)
    # GLM-4.5-Air's published fall 0.92 / 0.74 / 0.56, relative to the first position
    assert conditional[:2] / mtp.alpha == pytest.approx([0.74 / 0.92, 0.56 / 0.92])


def test_ngram_drafts_on_a_share_of_steps():
    kind = kind_for("ngram")
    assert kind_for("suffix") is kind and kind_for("ngram_gpu") is kind
    chat, code = (priors.kind_prior(kind, t) for t in ("chat", "code"))
    assert 0 < chat.match_share < code.match_share < 1


def test_the_ngram_shares_are_the_least_squares_fit_of_the_replay():
    """§5: tokens per step of vLLM's n-gram over the replayed data at k = 1, 3, 5, 7; (share, α) fitted per task."""
    kind = kind_for("ngram")
    replay = kind.drafters[0]
    shares, alphas = np.linspace(0.01, 1.0, 100), np.linspace(0.01, 0.99, 99)
    for task in ("chat", "summarization", "math", "code"):
        figures = [f for f in replay.figures if f.task == task]
        ks, als = np.array([f.k for f in figures]), np.array([f.al for f in figures])
        fit = 1 + shares[:, None, None] * (expected_tokens(alphas[None, :, None], ks) - 1)
        best = np.unravel_index(((fit - als) ** 2).sum(-1).argmin(), fit.shape[:2])
        assert kind.share[task] == pytest.approx(shares[best[0]], abs=0.011), task


def test_the_task_moves_the_prior_within_the_kinds_spread():
    kind = kind_for("eagle3")
    chat, math = (priors.al_interval(priors.kind_prior(kind, t), 3)[1] for t in ("chat", "math"))
    assert chat < math
    spread = kind.spreads["math"]
    assert spread.low <= math <= spread.high
    like = priors.kind_prior(kind, "json")  # no EAGLE-3 figure on JSON: as code
    assert like.alpha == priors.kind_prior(kind, "code").alpha and "as 'code'" in like.source


@pytest.mark.parametrize("method", ["eagle3", "eagle", "mtp", "draft_model", "ngram"])
def test_every_task_has_a_prior_for_every_kind(method):
    for task in TASKS:
        prior = priors.kind_prior(kind_for(method), task)
        assert 0 <= prior.low < prior.alpha < prior.high <= 1, task
        assert prior.origin.task == task and not prior.notes


def test_an_unknown_task_is_one_clear_error():
    with pytest.raises(InputError, match="unknown --task 'poetry'"):
        priors.kind_prior(kind_for("eagle3"), "poetry")


def test_a_known_drafter_narrows_the_prior_to_its_own_figures():
    kind = kind_for("eagle3")
    minimax = _drafter(kind, "Inferact/MiniMax-M3-EAGLE3")  # one figure: AL ~3.0 at k = 3, temperature not stated
    prior = priors.drafter_prior(kind, minimax, None)
    lo80, point, hi80 = priors.al_interval(prior, 3)
    assert point == pytest.approx(3.0, abs=1e-6)
    assert (lo80, hi80) == pytest.approx((3.0 - kind.min_half_width, 3.0 + kind.min_half_width), abs=1e-6)
    general = priors.kind_prior(kind, None)
    assert prior.high - prior.low < general.high - general.low
    assert prior.origin.drafter == minimax.name and "AL 3 at k=3 on Sonnet" in prior.origin.published


def test_two_heads_on_one_target_differ_as_published():
    # gpt-oss-20b at k = 7, T = 1: RedHat's head 2.43-3.00 against nebius's LK head 3.01-3.65 (§1)
    kind = kind_for("eagle3")
    redhat, nebius = (priors.drafter_prior(kind, _drafter(kind, n), None).alpha
                      for n in ("RedHatAI/gpt-oss-20b-speculator.eagle3", "nebius/EAGLE3-gpt-oss-20b"))
    assert redhat < nebius


def test_a_figure_at_t1_is_reproduced_at_t1():
    kind = kind_for("eagle3")
    nebius = _drafter(kind, "nebius/EAGLE3-gpt-oss-20b")
    prior = priors.drafter_prior(kind, nebius, "chat").at_temperature(1.0, 0.0)  # one chat figure: 3.20 at k=7, T=1
    assert float(prior.expected_tokens(7)) == pytest.approx(3.20, abs=1e-6)


def test_a_drafter_without_figures_on_the_task_moves_as_its_kind_does():
    kind = kind_for("eagle3")
    minimax = _drafter(kind, "Inferact/MiniMax-M3-EAGLE3")  # chat only
    code, chat = (priors.drafter_prior(kind, minimax, t).alpha for t in ("code", "chat"))
    general_code, general = (priors.kind_prior(kind, t).alpha for t in ("code", None))
    assert code - priors.drafter_prior(kind, minimax, None).alpha == pytest.approx(general_code - general, abs=1e-6)
    assert chat == priors.drafter_prior(kind, minimax, None).alpha


def test_the_heads_temperature_slope_is_the_least_squares_fit_of_the_published_pairs():
    """§1: the same heads' mean AL at k = 7, T = 0 against T = 1; α by Leviathan's Eq. 1, α1 = (1 - s)·α0."""
    pairs = [(4.81, 4.66), (4.32, 4.08), (3.49, 3.29), (2.81, 2.65), (2.76, 2.46)]
    a0, a1 = (np.array([alpha_from_length(p[i], 7) for p in pairs]) for i in (0, 1))
    grid = np.linspace(0.0, 0.2, 20001)
    best = grid[np.argmin([np.sum((a1 - (1 - s) * a0) ** 2) for s in grid])]
    assert kind_for("eagle3").temperature_slope == pytest.approx(best, abs=1e-4)
    assert kind_for("mtp").temperature_slope == kind_for("eagle3").temperature_slope
    assert kind_for("draft_model").temperature_slope == pytest.approx(0.2)  # Leviathan et al.'s, for draft models


def test_the_mtp_reuse_decay_is_the_least_squares_fit_of_the_published_acceptance_lengths():
    """§6 (Qwen3.6-27B, one MTP layer reused): AL 1.9 / 2.4 / 2.8 at k = 1 / 2 / 3; α = 0.9 from k = 1."""
    def lengths(decay):
        acc = Acceptance(0.9, 0.9, 0.9, "§6", known_positions=1, beyond_decay=decay)
        return np.array([float(acc.expected_tokens(k)) for k in (2, 3)])

    grid = np.linspace(0.3, 1.0, 701)
    best = grid[np.argmin([np.sum((lengths(d) - [2.4, 2.8]) ** 2) for d in grid])]
    assert priors.MTP_REUSE_DECAY == pytest.approx(best, abs=0.01)
    assert lengths(1.0)[1] > 3.3  # i.i.d. would promise far more at k = 3


def test_a_measured_mtp_acceptance_is_known_for_its_positions_and_decays_past_them():
    found = priors.mtp_beyond(Acceptance(0.8, 0.8, 0.8, "--alpha 0.8"), 1)
    assert found.known_positions == 1 and found.beyond_decay == priors.MTP_REUSE_DECAY
    assert float(found.expected_tokens(2)) == pytest.approx(1 + 0.8 + 0.8 * 0.8 * priors.MTP_REUSE_DECAY)
    assert any("known for k ≤ 1" in note for note in found.notes)


def test_the_draft_model_spread_is_the_papers_alpha_read_at_k3():
    kind = load_kind("draft_model")
    assert kind.spreads["chat"].low == pytest.approx(float(expected_tokens(0.55, 3)), abs=1e-4)
    assert not kind.drafters  # §4: no same-family draft AL could be read


# --- issue 46: acceptance past the context a kind was measured at -----------------------------------------------------

@pytest.mark.parametrize("method", ["eagle3", "eagle", "mtp", "draft_model", "ngram"])
def test_past_the_context_measured_the_range_falls_toward_the_long_context_floor(method):
    kind = kind_for(method)
    prior = priors.prior(kind, None, "summarization")
    floor_at = max(2 * kind.measured_context, 20_000)
    assert priors.past_context(prior, kind, kind.measured_context, 0.05, floor_at, "src") == prior  # as published
    floor = 1.0 + priors.SPREAD_K * 0.05
    low_al = lambda acc: float(acc.expected_tokens(priors.SPREAD_K, acc.low))  # noqa: E731
    if low_al(prior) <= floor:  # n-gram on summaries reaches it already
        assert priors.past_context(prior, kind, 10 * floor_at, 0.05, floor_at, "src") == prior
        return
    lows = [low_al(priors.past_context(prior, kind, n, 0.05, floor_at, "src"))
            for n in (kind.measured_context + 1, int((kind.measured_context * floor_at) ** 0.5), floor_at, 10 * floor_at)]
    assert lows[0] == pytest.approx(low_al(prior), rel=1e-3) and lows[0] > lows[1] > lows[2]
    # halfway in log context, halfway in AL; the floor at its own context and beyond
    assert lows[1] == pytest.approx((low_al(prior) + floor) / 2, rel=2e-3)
    assert lows[2] == pytest.approx(floor, rel=1e-3) and lows[3] == pytest.approx(floor, rel=1e-3)
    past = priors.past_context(prior, kind, floor_at, 0.05, floor_at, "src")
    assert past.alpha == prior.alpha and past.high == prior.high  # the point stays: no kind publishes a decay
    assert "past the context measured" in past.notes[-1] and f"{kind.measured_context:,}" in past.notes[-1]


def test_past_a_floor_seen_at_a_shorter_context_the_range_falls_at_once():
    kind = kind_for("mtp")  # measured to 69,632 tokens, beyond the 20,000 the floor was seen at
    prior = priors.prior(kind, None, None)
    past = priors.past_context(prior, kind, kind.measured_context + 1, 0.05, 20_000, "src")
    assert float(past.expected_tokens(priors.SPREAD_K, past.low)) == pytest.approx(1.15, rel=1e-3)
