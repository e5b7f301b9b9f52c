"""advisor/scale/serve.py: the commands per node and per pool carry the flags that were priced."""

import json
import shlex

from advisor.model.parallel.deployment import Deployment
from advisor.scale.load import answer
from advisor.scale.serve import decode_commands, prefill_commands, router
from advisor.vllm.kv_transfer import hashed
from tests.scale_scenarios import scenario

WIDE = dict(data_parallel_size=16, enable_expert_parallel=True, nodes=2, all2all_backend="deepep_low_latency",
            enable_dbo=True)


def flag(command: str, name: str):
    argv = shlex.split(command)
    return argv[argv.index(name) + 1] if name in argv else None


def test_the_token_cap_bound_requests_are_pasted_as_max_num_seqs():
    a = answer(scenario(batch=2048), Deployment(**WIDE, disaggregated=True))
    assert a.best_k > 0 and a.token_cap == 256 and "--max-num-batched-tokens" not in decode_commands(a)[0]
    seqs = int(flag(decode_commands(a)[0], "--max-num-seqs"))  # vLLM would admit 256: more than verify a step
    assert seqs == 256 // (a.best_k + 1) and a.row(a.best_k).requests_per_rank <= seqs
    off = answer(scenario(batch=2048, k=0), Deployment(**WIDE, disaggregated=True))
    assert flag(decode_commands(off)[0], "--max-num-seqs") is None  # 256 at k = 0: vLLM's own


def test_a_users_max_num_seqs_is_pasted():
    s = scenario(batch=512, max_num_seqs=24)
    a = answer(s, Deployment(data_parallel_size=8, enable_expert_parallel=True, max_num_seqs=24))
    assert all(flag(c, "--max-num-seqs") == "24" for c in decode_commands(a))
    assert max(r.requests_per_rank for r in a.rows) <= 24


def test_pd_pastes_both_pools_and_the_router_with_the_same_speculative_config_for_nixl():
    a = answer(scenario(batch=2048), Deployment(**WIDE, disaggregated=True))
    assert a.best_k > 0
    decode, prefill, proxy = decode_commands(a), prefill_commands(a), router(a)
    assert decode and prefill and proxy.startswith("vllm-router ")
    for command, role in [(c, "kv_consumer") for c in decode] + [(c, "kv_producer") for c in prefill]:
        assert json.loads(flag(command, "--kv-transfer-config")) == {"kv_connector": "NixlConnector", "kv_role": role}
    d_spec = json.loads(flag(decode[0], "--speculative-config"))
    p_spec = json.loads(flag(prefill[0], "--speculative-config"))
    assert hashed(d_spec) == hashed(p_spec)  # what NIXL's compatibility hash reads: identical on both sides
    assert {k: v for k, v in d_spec.items() if k != "num_speculative_tokens"} == \
        {k: v for k, v in p_spec.items() if k != "num_speculative_tokens"} and p_spec["num_speculative_tokens"] == 1
    assert "--enable-dbo" not in prefill[0] and "deepep_low_latency" not in prefill[0]  # prompts in the GPU's budget
    assert proxy.count("--prefill ") == a.prefill_pool.instances and "--decode http://$DECODE_IP:8000" in proxy


def test_pd_without_speculation_pastes_no_speculative_config_on_either_side():
    a = answer(scenario(batch=2048, k=0), Deployment(**WIDE, disaggregated=True))
    assert a.best_k == 0
    assert all("--speculative-config" not in c for c in [*decode_commands(a), *prefill_commands(a)])


def test_the_prefill_pool_grows_with_the_rate():
    d = Deployment(**WIDE, disaggregated=True)
    low, high = (answer(scenario(batch=2048), d, rate) for rate in (5.0, 60.0))
    assert low.prefill_pool.rate_from == "--request-rate"
    assert high.prefill_pool.instances > low.prefill_pool.instances
    for a in (low, high):
        pool = a.prefill_pool
        assert pool.busy < 1 and pool.rate * pool.prompt_s <= pool.instances * pool.instance.data_parallel_size
        assert pool.instances == 1 or (pool.rate * pool.prompt_s >
                                       (pool.instances - 1) * pool.instance.data_parallel_size)
