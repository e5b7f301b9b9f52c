"""Block drafters: heads that draft k tokens in one forward over a block of placeholder queries (DFlash, DSpark, and
EAGLE-3 heads trained for parallel drafting, P-EAGLE), read from their config.json the way vLLM 0.32 reads them.

A DFlash head (vllm/model_executor/models/qwen3_dflash.py `DFlashQwen3Model`) is a few decoder layers over the
bonus token and k mask tokens; the target's hidden states at `dflash_config.target_layer_ids` are fused by `fc`
(taps·h x h) and projected by every layer's own k/v weights straight into the draft's KV cache
(`precompute_and_store_context_kv`). It shares the target's embedding and lm_head (v1/worker/gpu/spec_decode/dflash/
utils.py `load_dflash_model`). A DSpark head is the same backbone with a low-rank Markov head (`markov_w1`, V x r,
gathered; `markov_w2`, r x V, one GEMV per drafted position: vllm/model_executor/models/qwen3_dspark.py
`DSparkMarkovHead`) and an optional confidence head. A P-EAGLE head is an EAGLE-3 head whose extra query slots hold
a placeholder token (`pard_token` / `ptd_token_id`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.errors import InputError

# Architectures vLLM 0.32 serves as each method (vllm/config/speculative.py, "Automatically detect the method";
# vllm/v1/worker/gpu/spec_decode/__init__.py `init_speculator`; model_executor/models/registry.py)
DFLASH_ARCHITECTURES = ("DFlashDraftModel", "DFlash2DraftModel", "LiLiCorrDraftModel", "MuseGlimmerAssistantModel",
                        "DFlashLagunaForCausalLM")
DSPARK_ARCHITECTURES = ("DSparkDraftModel", "Qwen3DSparkModel", "Qwen3OmniDSparkModel", "K3DSparkModel",
                        "Gemma4DSparkModel")
PEAGLE_ARCHITECTURES = ("PEagleDraftModel",)
# The keys vLLM takes the parallel-drafting token from, in its order (v1/worker/gpu/spec_decode/utils.py
# `get_parallel_drafting_token_id`): without one it refuses to start
MASK_TOKEN_KEYS = ("mask_token_id", "dspark_noise_token_id", "pard_token", "ptd_token_id")


@dataclass(frozen=True, slots=True)
class BlockDrafter:
    """What a block drafter's config says about how vLLM runs it."""

    method: str  # vLLM's method: "dflash", "dspark", or "eagle3" (P-EAGLE, with parallel_drafting)
    block_size: int  # the block it was trained on (block_size / dspark_block_size); 0: none stated (P-EAGLE)
    taps: int  # target layers whose hidden states its fc fuses (target_layer_ids; EAGLE-3: 3)
    markov_rank: int = 0  # DSpark's Markov head rank r; 0: none
    mask_token: bool = True  # the config names the token vLLM puts in the drafted slots (`MASK_TOKEN_KEYS`)
    non_causal: bool = False  # a layer attends both ways within the block: needs a non-causal attention backend
    mixed_windows: bool = False  # sliding-window and full layers mixed: two draft KV groups (Model Runner V2 only)
    anchor_sampled: bool = True  # DSpark: the anchor is the first prediction (k queries); False: 1 + k queries
    confidence_head: bool = False  # DSpark: a trained acceptance-confidence head (adaptive verification)

    def __post_init__(self) -> None:
        if self.method not in ("dflash", "dspark", "eagle3"):
            raise InputError(f"block drafter method must be dflash, dspark or eagle3, got {self.method!r}")
        if self.block_size < 0 or self.taps < 1 or self.markov_rank < 0:
            raise InputError("a block drafter needs a block size >= 0, at least one target layer and a rank >= 0")


def _draft_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """dflash_config, which vLLM reads before the top level (qwen3_dflash.py: eagle_config updated by it)."""
    inner = cfg.get("dflash_config")
    return inner if isinstance(inner, dict) else {}


def _count(value, key: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"config.json for {name!r}: {key} must be a whole number >= 0, got {value!r}")
    return value


def _non_causal(cfg: dict[str, Any], layers: int) -> bool:
    """vLLM's `dflash_has_any_non_causal` (qwen3_dflash.py): a layer is causal where `is_causal` or
    dflash_config.causal says so, else where layer_types calls it sliding_attention; no layer_types: non-causal."""
    if cfg.get("is_causal") is not None:
        return not bool(cfg["is_causal"])
    if _draft_config(cfg).get("causal") is not None:
        return not bool(_draft_config(cfg)["causal"])
    types = cfg.get("layer_types") or []
    return not types or any(t != "sliding_attention" for t in types[:layers])


def block_drafter(cfg: dict[str, Any], name: str) -> BlockDrafter | None:
    """The block drafter a config describes, or None for any other model."""
    archs = [str(a) for a in cfg.get("architectures") or ()]
    inner = _draft_config(cfg)
    method = ("dflash" if any(a in DFLASH_ARCHITECTURES for a in archs) else
              "dspark" if any(a in DSPARK_ARCHITECTURES for a in archs) else
              "eagle3" if any(a in PEAGLE_ARCHITECTURES for a in archs) or cfg.get("parallel_drafting") is True or
              any(cfg.get(k) is not None for k in ("pard_token", "ptd_token_id")) else None)
    if method is None:
        return None
    layers = _count(cfg.get("num_hidden_layers", 1), "num_hidden_layers", name)
    taps = inner.get("target_layer_ids") or cfg.get("dspark_target_layer_ids") or cfg.get("target_layer_ids")
    if taps is not None and not isinstance(taps, list):
        raise InputError(f"config.json for {name!r}: target_layer_ids must be a list of layer numbers")
    block = cfg.get("block_size", cfg.get("dspark_block_size", 0))
    rank = inner.get("markov_rank", cfg.get("markov_rank", cfg.get("dspark_markov_rank", 0)))
    types = cfg.get("layer_types") or []
    mask = inner.get("mask_token_id") is not None or any(cfg.get(k) is not None for k in MASK_TOKEN_KEYS)
    return BlockDrafter(
        method=method, block_size=_count(block or 0, "block_size", name),
        taps=len(taps) if taps else (3 if method == "eagle3" else max(layers, 1)),
        markov_rank=_count(rank or 0, "markov_rank", name) if method == "dspark" else 0, mask_token=mask,
        non_causal=method != "eagle3" and _non_causal(cfg, layers),
        mixed_windows=0 < sum(t == "sliding_attention" for t in types) < len(types),
        anchor_sampled=bool(cfg.get("sample_from_anchor", True)),
        confidence_head=bool(inner.get("enable_confidence_head", cfg.get("enable_confidence_head", False))))
