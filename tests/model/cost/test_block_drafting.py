"""advisor/model/cost/block_drafting.py: a DFlash, DSpark or P-EAGLE step is one draft forward at any k, and what
that does to the best k, as properties over GPUs, batches and contexts."""

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.advice.resolve import build_scenario
from advisor.model.acceptance.priors import length, level_for
from advisor.model.cost.block_drafting import markov_step
from advisor.model.cost.costmodel import draft_pass
from advisor.model.cost.speculative import tpot_speedup
from advisor.profiles.drafters import load_kind
from advisor.vllm.drafting import context_tokens, query_tokens

GPUS = ["h100-sxm", "h200", "a100-80gb-sxm", "b200", "rtx-pro-6000-blackwell", "l40s", "mi300x"]
PAIRS = {"dflash": ("qwen3-8b", "dflash-qwen3-8b-b16"), "dspark": ("qwen3-8b", "dspark-qwen3-8b-b7"),
         "eagle3": ("qwen3-8b", "peagle-qwen3-8b")}


@cache
def setup(method: str, gpu: str, target: str | None = None, draft: str | None = None):
    target = target or PAIRS.get(method, ("qwen3-8b",))[0]
    draft = draft if draft is not None else PAIRS.get(method, (None, None))[1]
    return build_scenario(target=target, method=method, draft=draft, gpu=gpu, prompt_len=1000, out_len=500).setup


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(PAIRS)), st.sampled_from(GPUS), st.integers(1, 16), st.integers(1, 256),
       st.integers(0, 60_000))
def test_a_block_step_is_one_draft_forward_at_any_k(method, gpu, k, batch, context):
    s = setup(method, gpu)
    assert s.parallel_drafting
    one = draft_pass(s.draft, s.draft_cost, batch, query_tokens(method, k), context, s.tp,
                     fusion_tokens=batch * context_tokens(k), graph=s.full_graph_drafts, sampled=batch * k)
    # beside the one forward, only DSpark's k Markov-head steps (a rank x vocabulary GEMV each, no layers)
    markov = k * float(markov_step(s, batch)) if method == "dspark" else 0.0
    assert float(s.draft_time(k, batch, context)) == pytest.approx(float(one) + markov, rel=1e-12)
    if method == "dspark":
        assert float(markov_step(s, batch)) < 0.25 * float(one)


@pytest.mark.parametrize("gpu", GPUS)
def test_the_drafting_grows_little_with_k_where_a_chain_grows_k_fold(gpu):
    """At one sequence a block drafter's step at k = 15 costs little more than at k = 1: one launch, one pass over
    a few more queries; an EAGLE-3 chain pays one more pass per draft."""
    block, chain = setup("dflash", gpu), setup("eagle3", gpu, "qwen3-8b", "eagle3-qwen3-8b")
    assert float(block.draft_time(15, 1, 2000)) < 1.5 * float(block.draft_time(1, 1, 2000))
    assert float(chain.draft_time(15, 1, 2000)) > 5 * float(chain.draft_time(1, 1, 2000))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(GPUS), st.integers(200, 60_000), st.floats(8.0, 12.0))
def test_at_batch_1_a_block_16_dflash_head_at_al_8_outgains_mtp_at_k_3_al_3_7(gpu, context, al):
    dflash = setup("dflash", gpu, "qwen3.6-27b", "dflash-qwen3.6-27b")
    mtp = setup("mtp", gpu, "qwen3.6-27b", None)
    assert dflash.trained_k == 15
    assert float(tpot_speedup(dflash, al, 15, 1, context)) > float(tpot_speedup(mtp, 3.7, 3, 1, context))


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(GPUS), st.integers(200, 8000))
def test_at_high_concurrency_the_best_k_falls(gpu, context):
    """AL by k from the DFlash kind's shape at the level that gives AL 8 at k = 15: the best k at 256 sequences is
    below the best at one, as verifying 16 tokens a sequence turns compute-bound."""
    s = setup("dflash", gpu, "qwen3.6-27b", "dflash-qwen3.6-27b")
    shape = load_kind("dflash").conditional
    ks = np.arange(1, 16)
    level = float(level_for(8.0, 15, shape))
    E = np.array([float(length(level, k, shape)) for k in ks])
    best = [int(ks[np.argmax(tpot_speedup(s, E, ks, batch, context))]) for batch in (1, 256)]
    assert best[0] == 15 and best[1] < best[0]
