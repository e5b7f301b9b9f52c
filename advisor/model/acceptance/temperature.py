"""Acceptance carried from the temperature it was measured at to the one served: a scaling of α whose own
uncertainty widens the range, and which never turns a measurement into certainty."""

from __future__ import annotations

import numpy as np

# Sampling lowers acceptance: with T > 0 the draft's and target's distributions are both flatter and overlap
# less on the argmax. Leviathan et al. 2023 Table 3 measure α at T = 0 and T = 1 for six T5 pairs; the ratio
# α(T=1)/α(T=0) is 0.75-0.87 (mean ≈ 0.8). We interpolate linearly in T, which is an extrapolation beyond T = 1.
TEMPERATURE_SLOPE = 0.20  # fractional loss of α per unit of temperature
TEMPERATURE_BASIS = "Leviathan et al. 2023 Table 3, α falls ~20% from T=0 to T=1"
MAX_TEMPERATURE = 2.0  # vLLM's too: SamplingParams refuses temperature outside [0, 2] (vllm/sampling_params.py)
# The slope's own spread, relative to it: Table 3's ratios 0.75-0.87 are slopes 0.13-0.25 around 0.20. A slope
# fitted elsewhere (the heads' `profiles/drafters/temperature.toml`) is given the same relative spread.
SLOPE_SPREAD = (0.65, 1.25)


def temperature_factor(temperature, slope: float = TEMPERATURE_SLOPE) -> np.ndarray:
    """α(T) / α(0): 1 - slope·T (default 0.2: Leviathan et al. 2023, Table 3; linear in T is our assumption)."""
    t = np.clip(np.asarray(temperature, dtype=float), 0.0, MAX_TEMPERATURE)
    return 1.0 - slope * t


def scale_factor(temperature: float, measured_at: float, slope: float) -> float:
    """α(served T) / α(measured T) under `temperature_factor` (dimensionless)."""
    return float(temperature_factor(temperature, slope) / temperature_factor(measured_at, slope))


def carry(alpha, scale: float) -> np.ndarray:
    """α carried by `scale` (`scale_factor`). Down (scale <= 1): α·scale. Up, the linear model alone passes 1 for
    any α above 1/scale (α 0.85 at T = 1 would be certain at T = 0); so the rejection chance 1 - α shrinks by at
    most the factor α grows by: min(α·scale, 1 - (1 - α)/scale), below 1 whenever α is."""
    a = np.asarray(alpha, dtype=float)
    if scale <= 1.0:
        return a * scale
    return np.minimum(a * scale, 1.0 - (1.0 - a) / scale)


def carry_range(alpha: float, low: float, high: float, temperature: float, measured_at: float,
                slope: float) -> tuple[float, float, float, tuple[float, float]]:
    """(α, low, high, (slowest, fastest slope)) carried from `measured_at` to `temperature`: the point at the slope,
    the ends at the slope's spread (`SLOPE_SPREAD`), and never narrower than the range was (an extrapolation adds
    doubt, it cannot remove any); the top is held below 1 by `carry`'s bound at the steepest scale."""
    scales = [scale_factor(temperature, measured_at, slope * r) for r in SLOPE_SPREAD]
    point = float(carry(alpha, scale_factor(temperature, measured_at, slope)))
    new_low = min(min(float(carry(low, s)) for s in scales), point - (alpha - low))
    top = max(scales)
    ceiling = 1.0 - (1.0 - high) / max(top, 1.0)
    new_high = min(max(max(float(carry(high, s)) for s in scales), point + (high - alpha)), ceiling)
    return point, max(new_low, 0.0), max(new_high, point), tuple(slope * r for r in SLOPE_SPREAD)


def carry_per_position(per_position: tuple[float, ...], scale: float) -> tuple[float, ...]:
    """vLLM's unconditional per-position rates carried by `scale`: each conditional rate p_i/p_(i-1) is an α of its
    own, carried as `carry` does, and multiplied back up."""
    out, before, carried = [], 1.0, 1.0
    for p in per_position:
        conditional = p / before if before > 0 else 0.0
        carried *= float(carry(min(conditional, 1.0), scale))
        out.append(carried)
        before = p
    return tuple(out)
