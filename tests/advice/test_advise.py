"""End-to-end behaviour of the advisor on the embedded default pair (datasheet costs)."""

import numpy as np
import pytest

from advisor.advice.advise import advise
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.advice.verdict import K_TIE, fastest


def run(**kw):
    kw.setdefault("prompt_len", 8000)
    kw.setdefault("out_len", 200)
    kw.setdefault("calibration", None)
    return advise(build_scenario(**kw))


def test_long_output_gains_more_end_to_end_than_long_prompt():
    rag, gen = run(prompt_len=8000, out_len=200), run(prompt_len=200, out_len=2000)
    assert gen.at_best(gen.e2e_speedup) > rag.at_best(rag.e2e_speedup)
    assert rag.prefill_fraction > gen.prefill_fraction


def test_high_concurrency_gains_less_than_batch_one():
    one, many = run(batch=1), run(batch=64)
    assert many.at_best(many.e2e_speedup) < one.at_best(one.e2e_speedup)


def test_per_k_table_and_best_k_are_consistent():
    # a measured acceptance: with the general prior's range and the published dense speedups' spread (issue 46)
    # the default pair is marginal
    a = run(prompt_len=200, out_len=2000, acceptance=AcceptanceInput(alpha=0.8))
    assert list(a.ks) == list(range(17))
    assert a.tpot_speedup[0] == a.e2e_speedup[0] == 1.0
    # the largest gain, or the smallest k within K_TIE of it
    assert a.best_k == int(fastest(a.e2e_speedup)) <= int(np.argmax(a.e2e_speedup))
    assert a.e2e_speedup[a.best_k] >= a.e2e_speedup.max() * (1 - K_TIE)
    assert a.verdict == "enable"
    assert [c.name for c in a.checks] == ["predictability", "vram", "concurrency", "decode_share"]


def test_break_even_alpha_is_where_decode_stops_gaining():
    from advisor.model.cost.speculative import tpot_speedup_alpha

    a = run(prompt_len=200, out_len=2000)
    s = a.scenario
    be = a.break_even_alpha
    assert 0.0 < be < a.scenario.acceptance.alpha
    best_at = lambda alpha: float(np.max(tpot_speedup_alpha(s.setup, alpha, np.arange(1, 17), s.batch, s.context,  # noqa: E731
                                                            s.decode_tokens)))
    assert best_at(be) == pytest.approx(1.0, abs=1e-6)
    assert best_at(be - 0.02) < 1.0 < best_at(be + 0.02)


def test_short_outputs_get_fewer_tokens_per_step_and_need_more_acceptance():
    from advisor.model.acceptance.conventions import expected_tokens

    advice = [run(prompt_len=200, out_len=out, acceptance=AcceptanceInput(alpha=0.9)) for out in (16, 64, 2000)]
    E = expected_tokens(0.9, advice[0].ks[1:])
    for a in advice:  # a request's last step is cut at out_len: the table never shows more than E
        assert (a.tokens_per_step[1:] < E).all()
    assert advice[-1].tokens_per_step[1:] == pytest.approx(E, rel=0.01)
    assert advice[0].break_even_alpha > advice[1].break_even_alpha > advice[2].break_even_alpha


def test_low_acceptance_disables():
    a = run(acceptance=AcceptanceInput(alpha=0.1))
    assert a.verdict == "disable" and a.best_k == 0
    assert not a.checks[0].ok


def test_a_wide_prior_is_marginal_when_its_low_end_misses_the_bar():
    a = run(prompt_len=200, out_len=2000, acceptance=AcceptanceInput(task="creative"), temperature=1.0)
    assert a.verdict in ("marginal", "disable")
    assert min(a.e2e_range) < 1.10


def test_critical_batch_exists_at_short_context():
    a = run(prompt_len=128, out_len=128, acceptance=AcceptanceInput(alpha=0.6))
    assert a.critical_batch is not None and 1 <= a.critical_batch < 512
    speed = a.schedule
    assert speed[0][0] == 1 and speed[-1][2] <= speed[0][2]  # k shrinks as the batch grows


def test_target_that_does_not_fit_is_a_disable_with_reason():
    a = run(target="llama-3.1-70b-instruct", draft="llama-3.2-1b-instruct", gpu="rtx-3060-12gb")
    assert a.verdict == "disable"
    assert "does not fit" in a.reasons[0]


def test_ngram_and_eagle_methods_work():
    ngram = run(method="ngram", prompt_len=1000, out_len=500, acceptance=AcceptanceInput(alpha=0.5))
    assert ngram.scenario.setup.draft is None and ngram.memory.draft_weights == 0
    eagle = run(method="eagle", prompt_len=1000, out_len=500)
    assert eagle.scenario.setup.draft.kind == "eagle_head"
    assert eagle.memory.draft_weights < 1e9


def test_measured_per_position_limits_the_k_search_to_measured_positions():
    # conditional rate 1.0 after position 2 would extrapolate to ever-growing E; only k <= 3 was measured
    a = run(prompt_len=2000, out_len=400, method="ngram", acceptance=AcceptanceInput(per_position="0.6,0.5,0.5"))
    assert 1 <= a.best_k <= 3
    assert a.e2e_speedup[16] > a.e2e_speedup[3]  # the table still shows the extrapolation


def test_mean_waves_counts_the_requests_that_wait_for_a_slot():
    from advisor.advice.advise import mean_waves

    assert mean_waves(64, 64) == 1.0 and mean_waves(64, 100) == 1.0
    assert mean_waves(128, 127) == pytest.approx((127 + 2) / 128)  # one request waits one request time
    assert mean_waves(10, 3) == pytest.approx((3 * 1 + 3 * 2 + 3 * 3 + 1 * 4) / 10)
    assert mean_waves(np.array([10, 10]), np.array([5, 10])).tolist() == [1.5, 1.0]


# --- issue 25: every number in the report means what it says ------------------------------------------------------

def test_25_1_ngram_tokens_per_step_are_weighted_by_the_match_share():
    # `code` prior: a share of steps find a match (the catalog's, fitted to the replay); the others are plain decode
    # steps of one token. The step time already discounts them (Setup.draft_share), so tokens per step must too:
    # 1 + share·(E(α, k) - 1), not E.
    from advisor.model.acceptance.conventions import expected_tokens
    from advisor.profiles.drafters import kind_for

    share = kind_for("ngram").share["code"]
    a = run(prompt_len=1000, out_len=500, method="ngram", acceptance=AcceptanceInput(task="code"))
    acc = a.scenario.acceptance
    assert 0 < share < 1 and acc.match_share == pytest.approx(share)
    unbounded = a.scenario.acceptance.expected_tokens(np.arange(17))
    assert unbounded == pytest.approx(1.0 + share * (expected_tokens(acc.alpha, np.arange(17)) - 1.0))
    assert a.tokens_per_step[a.best_k] <= unbounded[a.best_k]
    # every step credited a match gave 2.72x at k = 14 on the old prior; weighted, no step yields more than its
    # tokens (an iteration costs at least a decode step)
    assert a.at_best(a.tpot_speedup) <= a.tokens_per_step[a.best_k]


def test_25_2_the_concurrency_check_tests_the_requests_that_run():
    # batch 5000: memory runs 257 at once, inside the paying range, so the check passes on what runs
    a = run(prompt_len=200, out_len=2000, batch=5000, method="ngram", acceptance=AcceptanceInput(task="code"))
    running = int(a.concurrency[a.best_k or 1])
    assert running < 5000
    check = next(c for c in a.checks if c.name == "concurrency")
    inside = any(lo <= running <= hi for lo, hi in a.paying_batches)
    assert check.ok == inside and inside
    assert f"{running} running at once" in check.detail


@pytest.mark.parametrize("kw", [dict(prompt_len=30000, out_len=500, gpu="rtx-4090"),
                                dict(prompt_len=8000, out_len=500, gpu="rtx-3060-12gb", quantization="fp8",
                                     draft_quantization="fp8", k=5),
                                dict(prompt_len=1000, out_len=500, target="llama-3.3-70b-instruct", gpu="l4")])
def test_25_3_a_configuration_that_does_not_fit_shows_no_speedup_and_passes_no_check(kw):
    from advisor.advice.recommendation import from_advice

    a = run(**kw)
    r = from_advice(a)
    assert not any(c.ok for c in a.checks), [c for c in a.checks if c.ok]
    assert a.best_k == 0 or a.concurrency[a.best_k] >= 1  # a row that does not fit is never best
    for row in r.per_k:
        assert row.fits == (a.concurrency[row.k] >= 1)
        if not row.fits:
            assert row.tpot_speedup is None and row.e2e_speedup is None and row.throughput_speedup is None
    if not a.memory.fits:
        assert r.speedup.tpot is None and r.speedup.e2e_latency is None


def test_25_4_tpot_speedup_compares_equal_concurrency_and_never_exceeds_k_plus_1():
    # the baseline runs 247 at once, speculation 87: TPOT is taken with both at 87, and the memory effect shows in
    # end to end and throughput
    a = run(target="llama-2-70b-chat-hf", gpu="a100-80gb-sxm", num_gpus=4, batch=532, prompt_len=2021, out_len=2075,
            acceptance=AcceptanceInput(alpha=0.881), k=1, kv_cache_dtype="fp8_e5m2")
    assert a.concurrency[1] < a.concurrency[0] < 532
    assert a.tpot_speedup[1] <= 2.0
    assert a.throughput_speedup[1] < 1.0
    runs = a.concurrency >= 1
    assert (a.tpot_speedup[runs] <= a.ks[runs] + 1 + 1e-9).all()


def test_25_6_the_longest_draft_chosen_is_the_longest_accepted():
    # at α = 1 the best k is the table's last; --k accepted one more was a second limit (16 against 32)
    from advisor.errors import InputError
    from advisor.vllm.defaults import MAX_K

    a = run(prompt_len=200, out_len=2000, method="ngram", acceptance=AcceptanceInput(alpha=1.0))
    assert a.ks[-1] == MAX_K and a.best_k == MAX_K
    assert run(prompt_len=200, out_len=2000, k=MAX_K).best_k == MAX_K
    with pytest.raises(InputError, match=f"0..{MAX_K}"):
        run(prompt_len=200, out_len=2000, k=MAX_K + 1)


def test_recommend_ngram_on_an_h100_prices_verification_for_every_sequence():
    """`recommend --method ngram --gpu h100-sxm --batch 64 --task code`: the task prior finds a match on some steps
    only, yet every step is priced as a verification of k+1 tokens for all 64 sequences (Model Runner V2 fills
    the slots without a match), and the report says so."""
    from dataclasses import replace

    from advisor.advice.recommendation import from_advice
    from advisor.advice.resolve import AcceptanceInput, build_scenario
    from advisor.model.cost.costmodel import step_time
    from advisor.render.report import text

    s = build_scenario(method="ngram", gpu="h100-sxm", batch=64, prompt_len=1024, out_len=256,
                       acceptance=AcceptanceInput(task="code"))
    a = advise(s)
    k, conc, context = a.best_k, float(a.concurrency[a.best_k]), s.prompt_len + s.out_len / 2
    assert 0.0 < s.acceptance.match_share < 1.0 and k > 0 and conc == 64
    setup = s.setup
    gpu = setup.draft_time(k, conc, context) + step_time(setup.target, setup.target_cost, conc, k + 1.0, context)
    step = float(gpu + setup.visible_bookkeeping(conc, gpu))
    assert float(a.speculative_times.tpot_spec) * float(a.tokens_per_step[k]) == pytest.approx(step, rel=1e-12)
    assert float(replace(setup, draft_share=1.0).iteration_time(k, conc, context)) == pytest.approx(step, rel=1e-12)
    assert "verifies k drafts for every sequence" in " ".join(text(from_advice(a)).split())
