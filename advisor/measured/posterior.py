"""From acceptance counts (vLLM's spec-decode counters, a measurement, a simulation) to α with an honest interval.

The counts are vLLM's (vllm/v1/spec_decode/metrics.py): a "draft" is one verification step of one request;
accepted_per_pos[i] counts steps whose first i+1 draft tokens were all accepted, so it never increases with i and
sums to the accepted tokens.

The model behind α (Leviathan et al. 2023, §3.1): each draft token is accepted with the same probability α,
independently, until the first rejection ends the step. Under it the likelihood of a run of steps is
α^accepted · (1-α)^rejections, whatever the stopping rule, where rejections = steps that ended on a rejected token
(drafts minus the steps that accepted all k). So a Beta prior gives a Beta posterior. We use Jeffreys' Beta(½, ½):
uninformative, invariant to reparametrisation, and its intervals have close to nominal frequentist coverage for a
binomial proportion (Brown, Cai & DasGupta 2001, Statistical Science 16(2)).

Real acceptance is not i.i.d.: easy passages accept in runs and hard ones reject early, so tokens of one step (and
steps of one request) are correlated, and counting every tested token as an independent trial would make the
interval too narrow. We therefore keep the i.i.d. point estimate but credit only one independent observation per
verification step: the posterior's pseudo-counts are rescaled to an effective sample size of `drafts`. Under true
i.i.d. acceptance this widens the interval by √(tested tokens / drafts) ≤ √(k + 1); correlation across requests can
still make the truth wider (measure over varied prompts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scipy.special import betaincinv  # ~0.4 s to import: only the commands given counts load this module

from advisor.errors import InputError
from advisor.measured.counts import Counts
from advisor.model.acceptance.conventions import Acceptance

JEFFREYS = (0.5, 0.5)  # Beta prior pseudo-counts (accepted, rejected)
LEVEL = 0.90  # central credible interval reported everywhere: its ends are the 5% and 95% posterior quantiles


@dataclass(frozen=True, slots=True)
class Posterior:
    alpha: float  # point estimate: the posterior mean (kept inside the interval)
    low: float  # 5% posterior quantile
    high: float  # 95% posterior quantile
    mle: float  # accepted / (accepted + rejections): the i.i.d. maximum-likelihood α
    effective_n: int  # independent observations credited (verification steps)
    a: float  # posterior Beta shape (accepted side)
    b: float  # posterior Beta shape (rejected side)


def beta_interval(a: float, b: float, level: float = LEVEL) -> tuple[float, float]:
    """Central `level` credible interval of Beta(a, b): its (1-level)/2 and (1+level)/2 quantiles."""
    if a <= 0 or b <= 0 or not 0.0 < level < 1.0:
        raise InputError(f"Beta({a}, {b}) at level {level}: shapes must be positive and the level in (0, 1)")
    tail = (1.0 - level) / 2.0
    return float(betaincinv(a, b, tail)), float(betaincinv(a, b, 1.0 - tail))


def alpha_posterior(counts: Counts, level: float = LEVEL, prior: tuple[float, float] = JEFFREYS) -> Posterior:
    """Beta posterior of the per-token acceptance α, with one effective observation per step (see module doc)."""
    if counts.steps == 0:
        raise InputError("no speculative drafts were counted, so there is no acceptance to estimate")
    tested = counts.accepted + counts.rejections
    mle = counts.accepted / tested if tested else 0.0
    n = counts.steps
    a, b = prior[0] + n * mle, prior[1] + n * (1.0 - mle)
    low, high = beta_interval(a, b, level)
    return Posterior(min(max(a / (a + b), low), high), low, high, mle, n, a, b)


def acceptance_from_counts(counts: Counts, origin: str, level: float = LEVEL) -> Acceptance:
    """An Acceptance whose point E comes from the measured per-position rates and whose range is α's posterior.
    Where the decode steps were counted and some drafted nothing (the V1 runner's n-gram misses, a replay), α and
    the rates are those of the steps that drafted, with their share (`Counts.match_share`): the same tokens per step
    (`acceptance.with_match_share`), and a runner that decodes such a step (V1) is timed so, while one that verifies
    it anyway (Model Runner V2 on a GPU: `speculative.Setup.verified_share`) is timed as verifying."""
    share = counts.match_share if counts.drafts else 1.0
    drafted = replace(counts, decode_steps=None) if share < 1.0 else counts
    post = alpha_posterior(drafted, level)
    where = "decode steps" if counts.decode_steps is not None else "drafts"
    on = f" on the {share:.0%} of {counts.decode_steps} decode steps that drafted" if share < 1.0 else ""
    source = (f"{origin}: {counts.drafts} drafts at k={counts.k}, {counts.accepted}/{counts.draft_tokens} draft tokens "
              f"accepted, {counts.tokens_per_step:.2f} tokens per step -> α {post.alpha:.3f}{on} "
              f"({level:.0%} interval {post.low:.3f}-{post.high:.3f}, Beta posterior, Jeffreys prior, "
              f"{post.effective_n} {'drafts' if share < 1.0 else where} as independent observations)")
    notes = []
    if counts.draft_tokens < counts.k * counts.drafts:  # never on Model Runner V2, which fills every slot
        unseen = ("" if counts.decode_steps is not None else "; the V1 runner that counted them does not count "
                  "steps that drafted nothing at all, which overstates the gain by their share")
        notes.append(f"{counts.k * counts.drafts - counts.draft_tokens} draft slots went unfilled (drafts shorter "
                     f"than k={counts.k}, as n-gram lookup produces); α treats a fully accepted short draft as a "
                     f"rejection, so it errs low{unseen}")
    return Acceptance(post.alpha, post.low, post.high, source, drafted.rates(), tuple(notes), match_share=share)


def summary(counts: Counts, level: float = LEVEL) -> dict:
    """Everything `specadvisor acceptance` reports about a set of counts, as plain data."""
    post = alpha_posterior(counts, level)
    return dict(k=counts.k, drafts=counts.drafts, draft_tokens=counts.draft_tokens, accepted=counts.accepted,
                decode_steps=counts.decode_steps, acceptance_rate=counts.acceptance_rate,
                mean_acceptance_length=counts.mean_acceptance_length, tokens_per_step=counts.tokens_per_step,
                accepted_per_step=counts.tokens_per_step - 1.0, per_position_counts=list(counts.per_position),
                per_position_rates=list(counts.rates()), alpha=post.alpha, alpha_low=post.low, alpha_high=post.high,
                alpha_mle=post.mle, level=level, effective_n=post.effective_n)
