import itertools

import numpy as np
import pytest

from advisor.model.cost.costmodel import step_time
from advisor.model.parallel.deployment import Deployment
from advisor.model.parallel.scale import DEEPEP_LL, all2all_time, padded_batch, rank_weight_bytes, target_step
from advisor.scale.advise import iteration, shape_of
from tests.scale_scenarios import scenario


@pytest.fixture(scope="module")
def mtp():
    return scenario(alpha=0.8)


def test_dp_ep_one_is_todays_model_exactly(mtp):
    """DP = EP = 1: the rank step is costmodel.step_time and the iteration Setup.iteration_time, to the last float
    digits (summed in another order, they may differ in the last one, which no test depends on)."""
    eagle = scenario(target="llama-3.1-8b-instruct", method="eagle3", batch=8, prompt_len=500, out_len=200)
    for s in (mtp, eagle):
        shape = shape_of(Deployment(tensor_parallel_size=s.setup.tp), s)
        batches = np.array([1.0, 8.0, 64.0, 300.0])
        assert target_step(s.setup.target, s.setup.target_cost, shape, batches, 1.0, 3000.0) == pytest.approx(
            step_time(s.setup.target, s.setup.target_cost, batches, 1.0, 3000.0), rel=1e-12)
        for k in (0, 1, 3):
            for b in (1, 16, 128):
                assert iteration(s.setup, shape, k, b, 3000.0) == pytest.approx(s.setup.iteration_time(k, b, 3000.0),
                                                                                rel=1e-12)


def test_deepep_floor_and_bandwidth_reproduce_deepeps_table(mtp):
    """The fitted link against DeepEP's LL table (128 tokens, H800): every entry within 17%; the measured error."""
    table = {8: (77, 114), 16: (118, 195), 32: (155, 273), 64: (173, 314), 128: (192, 369), 256: (194, 360)}
    model = mtp.setup.target
    errors = []
    for ep, (dispatch, combine) in table.items():
        predicted = float(all2all_time(model, 128, ep, 8, "deepep_low_latency")) * 1e6
        errors.append(abs(predicted / (dispatch + combine) - 1))
    assert max(errors) < 0.17 and np.median(errors) < 0.06


def test_all2all_grows_with_tokens_and_span(mtp):
    model = mtp.setup.target
    small, big = all2all_time(model, np.array([1.0, 256.0]), 16, 8, "deepep_low_latency")
    assert small == pytest.approx(2 * DEEPEP_LL.floor, rel=0.05) and big > 5 * small
    assert all2all_time(model, 64, 64, 8, "deepep_low_latency") > all2all_time(model, 64, 8, 8, "deepep_low_latency")
    assert all2all_time(model, 64, 1, 8, "allgather_reducescatter") == 0.0


def test_padding_to_the_busiest_rank():
    assert list(padded_batch(np.array([10.0, 10.0, 64.0]), 1.0)) == [10, 10, 64]
    assert list(padded_batch(np.array([10.0, 64.0]), 1.25)) == [13, 80]


def test_experts_split_over_the_ep_group(mtp):
    model, dtype = mtp.setup.target, mtp.setup.target_cost.weight_dtype
    one = rank_weight_bytes(model, dtype, 1, 1)
    assert one == pytest.approx(model.weight_bytes(dtype))
    assert 0.05 < rank_weight_bytes(model, dtype, 1, 32) / one < 0.1  # DeepSeek-V3: ~96% of it is routed experts


def test_gain_falls_as_tokens_per_expert_rise():
    """At a fixed acceptance the speculative gain falls as each expert sees more tokens: EP over more ranks at the
    same per-rank batch (the global batch grows; each expert's tokens with it, and the all-to-all's span)."""
    gains = []
    for dp in (8, 16, 32, 64):
        s = scenario(alpha=0.8, batch=32 * dp, out_len=500, prompt_len=1000)
        d = Deployment(data_parallel_size=dp, enable_expert_parallel=True, nodes=max(dp // 8, 1), disaggregated=True)
        shape = shape_of(d, s)
        e = float(s.tokens_per_step(np.array([2]))[0])
        gains.append(iteration(s.setup, shape, 0, 32, s.context) * e / iteration(s.setup, shape, 2, 32, s.context))
    assert all(a > b for a, b in itertools.pairwise(gains)), gains


def test_redundant_experts_add_their_share_per_gpu(mtp):
    """EPLB: 32 redundant experts over EP16 put two more experts per MoE layer on each GPU: ~2.5 GB for DeepSeek-V3
    in FP8 per redundant expert a rank holds (vLLM's docs: ~2.4 GB)."""
    model, dtype = mtp.setup.target, mtp.setup.target_cost.weight_dtype
    extra = rank_weight_bytes(model, dtype, 1, 16, redundant_experts=32) - rank_weight_bytes(model, dtype, 1, 16)
    assert extra / 2 / 1e9 == pytest.approx(2.5, abs=0.15)


def test_the_mtp_layer_pays_its_own_all_to_all(mtp):
    """Each MTP draft pass crosses EP too (its one MoE layer): at k = 1 the step over the all-to-all's span adds the
    target's verification all-to-all and the draft pass's, and DBO never hides the draft's."""
    import dataclasses

    d = Deployment(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency",
                   disaggregated=True)
    shape = dataclasses.replace(shape_of(d, mtp), dp_sync=0.0)
    alone = dataclasses.replace(shape, group=1)
    added = iteration(mtp.setup, shape, 1, 64, 3000.0) - iteration(mtp.setup, alone, 1, 64, 3000.0)
    target, draft = shape.comm(mtp.setup.target, 128), shape.comm(mtp.setup.draft, 128)
    assert draft > 0 and added == pytest.approx(target + draft, rel=0.02)
    overlapped = dataclasses.replace(shape, dbo=True)
    verify_saved = target_step(mtp.setup.target, mtp.setup.target_cost, shape, 64, 2.0, 3000.0) - \
        target_step(mtp.setup.target, mtp.setup.target_cost, overlapped, 64, 2.0, 3000.0)
    drafts_saved = iteration(mtp.setup, shape, 1, 64, 3000.0) - iteration(mtp.setup, overlapped, 1, 64, 3000.0)
    assert drafts_saved == pytest.approx(verify_saved, rel=0.02)  # all of DBO's saving is in the target pass
