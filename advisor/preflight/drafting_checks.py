"""The pre-flight checks of the 2026 drafters (DFlash, DSpark, P-EAGLE) and of k against what a drafter was built
for: one function each, same contract as `advisor.preflight.checks` (a `Context` in, a `Finding` or None out, the
vLLM 0.32 file that decides it in the docstring). `advisor.vllm.drafting` holds the facts they read.
"""

from __future__ import annotations

from advisor.preflight.checks import Context, Finding
from advisor.vllm.drafting import NON_CAUSAL_BACKENDS, trained_length, v1_only, v2_only

_V2_ENV = "VLLM_USE_V2_MODEL_RUNNER"


def _block(c: Context):
    return c.draft.block if c.draft is not None else None


def block_k(c: Context) -> Finding | None:
    """num_speculative_tokens past the block a DFlash or DSpark head was trained on (its config's block_size:
    `drafting.trained_length`). vLLM 0.32 checks this only for Qwen3-Omni's DSpark (vllm/config/speculative.py
    `_validate_qwen3_omni_dspark`, which requires k == block_size); any other head runs past its block, drafting
    positions it was never trained on."""
    block = _block(c)
    if block is None or c.serve.method not in ("dflash", "dspark"):
        return None
    trained = trained_length(c.serve.method, block.block_size, anchor_sampled=block.anchor_sampled)
    if trained is None or c.serve.k <= trained:
        return None
    past = f"position {c.serve.k}" if c.serve.k == trained + 1 else f"positions {trained + 1}-{c.serve.k}"
    return Finding("block_k", True, f"num_speculative_tokens {c.serve.k} is past the {trained} tokens "
                   f"{c.draft.name} drafts from its block of {block.block_size}: {past} never trained",
                   "config/speculative.py (no check outside _validate_qwen3_omni_dspark)",
                   f"num_speculative_tokens {trained}")


def model_runner(c: Context) -> Finding | None:
    """A method one model runner of vLLM 0.32 alone serves, on a command that takes the other. DSpark, and a DFlash
    draft that mixes sliding-window and full layers, run only on Model Runner V2; P-EAGLE (eagle3 with
    parallel_drafting) only on the V1 runner (vllm/config/vllm.py `_get_v1_model_runner_unsupported_features`,
    `_get_v2_model_runner_unsupported_features`). VLLM_USE_V2_MODEL_RUNNER=0 forces V1, =1 forces V2, and dual batch
    overlap without the variable takes V1 ("dual batch overlap", `_get_dbo_unsupported_features`): vLLM refuses to
    start ("Model Runner V1 does not support: ...")."""
    s, block = c.serve, _block(c)
    env = s.env_value(_V2_ENV)
    v1 = env in ("0", "false", "False") or (env is None and s.dbo)
    v2 = env in ("1", "true", "True")
    needs_v2 = v2_only(s.method or "", mixed_windows=block is not None and block.mixed_windows)
    if needs_v2 and v1:
        why = f"{_V2_ENV}={env}" if env is not None else "--enable-dbo (dual batch overlap runs on the V1 runner)"
        return Finding("model_runner", True, f"{s.method} runs only on Model Runner V2, and {why} takes V1: vLLM "
                       "refuses to start", "config/vllm.py _get_v1_model_runner_unsupported_features",
                       f"drop {why.split(' ')[0]}")
    if v1_only(s.method or "", s.parallel_drafting) and v2:
        return Finding("model_runner", True, f"an eagle3 head drafting in parallel (P-EAGLE) runs only on the V1 "
                       f"runner, and {_V2_ENV}={env} forces V2: vLLM refuses to start",
                       "config/vllm.py _get_v2_model_runner_unsupported_features", f"drop {_V2_ENV}")
    return None


def draft_attention_backend(c: Context) -> Finding | None:
    """A DFlash or DSpark draft whose layers attend both ways within the block (vLLM 0.32's
    vllm/model_executor/models/qwen3_dflash.py `dflash_has_any_non_causal`) given an attention_backend that cannot
    (v1/attention/backend.py `validate_configuration`: "non-causal attention not supported";
    `drafting.NON_CAUSAL_BACKENDS`)."""
    backend = str(c.serve.speculative.get("attention_backend") or "").upper()
    block = _block(c)
    if not backend or c.serve.method not in ("dflash", "dspark") or block is None or not block.non_causal:
        return None
    if backend in NON_CAUSAL_BACKENDS:
        return None
    return Finding("draft_attention_backend", True, f"{c.draft.name} attends both ways within its block, and "
                   f"attention_backend {backend} supports causal attention only: vLLM refuses to start",
                   "v1/attention/backend.py validate_configuration (supports_non_causal)",
                   f"drop attention_backend, or one of {', '.join(sorted(NON_CAUSAL_BACKENDS))}")


def fused_dspark(c: Context) -> Finding | None:
    """The drafter a target's own checkpoint holds. vLLM 0.32's dspark without a model takes the target's
    checkpoint as the draft (vllm/config/speculative.py `__post_init__`: "DeepSeek DSpark can ship the weights inside
    the target checkpoint"), which only a target with DSpark stages has (DeepSeek-V4.1's dspark_block_size); and it
    refuses mtp for DeepSeek-V4.1, whose next-n layers are DSpark stages ("DeepSeek V4.1 has no classic-MTP
    draft")."""
    s, target = c.serve, c.target
    if target is None:
        return None
    if s.method == "dspark" and not s.speculative.get("model") and not target.dspark_block:
        return Finding("fused_dspark", True, f"dspark without a model drafts with the target's own DSpark stages, "
                       f"and {target.name} has none: vLLM builds a draft from weights the checkpoint lacks",
                       "config/speculative.py SpeculativeConfig.__post_init__ (dspark: model = target)",
                       'give "model": a DSpark head trained for it (`specadvisor list models`)')
    if s.method == "mtp" and target.dspark_block:
        return Finding("fused_dspark", True, f"{target.name}'s next-n layers are DSpark stages (block "
                       f"{target.dspark_block}), not MTP: vLLM refuses method mtp for it",
                       "config/speculative.py SpeculativeConfig.__post_init__ (DeepSeek V4.1)",
                       f'"method": "dspark" without a model, num_speculative_tokens {target.dspark_block}')
    return None


def parallel_token(c: Context) -> Finding | None:
    """A parallel drafter whose config.json names no placeholder token for its drafted slots (dflash_config.
    mask_token_id, mask_token_id, dspark_noise_token_id, pard_token or ptd_token_id): vLLM 0.32 refuses to start
    (v1/worker/gpu/spec_decode/utils.py `get_parallel_drafting_token_id`; v1/spec_decode/llm_base_proposer.py
    `_init_parallel_drafting_params`)."""
    block = _block(c)
    if block is None or block.mask_token or not c.serve.parallel_drafting:
        return None
    return Finding("parallel_token", True, f"{c.draft.name}'s config.json names no placeholder token for parallel "
                   "drafting: vLLM refuses to start", "v1/worker/gpu/spec_decode/utils.py "
                   "get_parallel_drafting_token_id", "add the head's pard_token (or ptd_token_id) to its config.json")
