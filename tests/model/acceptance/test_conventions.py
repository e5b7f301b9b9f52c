import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.errors import InputError
from advisor.model.acceptance import conventions as acc
from advisor.model.cost.speculative import walltime_improvement
from advisor.vllm.defaults import MAX_K


@pytest.mark.parametrize("alpha, gamma, expected", [(0.8, 5, 3.69), (0.9, 10, 6.86), (0.6, 2, 1.96)])
def test_reproduces_leviathan_theory_table_at_zero_draft_cost(alpha, gamma, expected):
    # Leviathan et al. 2023, Table 1/Figure 3 values for c = 0, quoted to two decimals.
    assert round(float(walltime_improvement(alpha, gamma, 0.0)), 2) == expected
    assert round(float(acc.expected_tokens(alpha, gamma)), 2) == expected


def test_expected_tokens_edges():
    assert acc.expected_tokens(0.7, 0) == 1.0
    assert acc.expected_tokens(1.0, 7) == 8.0
    assert acc.expected_tokens(0.0, 7) == 1.0
    # the closed form equals the series 1 + α + … + α^k
    assert np.isclose(acc.expected_tokens(0.55, 6), sum(0.55**i for i in range(7)))


@given(st.floats(0.0, 1.0), st.integers(1, MAX_K))
def test_rate_roundtrip(alpha, k):
    rate = float(acc.acceptance_rate(alpha, k))
    assert 0.0 <= rate <= 1.0
    assert acc.alpha_from_rate(rate, k) == pytest.approx(alpha, abs=1e-9)


@given(st.floats(0.0, 1.0), st.integers(1, MAX_K))
def test_length_roundtrip(alpha, k):
    length = float(acc.expected_tokens(alpha, k))
    assert acc.alpha_from_length(length, k) == pytest.approx(alpha, abs=1e-9)
    # and through the rate: vLLM's mean acceptance length = 1 + rate·k
    assert length == pytest.approx(1.0 + k * float(acc.acceptance_rate(alpha, k)))


def test_solver_matches_scipy_brentq():
    from scipy.optimize import brentq

    for length, k in [(2.5, 4), (1.3, 3), (6.0, 10)]:
        reference = brentq(lambda a: float(acc.expected_tokens(a, k)) - length, 0.0, 1.0 - 1e-12, xtol=1e-14)
        assert acc.alpha_from_length(length, k) == pytest.approx(reference, abs=1e-10)


def test_per_position_expected_tokens_and_extrapolation():
    p = [0.8, 0.6, 0.45]
    assert acc.expected_tokens_per_position(p, 0) == 1.0
    assert acc.expected_tokens_per_position(p, 3) == pytest.approx(1 + 0.8 + 0.6 + 0.45)
    # beyond the measured positions the last conditional rate (0.45/0.6 = 0.75) continues
    assert acc.expected_tokens_per_position(p, 4) == pytest.approx(1 + 0.8 + 0.6 + 0.45 + 0.45 * 0.75)
    iid = [0.7**i for i in range(1, 6)]
    assert acc.expected_tokens_per_position(iid, 5) == pytest.approx(float(acc.expected_tokens(0.7, 5)))


def test_per_position_input_gives_equivalent_alpha():
    a = acc.from_per_position([0.7, 0.49, 0.343])
    assert a.alpha == pytest.approx(0.7, abs=1e-9)


@pytest.mark.parametrize("bad", [[], [1.2], [0.5, 0.7]])
def test_per_position_rejects_bad_vectors(bad):
    with pytest.raises(InputError):
        acc.from_per_position(bad)


@pytest.mark.parametrize("call", [lambda: acc.alpha_from_rate(1.5, 4), lambda: acc.alpha_from_length(7.0, 4),
                                  lambda: acc.alpha_from_length(2.0, 0), lambda: acc.from_point(-0.1, "x")])
def test_bad_inputs_raise_input_error(call):
    with pytest.raises(InputError):
        call()


def test_temperature_lowers_acceptance_and_is_flagged():
    greedy = acc.from_point(0.8, "x")
    hot = greedy.at_temperature(1.0, 0.0)
    assert hot.alpha == pytest.approx(greedy.alpha * 0.8)
    assert hot.low < greedy.low and hot.high < greedy.high
    assert any("extrapolated" in note for note in hot.notes)
    assert greedy.at_temperature(0.0, 0.0) is greedy


def test_a_match_share_weights_every_drafted_position_and_leaves_plain_steps_one_token():
    from advisor.model.acceptance.conventions import Acceptance, expected_tokens

    acc = Acceptance(0.7, 0.6, 0.8, "n-gram", match_share=0.25)
    ks = np.arange(9)
    assert acc.expected_tokens(ks) == pytest.approx(1.0 + 0.25 * (expected_tokens(0.7, ks) - 1.0))
    assert acc.survival(4)[0] == 1.0


def test_a_carried_range_is_said_in_the_terms_that_set_it():
    """Issue 49: from T=2 to T=0, "range 0.85-0.90 for α losing 13%-25% per unit of T", though at those slopes α
    0.80 would pass 1: the range is carry's bound on the rejections, and the note now says so (and that T=2 lies
    beyond the temperatures the slope was read at)."""
    (up,) = [n for n in acc.from_point(0.8, "x").at_temperature(0.0, 2.0).notes if "extrapolated" in n]
    assert "rejections (1 - α) shrinking by x1.35-x2.00" in up and "would put α past 1" in up
    assert "T=2 lies beyond the T=0 and T=1" in up
    (down,) = [n for n in acc.from_point(0.8, "x").at_temperature(0.7, 0.0).notes if "extrapolated" in n]
    assert "for α losing 13%-25% per unit of T" in down and "rejections" not in down and "beyond" not in down
    (low,) = [n for n in acc.from_point(0.3, "x").at_temperature(0.0, 1.0).notes if "extrapolated" in n]
    assert "for α losing" in low and "rejections" not in low  # below carry's bound: the slope sets the range
