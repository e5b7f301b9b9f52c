"""Issue 25's properties over the whole input space: every target profile x method x GPU x tensor parallel x
quantization, at random batches, prompt and output lengths and acceptances.

Two tiers, so that over 2,000 scenarios run in CI in well under a minute:
  vectorised  one Scenario per drawn family, POINTS (batch, lengths, α) drawn around it, evaluated at once with the
              functions `advise` itself uses (`running`, `Acceptance.survival`, `at_concurrency`): 150 x 16 = 2,400
              scenarios. Rows that do not fit, TPOT at equal concurrency <= k + 1, tokens per step weighted by the
              match share.
  advise      `advise` and the Recommendation for one drawn scenario: 200 of them. No check passes where nothing
              runs, a row that does not fit is never best and shows no speedup, the concurrency check tests the
              requests that run.
Each run draws new examples (no example database on a clean clone), so coverage accumulates across runs.
"""

import functools
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from advisor.advice.advise import K_TABLE, advise, at_concurrency, candidates, choose_k, running
from advisor.advice.recommendation import from_advice
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.errors import InputError
from advisor.model.acceptance.conventions import Acceptance, expected_tokens
from advisor.model.acceptance.published import TASKS
from advisor.model.acceptance.truncation import tokens_per_step
from advisor.profiles.catalog import load_model, names
from advisor.render.report import NO_FIT, text
from advisor.vllm.methods import MODELLED, TEXT_LOOKUP

TARGETS = [n for n in names("models") if load_model(n).kind == "model"]
GPUS = ["rtx-3060-12gb", "rtx-4090", "l4", "a100-80gb-sxm", "h100-sxm", "h200", "b200", "mi300x",
        "rtx-pro-6000-blackwell"]
QUANTIZATION = [{}, {"quantization": "fp8"}, {"kv_cache_dtype": "fp8"}, {"quantization": "fp8", "kv_cache_dtype": "fp8"}]
POINTS = 16  # scenarios per family in the vectorised tier
BATCHES = st.one_of(st.integers(0, 12).map(lambda e: 2**e), st.integers(1, 4096))
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.filter_too_much])


@functools.lru_cache(maxsize=None)
def _build(target: str, method: str, gpu: str, tp: int, quant: int, task: str):
    try:
        return build_scenario(target=target, method=method, gpu=gpu, num_gpus=tp, prompt_len=16, out_len=16,
                              acceptance=AcceptanceInput(task=task), **QUANTIZATION[quant])
    except InputError:  # no draft profile for this target and method, a TP that does not divide the heads, ...
        return None


def _family(data):
    """A Scenario for a drawn target, method, GPU, tensor parallel and quantization that vLLM would load."""
    s = _build(data.draw(st.sampled_from(TARGETS)), data.draw(st.sampled_from(sorted(MODELLED))),
               data.draw(st.sampled_from(GPUS)), data.draw(st.sampled_from([1, 1, 2, 4, 8])),
               data.draw(st.sampled_from(range(len(QUANTIZATION)))), data.draw(st.sampled_from(sorted(TASKS))))
    assume(s is not None)  # refused in one line: not a scenario (Hypothesis draws another)
    return s


def _lengths(data, s, size=None):
    """Prompt and output lengths within the target's context."""
    top = s.setup.target.max_context or 131072
    prompt = np.array(data.draw(st.lists(st.integers(16, 32000), min_size=size or 1, max_size=size or 1)))
    out = np.array(data.draw(st.lists(st.integers(2, 4000), min_size=size or 1, max_size=size or 1)))
    scale = np.minimum(1.0, top / (prompt + out))
    return np.maximum(prompt * scale, 1).astype(int), np.maximum(out * scale - 1, 2).astype(int)


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_vectorised_rows_that_do_not_fit_tpot_at_equal_concurrency_and_the_match_share(data):
    s = _family(data)
    prompts, outs = _lengths(data, s, POINTS)
    batches = np.array(data.draw(st.lists(BATCHES, min_size=POINTS, max_size=POINTS)))
    alphas = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=POINTS, max_size=POINTS)))
    ks = np.arange(K_TABLE + 1)
    conc = np.array([running(replace(s, batch=int(b), prompt_len=int(p), out_len=int(o)), ks)[1]
                     for b, p, o in zip(batches, prompts, outs)])  # (POINTS, K)
    share = s.acceptance.match_share
    acc = replace(s.acceptance, per_position=None, known_positions=None)  # i.i.d. α (no MTP decay past position 1)
    curve = acc.survival(ks[None, :], alphas[:, None])  # (POINTS, K, K+1): i.i.d. α on the steps that draft
    # n-gram: a step without a match is a plain decode step of one token, as the step time counts it
    assert np.allclose(curve.sum(-1), 1.0 + share * (expected_tokens(alphas[:, None], ks[None, :]) - 1.0))
    assert s.setup.draft_share == share
    E = tokens_per_step(curve, outs[:, None] - 1)
    tpot, e2e, throughput = (np.where(conc >= 1, x, 0.0) for x in at_concurrency(
        s.setup, E, ks[None, :], batches[:, None], conc[:, :1], conc, prompts[:, None], outs[:, None]))
    fits = conc >= 1
    # TPOT compares both sides at the requests speculation runs: drafting alone buys at most k + 1 tokens a step
    assert (tpot[fits] <= np.broadcast_to(ks + 1.0, conc.shape)[fits] * (1 + 1e-9)).all()
    assert np.allclose(tpot[:, 0][fits[:, 0]], 1.0)
    # the k advise would choose runs at least one request, or is 0
    allowed = candidates(s, ks)[None, :] & fits
    best = choose_k(e2e, throughput, allowed)
    assert ((best == 0) | fits[np.arange(POINTS), best]).all()
    # a row that does not fit shows no speedup (advise zeroes it; the Recommendation makes it null)
    assert (tpot[~fits] == 0).all() and (e2e[~fits] == 0).all() and (throughput[~fits] == 0).all()


@settings(max_examples=200, **SETTINGS)
@given(data=st.data(), batch=BATCHES, alpha=st.floats(0.0, 1.0), width=st.floats(0.0, 0.2),
       k=st.one_of(st.none(), st.none(), st.integers(0, K_TABLE)))
def test_advise_no_check_passes_where_nothing_runs_and_the_concurrency_check_tests_what_runs(data, batch, alpha,
                                                                                              width, k):
    s = _family(data)
    prompt, out = (int(x[0]) for x in _lengths(data, s))
    share = s.acceptance.match_share
    acc = Acceptance(alpha, max(alpha - width, 0.0), min(alpha + width, 1.0), "property test", match_share=share)
    s = replace(s, batch=batch, prompt_len=prompt, out_len=out, k=k, acceptance=acc)
    a = advise(s)
    r = from_advice(a)
    shown = a.shown_k
    runs = a.concurrency[0] >= 1 and a.concurrency[shown] >= 1
    if not runs:  # the target, or the pair at the evaluated k, does not fit: nothing to pass a check on
        assert not any(c.ok for c in a.checks), [(c.name, c.detail) for c in a.checks if c.ok]
        assert a.paying_batches == [] and a.break_even_alpha is None
    else:
        at_once = int(a.concurrency[shown])
        assert at_once <= batch
        inside = any(lo <= at_once <= hi for lo, hi in a.paying_batches)
        assert next(c for c in a.checks if c.name == "concurrency").ok == inside
        assert f"{at_once} running at once" in next(c for c in a.checks if c.name == "concurrency").detail
    # a row that does not fit says so, shows no speedup, and is never best
    for row in r.per_k:
        assert row.fits == (a.concurrency[row.k] >= 1) and row.concurrency == int(a.concurrency[row.k])
        if not row.fits or a.concurrency[0] < 1:  # a speedup needs both sides running (issue 36 #3)
            assert row.tpot_speedup is None and row.e2e_speedup is None and row.throughput_speedup is None
        else:
            assert row.tpot_speedup <= row.k + 1 + 1e-9  # equal concurrency
    # the interval holds its point; a gain above k+1 (more requests fit with speculation) says why (issue 36 #6)
    band = r.interval.e2e
    assert band is None or band.low - 1e-9 <= band.point <= band.high + 1e-9
    said = " ".join([*r.reasons, *(c.detail for c in r.checks)])
    if runs and max(a.e2e_speedup[shown], a.throughput_speedup[shown]) > shown + 1 + 1e-9:
        assert "async scheduling off" in said, said
    assert a.best_k == 0 or r.per_k[a.best_k].fits
    assert (r.speedup.tpot is None) == (not r.per_k[a.best_k].fits)
    best_rows = [line for line in text(r, colour=False, width=200).splitlines() if line.endswith("<- best")]
    assert all(NO_FIT not in line for line in best_rows) and len(best_rows) <= 1
    if s.setup.method in TEXT_LOOKUP and s.decode_tokens >= 1:
        assert np.allclose(acc.expected_tokens(a.ks), 1.0 + share * (expected_tokens(alpha, a.ks) - 1.0))
