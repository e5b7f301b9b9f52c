import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.acceptance import expected_tokens
from advisor.model.costmodel import EngineCost
from advisor.model.speculative import (
    Setup,
    request_times,
    tpot_speedup,
    tpot_speedup_alpha,
    walltime_improvement,
)
from advisor.profiles.catalog import load_model

alphas = st.floats(0.0, 1.0)
ks = st.integers(1, 16)
batches = st.integers(1, 256)
contexts = st.integers(1, 32_000)


@given(alphas, alphas, ks, batches, contexts)
def test_speedup_rises_with_alpha(default_setup, a1, a2, k, b, ctx):
    lo, hi = sorted((a1, a2))
    assert tpot_speedup_alpha(default_setup, hi, k, b, ctx) >= tpot_speedup_alpha(default_setup, lo, k, b, ctx)


@given(st.floats(0.01, 2.0), st.floats(0.01, 2.0), alphas, ks, batches, contexts)
def test_speedup_falls_with_draft_cost(llama8b, rtx6000, c1, c2, alpha, k, b, ctx):
    cost = EngineCost.from_datasheet(rtx6000)
    cheap, dear = sorted((c1, c2))
    speed = [float(tpot_speedup_alpha(Setup(llama8b, cost, "draft_model", cost_ratio=c), alpha, k, b, ctx))
             for c in (cheap, dear)]
    assert speed[1] <= speed[0]


@given(alphas, st.integers(0, 32))
def test_expected_tokens_within_one_and_k_plus_one(alpha, k):
    e = float(expected_tokens(alpha, k))
    assert 1.0 <= e <= k + 1 + 1e-12


@given(alphas, batches, contexts)
def test_k_zero_is_exactly_one(default_setup, alpha, b, ctx):
    assert tpot_speedup_alpha(default_setup, alpha, 0, b, ctx) == 1.0
    times = request_times(default_setup, 1.0, 0, b, ctx, 100)
    assert float(times.e2e_baseline) == float(times.e2e_spec)


# Holding the output fixed, a longer prompt adds prefill time that speculation cannot touch, and a longer KV cache
# that a draft model must read too, so for a draft model at small batch a gain never grows with the prompt (a *loss*
# shrinks towards 1.0x as prefill dilutes it, which is why the claim is about gains). It is not a law everywhere,
# and the model says why: one more token of context adds the same KV read to a decode step and to a verification
# step, which makes verification *relatively* cheaper. Where the drafter reads no KV (n-gram) or little (an EAGLE
# head), or the batch is large, that can outweigh the prefill (MagicDec; the tests after this one). And below a few
# hundred tokens a prefill is memory-bound (one weight read, however many tokens), so one more prompt token costs
# nothing while the context effect remains (~1e-10). So: draft models, batch <= 8, prompts of 256+ tokens.
@settings(max_examples=2000)
@given(alphas, ks, st.integers(1, 8), st.integers(256, 16_000), st.integers(256, 16_000), st.integers(2, 4000))
def test_longer_prompts_never_raise_e2e_speedup(default_setup, alpha, k, b, p1, p2, out):
    short, long = sorted((p1, p2))
    speed = []
    for prompt in (short, long):
        t = request_times(default_setup, expected_tokens(alpha, k), k, b, prompt, out)
        speed.append(float(t.e2e_baseline / t.e2e_spec))
    if speed[0] >= 1.0:
        assert speed[1] <= speed[0] + 1e-12
    else:
        assert speed[1] <= 1.0


def test_ngram_gains_with_context_near_the_compute_knee(default_setup):
    """MagicDec (Chen et al. 2024): at a batch where short-context verification is compute-bound, a long context
    adds KV reads to every step alike, so the verification step becomes relatively cheap again."""
    ngram = Setup(default_setup.target, default_setup.target_cost, "ngram")
    at = lambda ctx: float(tpot_speedup_alpha(ngram, 0.7, 2, 160, ctx))  # noqa: E731
    assert at(8_000) > at(100)


def test_eagle_heads_gain_with_context_at_large_batch(llama8b, rtx6000):
    """MagicDec (Chen et al. 2024): a drafter whose KV cache is tiny (an EAGLE head keeps one layer's KV) gets
    relatively cheaper as context grows, because the target's KV reads grow and the head's barely do. So the
    talk's rule "long prompts gain little" has an exception the model must show."""
    head = load_model("eagle-llama3.1-instruct-8b")
    cost = EngineCost.from_datasheet(rtx6000)
    setup = Setup(llama8b, cost, "eagle", head, cost)
    at = lambda ctx: float(tpot_speedup_alpha(setup, 0.8, 4, 32, ctx))  # noqa: E731
    assert at(16_000) > at(500)


def test_cost_model_reduces_to_leviathan_in_the_ideal_regime(llama8b, rtx6000):
    # No overheads, a tiny batch and context: verification costs one decode step, so the speedup is Theorem 3.8's.
    cost = EngineCost(bandwidth=rtx6000.bandwidth_bytes_per_s, flops=rtx6000.bf16_tflops * 1e12,
                      step_overhead=0.0, token_overhead=0.0)
    setup = Setup(llama8b, cost, "draft_model", cost_ratio=0.05, spec_overhead=0.0)
    for alpha, k in [(0.8, 4), (0.6, 2), (0.9, 8)]:
        model = float(tpot_speedup_alpha(setup, alpha, k, 1, 16))
        assert model == pytest.approx(float(walltime_improvement(alpha, k, 0.05)), rel=0.01)


def test_vectorized_over_a_grid(default_setup):
    alpha = np.linspace(0, 1, 11)[:, None, None, None]
    k = np.arange(0, 9)[None, :, None, None]
    b = np.array([1, 16, 128])[None, None, :, None]
    ctx = np.array([512, 8192])[None, None, None, :]
    grid = tpot_speedup_alpha(default_setup, alpha, k, b, ctx)
    assert grid.shape == (11, 9, 3, 2)
    assert np.all(grid[:, 0] == 1.0)
    assert np.all(np.diff(grid, axis=0) >= 0)


def test_tpot_speedup_uses_given_tokens_per_step(default_setup):
    e = np.array([1.0, 1.8, 2.4])
    k = np.array([0, 1, 2])
    s = tpot_speedup(default_setup, e, k, 1, 1000)
    assert s[0] == 1.0
    assert s[2] == pytest.approx(float(default_setup.decode_step(1, 1000)) * 2.4
                                 / float(default_setup.iteration_time(2, 1, 1000)))


# --- how a speculative iteration composes on vLLM V1 (found by `specadvisor validate`, docs/validation/) ----------

def test_draft_first_pass_reads_the_verified_tokens(llama8b, llama1b, rtx6000):
    """vLLM's draft proposer feeds its first pass all k+1 tokens the target verified; the other k-1 bring one."""
    from advisor.model.costmodel import step_time

    cost = EngineCost.from_datasheet(rtx6000).with_overheads(multi_token_overhead=0.003)
    setup = Setup(llama8b, cost, "draft_model", draft=llama1b, draft_cost=cost)
    for k in (1, 2, 5):
        expected = step_time(llama1b, cost, 8, k + 1, 2000) + (k - 1) * step_time(llama1b, cost, 8, 1, 2000)
        assert float(setup.draft_time(k, 8, 2000)) == pytest.approx(float(expected))
    assert float(setup.draft_time(0, 8, 2000)) == 0.0


def test_ngram_steps_without_a_match_are_decode_steps(llama8b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000).with_overheads(multi_token_overhead=0.003)
    always = Setup(llama8b, cost, "ngram", spec_overhead=0.0)
    rarely = Setup(llama8b, cost, "ngram", spec_overhead=0.0, draft_share=0.01)
    decode, lookup = float(always.decode_step(1, 1000)), float(always.draft_time(3, 1, 1000))
    # at batch 1 a step verifies with probability = the share; otherwise it is a plain decode step
    expected = lookup + 0.01 * float(always.iteration_time(3, 1, 1000) - lookup) + 0.99 * decode
    assert float(rarely.iteration_time(3, 1, 1000)) == pytest.approx(expected)
    assert float(rarely.iteration_time(3, 64, 1000)) < float(always.iteration_time(3, 64, 1000))
    with pytest.raises(ValueError):
        Setup(llama8b, cost, "ngram", draft_share=0.0)


def test_speculative_bookkeeping_is_paid_every_step(llama8b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    plain = Setup(llama8b, cost, "ngram", spec_overhead=0.0, draft_share=0.5)
    taxed = Setup(llama8b, cost, "ngram", spec_overhead=0.002, spec_seq_overhead=1e-4, draft_share=0.5)
    for b in (1, 16):
        extra = float(taxed.iteration_time(2, b, 500) - plain.iteration_time(2, b, 500))
        assert extra == pytest.approx(0.002 + 1e-4 * b)
    assert float(taxed.iteration_time(0, 16, 500)) == float(plain.decode_step(16, 500))  # k = 0: no speculation
