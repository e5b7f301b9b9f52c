"""Acceptance when nothing was measured: priors by task, for a draft model (or EAGLE head) and for n-gram lookup.

They are ranges on purpose, and a verdict built on one says so: measure yours (`specadvisor acceptance`) first.
"""

from __future__ import annotations

from dataclasses import replace

from advisor.errors import InputError
from advisor.methods import TEXT_LOOKUP
from advisor.model.acceptance import Acceptance

# Greedy-decoding α for a same-family draft ~10-50x smaller than the target, as (low, high, source).
TASK_PRIORS: dict[str, tuple[float, float, str]] = {
    "structured": (0.75, 0.90, "talk demo: structured output, high acceptance, 1.6x on RTX PRO 6000"),
    "json": (0.80, 0.92, "schema keys and punctuation are nearly forced; cf. structured"),
    "sql": (0.72, 0.88, "keyword-heavy, schema-constrained output; cf. code"),
    "code": (0.70, 0.85, "Chen et al. 2023 (HumanEval: 2.5x vs 1.9x on XSum); Spec-Bench (Xia et al. 2024)"),
    "rag": (0.65, 0.85, "answers copy spans of the context; Spec-Bench RAG category (Xia et al. 2024)"),
    "summarization": (0.60, 0.78, "Leviathan et al. 2023 Table 3 (T5 on CNN/DM: α 0.62-0.75, greedy)"),
    "chat": (0.55, 0.75, "Spec-Bench multi-turn/MT-bench (Xia et al. 2024); Leviathan et al. LaMDA α 0.61-0.75"),
    "creative": (0.35, 0.55, "talk demo: creative writing at high temperature, low acceptance"),
}

# n-gram (prompt lookup) drafts only where the output repeats the prompt or itself, so two numbers describe it:
# the share of steps that find a match (the others are plain decode steps) and α once a match is drafted.
# (low α, high α, share of steps with a match, source). Output that copies its input (code edits, RAG answers,
# summaries) matches often; chat and creative text rarely. The ranges were set so that an 8B target at batch 1
# landed where published prompt-lookup runs do: 2-2.8x on summarization (vLLM blog 2024-10-17, CNN/DailyMail, up
# to 2.8x; Saxena 2023, prompt lookup decoding on summarization and code editing), and little on chat (the same
# blog: ShareGPT gains least; vLLM #19254: accepted 39-61% of draft tokens on chat traffic). That was with every
# step credited a full draft's tokens; counted as run (steps without a match yield one token, issue 25) they give
# 1.5-1.6x on summarization and ~1.03x on chat at 1000 -> 500 tokens: below the published summarization figure,
# so these priors err low until the shares are re-derived.
NGRAM_PRIORS: dict[str, tuple[float, float, float, str]] = {
    "structured": (0.45, 0.70, 0.45, "templated output repeats its schema; cf. json"),
    "json": (0.50, 0.75, 0.50, "keys and punctuation repeat across records"),
    "sql": (0.45, 0.70, 0.40, "column and table names repeat from the schema in the prompt"),
    "code": (0.55, 0.80, 0.55, "code editing rewrites the prompt's code (Saxena 2023)"),
    "rag": (0.50, 0.75, 0.50, "answers quote spans of the retrieved context"),
    "summarization": (0.50, 0.75, 0.50, "vLLM blog 2024-10-17: CNN/DailyMail up to 2.8x"),
    "chat": (0.30, 0.55, 0.20, "vLLM blog 2024-10-17: ShareGPT gains least; vLLM #19254"),
    "creative": (0.20, 0.40, 0.10, "new text: little to look up"),
}


# The target's own MTP layer, drafting one token: DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437),
# §5.4.3: "the acceptance rate of the second token prediction ranges between 85% and 90% across various generation
# topics" (one MTP module, k = 1). That is vLLM's first per-position rate, for every task alike. No published figure
# covers the layer reused for later positions (vLLM warns it "may result in lower acceptance rate"), so the prior is
# one position long: the advisor then chooses k = 1 (`advise.candidates`), and a --k beyond it extrapolates.
MTP_PRIOR = (0.85, 0.90, "DeepSeek-V3 Technical Report §5.4.3: 85-90% of second-token predictions accepted")
# Past its own MTP layers the layer is reused (vLLM passes no spec_step_idx: deepseek_mtp.py takes layer 0) on
# hidden states it was not trained on, and each later position accepts less: its conditional acceptance is
# α · MTP_REUSE_DECAY^(position - layers). Least squares on the mean acceptance lengths of one reused MTP layer in
# ../shared/reference/gpu-measurements.md §6 (Qwen3.6-27B, kyuz0/amd-strix-halo-vllm-toolboxes #53: AL 1.9 / 2.4 /
# 2.8 at k = 1 / 2 / 3, so α = 0.9 from k = 1) gives 0.67 (AL 2.44 and 2.77 predicted); i.i.d. α (decay 1) would
# give 2.71 and 3.44. tests/model/test_priors.py refits it.
MTP_REUSE_DECAY = 0.67


def _check(task: str) -> None:
    if task not in TASK_PRIORS:
        raise InputError(f"unknown --task {task!r}; choose one of {', '.join(TASK_PRIORS)}")


def from_task(task: str) -> Acceptance:
    """A draft model's (or EAGLE head's) greedy acceptance for this kind of traffic."""
    _check(task)
    low, high, cite = TASK_PRIORS[task]
    return Acceptance((low + high) / 2, low, high, f"task prior '{task}' α {low:.2f}-{high:.2f} ({cite})", prior=True)


def from_ngram_task(task: str) -> Acceptance:
    """n-gram lookup's greedy acceptance for this kind of traffic: α once a match is drafted, and the share of
    steps that find one."""
    _check(task)
    low, high, share, cite = NGRAM_PRIORS[task]
    return Acceptance((low + high) / 2, low, high, f"n-gram task prior '{task}' α {low:.2f}-{high:.2f} on the "
                      f"{share:.0%} of steps that find a match ({cite})", prior=True, match_share=share)


def from_mtp(task: str) -> Acceptance:
    """An MTP layer's greedy acceptance at the first draft position (`MTP_PRIOR`), the same for every task."""
    _check(task)
    low, high, cite = MTP_PRIOR
    mid = (low + high) / 2
    return mtp_beyond(Acceptance(mid, low, high, f"MTP prior α {low:.2f}-{high:.2f} at the first draft position, "
                                 f"any task ({cite})", per_position=(mid,), prior=True), 1)


def mtp_beyond(found: Acceptance, known: int) -> Acceptance:
    """An MTP acceptance known for its first `known` draft positions, priced past them with `MTP_REUSE_DECAY` and
    saying so: the advisor chooses no k past them (`advise.candidates`) unless asked for one."""
    note = (f"acceptance known for k ≤ {known}; past it each position's acceptance is priced {MTP_REUSE_DECAY:g}x "
            "lower again (one MTP layer reused for later positions: published mean acceptance lengths 1.9/2.4/2.8 at "
            "k = 1/2/3, SGLang PR #3582 and a vLLM Qwen3.6 MTP run)")
    return replace(found, known_positions=known, beyond_decay=MTP_REUSE_DECAY, notes=(*found.notes, note))


def for_method(method: str, task: str) -> Acceptance:
    """The prior a method gets when nothing was measured: text lookups (ngram, ngram_gpu, suffix) the n-gram priors,
    since each drafts only where the text repeats, which they describe by a match share and α (suffix trees also
    match earlier outputs, so for repetitive traffic these are conservative); an MTP layer its own; every other
    drafter the task priors."""
    if method in TEXT_LOOKUP:
        return from_ngram_task(task)
    if method == "mtp":
        return from_mtp(task)
    return from_task(task)
