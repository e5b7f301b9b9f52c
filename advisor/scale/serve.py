"""The `vllm serve` command per node for a deployment at scale: the leader (node 0, API server and its local DP
ranks) and headless nodes (their DP ranks only), as vLLM 0.32's data-parallel deployment docs run them
(`--data-parallel-size-local`, `--data-parallel-start-rank`, `--data-parallel-address`, `--headless`)."""

from __future__ import annotations

import json
import shlex

from advisor.model.parallel.deployment import Deployment
from advisor.vllm.command import serve_command
from advisor.vllm.parallel import DEFAULT_ALL2ALL_BACKEND

LEADER_ADDRESS = '"$LEADER_IP"'  # the shell variable the user sets to node 0's address on every node


def node_commands(setup, d: Deployment, k: int, *, max_model_len: int, gpu_memory_utilization: float) -> list[str]:
    """One command per node at one fixed k (never a per-batch schedule: `vllm_parallel.schedule_kept`)."""
    base = serve_command(setup, k, max_model_len=max_model_len, gpu_memory_utilization=gpu_memory_utilization)
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
    if d.max_num_batched_tokens is not None:
        flags += ["--max-num-batched-tokens", str(d.max_num_batched_tokens)]
    if d.nodes == 1:
        return [" ".join([base, *flags])]
    local = ["--data-parallel-size-local", str(d.ranks_per_node), "--data-parallel-address", LEADER_ADDRESS]
    commands = [" ".join([base, *flags, *local])]
    for node in range(1, d.nodes):
        commands.append(" ".join([base, *flags, *local, "--data-parallel-start-rank", str(node * d.ranks_per_node),
                                  "--headless"]))
    return commands
