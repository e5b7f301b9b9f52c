"""advisor/model/shape/draft_heads.py: block drafters read from the shipped drafter configs, against what vLLM 0.32's
own config code reads from the same files."""

import json

import pytest

from advisor.model.shape.draft_heads import block_drafter
from advisor.profiles.catalog import load_model, profiles_dir


def _config(name: str) -> dict:
    return json.loads((profiles_dir() / "models" / f"{name}.json").read_text())


@pytest.mark.parametrize("name, method, block, taps, rank, mixed", [
    ("dflash-qwen3-8b-b16", "dflash", 16, 5, 0, False),
    ("dflash-qwen3.6-27b", "dflash", 16, 5, 0, True),  # 4 sliding + 1 full layer: two draft KV groups
    ("dflash-qwen3.5-35b-a3b", "dflash", 16, 5, 0, False),
    ("dspark-qwen3-8b-b7", "dspark", 7, 5, 256, False),
    ("dspark-qwen3.6-27b", "dspark", 16, 5, 256, False),
    ("dspark-glm-5.2", "dspark", 7, 5, 256, False),
    ("dspark-kimi-k3", "dspark", 7, 5, 256, False),
])
def test_the_shipped_block_heads(name, method, block, taps, rank, mixed):
    spec = load_model(name)
    assert spec.kind == "block_head" and spec.block.method == method
    assert (spec.block.block_size, spec.block.taps, spec.block.markov_rank, spec.block.mixed_windows) == \
        (block, taps, rank, mixed)
    assert spec.block.mask_token and spec.block.non_causal  # every shipped one has a full (non-causal) layer
    # the target's embedding and lm_head are shared: the head holds its layers, its fc and (DSpark) Markov head
    fc = taps * spec.hidden_size ** 2
    markov = 2 * spec.vocab_size * rank + (spec.hidden_size + rank if spec.block.confidence_head else 0)
    assert spec.total_params == spec.decoder_params() + fc + markov


def test_a_p_eagle_head_is_an_eagle3_head_that_drafts_in_parallel():
    spec = load_model("peagle-qwen3-8b")
    assert spec.kind == "eagle_head" and spec.is_eagle3 and spec.block.method == "eagle3"
    assert not spec.block.mask_token  # SpecForge's config names no pard_token: vLLM needs one (its profile says so)
    assert block_drafter({**_config("peagle-qwen3-8b"), "pard_token": 151669}, "p").mask_token
    assert block_drafter(_config("eagle3-qwen3-8b"), "e") is None


def test_vllms_own_readers_agree():
    """The block size, the causality and the placeholder token as vLLM 0.32 reads them from the same config:
    config/speculative.py `_get_qwen3_dspark_value`, model_executor/models/qwen3_dflash.py
    `dflash_has_any_non_causal`, v1/worker/gpu/spec_decode/utils.py `get_parallel_drafting_token_id`."""
    from transformers import PretrainedConfig
    from vllm.config.speculative import _get_qwen3_dspark_value
    from vllm.model_executor.models.qwen3_dflash import dflash_has_any_non_causal
    from vllm.v1.worker.gpu.spec_decode.utils import get_parallel_drafting_token_id

    for name in ("dflash-qwen3-8b-b16", "dflash-qwen3.6-27b", "dspark-qwen3-8b-b7", "dspark-kimi-k3",
                 "peagle-qwen3-8b"):
        config = _config(name)
        hf = PretrainedConfig(**{k: v for k, v in config.items() if k != "_specadvisor"})
        ours = block_drafter(config, name)
        if ours.method != "eagle3":
            assert _get_qwen3_dspark_value(hf, "block_size") == ours.block_size
            assert dflash_has_any_non_causal(hf) == ours.non_causal
        try:
            get_parallel_drafting_token_id(hf)
            found = True
        except ValueError:
            found = False
        assert found == ours.mask_token, name
