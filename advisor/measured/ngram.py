"""vLLM's n-gram (prompt-lookup) speculation, replayed over token sequences: what it would draft and accept.

A faithful re-implementation of vllm 0.32's CPU n-gram path, not an approximation of it:
  proposer   vllm/v1/spec_decode/ngram_proposer.py `_find_longest_matched_ngram_and_propose_tokens`: take the
             longest suffix of the history, n in [prompt_lookup_min, prompt_lookup_max], that also occurs earlier
             (an occurrence may overlap the suffix, but must end before the last token); among the occurrences of
             that longest n-gram take the earliest; draft the up-to-k tokens that follow it (fewer when the
             history ends first). k is first capped at max_model_len - len(history).
  history    prompt + every token generated so far: after each step the accepted drafts and the one token the
             target adds (correction or bonus) are appended, then the next draft is proposed (gpu_model_runner
             `_update_states_after_model_execute` then `propose_draft_token_ids`). The first proposal follows
             the prefill step, whose sampled token is the first output token.
  scheduler  vllm/v1/core/sched/scheduler.py: a step schedules 1 + len(draft) tokens, capped so the positions stay
             below max_model_len, which trims the draft to max_model_len - len(history) - 1. A step with no draft
             is a plain decode step and is not counted as a draft. Counts are taken before the output is cut at
             max_tokens, so drafts accepted past max_tokens still count.
  verify     greedy: a draft token is accepted while it equals the target's next token.
No vLLM import: the replay needs only the token ids.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.errors import InputError
from advisor.measured.counts import Counts
from advisor.vllm.defaults import NGRAM_LOOKUP_DEFAULT, check_k


@dataclass(frozen=True, slots=True)
class NgramConfig:
    k: int = 5  # num_speculative_tokens (vLLM has no default; 5 is a common choice)
    min_n: int = NGRAM_LOOKUP_DEFAULT[0]  # prompt_lookup_min
    max_n: int = NGRAM_LOOKUP_DEFAULT[1]  # prompt_lookup_max
    max_model_len: int | None = None  # vLLM's max_model_len; None: the sequences never reach it

    def __post_init__(self) -> None:
        check_k(self.k)
        if not 1 <= self.min_n <= self.max_n:
            raise InputError(f"need 1 <= --prompt-lookup-min <= --prompt-lookup-max, got {self.min_n} and {self.max_n}")
        if self.max_model_len is not None and self.max_model_len < 2:
            raise InputError(f"--max-model-len must be at least 2, got {self.max_model_len}")


EMPTY = np.empty(0, dtype=np.int64)


def propose(history: np.ndarray, cfg: NgramConfig) -> np.ndarray:
    """The draft vLLM proposes after `history` (1-D token ids), before the scheduler's max_model_len trim."""
    total = history.shape[0]
    if total < cfg.min_n:
        return EMPTY
    k = cfg.k if cfg.max_model_len is None else min(cfg.k, cfg.max_model_len - total)
    if k <= 0:
        return EMPTY
    # alive[e]: an occurrence of the last `length` tokens ends at e (e <= total - 2, never the suffix itself).
    alive = history[:-1] == history[-1]
    length, best = 0, alive
    for n in range(1, cfg.max_n + 1):
        if n > 1:
            earlier = np.zeros_like(alive)
            earlier[n - 1:] = history[:total - n] == history[total - n]
            alive = alive & earlier
        if not alive.any():
            break
        length, best = n, alive
    if length < cfg.min_n:
        return EMPTY
    start = int(np.argmax(best)) + 1  # the earliest occurrence of the longest n-gram; draft what followed it
    return history[start:start + min(k, total - start)]


@dataclass(frozen=True, slots=True)
class Trace:
    """One request's decode steps (the prefill step, which samples the first output token, is not one)."""

    drafted: tuple[int, ...]  # draft tokens scheduled at each step (0: no n-gram matched, a plain decode step)
    accepted: tuple[int, ...]  # of those, how many the target accepted
    output_tokens: int  # tokens generated, including the prefill's and any accepted past max_tokens
    cut_steps: int = 0  # steps whose draft vLLM replaced by zeros near max_model_len (see `simulate`)


def simulate(prompt, continuation, cfg: NgramConfig, max_tokens: int | None = None) -> Trace:
    """Replay greedy n-gram speculation for one request served alone. `continuation` is what the target
    generates after `prompt` (for a corpus, the response); it must reach max_tokens (default: all of it), and
    tokens past max_tokens only decide the last step's acceptances.

    Near max_model_len vLLM skips the drafter when the sequence the step just processed plus k would pass
    max_model_len (gpu_model_runner `_input_fits_in_drafter`) and schedules k zero token ids as the draft. It
    takes the longest sequence in the batch, so in a batch one long request cuts every request's drafts: we model
    the request alone (vLLM serving a single request), which is exact then and the common case otherwise."""
    seq = np.concatenate([np.asarray(prompt, dtype=np.int64), np.asarray(continuation, dtype=np.int64)])
    p = len(prompt)
    budget = len(seq) - p if max_tokens is None else max_tokens
    if p < 1 or budget < 1 or len(seq) - p < budget:
        raise InputError(f"a sequence needs a prompt and at least {max(budget, 1)} continuation tokens, got {p} "
                         f"and {len(seq) - p}")
    limit = cfg.max_model_len or len(seq) + 2 * cfg.k + 2  # no max_model_len: a limit no step can reach
    if p + 1 > limit:
        raise InputError(f"a {p}-token prompt leaves no room under --max-model-len {cfg.max_model_len}")
    n, out, processed = p + 1, 1, p  # the prefill step processed the prompt and sampled the first output token
    drafted, accepted, cut = [], [], 0
    while out < budget and n < limit:
        fits = processed + cfg.k <= limit
        cut += not fits
        draft = propose(seq[:n], cfg) if fits else np.zeros(cfg.k, dtype=np.int64)
        draft = draft[:limit - n - 1]  # the scheduler keeps every position below max_model_len
        truth = seq[n:n + draft.shape[0]]  # only tokens we know: a corpus response ends where it ends
        matches = draft[:truth.shape[0]] == truth
        a = int(matches.shape[0]) if matches.all() else int(np.argmin(matches))
        drafted.append(int(draft.shape[0]))
        accepted.append(a)
        processed = n + draft.shape[0]
        n, out = n + a + 1, out + a + 1
    return Trace(tuple(drafted), tuple(accepted), out, cut)


def counts(traces: list[Trace], k: int) -> Counts:
    """vLLM's counters over the traces, plus every decode step (vLLM does not count steps without a draft)."""
    drafted = np.array([d for t in traces for d in t.drafted], dtype=np.int64)
    accepted = np.array([a for t in traces for a in t.accepted], dtype=np.int64)
    per_pos = tuple(int(np.sum(accepted > i)) for i in range(k))
    return Counts(drafts=int(np.sum(drafted > 0)), draft_tokens=int(drafted.sum()), accepted=int(accepted.sum()),
                  per_position=per_pos, decode_steps=int(drafted.shape[0]))
