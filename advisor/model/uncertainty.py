"""How sure: an 80% interval around every speedup, from the cost model's own error and the acceptance's range.

Two independent errors, each log-normal on the speedup (a ratio of times, so errors multiply):

  cost        log(S_true / S_pred) ~ N(0, σ_c²). The speedup is baseline step time / speculative iteration time.
              The iteration is the drafter's part (draft passes and bookkeeping, a share d) and the target's verify
              step, r times a decode step. An error common to every target step (a bandwidth off by 10%) moves the
              baseline and the verify step alike and cancels in the ratio, except through the drafter's share;
              what is left is the drafter's own error, and the verify step's extra work (its share 1 - 1/r)
              erring apart from the decode step's:
                  σ_c² = d²·(σ_drafter² + σ_target²) + ((1 - d)·(1 - 1/r)·σ_target)²
              (first order in the log errors, drafter and target independent). σ_target is the regime's (dense
              memory-bound, compute-bound, MoE, long context), σ_drafter the
              drafter rows'. With datasheet costs both come from the leave-one-source-out residuals of the datasheet
              fit (profiles/model-error.json, written by benchmarks/datasheet_errors.py); with a calibration, from
              its held-out median error m (a median |log error| of σ·0.6745: σ = log(1 + m) / 0.6745). With datasheet
              costs σ_c is at least the spread of the published speedups of the target's class, each predicted by the
              fit that never saw its source (`CostError.speedup`: advisor/model/error/speedup.py). End to end, only
              the decode share of the request's time carries it: σ_e2e = σ_c · decode share.
  acceptance  the acceptance's range [low, high] is a 90% interval (the Beta posterior's 5-95% quantiles, or a
              prior's range read so); the speedup rises monotonically in α, so its quantiles are the speedups at
              those α, and on the log scale each side gives a spread σ_a = |log(S(α_end) / S(α))| / z90.
The two add in quadrature on each side, and the interval is S · exp(∓z80 · √(σ_a² + σ_c²)), z80 = 1.2816 (the
standard normal's 90th percentile), z90 = 1.6449 (its 95th). The term with the larger σ dominates the width: that is
the one to measure. Pure functions over numpy arrays (quantile arithmetic, no sampling); units: σ in log units.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LEVEL = 0.8  # the interval's coverage
Z80 = 1.2815515655446004  # standard normal 90th percentile: the half-width of a central 80% interval, in σ
Z90 = 1.6448536269514722  # standard normal 95th percentile: the acceptance range is a central 90% interval
MEDIAN_ABS_Z = 0.6744897501960817  # median |N(0, 1)|: a median absolute log error is 0.6745 σ
TARGET_REGIMES = ("dense_memory_bound", "compute_bound", "moe", "long_context")
COST, ACCEPTANCE = "cost model", "acceptance"


@dataclass(frozen=True, slots=True)
class CostError:
    """The spread σ (log units) of the step-time prediction by regime, and where it came from. `long_context` and
    `compute_bound` say when those regimes apply: the KV context in tokens, and batched tokens per step as a share
    of the GPU's ridge (`ridge_tokens`)."""

    sigma: dict  # regime -> σ: TARGET_REGIMES and "drafter"
    source: str  # in words, for the report
    kind: str  # "datasheet" | "calibration"
    long_context: float = 4096.0
    compute_bound: float = 0.5
    # σ on the speedup itself, at least (the published speedups' spread for the target's class: advisor/model/error/
    # speedup.py); 0: the step-time regimes' propagation alone (a calibration's error, measured on the setup)
    speedup: float = 0.0

    def __post_init__(self) -> None:
        missing = [r for r in (*TARGET_REGIMES, "drafter") if r not in self.sigma]
        if missing or any(not np.isfinite(v) or v < 0 for v in (*self.sigma.values(), self.speedup)):
            raise ValueError(f"a cost error needs a finite σ ≥ 0 for every regime; missing {missing}")


def from_median_error(target: float, drafter: float, source: str) -> CostError:
    """A calibration's CostError from its held-out median relative errors (target's, drafter's): one σ for every
    target regime, as its grid covers batch and context on the machine it was measured on."""
    s_t, s_d = (float(np.log1p(m)) / MEDIAN_ABS_Z for m in (target, drafter))
    return CostError({**{r: s_t for r in TARGET_REGIMES}, "drafter": s_d}, source, "calibration")


def ridge_tokens(flops: float, bandwidth: float, bytes_per_weight: float = 2.0) -> float:
    """Batched tokens per step at which a dense layer's matmuls (2·N·P / flops, s) take as long as reading its
    weights (P·bytes / bandwidth, s): N = flops·bytes / (2·bandwidth). Rates in FLOP/s and bytes/s."""
    return flops * bytes_per_weight / (2.0 * bandwidth)


def target_sigma(err: CostError, moe: bool, context, batched_tokens, ridge: float) -> np.ndarray:
    """σ of the target's step at each point: MoE for an MoE target, else long context past `long_context`, else
    compute-bound past `compute_bound` of the ridge, else dense memory-bound. Broadcasts."""
    context, batched = np.asarray(context, dtype=float), np.asarray(batched_tokens, dtype=float)
    s = err.sigma
    dense = np.where(batched >= err.compute_bound * ridge, s["compute_bound"], s["dense_memory_bound"])
    return np.where(moe, s["moe"], np.where(context >= err.long_context, s["long_context"], dense))


def cost_sigma(err: CostError, sigma_target, draft_share, verify_ratio) -> np.ndarray:
    """σ_c of the speculative/baseline step-time ratio (module docstring): d the drafter's share of the iteration
    (draft passes + bookkeeping over iteration time), r the verify step over a decode step; at least
    `CostError.speedup`. Broadcasts."""
    d, st = np.asarray(draft_share, dtype=float), np.asarray(sigma_target, dtype=float)
    extra = 1.0 - 1.0 / np.maximum(np.asarray(verify_ratio, dtype=float), 1.0)
    return np.maximum(np.sqrt(d ** 2 * (err.sigma["drafter"] ** 2 + st ** 2) + ((1.0 - d) * extra * st) ** 2),
                      err.speedup)


def acceptance_sigmas(point, at_low, at_high):
    """(σ down, σ up) of log speedup from the speedups at the acceptance range's ends (a 90% interval). Where the
    speedup is 0 (nothing runs) both are 0."""
    point, at_low, at_high = (np.asarray(x, dtype=float) for x in (point, at_low, at_high))
    ok = (point > 0) & (at_low > 0) & (at_high > 0)
    safe = lambda x: np.where(ok, x, 1.0)  # noqa: E731
    down = np.abs(np.log(safe(point) / safe(at_low))) / Z90
    up = np.abs(np.log(safe(at_high) / safe(point))) / Z90
    return np.where(ok, down, 0.0), np.where(ok, up, 0.0)


@dataclass(frozen=True, slots=True)
class Band:
    """A central estimate and its interval, with each source's σ (log units)."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    sigma_acceptance: np.ndarray  # the wider side's
    sigma_cost: np.ndarray

    @property
    def dominant(self) -> np.ndarray:
        """Which term is widest, per point: COST or ACCEPTANCE."""
        return np.where(self.sigma_cost >= self.sigma_acceptance, COST, ACCEPTANCE)


def band(point, at_low, at_high, sigma_cost) -> Band:
    """The 80% interval of a speedup: `point` at the acceptance estimate, `at_low`/`at_high` at its range's ends,
    σ_c the cost model's spread on it. Broadcasts."""
    point = np.asarray(point, dtype=float)
    down, up = acceptance_sigmas(point, at_low, at_high)
    sc = np.asarray(sigma_cost, dtype=float) * (point > 0)
    low = point * np.exp(-Z80 * np.sqrt(down ** 2 + sc ** 2))
    high = point * np.exp(Z80 * np.sqrt(up ** 2 + sc ** 2))
    return Band(point, low, high, np.maximum(down, up), np.broadcast_to(sc, point.shape))


def cost_factors(sigma_cost) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) multipliers of a speedup over the cost model's 80% interval alone: exp(∓z80·σ_c)."""
    s = np.asarray(sigma_cost, dtype=float)
    return np.exp(-Z80 * s), np.exp(Z80 * s)
