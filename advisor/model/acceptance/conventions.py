"""Acceptance: the one number speculation hinges on, in each convention people actually have, and conversions.

Conventions (all for a draft length k):
  α   per-token acceptance probability, i.i.d. across positions (Leviathan et al. 2023, §3.1)
  E   expected tokens per verification step, bonus token included = vLLM's "mean acceptance length" / EAGLE's τ
  r   vLLM's acceptance rate = accepted / drafted tokens = (E - 1) / k
  p_i vLLM's per-position rate: share of steps whose first i+1 drafts were all accepted (non-increasing)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.errors import InputError
from advisor.model.acceptance.temperature import (
    MAX_TEMPERATURE,
    TEMPERATURE_BASIS,
    TEMPERATURE_SLOPE,
    carry,
    carry_per_position,
    carry_range,
    scale_factor,
)
from advisor.vllm.defaults import check_k


def expected_tokens(alpha, k) -> np.ndarray:
    """E[tokens per step] = (1 - α^(k+1)) / (1 - α)   (Leviathan et al. 2023, Eq. 1).

    The draft proposes k tokens; token i survives only if all before it did (probability α^i), and the target
    always adds one token of its own (the correction at the first rejection, or the bonus after k accepts):
    E = 1 + α + α² + … + α^k. Broadcasts over arrays; k = 0 gives exactly 1, α = 1 gives k + 1.
    """
    alpha = np.asarray(alpha, dtype=float)
    k = np.asarray(k, dtype=float)
    # Written with log1p/expm1: the textbook form cancels catastrophically as α -> 1 (both sides -> 0).
    with np.errstate(divide="ignore", invalid="ignore"):
        log_alpha = np.log1p(alpha - 1.0)
        ratio = np.expm1((k + 1.0) * log_alpha) / np.expm1(log_alpha)
    return np.where(alpha >= 1.0, k + 1.0, ratio)


def survival(alpha, k) -> np.ndarray:
    """P(a step yields more than j tokens) for j = 0..K, K the largest k: α^j up to j = k, then 0 (a step yields at
    most k + 1). Shape broadcast(α, k) + (K + 1,); summed over the last axis it is `expected_tokens`, and
    `truncation` turns it into tokens per step over a finite output."""
    alpha, k = np.broadcast_arrays(np.asarray(alpha, dtype=float), np.asarray(k))
    j = np.arange(int(k.max()) + 1 if k.size else 1)
    return np.where(j <= k[..., None], alpha[..., None] ** j, 0.0)


def with_match_share(survival_curve, share) -> np.ndarray:
    """A survival curve over all decode steps when only a `share` of them draft at all (n-gram: a match is found):
    a step without drafts is a plain decode step of one token, so s_0 = 1 and s_j (j >= 1) shrinks by the share,
    and E = 1 + share·(E_drafted - 1). The same share discounts the step time (`speculative.Setup.draft_share`)."""
    s = np.asarray(survival_curve, dtype=float)
    if share >= 1.0:
        return s
    return np.concatenate([s[..., :1], share * s[..., 1:]], axis=-1)


def survival_per_position(per_position, k) -> np.ndarray:
    """`survival` from vLLM's unconditional per-position rates: s_j = p_(j-1), the share of steps whose first j
    drafts were all accepted. Beyond the measured positions the last conditional rate p_n / p_(n-1) is assumed to
    hold (acceptance decays geometrically, as under i.i.d. α)."""
    p = np.asarray(per_position, dtype=float)
    k = np.asarray(k)
    longest = int(np.max(k)) if k.size else 0
    if longest > p.size:
        ratio = p[-1] / p[-2] if p.size > 1 and p[-2] > 0 else p[-1]
        p = np.concatenate([p, p[-1] * ratio ** np.arange(1, longest - p.size + 1)])
    j = np.arange(longest + 1)
    return np.where(j <= k[..., None], np.concatenate([[1.0], p])[j], 0.0)


def expected_tokens_per_position(per_position, k) -> np.ndarray:
    """E = 1 + Σ_{i<k} p_i for vLLM's unconditional per-position rates p_i (see `survival_per_position`)."""
    return survival_per_position(per_position, k).sum(axis=-1)


def acceptance_rate(alpha, k) -> np.ndarray:
    """vLLM's accepted/drafted for i.i.d. α at draft length k: (E - 1) / k."""
    return (expected_tokens(alpha, k) - 1.0) / np.asarray(k, dtype=float)


def solve_partial_sum(target, k) -> np.ndarray:
    """α in [0, 1] with α + α² + … + α^k = target. The left side rises strictly in α, so the root is unique;
    bisection on whole arrays (60 halvings reach 1e-18) needs no scipy import, which alone takes ~0.5 s."""
    target = np.asarray(target, dtype=float)
    k = np.asarray(k, dtype=float)
    lo, hi = np.zeros(np.broadcast(target, k).shape), np.ones(np.broadcast(target, k).shape)
    for _ in range(60):
        mid = (lo + hi) / 2
        too_low = expected_tokens(mid, k) - 1.0 < target
        lo, hi = np.where(too_low, mid, lo), np.where(too_low, hi, mid)
    return (lo + hi) / 2


def alpha_from_rate(rate: float, k: int) -> float:
    """Invert vLLM's acceptance rate measured at draft length k into the per-token α."""
    if not 0.0 <= rate <= 1.0:
        raise InputError(f"--acceptance-rate must be in [0, 1], got {rate}")
    _check_k(k)
    return float(solve_partial_sum(rate * k, k))


def alpha_from_length(length: float, k: int) -> float:
    """Invert a mean acceptance length E (bonus token included) measured at draft length k into α."""
    _check_k(k)
    if not 1.0 <= length <= k + 1:
        raise InputError(f"--acceptance-length must be in [1, k+1] = [1, {k + 1}] for k = {k}, got {length}")
    return float(solve_partial_sum(length - 1.0, k))


def _check_k(k: int) -> None:
    check_k(k, "the k an acceptance was measured at")


@dataclass(frozen=True, slots=True)
class PriorOrigin:
    """Where a prior came from, for the report, the JSON and the review."""

    kind: str  # the drafter kind, in words ("EAGLE-3 heads")
    drafter: str  # the catalog drafter whose published figures set it; "" when the kind's spread did
    task: str  # the task named; "" when none (a general prior)
    published: str  # the published acceptance it spans, in words ("AL 2.20-2.80 at k=3")
    sources: tuple[str, ...]  # where those figures were read


@dataclass(frozen=True, slots=True)
class Acceptance:
    alpha: float  # point estimate of the per-token acceptance probability
    low: float  # lower end of the range we believe (5th percentile, or a prior's low end)
    high: float  # upper end (95th percentile, or a prior's high end)
    source: str  # where it came from, for the report
    per_position: tuple[float, ...] | None = None  # vLLM per-position rates, when measured
    notes: tuple[str, ...] = ()  # caveats (e.g. a temperature extrapolation)
    prior: bool = False  # a published prior (`priors`), not a measurement of the user's own traffic
    match_share: float = 1.0  # share of steps the drafter proposes anything at (n-gram: a match is found)
    # Draft positions the acceptance is known for (None: every position alike, i.i.d.); past them each position's
    # conditional acceptance is multiplied by `beyond_decay` once more (an MTP layer reused: `priors.MTP_REUSE_DECAY`)
    known_positions: int | None = None
    beyond_decay: float = 1.0
    temperature_slope: float = TEMPERATURE_SLOPE  # α's fractional loss per unit of temperature (`temperature_factor`)
    temperature_basis: str = TEMPERATURE_BASIS  # where that slope comes from, for the note
    origin: PriorOrigin | None = None  # a prior's drafter, task, published figures and sources; None when measured
    warnings: tuple[str, ...] = ()  # what makes this acceptance suspect (a mis-served head, far below published)

    def __post_init__(self) -> None:
        for value in (self.alpha, self.low, self.high):
            if not 0.0 <= value <= 1.0:
                raise InputError(f"acceptance α must be in [0, 1], got {value}")
        if not self.low <= self.alpha <= self.high:
            raise InputError(f"acceptance range must hold its point: {self.low} <= {self.alpha} <= {self.high}")
        if not 0.0 < self.beyond_decay <= 1.0 or (self.known_positions is not None and self.known_positions < 1):
            raise InputError("acceptance past the known positions: decay in (0, 1], at least one known position")
        if not 0.0 < self.match_share <= 1.0:
            raise InputError(f"the share of steps with a draft must be in (0, 1], got {self.match_share}")

    def survival(self, k, alpha=None) -> np.ndarray:
        """`survival` at draft length k over every decode step: from the per-position vector when measured, else from
        i.i.d. α, weighted by the match share (`with_match_share`); past `known_positions` each further position
        survives `beyond_decay` times less likely. With `alpha` (an end of the range) a measured vector is rescaled
        as α would move it: p_i · (alpha/α)^(i+1), since p_i is the chance that i+1 drafts in a row survive (the
        same rescaling as `at_temperature`)."""
        return with_match_share(self._drafted_survival(k, alpha), self.match_share)

    def _drafted_survival(self, k, alpha=None) -> np.ndarray:
        """`survival` over the steps that draft, with the decay past the known positions."""
        curve = self._survival(k, alpha)
        if self.known_positions is None or self.beyond_decay == 1.0:
            return curve
        past = np.maximum(np.arange(curve.shape[-1]) - self.known_positions, 0)
        return curve * self.beyond_decay ** past

    def _survival(self, k, alpha=None) -> np.ndarray:
        if self.per_position is None or (alpha is not None and self.alpha <= 0.0):
            return survival(self.alpha if alpha is None else alpha, k)
        ratio = 1.0 if alpha is None else alpha / self.alpha
        scaled = np.asarray(self.per_position) * ratio ** np.arange(1, len(self.per_position) + 1)
        # still a survival curve: at most 1, never rising with the position
        return survival_per_position(np.minimum.accumulate(np.minimum(scaled, 1.0)), k)

    def expected_tokens(self, k, alpha=None) -> np.ndarray:
        """E at draft length k (see `survival`)."""
        return self.survival(k, alpha).sum(axis=-1)

    def at_temperature(self, temperature: float, measured_at: float) -> "Acceptance":
        """Carry α from the temperature it was measured at to the one that will be served."""
        if abs(temperature - measured_at) < 1e-9:
            return self
        if not 0.0 <= temperature <= MAX_TEMPERATURE:
            raise InputError(f"--temperature must be in [0, {MAX_TEMPERATURE}], got {temperature}")
        slope = self.temperature_slope
        alpha, low, high, (slow, fast) = carry_range(self.alpha, self.low, self.high, temperature, measured_at, slope)
        note = (f"acceptance extrapolated from T={measured_at:g} to T={temperature:g}: α {self.alpha:.2f} -> "
                f"{alpha:.2f}, range {low:.2f}-{high:.2f} " + _carried_by(self, temperature, measured_at, slow, fast))
        per_pos = None if self.per_position is None else carry_per_position(
            self.per_position, scale_factor(temperature, measured_at, slope))
        return replace(self, alpha=alpha, low=low, high=high, per_position=per_pos, notes=(*self.notes, note))


def _carried_by(acc: Acceptance, temperature: float, measured_at: float, slow: float, fast: float) -> str:
    """What a carried range spans, in the terms the carry used (issue 49: "for α losing 13%-25% per unit of T" was
    said of a range set by carry's bound on the way up, where those slopes would have put α past 1)."""
    scales = [scale_factor(temperature, measured_at, s) for s in (slow, fast)]
    slopes = f"α losing {slow:.0%}-{fast:.0%} per unit of T ({acc.temperature_basis})"
    bound = any(s > 1.0 and float(carry(acc.alpha, s)) < acc.alpha * s - 1e-12 for s in scales)
    said = f"for {slopes}" if not bound else (
        f"for the rejections (1 - α) shrinking by x{min(scales):.2f}-x{max(scales):.2f}: carry's bound on the way up "
        f"(they shrink by at most the factor α grows by) at {slopes}"
        + (", which alone would put α past 1" if acc.alpha * max(scales) > 1.0 else ""))
    if max(temperature, measured_at) > 1.0:
        said += f"; T={max(temperature, measured_at):g} lies beyond the T=0 and T=1 the slope was read at"
    return said


def from_point(alpha: float, source: str) -> Acceptance:
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"--alpha must be in [0, 1], got {alpha}")
    return Acceptance(alpha, alpha, alpha, source)


def from_per_position(rates: list[float]) -> Acceptance:
    if not rates or any(not 0.0 <= r <= 1.0 for r in rates):
        raise InputError("--acceptance-per-pos needs comma-separated rates in [0, 1], e.g. 0.8,0.6,0.45")
    if any(b > a + 1e-9 for a, b in zip(rates, rates[1:])):
        raise InputError("--acceptance-per-pos must not increase: vLLM's per-position rates are unconditional "
                         "(position i counts steps whose first i+1 drafts were all accepted)")
    k = len(rates)
    alpha = alpha_from_length(1.0 + sum(rates), k) if sum(rates) > 0 else 0.0
    return Acceptance(alpha, alpha, alpha, f"per-position rates {','.join(f'{r:g}' for r in rates)}", tuple(rates))
