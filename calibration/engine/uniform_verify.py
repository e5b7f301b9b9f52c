"""Verification timed as vLLM 0.32 runs it on a GPU: a uniform batch of k+1 tokens per sequence, in an engine whose
decode query length is k+1 (advisor.vllm.runner UNIFORM_VERIFY_METHOD: V2's NgramGPUSpeculator proposes k tokens for
every sequence at every step, and verifies them all as one uniform decode that replays a full CUDA graph where it fits).

A verify point timed as new requests on a cached prefix (vllm_engine.Engine.verify) is batched as a prefill and runs
piecewise; this one is the step a draft_model engine repeats. The engine's steps accept some drafts, so a sequence's
tokens no longer count its steps: the steps are the engine's own count, the draft counter's increase over the batch
(one draft per running sequence per step). Every sequence gets the same prompt, so all take the same tokens at the
same steps and the batch stays whole until they finish together (checked: a batch that diverges is refused).
"""

from __future__ import annotations

import numpy as np

from advisor.measured.metrics import DRAFTS
from advisor.vllm.runner import UNIFORM_VERIFY_METHOD
from calibration.engine.vllm_engine import EngineError


def draft_length(ran: dict) -> int:
    """k of an engine started for uniform verification (its recorded `vllm_config`), else 0."""
    if ran.get("speculative_method") != UNIFORM_VERIFY_METHOD:
        return 0
    return int(ran.get("num_speculative_tokens") or 0)


def uniform_verify(engine, prefix: list[int], batch: int, steps: int, repeats: int,
                   rng: np.random.Generator) -> list[float]:
    """Seconds per verification step of `batch` sequences × (k+1) tokens on `prefix` (cached: a multiple of the block
    size), measured over about `steps` steps, once per repeat."""
    if draft_length(engine.vllm_config) < 1:
        raise EngineError(f"uniform verification needs an engine started with the {UNIFORM_VERIFY_METHOD} method")
    times = []
    for _ in range(repeats):
        prompt = [*prefix, *rng.integers(10, engine.vocab_size, 1).tolist()]
        before = engine.metrics().get(DRAFTS, 0)
        done = engine._checked(engine.generate([prompt] * batch, steps + 1), len(prefix))
        counted = (engine.metrics().get(DRAFTS, 0) - before) / batch
        if len({c.token_ids for c in done}) > 1 or len({(c.first_token_s, c.last_token_s) for c in done}) > 1:
            raise EngineError("the sequences of a uniform verification diverged: lower the batch")
        if counted < 1:
            raise EngineError("the engine verified no drafts: it is not running uniform verification")
        times.append(done[0].decode_s / counted)
    return times
