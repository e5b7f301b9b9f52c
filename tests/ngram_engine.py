"""The tiny n-gram-speculating engine that the engine tests share and tests/data/capture_metrics.py records.

A 2-layer Llama with a 64-token vocabulary and dummy weights: with so few tokens, random prompts already repeat
short n-grams (n-gram drafts that the model mostly rejects), and the model's own greedy output soon cycles (drafts
it accepts), so the counts mix rejections and acceptances. max_model_len 160 with k = 6 makes every long request
run into vLLM's drafting cut-off near the end of the context.
"""

from pathlib import Path

import numpy as np

from advisor.measured.ngram import NgramConfig
from calibration.engine.tinymodels import decoder_config, write_model_dir

NGRAM = NgramConfig(k=6, min_n=1, max_n=3, max_model_len=160)
SPECULATIVE_CONFIG = {"method": "ngram", "num_speculative_tokens": NGRAM.k,
                      "prompt_lookup_min": NGRAM.min_n, "prompt_lookup_max": NGRAM.max_n}


def prompts() -> list[list[int]]:
    """Six prompts: random tokens around a short unit repeated three times."""
    rng = np.random.default_rng(1)
    out = []
    for i in range(6):
        unit = rng.integers(3, 64, 5 + i).tolist()
        out.append(rng.integers(3, 64, 20).tolist() + unit * 3 + rng.integers(3, 64, 10).tolist())
    return out


def write_model(root: Path) -> Path:
    return write_model_dir(Path(root) / "tiny-ngram", decoder_config(hidden=128, layers=2, heads=4, kv_heads=2,
                                                                  intermediate=352, name="tiny-ngram", vocab=64,
                                                                  max_position=512))


def open_ngram_engine(root: Path):
    from vllm_server import engine_share  # a session-scoped engine must not hold most of a GPU

    from calibration.engine.vllm_engine import open_engine

    return open_engine(write_model(root), dummy_weights=True, speculative_config=SPECULATIVE_CONFIG,
                       max_model_len=NGRAM.max_model_len, seed=0, **engine_share())
