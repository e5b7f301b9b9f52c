"""When an acceptance looks wrong: a measured one far below what the drafter (or its kind) reaches elsewhere, and a
head served under the wrong method. One line each, with the likely causes the pair's own facts point to first.

What users report most after "slower under load" is acceptance low, regressed or silently broken: EAGLE-3 below what
it was (vLLM #26191, #40551), MTP near zero at position 0 (vLLM #55605), an EAGLE-3 head run as EAGLE giving AL
exactly 1.0 without a word (SGLang PR #21272).
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.vllm.drafting import trained_length


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What the resolved pair says about the usual causes of low acceptance."""

    method: str  # the vLLM method served
    eagle3_head_as_eagle: bool  # an EAGLE-3 head (draft_vocab_size / an Eagle3 architecture) under method eagle
    target_quantized: str  # the target's served weight format when quantized ("fp8"), else ""
    temperature: float  # the temperature the acceptance was measured at
    published_temperature: float  # the highest temperature the reference figures were measured at
    prompt_len: int  # tokens per prompt
    drafter_context: int | None  # the drafter's max_position_embeddings (the context it was trained to), if known


def misserved_head(draft: str) -> str:
    """The warning for an EAGLE-3 head served as EAGLE-1, said before any number."""
    return (f"{draft} is an EAGLE-3 head (its config.json has draft_vocab_size), asked for as --method eagle: the "
            "command below serves it as eagle3, as it must be; a server running it with method eagle does not serve "
            "it as trained (vLLM 0.32 names it EagleLlamaForCausalLMEagle3, which its model registry does not list; "
            "SGLang ran such a head at AL exactly 1.0, PR #21272): use --method eagle3")


def past_trained_context(head: str, trained: int, max_model_len: int) -> str:
    """The warning for an EAGLE head asked to draft past the context it was trained on: vLLM 0.32 stretches its
    rotary cache to the target's max_model_len without a word (vllm/config/speculative.py
    `_maybe_override_draft_max_position_embeddings`), and such a head drafts badly past it (SGLang #6783)."""
    return (f"{head} was trained on {trained} positions and --max-model-len is {max_model_len}: vLLM stretches its "
            "rotary cache and it drafts past what it learnt, so acceptance on longer requests is below its prior")


def likely_causes(f: PairFacts) -> list[str]:
    """The causes to check, those this pair shows first (said as found), then the usual ones."""
    found, usual = [], []
    heads = f.method in ("eagle", "eagle3")
    if f.eagle3_head_as_eagle:
        found.append("this EAGLE-3 head was asked for as method eagle")
    elif heads:
        usual.append("an EAGLE-3 head run with method eagle")
    if f.target_quantized:
        found.append(f"the target is served quantized ({f.target_quantized}), and drafters are trained on 16-bit "
                     "targets' outputs")
    else:
        usual.append("a quantized target")
    if f.temperature > f.published_temperature:
        found.append(f"it was measured at T={f.temperature:g}, above the T≤{f.published_temperature:g} of the figures")
    if f.drafter_context is not None and f.prompt_len > f.drafter_context:
        found.append(f"prompts of {f.prompt_len} tokens are past the drafter's {f.drafter_context}-token training "
                     "context")
    else:
        usual.append("prompts longer than the drafter's training context")
    if f.method == "mtp":
        usual.append("MTP weights missing from the checkpoint or not loaded (acceptance near zero at position 0, "
                     "vLLM #55605)")
    usual.insert(0, "a chat template the drafter was not trained on")
    return found + usual


def far_below(measured_al: float, k: int, low_al: float, high_al: float, what: str, published: str,
              causes: list[str]) -> str:
    """The one line when a measured AL at k lies below the low end of the published prior's range ("" otherwise):
    `what` the drafter (or kind) the prior is of, `published` the figures it spans."""
    if measured_al >= low_al:
        return ""
    return (f"acceptance far below published: AL {measured_al:.2f} at k={k} against {low_al:.2f}-{high_al:.2f} for "
            f"{what} (the 90% range at k={k} of a prior on the published {published}); likely causes: "
            f"{'; '.join(causes)}")


def drafter_warnings(draft, method: str, k: int | None) -> tuple[str, ...]:
    """What makes a drafter's pasted command suspect before any number: a local directory no published checkpoint
    fills (the head must be trained first), a parallel-drafting head whose config names no placeholder token (vLLM
    refuses to start: v1/worker/gpu/spec_decode/utils.py `get_parallel_drafting_token_id`), and a --k past the block a
    DFlash/DSpark head was trained on (`advisor.vllm.drafting.trained_length`). `draft` is a ModelSpec or None."""
    if draft is None:
        return ()
    out = []
    if draft.hf_id.startswith(("./", "../")):
        out.append(f"{draft.name} has no published checkpoint this project knows: the command below points at "
                   f"{draft.hf_id}, a directory you must first train the head into (its profile's config is the "
                   "SpecForge training config), or pass a published head with --draft")
    block = draft.block
    if block is not None and not block.mask_token:
        out.append(f"{draft.name}'s config.json names no placeholder token for parallel drafting (pard_token, "
                   "ptd_token_id, mask_token_id or dspark_noise_token_id): vLLM 0.32 refuses to start until it does")
    trained = trained_length(method, block.block_size, anchor_sampled=block.anchor_sampled) if block else None
    if trained is not None and k is not None and k > trained:
        out.append(f"--k {k} is past the {trained} tokens {draft.name} drafts from its block of {block.block_size}: "
                   "the positions past it were never trained (vLLM runs it anyway)")
    return tuple(out)
