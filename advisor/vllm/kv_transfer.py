"""What this project knows about vLLM 0.32's prefill/decode disaggregation (PD) over NIXL, and the router that joins
the two pools. Sources: vllm/config/kv_transfer.py (`KVTransferConfig`), vllm/distributed/kv_transfer/kv_connector/
v1/nixl/metadata.py (the compatibility hash), vllm/envs.py; the router is vllm-router's (`vllm-router` on PyPI,
written for 0.1.17: vllm_router/router_args.py).
"""

from __future__ import annotations

import json
import shlex

NIXL_CONNECTOR = "NixlConnector"
KV_PRODUCER = "kv_producer"  # the prefill pool (`KVRole`)
KV_CONSUMER = "kv_consumer"  # the decode pool

# The speculative config's keys NIXL folds into the compatibility hash both sides compare at the handshake, for a
# drafter on the target's hidden states (`_get_speculative_compatibility_factors`: `use_eagle()`, i.e. eagle, eagle3,
# mtp, dflash, dspark; the draft's model, revisions and kv_cache_dtype resolved). A prefill pool without the decode
# pool's EAGLE/MTP config, or with another, fails the handshake. num_speculative_tokens is not among them: the
# prefill side may run another k (the GLM-5.2 recipe: k = 1 on prefill, 3 on decode).
NIXL_HASHED_SPECULATIVE_KEYS = ("method", "model", "revision", "code_revision", "parallel_drafting", "kv_cache_dtype")
# The k the prefill pool pastes: a prefill instance emits each request's first token and hands it off, so it never
# verifies a draft; its drafter is there for the hash and for the draft layers' KV the decode side reads. k only
# sizes the lookahead slots each request holds there: the fewest is 1.
PREFILL_K = 1
# NIXL's side channel listens on this host unless VLLM_NIXL_SIDE_CHANNEL_HOST says otherwise (vllm/envs.py): across
# machines each instance must name its own address
NIXL_SIDE_CHANNEL_ENV = "VLLM_NIXL_SIDE_CHANNEL_HOST"
NIXL_SIDE_CHANNEL_DEFAULT = "localhost"

ROUTER_PORT = 9000  # where the router listens (vllm-router takes --port); the pools serve on vLLM's 8000
SERVE_PORT = 8000  # `vllm serve`'s default --port


def kv_transfer_config(role: str) -> dict:
    """--kv-transfer-config for one pool over NIXL (`KVTransferConfig`: kv_connector, kv_role)."""
    return {"kv_connector": NIXL_CONNECTOR, "kv_role": role}


def kv_transfer_flag(role: str) -> list[str]:
    return ["--kv-transfer-config", shlex.quote(json.dumps(kv_transfer_config(role), separators=(",", ":")))]


def prefill_speculative(decode_config: dict) -> dict:
    """The prefill pool's --speculative-config: the decode pool's at PREFILL_K (no per-batch schedule), so every key
    NIXL hashes is the decode pool's; {} where the decode pool does not speculate."""
    if not decode_config:
        return {}
    config = {key: value for key, value in decode_config.items() if key != "num_speculative_tokens_per_batch_size"}
    config["num_speculative_tokens"] = PREFILL_K
    return config


def hashed(config: dict) -> dict:
    """The part of a --speculative-config NIXL's compatibility hash reads (absent keys: vLLM's defaults)."""
    return {key: config.get(key) for key in NIXL_HASHED_SPECULATIVE_KEYS}


def router_command(prefill_urls: list[str], decode_urls: list[str]) -> str:
    """The proxy that sends each request's prompt to a prefill instance and its decode to the decode pool, over
    NIXL: vllm-router in vLLM PD mode (`--vllm-pd-disaggregation`, `--kv-connector nixl`, one `--prefill URL` per
    prefill instance, one `--decode URL` per decode instance)."""
    parts = ["vllm-router", "--port", str(ROUTER_PORT), "--vllm-pd-disaggregation", "--kv-connector", "nixl"]
    for url in prefill_urls:
        parts += ["--prefill", url]
    for url in decode_urls:
        parts += ["--decode", url]
    return " ".join(parts)
