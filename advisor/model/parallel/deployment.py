"""The deployment's shape beyond one tensor-parallel group, in vLLM's own flag names: data-parallel ranks, expert
parallelism, the all-to-all backend, dual batch overlap, nodes, and a disaggregated decode pool (PD).

`--num-gpus` stays the tensor parallelism inside one DP rank; the decode instance has tp × dp GPUs over `nodes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import InputError
from advisor.vllm.parallel import (
    BATCHED_DP_MAX_TOKENS,
    DEFAULT_ALL2ALL_BACKEND,
    batched_dp_moe,
    check_all2all_backend,
    check_dbo_backend,
)


@dataclass(frozen=True, slots=True)
class Deployment:
    tensor_parallel_size: int = 1  # GPUs per DP rank (--num-gpus, vLLM's --tensor-parallel-size)
    data_parallel_size: int = 1  # DP ranks, each an engine with its own batch (--data-parallel-size)
    enable_expert_parallel: bool = False  # routed experts split over tp × dp GPUs (--enable-expert-parallel)
    all2all_backend: str = DEFAULT_ALL2ALL_BACKEND  # MoE dispatch/combine kernels (--all2all-backend)
    enable_dbo: bool = False  # dual batch overlap of the target pass's all-to-all (--enable-dbo)
    nodes: int = 1  # machines the decode instance spans; its GPUs split evenly over them
    disaggregated: bool = False  # PD: this instance only decodes; prompts are prefilled on other GPUs
    # requests on the busiest DP rank over the mean (the lock-stepped ranks all run at its size); 1: even routing
    imbalance: float = 1.0
    # EPLB's extra expert replicas per MoE layer (--enable-eplb --eplb-config '{"num_redundant_experts": N}'); 0: off
    redundant_experts: int = 0
    # the user's --max-num-batched-tokens, per DP rank; None: vLLM's default at this shape (256 with DeepEP LL)
    max_num_batched_tokens: int | None = None
    # the user's --max-num-seqs, per DP rank; None: vLLM's default at this shape (`advisor.vllm.parallel.limits`)
    max_num_seqs: int | None = None

    def __post_init__(self) -> None:
        for flag, value in (("--num-gpus", self.tensor_parallel_size),
                            ("--data-parallel-size", self.data_parallel_size), ("--nodes", self.nodes)):
            if value < 1:
                raise InputError(f"{flag} must be at least 1, got {value}")
        if self.gpus % self.nodes:
            raise InputError(f"--nodes {self.nodes} must divide the instance's {self.gpus} GPUs (--num-gpus "
                             f"{self.tensor_parallel_size} x --data-parallel-size {self.data_parallel_size})")
        if self.nodes > 1 and self.data_parallel_size % self.nodes:
            raise InputError(f"--nodes {self.nodes} must divide --data-parallel-size {self.data_parallel_size}: "
                             "tensor parallelism across nodes is not modelled, each node holds whole DP ranks")
        if not 1.0 <= self.imbalance <= self.data_parallel_size:  # NaN and inf fail too
            raise InputError(f"--dp-imbalance is the busiest rank's requests over the mean: at least 1 and at most "
                             f"--data-parallel-size {self.data_parallel_size} (every request on one rank), got "
                             f"{self.imbalance:g}")
        if self.enable_dbo and not self.enable_expert_parallel:
            raise InputError("--enable-dbo overlaps expert parallelism's all-to-all (vLLM: it only targets DP+EP "
                             "deployments): add --enable-expert-parallel")
        if self.enable_dbo:
            check_dbo_backend(self.all2all_backend)
        if self.redundant_experts < 0:
            raise InputError(f"--redundant-experts must be at least 0, got {self.redundant_experts}")
        if self.redundant_experts and (not self.enable_expert_parallel or self.gpus < 2):
            raise InputError("--redundant-experts needs EPLB, which vLLM runs only with --enable-expert-parallel over "
                             "more than one GPU (enable_expert_parallel must be True to use EPLB)")
        if self.enable_expert_parallel or self.data_parallel_size > 1:
            check_all2all_backend(self.all2all_backend)

    @property
    def gpus(self) -> int:
        """GPUs of the (decode) instance."""
        return self.tensor_parallel_size * self.data_parallel_size

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def ranks_per_node(self) -> int:
        """DP ranks on each node (--data-parallel-size-local)."""
        return self.data_parallel_size // self.nodes

    @property
    def beyond_one_group(self) -> bool:
        """Anything past one tensor-parallel engine: `recommend` then answers per decode GPU at scale."""
        return self.data_parallel_size > 1 or self.enable_expert_parallel or self.disaggregated or self.nodes > 1

    @property
    def moe_shards(self) -> int:
        """GPUs an MoE model's routed experts are split over: tp × dp with EP or DP > 1 (vLLM shards MoE layers over
        TP × DP, by expert with EP, else tensor-parallel), else tp."""
        return self.gpus if self.enable_expert_parallel or self.data_parallel_size > 1 else self.tensor_parallel_size

    @property
    def ep_size(self) -> int:
        """GPUs the routed experts are split over: tp × dp with EP (vLLM), else 1 (experts tensor-parallel)."""
        return self.gpus if self.enable_expert_parallel else 1

    def token_cap(self, default: int) -> int:
        """Tokens one DP rank runs per step: the user's --max-num-batched-tokens, else vLLM's default at this shape
        (BATCHED_DP_MAX_TOKENS with DeepEP low-latency, EP and DP > 1; `default`, the GPU class's, otherwise)."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        if batched_dp_moe(self.all2all_backend, self.enable_expert_parallel, self.data_parallel_size):
            return BATCHED_DP_MAX_TOKENS
        return default
