"""A parallel (block) drafter's step: DFlash, DSpark and P-EAGLE each propose k tokens with ONE draft forward, as
vLLM 0.32 runs them (advisor.vllm.drafting says how, with the files):

    t_draft(k) = draft pass(q = query tokens(k), sampling k rows a sequence, fusing the k + 1 verified tokens)
                 + k · Markov step                                                      (DSpark only)

The fusion is the drafter's fc over its tapped target layers (EAGLE-3's 3h x h; DFlash/DSpark's taps·h x h, then
every draft layer's k and v projections writing those tokens' K/V: `ModelSpec.fusion_params`). A Markov step is
one GEMV of markov_w2 (r x V) over each sequence's Markov embedding, its V-wide logits, and the sampling, inside the
same graph (v1/worker/gpu/spec_decode/dspark/speculator.py `_sample_sequential`). The pass replays one full CUDA
graph where vLLM captures one (DFlash and DSpark on Model Runner V2), else it is launched piecewise (P-EAGLE on the
V1 runner). Functions take the `speculative.Setup` and read it by its attributes.
"""

from __future__ import annotations

import numpy as np

from advisor.model.cost.costmodel import draft_pass, projection_time
from advisor.model.gpu.kernels import DENSE_LAYER_KERNELS, MARKOV_STEP
from advisor.vllm.drafting import context_tokens, query_tokens


def _anchor(setup) -> bool:
    return setup.draft.block.anchor_sampled if setup.draft.block is not None else True


def block_draft_time(setup, k, batch, context) -> np.ndarray:
    """Seconds to propose k tokens a sequence with one forward of a block drafter (0 at k = 0)."""
    k = np.asarray(k, dtype=float)
    batch = np.asarray(batch, dtype=float)
    q = query_tokens(setup.method, k, anchor_sampled=_anchor(setup))
    one = draft_pass(setup.draft, setup.draft_cost, batch, q, context, setup.tp,
                     fusion_tokens=batch * context_tokens(k), graph=setup.full_graph_drafts, sampled=batch * k)
    return np.where(k > 0, one + k * markov_step(setup, batch), 0.0)


def markov_step(setup, batch) -> np.ndarray:
    """One DSpark Markov step for `batch` sequences, s: markov_w2 (rank x vocabulary, 16 bit) over one row a
    sequence writing fp32 logits, and the step's small kernels at the graph's floor each; 0 for a head without one."""
    block = setup.draft.block
    if block is None or not block.markov_rank:
        return np.zeros_like(np.asarray(batch, dtype=float))
    cost, vocab = setup.draft_cost, setup.draft.vocab_size
    gemv = projection_time(cost, block.markov_rank * vocab, batch, setup.tp, np.asarray(batch) * 4.0 * vocab)
    return gemv + MARKOV_STEP * cost.layer_floor_graph / DENSE_LAYER_KERNELS


def block_draft_prefill(setup, batch, prompt_len, k) -> np.ndarray:
    """The drafter's share of a prefill, s: a DFlash/DSpark head projects the prompt's hidden states into its K/V
    (its layers run only over the query block: `precompute_and_store_context_kv`), then proposes once; a P-EAGLE
    head runs its layers over the prompt as an EAGLE head does (priced by the caller) and proposes in the same pass."""
    tokens = np.asarray(batch, dtype=float) * np.asarray(prompt_len, dtype=float)
    fuse = projection_time(setup.draft_cost, setup.draft.fusion_params, tokens, setup.tp)
    return fuse + block_draft_time(setup, k, batch, prompt_len)
