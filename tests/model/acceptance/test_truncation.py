import numpy as np
import pytest

from advisor.model.acceptance.conventions import expected_tokens, survival, survival_per_position
from advisor.model.acceptance.truncation import EXACT_TOKENS, alpha_for_tokens_per_step, expected_steps, tokens_per_step


def simulate_steps(curve: np.ndarray, m: int, requests: int, rng: np.random.Generator) -> np.ndarray:
    """Draft-and-verify steps until a request has m tokens, drawn step by step: X = 1 + the accepted drafts."""
    p = curve - np.append(curve[1:], 0.0)  # P(X = 1), ..., P(X = k + 1)
    steps = np.zeros(requests)
    tokens = np.zeros(requests)
    while (tokens < m).any():
        running = tokens < m
        tokens[running] += rng.choice(np.arange(1, p.size + 1), size=running.sum(), p=p)
        steps[running] += 1
    return steps


@pytest.mark.parametrize("curve, m", [
    (survival(0.8, 5), 63),  # the validation grid's longest k and output
    (survival(0.6, 3), 10),  # k + 1 close to m: the last step matters most
    (survival_per_position([0.9, 0.7, 0.65, 0.3], 4), 31),  # a measured, non-geometric curve
])
def test_expected_steps_match_a_simulation(curve, m):
    steps = simulate_steps(curve, m, 20_000, np.random.default_rng(0))
    standard_error = steps.std() / np.sqrt(steps.size)
    assert abs(float(expected_steps(curve, m)) - steps.mean()) < 4 * standard_error
    assert float(expected_steps(curve, m)) > m / curve.sum()  # the cut last step costs a whole step


def test_edge_cases_are_exact():
    for k in (1, 5, 16):
        m = np.arange(0, 300)
        assert expected_steps(survival(1.0, k), m) == pytest.approx(np.ceil(m / (k + 1)))  # X = k + 1 always
    assert expected_steps(survival(0.7, 0), 63) == pytest.approx(63)  # no drafts: one token a step
    assert tokens_per_step(survival(0.7, 4), 0) == pytest.approx(expected_tokens(0.7, 4))  # nothing to decode


def test_tokens_per_step_approach_E_from_below():
    ks = np.arange(1, 17)
    E = expected_tokens(0.85, ks)
    short, long = tokens_per_step(survival(0.85, ks), 63), tokens_per_step(survival(0.85, ks), 100_000)
    assert (short < E).all() and (short[1:] / E[1:] < short[:-1] / E[:-1]).all()  # longer k loses more
    assert long == pytest.approx(E, rel=1e-4)
    # past EXACT_TOKENS every token adds 1/E steps: no seam where the exact recursion stops
    m = np.arange(EXACT_TOKENS - 3, EXACT_TOKENS + 4)
    assert np.diff(expected_steps(survival(0.85, 8), m)) == pytest.approx(1 / float(expected_tokens(0.85, 8)))


def test_broadcasts_k_against_output_lengths():
    ks, outs = np.arange(1, 9), np.array([16.0, 200.0, 4000.0])[:, None]
    grid = tokens_per_step(survival(0.7, ks), outs - 1)
    assert grid.shape == (3, 8)
    assert grid[1, 3] == pytest.approx(float(tokens_per_step(survival(0.7, 4), 199)))


def test_alpha_for_tokens_per_step_inverts_it():
    ks = np.array([1, 2, 4, 8, 16])
    for m in (15, 63, 199, 5000):
        alphas = np.array([0.3, 0.55, 0.7, 0.9, 0.97])
        target = tokens_per_step(survival(alphas, ks), m)
        assert alpha_for_tokens_per_step(target, ks, m) == pytest.approx(alphas, abs=1e-9)
    # 15 decode tokens at k = 16 take at least one step: never 16.5 tokens per step, even at α = 1
    assert np.isnan(alpha_for_tokens_per_step(16.5, 16, 15))
