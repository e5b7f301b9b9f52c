"""One workload to advise on: the pair and its costs, the GPU, acceptance, request shape and concurrency."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.errors import InputError
from advisor.model.acceptance.conventions import Acceptance
from advisor.model.acceptance.truncation import tokens_per_step
from advisor.model.cost.engines import VLLM
from advisor.model.cost.speculative import Setup
from advisor.model.gpu.hardware import Hardware
from advisor.model.uncertainty import CostError
from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION, check_k
from advisor.vllm.methods import TEXT_LOOKUP


@dataclass(frozen=True, slots=True)
class Scenario:
    setup: Setup  # target, drafter, method and their costs
    hardware: Hardware  # one GPU's datasheet (the deployment uses setup.tp of them)
    acceptance: Acceptance  # α with its range and source
    prompt_len: int  # tokens per prompt
    out_len: int  # tokens generated per request
    batch: int = 1  # concurrent requests
    temperature: float = 0.0  # sampling temperature served (acceptance is already carried to it)
    k: int | None = None  # evaluate this draft length instead of choosing one
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION  # vLLM's --gpu-memory-utilization
    cost_source: str = "datasheet"  # where the step costs came from
    k_limit: int | None = None  # choose k only up to this (a review's num_speculative_tokens for the plan)
    cost_error: CostError | None = None  # the step-time prediction's own error (None: taken as exact)
    # what the answer takes for the GPU beyond its sources and measurements (advisor.model.error.borrowed.caveats)
    gpu_caveats: tuple[str, ...] = ()
    engine: str = VLLM  # whose per-step terms the costs carry (advisor.model.cost.engines: recommend --engine)
    # the line said first when no published run of the answer's kind supports its number (advisor/model/error/
    # speedup.py: its target class as vLLM 0.32 runs it, or its method); "" when one does. Its verdict is at most
    # marginal.
    unpublished: str = ""

    def __post_init__(self) -> None:
        if self.prompt_len < 1 or self.out_len < 1:
            raise InputError(f"--prompt-len and --out-len must be at least 1, got {self.prompt_len} and {self.out_len}")
        if self.batch < 1:
            raise InputError(f"--batch must be at least 1, got {self.batch}")
        if self.k is not None:
            check_k(self.k, lowest=0)
        if self.k_limit is not None:
            check_k(self.k_limit, "k_limit")
        if not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise InputError(f"--gpu-memory-utilization must be in (0, 1], got {self.gpu_memory_utilization}")

    @property
    def context(self) -> float:
        """Mean tokens in the KV cache during decode."""
        return self.prompt_len + self.out_len / 2

    @property
    def decode_tokens(self) -> int:
        """Output tokens that come from decode steps (the first comes from prefill)."""
        return self.out_len - 1

    @property
    def unmeasured_ngram(self) -> bool:
        """n-gram acceptance from a task prior: how often the user's text repeats is anyone's guess, so a verdict
        built on it is at most `marginal` until `specadvisor acceptance ngram` measures it."""
        return self.setup.method in TEXT_LOOKUP and self.acceptance.prior

    @property
    def ceiling(self) -> str:
        """The best verdict the numbers may earn: "marginal" on an n-gram prior (`unmeasured_ngram`) or where no
        published run of the answer's kind supports it (`unpublished`), else "enable" (advisor.advice.verdict.rule)."""
        return "marginal" if self.unmeasured_ngram or self.unpublished else "enable"

    def tokens_per_step(self, ks, alpha=None) -> np.ndarray:
        """Tokens per target step at each k over this request's decode, its last step cut at out_len
        (`truncation`); `alpha` evaluates an end of the acceptance range instead of the point."""
        return tokens_per_step(self.acceptance.survival(ks, alpha), self.decode_tokens)
