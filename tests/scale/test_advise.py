import shlex

import numpy as np
import pytest

from advisor.model.parallel.deployment import Deployment
from advisor.render.scale_report import commands_of, text, to_json
from advisor.scale.advise import advise_scale
from tests.scale_scenarios import scenario


def test_dense_data_parallel_equals_independent_replicas():
    """DP of a dense model: each rank is a replica of its own, so tok/s per GPU is one replica's at its share."""
    one = advise_scale(scenario(target="llama-3.1-8b-instruct", method="eagle3", batch=16, prompt_len=500,
                                out_len=300), Deployment())
    four = advise_scale(scenario(target="llama-3.1-8b-instruct", method="eagle3", batch=64, prompt_len=500,
                                 out_len=300), Deployment(data_parallel_size=4, imbalance=1.5))
    for a, b in zip(one.rows, four.rows):
        assert b.tokens_per_gpu == pytest.approx(a.tokens_per_gpu, rel=1e-12) and b.all2all_s == 0.0


def test_deepep_low_latency_cap_limits_requests_per_rank_at_each_k():
    s = scenario(batch=16 * 512)
    d = Deployment(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency",
                   disaggregated=True)
    a = advise_scale(s, d)
    assert a.token_cap == 256
    for row in a.rows:
        assert row.requests_per_rank == 256 // (row.k + 1) and row.bound_by == "token cap"
        assert row.padded_requests * (row.k + 1) <= 256


def test_pasted_commands_never_carry_a_per_batch_schedule_at_dp_above_one():
    for dp, nodes in ((8, 1), (16, 2), (32, 4)):  # DeepSeek-V3 holds on 8 H200 and more
        s = scenario(batch=64 * dp, alpha=0.9)
        d = Deployment(data_parallel_size=dp, enable_expert_parallel=True, nodes=nodes,
                       all2all_backend="deepep_low_latency", enable_dbo=True, disaggregated=True)
        a = advise_scale(s, d)
        assert a.best_k > 0  # a case that speculates, so the pasted config is there to inspect
        commands = commands_of(a)
        assert len(commands) == nodes
        for i, command in enumerate(commands):
            argv = shlex.split(command)
            assert "num_speculative_tokens_per_batch_size" not in command
            assert '"num_speculative_tokens":%d' % a.best_k in command
            assert argv[argv.index("--data-parallel-size") + 1] == str(dp)
            assert ("--headless" in argv) == (i > 0)
            if nodes > 1:
                assert argv[argv.index("--data-parallel-size-local") + 1] == str(dp // nodes)
        assert "drops num_speculative_tokens_per_batch_size" in text(a)


def test_the_issues_example_answers_with_per_node_commands():
    a = advise_scale(scenario(), Deployment(data_parallel_size=16, enable_expert_parallel=True, nodes=2))
    report = text(a)
    assert "node 0:" in report and "node 1:" in report and a.verdict in ("enable", "marginal", "disable")
    doc = to_json(a)
    assert '"schema": "specadvisor.scale/1"' in doc and "NaN" not in doc
    assert a.rows[0].requests_per_rank == 128 and np.isfinite(a.rows[0].tpot_s)


def test_the_verdict_is_the_one_rule_on_the_gain_per_gpu():
    from advisor.advice.verdict import rule

    for alpha in (0.5, 0.8, 0.95):
        a = advise_scale(scenario(alpha=alpha, batch=16 * 64), Deployment(data_parallel_size=16, nodes=2,
                                                                           enable_expert_parallel=True))
        best = max((r for r in a.rows if r.k > 0), key=lambda r: r.gain)
        assert a.verdict == str(rule(best.gain, best.gain_low, best.gain))
        assert (a.best_k == best.k) == (a.verdict != "disable")


def test_dbo_is_priced_only_at_dp_above_one_and_drafts_on_the_v1_runner():
    from dataclasses import replace

    from advisor.scale.advise import priced_setup, shape_of

    s = scenario(batch=1024, target="qwen3-30b-a3b", method="eagle3", num_gpus=4)
    one = Deployment(tensor_parallel_size=4, enable_expert_parallel=True, all2all_backend="deepep_low_latency")
    assert not shape_of(replace(one, enable_dbo=True), s).dbo  # vLLM never splits at DP = 1
    setup, _, _ = priced_setup(s, replace(one, enable_dbo=True))
    assert s.setup.full_graph_drafts and not setup.full_graph_drafts  # DBO: Model Runner V1, piecewise drafts
    wide = Deployment(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency")
    assert shape_of(replace(wide, enable_dbo=True), scenario()).dbo


def test_no_all_to_all_at_dp_1_with_tp_and_ep():
    s = scenario(batch=64, target="qwen3-30b-a3b", method="eagle3", num_gpus=4)
    d = Deployment(tensor_parallel_size=4, enable_expert_parallel=True)
    a = advise_scale(s, d)
    assert all(r.all2all_s == 0.0 for r in a.rows)  # the experts combine in the TP all-reduce: one group's step
    from advisor.scale.advise import priced_setup

    setup, _, _ = priced_setup(s, d)
    assert a.row(0).padded_requests == 64
    assert a.row(0).step_s == pytest.approx(float(setup.decode_step(64, s.context)), rel=1e-12)


def test_k_stays_within_the_measured_positions_as_recommend():
    """--acceptance-per-pos 0.9,0.75 at DP8 + EP gave k = 4 (issue 48): recommend's rule keeps k within 2."""
    from tests.scale_scenarios import scenario as make

    s = make(batch=8 * 64, acceptance_per_pos="0.9,0.75")
    a = advise_scale(s, Deployment(data_parallel_size=8, enable_expert_parallel=True))
    assert 0 < a.best_k <= 2 and a.k_allowed == 2
