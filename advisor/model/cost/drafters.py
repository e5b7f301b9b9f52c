"""The drafter a method implies when it is not a model of its own: the target's MTP layers.

vLLM builds the MTP drafter from the target's own checkpoint (vllm/config/speculative.py,
`SpeculativeConfig.__post_init__`: with method "mtp" and no model, `model` is the target's, and
`hf_config_override` rewrites its config into an MTP model type with n_predict = num_nextn_predict_layers).
"""

from __future__ import annotations

from advisor.errors import InputError
from advisor.model.shape.modelspec import ModelSpec


def check_mtp(target: ModelSpec) -> None:
    """Refuse --method mtp where vLLM would refuse it, or where this project cannot time it."""
    if target.mtp_layers < 1:
        raise InputError(f"--method mtp needs a target with MTP layers, and {target.name} has none "
                         "(num_nextn_predict_layers is 0 or missing in its config.json)")
    if target.mtp_layers > 1:
        # min(layers, k) > 1 runs model runner V2's MultiModuleMTPSpeculator: every draft step re-runs a module
        # over the whole first-pass batch (v1/worker/gpu/spec_decode/multi_module_mtp/speculator.py
        # `_generate_drafts`), a cost structure not timed here
        raise InputError(f"--method mtp with {target.mtp_layers} MTP layers ({target.name}) is not modelled: "
                         "vLLM drafts those with one module per step over the whole batch (MultiModuleMTPSpeculator)")


def mtp_head(target: ModelSpec) -> ModelSpec:
    """The target's MTP layer(s) as a drafter: kind "mtp_head" (no embedding or lm_head of its own: vLLM shares the
    target's, vllm/v1/spec_decode/llm_base_proposer.py `_maybe_share_embeddings` / `_maybe_share_lm_head`,
    "Detected MTP model"), the target's widths, one decoder block per MTP layer plus its 2h x h eh_proj. The base
    model skips these weights when it loads (deepseek_v2.py `load_weights`: "skip spec decode layers for main
    model"; qwen3_next.py maps "mtp." to None), so they count as draft weights, loaded only with --method mtp."""
    check_mtp(target)
    return target.mtp_draft()  # an MTP layer is a full-attention block of the target's MoE/attention type
