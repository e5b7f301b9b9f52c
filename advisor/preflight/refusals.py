"""The pre-flight checks of what vLLM 0.32 refuses at config time in a speculative deployment at scale, and of
prefill/decode disaggregation over NIXL (issue 48). Same contract as `advisor.preflight.checks`: each reads one
Context and returns a Finding or None, its docstring naming the vLLM 0.32 source that decides it.
"""

from __future__ import annotations

from advisor.preflight.checks import Context, Finding
from advisor.vllm.command import SPECULATIVE_CONFIG_KEYS, inferred_method
from advisor.vllm.defaults import EAGLE_BLOCK_DROP_METHODS
from advisor.vllm.kv_transfer import KV_PRODUCER, NIXL_CONNECTOR, PREFILL_K
from advisor.vllm.methods import MTP_ALIASES, TEXT_LOOKUP
from advisor.vllm.parallel import DBO_ALL2ALL_BACKENDS, DEFAULT_ALL2ALL_BACKEND


def _mtp(c: Context) -> bool:
    return c.serve.method == "mtp" or c.serve.method in MTP_ALIASES


def speculative_keys(c: Context) -> Finding | None:
    """A --speculative-config key vLLM's SpeculativeConfig does not have. vLLM 0.32 refuses to start: its config
    classes forbid extra fields (vllm/config/utils.py `config`, ConfigDict(extra="forbid"))."""
    unknown = sorted(set(c.serve.speculative) - SPECULATIVE_CONFIG_KEYS)
    if not unknown:
        return None
    return Finding("speculative_keys", True, f"--speculative-config has {', '.join(map(repr, unknown))}, which vLLM's "
                   "SpeculativeConfig does not take: it refuses to start (extra fields are forbidden)",
                   "config/utils.py config (extra=\"forbid\")", "drop the key, or spell it as SpeculativeConfig does")


def mtp_without_layers(c: Context) -> Finding | None:
    """method mtp on a target whose config.json has no MTP layers. vLLM 0.32 reads the draft from the target's own
    config, which then is no MTP model type, and refuses ("Unsupported speculative method: 'mtp'":
    vllm/config/speculative.py `SpeculativeConfig.__post_init__`)."""
    if not _mtp(c) or c.target is None or c.target.mtp_layers > 0 or c.serve.speculative.get("model"):
        return None
    return Finding("mtp_without_layers", True, f"{c.target.name} has no MTP layers (num_nextn_predict_layers 0 or "
                   "missing): vLLM refuses method mtp for it", "config/speculative.py SpeculativeConfig.__post_init__",
                   "a drafter of its own: eagle3 with a head trained for it, draft_model, or ngram_gpu")


def k_divisible(c: Context) -> Finding | None:
    """num_speculative_tokens above a multi-layer MTP head's n_predict and not a multiple of it. vLLM 0.32 refuses
    ("num_speculative_tokens:... must be divisible by n_predict=...": vllm/config/speculative.py
    `SpeculativeConfig.__post_init__`, for MTP module reuse); n_predict is the target's num_nextn_predict_layers."""
    if not _mtp(c) or c.target is None or c.target.mtp_layers < 2:
        return None
    k, n = c.serve.k, c.target.mtp_layers
    if k <= n or k % n == 0:
        return None
    below, above = k - k % n, k + n - k % n
    return Finding("k_divisible", True, f"num_speculative_tokens {k} is above {c.target.name}'s {n} MTP layers and "
                   f"not a multiple of {n}: vLLM refuses to start", "config/speculative.py "
                   "SpeculativeConfig.__post_init__ (n_predict)", f"num_speculative_tokens {below} or {above}")


def draft_tensor_parallel(c: Context) -> Finding | None:
    """draft_tensor_parallel_size other than 1 or the target's tensor parallelism, for a drafter that is a model.
    vLLM 0.32 refuses ("cannot be other value than 1 or target model tensor_parallel_size":
    vllm/config/speculative.py `_verify_and_get_draft_tp`)."""
    draft_tp = c.serve.speculative.get("draft_tensor_parallel_size")
    if draft_tp is None or draft_tp in (1, c.serve.tp) or c.serve.method in TEXT_LOOKUP:
        return None
    return Finding("draft_tensor_parallel", True, f"draft_tensor_parallel_size {draft_tp} at --tensor-parallel-size "
                   f"{c.serve.tp}: vLLM takes only 1 or the target's", "config/speculative.py _verify_and_get_draft_tp",
                   f"draft_tensor_parallel_size 1 or {c.serve.tp}")


def dbo_backend(c: Context) -> Finding | None:
    """--enable-dbo on an all2all backend vLLM 0.32 does not microbatch with. It fails an assert at config time on
    every node ("Microbatching currently only supports the deepep_low_latency, deepep_high_throughput, and nixl_ep
    all2all backends": vllm/config/vllm.py `VllmConfig.__post_init__`)."""
    backend = c.serve.all2all_backend or DEFAULT_ALL2ALL_BACKEND
    if not c.serve.dbo or backend in DBO_ALL2ALL_BACKENDS:
        return None
    return Finding("dbo_backend", True, f"--enable-dbo with the {backend} all2all backend: vLLM refuses to start",
                   "config/vllm.py VllmConfig.__post_init__ (use_ubatching)",
                   f"--all2all-backend {DBO_ALL2ALL_BACKENDS[0]} (or deepep_high_throughput, nixl_ep), or drop "
                   "--enable-dbo")


def nixl_producer_drafter(c: Context) -> Finding | None:
    """A NIXL kv_producer (the prefill side of PD) without an EAGLE/MTP speculative config, or one with a k above
    what a prefill instance uses. vLLM 0.32's NIXL handshake compares a compatibility hash that includes the speculative
    config of a drafter on the target's hidden states (method, draft model, revisions, kv_cache_dtype:
    vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py `_get_speculative_compatibility_factors`), so
    the prefill side must carry the decode side's; num_speculative_tokens is not hashed. Notes: one command does
    not show the other side."""
    kv = c.serve.kv_transfer or {}
    if kv.get("kv_role") != KV_PRODUCER or kv.get("kv_connector") != NIXL_CONNECTOR:
        return None
    if not c.serve.speculative:
        return Finding("nixl_producer_drafter", False, "a NixlConnector kv_producer without --speculative-config: a "
                       "decode side that speculates with EAGLE or MTP fails NIXL's handshake with it (the hash "
                       "compares the drafter)", "distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
                       "compute_nixl_compatibility_hash", "give the prefill side the decode side's EAGLE/MTP "
                       f"--speculative-config (num_speculative_tokens {PREFILL_K} is enough there)")
    if c.serve.method in EAGLE_BLOCK_DROP_METHODS and c.serve.k > PREFILL_K:
        return Finding("nixl_producer_drafter", False, f"num_speculative_tokens {c.serve.k} on a prefill instance, "
                       "which emits one token per request and verifies no draft: k only reserves lookahead slots there",
                       "distributed/kv_transfer/kv_connector/v1/nixl/metadata.py (k is not hashed)",
                       f"num_speculative_tokens {PREFILL_K} on the prefill side, the decode side's config otherwise")
    return None


def missing_method(c: Context, inferred: str | None) -> Finding | None:
    """A --speculative-config without "method": vLLM 0.32 infers it from the draft's name (vllm/config/speculative.py
    `SpeculativeConfig.__post_init__`, "Automatically detect the method"; `advisor.vllm.command.inferred_method`).
    A note naming the method it infers; a problem where that contradicts the draft's profile (an EAGLE head whose
    name says nothing is served as a draft model)."""
    if inferred is None:
        return None
    head = c.draft is not None and c.draft.kind == "eagle_head"
    wrong = head and inferred not in ("eagle", "eagle3")
    return Finding("missing_method", wrong, f"--speculative-config names no method: vLLM infers {inferred!r} from "
                   f"the draft's name{' but the draft is an EAGLE head' if wrong else ''}",
                   "config/speculative.py SpeculativeConfig.__post_init__ (method detection)",
                   f'set "method" explicitly (e.g. "{"eagle3" if head else inferred}")')


def infer(serve) -> str | None:
    """The method vLLM would infer where the config names none (None: it names one, or there is no config)."""
    if not serve.speculative or serve.speculative.get("method") is not None:
        return None
    return inferred_method(serve.speculative)


CHECKS = (speculative_keys, mtp_without_layers, k_divisible, draft_tensor_parallel, dbo_backend,
          nixl_producer_drafter)
