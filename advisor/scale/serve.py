"""The `vllm serve` commands of a deployment at scale, from the same ScaleAdvice the report prints: per node of the
decode (or aggregated) instance, the leader (node 0, API server and its local DP ranks) and headless nodes (their DP
ranks only), as vLLM 0.32's data-parallel deployment docs run them (`--data-parallel-size-local`,
`--data-parallel-start-rank`, `--data-parallel-address`, `--headless`); under PD the decode pool as NIXL's
kv_consumer, the prefill pool's instance as kv_producer with the same speculative config (`advisor.vllm.
kv_transfer`), and the router that joins them.

Each command carries the flags that were priced: the speculative config at the pasted k, the memory share, the
token budget and max_num_seqs the rank was priced at where they are not what vLLM sets at that shape, and the
parallel layout.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

from advisor.model.cost.enginecost import is_cpu
from advisor.model.parallel.deployment import Deployment
from advisor.scale.advise import ScaleAdvice, priced_setup
from advisor.vllm.command import serve_command
from advisor.vllm.defaults import batch_defaults
from advisor.vllm.kv_transfer import KV_CONSUMER, KV_PRODUCER, SERVE_PORT, kv_transfer_flag, router_command
from advisor.vllm.parallel import DEFAULT_ALL2ALL_BACKEND, limits, requests_per_rank_cap

LEADER_ADDRESS = '"$LEADER_IP"'  # the shell variable the user sets to node 0's address on every node
DECODE_ADDRESS = '"$DECODE_IP"'  # under PD: the decode instance's node 0
PREFILL_ADDRESS = '"$PREFILL_IP"'  # under PD: a prefill instance's node 0 (each instance its own)


def node_commands(setup, d: Deployment, k: int, *, max_model_len: int, gpu_memory_utilization: float,
                  device_defaults: tuple[int, int], leader: str = LEADER_ADDRESS,
                  kv_role: str | None = None) -> list[str]:
    """One command per node at one fixed k (never a per-batch schedule: `vllm_parallel.schedule_kept`). The
    Setup's limits are pasted where they differ from vLLM's own at this shape (`limits`)."""
    at_shape = limits(device_defaults, d.all2all_backend, d.enable_expert_parallel, d.data_parallel_size)
    base = serve_command(setup, k, max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization,
                         defaults=at_shape)
    flags = []
    if d.data_parallel_size > 1:
        flags += ["--data-parallel-size", str(d.data_parallel_size)]
    if d.enable_expert_parallel:
        flags.append("--enable-expert-parallel")
    if d.all2all_backend != DEFAULT_ALL2ALL_BACKEND:
        flags += ["--all2all-backend", d.all2all_backend]
    if d.enable_dbo:
        flags.append("--enable-dbo")
    if d.redundant_experts:
        flags += ["--enable-eplb", "--eplb-config", shlex.quote(json.dumps({"num_redundant_experts":
                                                                          d.redundant_experts}))]
    if kv_role is not None:
        flags += kv_transfer_flag(kv_role)
    if d.nodes == 1:
        return [" ".join([base, *flags])]
    local = ["--data-parallel-size-local", str(d.ranks_per_node), "--data-parallel-address", leader]
    commands = [" ".join([base, *flags, *local])]
    for node in range(1, d.nodes):
        commands.append(" ".join([base, *flags, *local, "--data-parallel-start-rank", str(node * d.ranks_per_node),
                                  "--headless"]))
    return commands


def _device(a: ScaleAdvice) -> tuple[int, int]:
    hw = a.scenario.hardware
    return batch_defaults(hw.memory_gib, hw.name, cpu=is_cpu(hw))


def pasted_setup(a: ScaleAdvice):
    """The decode (or aggregated) instance's Setup with the limits its rank was priced at (`limits_pasted`)."""
    setup, _, _ = priced_setup(a.scenario, a.deployment)
    tokens, seqs = a.limits_pasted
    return replace(setup, target_cost=replace(setup.target_cost, max_num_batched_tokens=tokens, max_num_seqs=seqs))


def decode_commands(a: ScaleAdvice) -> list[str]:
    """The instance's commands at the pasted k (under PD: the decode pool, NIXL's kv_consumer); [] where the target
    does not fit."""
    if a.does_not_fit:
        return []
    s, d = a.scenario, a.deployment
    return node_commands(pasted_setup(a), d, a.best_k, max_model_len=s.prompt_len + s.out_len,
                         gpu_memory_utilization=s.gpu_memory_utilization, device_defaults=_device(a),
                         leader=DECODE_ADDRESS if d.disaggregated else LEADER_ADDRESS,
                         kv_role=KV_CONSUMER if d.disaggregated else None)


def prefill_commands(a: ScaleAdvice) -> list[str]:
    """One prefill instance's commands (NIXL's kv_producer, the decode pool's speculative config at the prefill
    pool's k: `kv_transfer.prefill_speculative`); [] without PD or where the target does not fit."""
    pool = a.prefill_pool
    if pool is None or a.does_not_fit or not pool.fits:
        return []
    s = a.scenario
    cost = s.setup.target_cost  # the scenario's limits, its max_num_seqs at most what a step's budget verifies
    seqs = min(cost.max_num_seqs, requests_per_rank_cap(cost.max_num_batched_tokens, pool.k))
    setup = replace(s.setup, target_cost=replace(cost, max_num_seqs=seqs))
    return node_commands(setup, pool.instance, pool.k, max_model_len=s.prompt_len + s.out_len,
                         gpu_memory_utilization=s.gpu_memory_utilization, device_defaults=_device(a),
                         leader=PREFILL_ADDRESS, kv_role=KV_PRODUCER)


def prefill_urls(a: ScaleAdvice) -> list[str]:
    """Each prefill instance's API server, by the address variable its leader sets (PREFILL_IP_1, ...)."""
    return [f"http://$PREFILL_IP_{i}:{SERVE_PORT}" for i in range(1, a.prefill_pool.instances + 1)]


def router(a: ScaleAdvice) -> str:
    """The router that joins the pools (vllm-router in vLLM PD mode); "" without PD."""
    if not prefill_commands(a):
        return ""
    return router_command(prefill_urls(a), [f"http://$DECODE_IP:{SERVE_PORT}"])
