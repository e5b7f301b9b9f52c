"""A finite output ends mid-step: the tokens per step a request of m decode tokens actually gets.

E (`acceptance.expected_tokens`) is the mean of X, the tokens one draft-and-verify step yields, X ∈ 1..k+1. A request
that stops after m decode tokens usually stops inside a step: the tokens that step yields past max_tokens are thrown
away, so it spends E[steps to reach m] > m / E steps. With vLLM's 64-token outputs at k = 5 and high acceptance,
`specadvisor validate` measured 5.25 tokens per step where E = 5.58; the exact count below gives 5.29. The effect
fades as m grows (at 200 tokens: under 1% for k ≤ 4, 1.6% at k = 8 and α = 0.9) and is largest when k + 1 nears m.

X is described by its survival curve s_j = P(X > j), j = 0..k: s_0 = 1, and s_j is the chance that the first j drafts
were all accepted (α^j under i.i.d. acceptance; vLLM's per-position rate p_(j-1) when measured). Then E = Σ_j s_j.
"""

from __future__ import annotations

import numpy as np

from advisor.model.acceptance.conventions import solve_partial_sum, survival, with_match_share

# Beyond this many tokens the expected step count grows by exactly 1/E per token (renewal theory: the overshoot
# settles within a few multiples of k + 1 tokens for α < 1), so the exact recursion stops here. At α = 1, where X is
# constant and steps = ceil(m / (k + 1)), stopping costs at most one step in m / (k + 1) ≥ 60 (k ≤ MAX_K = 16).
EXACT_TOKENS = 1024


def expected_steps(survival_curve, decode_tokens) -> np.ndarray:
    """E[target steps to produce m tokens] for the step-size distribution given by its survival curve (last axis).

    The recursion on the first step: T(m) = 1 + Σ_x P(X = x)·T(m − x), with T(n ≤ 0) = 0 — the step that crosses m
    is counted whole. Leading axes of `survival_curve` broadcast against `decode_tokens` (m, integer-valued)."""
    s = np.asarray(survival_curve, dtype=float)
    m = np.rint(np.asarray(decode_tokens, dtype=float))
    width = s.shape[-1]  # k + 1: the most tokens one step can yield
    p = s - np.concatenate([s[..., 1:], np.zeros(s.shape[:-1] + (1,))], axis=-1)  # p[..., x-1] = P(X = x)
    p_reversed = p[..., ::-1]  # lined up with T(n - k - 1) .. T(n - 1)
    top = int(min(m.max(), EXACT_TOKENS)) if m.size else 0
    T = np.zeros(s.shape[:-1] + (width + top + 1,))  # T[..., width + n] = T(n); the first `width` are n ≤ 0
    for n in range(1, top + 1):
        T[..., width + n] = 1.0 + (p_reversed * T[..., n:n + width]).sum(axis=-1)
    shape = np.broadcast_shapes(s.shape[:-1], m.shape)
    exact = np.minimum(m, top)
    index = np.broadcast_to(width + exact.astype(int), shape)[..., None]
    at_top = np.take_along_axis(np.broadcast_to(T, shape + T.shape[-1:]), index, axis=-1)[..., 0]
    return at_top + (m - exact) / s.sum(axis=-1)


def tokens_per_step(survival_curve, decode_tokens) -> np.ndarray:
    """Decode tokens per target step over a request of m decode tokens: m / E[steps], ≤ E, → E as m → ∞.
    With m = 0 there is no decode to speak of; E is returned so that a time per token stays defined."""
    s = np.asarray(survival_curve, dtype=float)
    m = np.asarray(decode_tokens, dtype=float)
    steps = expected_steps(s, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m > 0, m / steps, s.sum(axis=-1))


def alpha_for_tokens_per_step(target, k, decode_tokens, share: float = 1.0) -> np.ndarray:
    """The i.i.d. α whose tokens per step over m decode tokens equal `target`, when a `share` of the steps draft
    (`acceptance.with_match_share`); NaN where even α = 1 falls short.

    Fixed point on the truncation factor g(α) = tokens_per_step / E: solve 1 + share·(E(α, k) - 1) = target / g
    exactly (`solve_partial_sum`), update g, repeat. g moves far more slowly with α than E does, so each round
    shrinks the error several-fold (a handful of rounds reach 1e-10)."""
    target = np.asarray(target, dtype=float)
    k = np.asarray(k, dtype=float)
    shape = np.broadcast_shapes(target.shape, k.shape)
    curve_at = lambda a: with_match_share(survival(a, k), share)  # noqa: E731
    reachable = np.broadcast_to(tokens_per_step(curve_at(1.0), decode_tokens), shape) >= target - 1e-12
    alpha = solve_partial_sum(np.clip((target - 1.0) / share, 0.0, k), k)
    for _ in range(50):
        curve = curve_at(alpha)
        g = tokens_per_step(curve, decode_tokens) / curve.sum(axis=-1)
        alpha, previous = solve_partial_sum(np.clip((target / g - 1.0) / share, 0.0, k), k), alpha
        if np.all(np.abs(alpha - previous) < 1e-10):
            break
    return np.where(reachable, alpha, np.nan)
