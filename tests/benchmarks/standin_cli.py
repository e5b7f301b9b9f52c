"""specadvisor's own CLI with a stand-in engine behind `calibrate`, for running benchmarks/gpu_smoke.sh where no GPU
is: every step shape takes a random 1-40 ms (with nothing of the shape in it), so the real fit misses its held-out
gate and calibrate fails as it would on a GPU whose timings the model cannot follow.
    python tests/benchmarks/standin_cli.py COMMAND [FLAGS...]      (as `python -m advisor.cli.app`)
"""

from dataclasses import dataclass, field

import numpy as np

from advisor.cli.app import run
from calibration.calibrate import measure
from calibration.engine.vllm_engine import Completion


@dataclass
class StandInEngine:
    """What calibrate's measuring asks of `calibration.engine.vllm_engine.Engine`, answered with noise."""

    model: str
    engine_args: dict
    dtype: str = "bfloat16"
    block_size: int = 16
    kv_capacity_tokens: int = 1 << 22
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 1024
    vllm_version: str = "0.32.0 (stand-in)"
    tensor_parallel_size: int = 1
    vocab_size: int = 1000
    vllm_config: dict = field(default_factory=lambda: {
        "model_runner": "v2", "async_scheduling": True, "cudagraph_mode": "FULL_AND_PIECEWISE",
        "attention_backend": "FLASH_ATTN", "block_size": 16, "enforce_eager": False, "speculative_method": None})
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def _noise(self) -> float:
        return float(self.rng.uniform(0.001, 0.04))

    def generate(self, prompts, max_tokens, *args, **kwargs):
        return [Completion(len(p), (1,) * max_tokens, 0, 0.0, 0.001, 0.002, 0) for p in prompts]

    def prefill(self, prompts):
        return self._noise()

    def decode(self, prefixes, steps, repeats=1, *, prime=True):
        return [self._noise() for _ in range(repeats)]

    def verify(self, prefixes, q, repeats=1, *, prime=True):
        return [self._noise() for _ in range(repeats)]

    def close(self):
        pass


if __name__ == "__main__":
    measure.open_engine = lambda model, **kwargs: StandInEngine(str(model), {"model": str(model), **kwargs})
    run()
