"""The intervals of one advice: per k, the cost model's spread on each speedup (`advisor/model/uncertainty.py` has
the math), combined with the speedups at the acceptance range's ends into 80% bands, and the line saying which
measurement would narrow the verdict's interval most."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.advice.scenario import Scenario
from advisor.model.cost.speculative import RequestTimes, Setup, request_times
from advisor.model.shape.quantization import bytes_per_weight
from advisor.model.uncertainty import (
    ACCEPTANCE,
    COST,
    LEVEL,
    Z80,
    Band,
    CostError,
    band,
    cost_sigma,
    ridge_tokens,
    target_sigma,
)

NARROW = {
    ACCEPTANCE: "measure acceptance on your traffic (`--metrics` from a running server, or `specadvisor acceptance "
                "measure`)",
    COST: "measure the step costs (`specadvisor calibrate` on this GPU, or a 10-minute `vllm bench serve` with and "
          "without speculation, then `specadvisor calibrate --from-bench` and `specadvisor check`)",
}


@dataclass(frozen=True, slots=True)
class Bands:
    """80% bands per k of the three speedups, and the cost model's spread behind them."""

    tpot: Band
    e2e: Band
    throughput: Band
    sigma_cost: np.ndarray  # per k, on the TPOT speedup (log units)
    level: float = LEVEL


def cost_sigmas(err: CostError | None, setup: Setup, E, ks, conc, prompt_len, out_len,
                spec: RequestTimes | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(σ_c on the TPOT speedup, σ_c on the end-to-end one) per k, each side at its concurrency `conc`: the target's
    regime at k's batched tokens, the drafter's share of the iteration, the verify step over a decode step, and end
    to end only the decode share of the speculative request's time. Zeros without a cost error (None), and at
    k = 0 (no speculation, nothing to err). Everything broadcasts (the length map's grid, `check`'s one run).
    `spec`: the speculative side's `request_times` at E and conc, when the caller has them already (`advise`)."""
    ks = np.asarray(ks, dtype=float)
    if err is None:
        return np.zeros(np.broadcast(ks, conc).shape), np.zeros(np.broadcast(ks, conc).shape)
    prompt_len, out_len = np.asarray(prompt_len, dtype=float), np.asarray(out_len, dtype=float)
    context = prompt_len + out_len / 2.0
    n = np.maximum(conc, 1.0)
    c = setup.target_cost
    share = (setup.draft_time(ks, n, context) + setup.bookkeeping(n)) / setup.iteration_time(ks, n, context)
    verify = setup.verify_step(n, ks + 1.0, context) / setup.decode_step(n, context)
    ridge = ridge_tokens(c.flops, c.bandwidth, bytes_per_weight(c.weight_dtype))
    st = target_sigma(err, setup.target.num_experts > 1, context, n * (ks + 1.0), ridge)
    sigma = np.where(ks > 0, cost_sigma(err, st, share, verify), 0.0)
    t = spec if spec is not None else request_times(setup, E, ks, n, prompt_len, out_len)
    return sigma, sigma * t.decode_spec / np.maximum(t.e2e_spec, 1e-30)


def bands(s: Scenario, E: np.ndarray, ks: np.ndarray, conc: np.ndarray, point, at_low, at_high,
          spec: RequestTimes | None = None) -> Bands:
    """The bands from the (TPOT, e2e, throughput) speedups per k at the acceptance estimate and its range's ends
    (`spec`: the estimate's speculative request times, when known; `cost_sigmas`)."""
    sigma, sigma_e2e = cost_sigmas(s.cost_error, s.setup, E, ks, conc, s.prompt_len, s.out_len, spec)
    made = [band(p, lo, hi, sc) for p, lo, hi, sc in zip(point, at_low, at_high, (sigma, sigma_e2e, sigma_e2e))]
    return Bands(*made, sigma_cost=sigma)


def narrowing(b: Band, k: int) -> str:
    """What would narrow the interval at k most, ranked by each term's spread (widest first)."""
    terms = sorted(((float(b.sigma_cost[k]), COST), (float(b.sigma_acceptance[k]), ACCEPTANCE)), reverse=True)
    ranked = [f"{NARROW[name]} (±{np.expm1(Z80 * sig):.0%} from the {name})"
              for sig, name in terms if sig > 0]
    return ("to narrow it: " + "; then ".join(ranked)) if ranked else ""
