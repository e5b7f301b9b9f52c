"""Prefill/decode disaggregation (PD): the prefill pool a decode pool needs at a request rate, from the prefill time
the model computes for one prompt (`costmodel.prefill_time`, the drafter's prefill added), and what a request rate
does to an instance (`Load`).

A prefill instance is one node of the decode pool's layout (its tp, its ranks per node, expert parallelism as the
decode pool's) on vLLM's default all-to-all (no DeepEP low-latency token cap: prompts run in the GPU's own token
budget) and without DBO, grown by whole nodes until its GPUs hold the weights; a dense target's is one tp group.
Each of its DP ranks prefills one prompt at a time; prompts arrive at random (Poisson), so a rank is an M/D/1 queue
as in `review` (advisor.model.cost.capacity: ρ = λ·t_pf, mean wait ρ·t_pf / (2(1 - ρ)), Pollaczek-Khinchine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from advisor.model.cost.costmodel import prefill_time
from advisor.model.cost.speculative import Setup
from advisor.model.parallel.deployment import Deployment
from advisor.scale import fit
from advisor.vllm.kv_transfer import PREFILL_K
from advisor.vllm.methods import TEXT_LOOKUP
from advisor.vllm.parallel import DEFAULT_ALL2ALL_BACKEND

MOST_NODES = 64  # a prefill instance grows by whole nodes up to this many while its GPUs do not hold the weights


@dataclass(frozen=True, slots=True)
class PrefillPool:
    """The prefill side of a PD deployment."""

    instance: Deployment  # one prefill instance's layout (kv_producer)
    instances: int  # how many the rate needs, each rank below one prompt per prompt time (ρ < 1)
    k: int  # the prefill pool's num_speculative_tokens (0: the decode pool does not speculate)
    rate: float  # requests/s the pool prefills
    rate_from: str  # where the rate came from, in words
    prompt_s: float  # one prompt on one prefill rank (target and drafter), s
    busy: float  # ρ: the share of time each prefill rank prefills
    wait_s: float  # a prompt's mean wait for a rank (M/D/1), s; TTFT adds it, the prompt and the KV transfer
    fits: bool  # the instance's GPUs hold the weights (False: even MOST_NODES nodes do not)

    @property
    def gpus(self) -> int:
        return self.instances * self.instance.gpus


@dataclass(frozen=True, slots=True)
class Load:
    """What a request rate does to the deployment (`advisor.scale.load`)."""

    rate: float  # requests/s offered to the whole instance (--request-rate)
    prefill_busy: float  # ρ of each rank's prefill (aggregated; 0 under PD, whose prefill is the pool's)
    saturated: str  # "" or why the rate cannot be carried, in words: said before any number
    batch: int  # the instance's concurrency at that rate (Little's law), what the answer is priced at


def prefill_instance(s, setup: Setup, d: Deployment, k: int) -> tuple[Deployment, bool]:
    """The layout of one prefill instance, and whether its GPUs hold the weights (with the drafter at k)."""
    moe = setup.target.moe_layers > 0
    ranks = d.ranks_per_node if moe else 1
    for nodes in range(1, MOST_NODES + 1):
        instance = Deployment(tensor_parallel_size=d.tensor_parallel_size, data_parallel_size=ranks * nodes,
                              enable_expert_parallel=d.enable_expert_parallel,
                              all2all_backend=DEFAULT_ALL2ALL_BACKEND, nodes=nodes, disaggregated=True)
        budget = fit.budget(s, setup, instance, k)
        if budget.fits_spec if k else budget.fits:
            return instance, True
        if not moe:
            break
    return replace(instance, nodes=1, data_parallel_size=ranks) if moe else instance, False


def prefill_pool(s, setup: Setup, d: Deployment, decode_k: int, rate: float, rate_from: str) -> PrefillPool:
    """The prefill pool for a decode pool speculating at `decode_k` (0: off) at `rate` requests/s."""
    drafted = decode_k > 0 and setup.draft is not None and setup.method not in TEXT_LOOKUP
    k = PREFILL_K if decode_k > 0 else 0
    instance, fits = prefill_instance(s, setup, d, k if drafted else 0)
    prompt = float(prefill_time(setup.target, setup.target_cost, 1, s.prompt_len, setup.tp))
    prompt += float(setup.draft_prefill(1, s.prompt_len, k)) if drafted else 0.0
    ranks = instance.data_parallel_size
    instances = max(1, math.floor(rate * prompt / ranks) + 1)
    busy = rate * prompt / (instances * ranks)
    return PrefillPool(instance=instance, instances=instances, k=k, rate=rate, rate_from=rate_from,
                       prompt_s=prompt, busy=busy, wait_s=busy * prompt / (2.0 * (1.0 - busy)), fits=fits)
