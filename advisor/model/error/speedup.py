"""How far the cost model misses a speedup, from the published speedups it was not fitted to.

The step-time spreads (advisor/model/uncertainty.py) say how far a step time misses, and they travel to a speedup
through the drafter's share of an iteration. A user reads the interval on the speedup itself, and on runs no fitted
row measured the two differ (issue 46: the step-time interval held one published speedup in four). So a datasheet
answer's cost-model spread is at least that of the published speedups of its target's class, each predicted by the
fit that never saw its source (benchmarks/speedup_errors.py writes them, profiles/speedup-error.json holds them).

A class with fewer than MIN_ROWS rows takes the widest spread among itself and its NEIGHBOURS. An answer whose class,
as vLLM 0.32 runs it, or whose method no published run measured takes the widest spread of all, and says so: no row
supports its number, so its verdict is at most marginal. Pure functions; the file is read by
advisor/profiles/model_error.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.model.shape.modelspec import ModelSpec
from advisor.model.uncertainty import Z80

CLASSES = ("dense", "moe", "hybrid")  # ordered by how far the target departs from the dense transformer
# The classes one step away: a dense model's nearest is an MoE (its attention, experts in place of the MLP), a
# hybrid's an MoE (Qwen3.5/3.6 and Qwen3-Next ship as both: linear attention beside routed experts)
NEIGHBOURS = {"dense": ("moe",), "moe": ("dense", "hybrid"), "hybrid": ("moe",)}
# A class needs this many published speedups for a spread of its own: the 80% quantile then sits at the 7.2th of
# 8 (Weibull), inside the sample (benchmarks/datasheet_errors.py's VENDOR_MIN_ROWS, for the same reason)
MIN_ROWS = 8
UNPUBLISHED = "no published run of this kind"


def model_class(model: ModelSpec) -> str:
    """A target's class: "hybrid" with linear-attention layers (Gated DeltaNet, Mamba) beside its attention, else
    "moe" with routed experts, else "dense"."""
    return "hybrid" if model.linear_layers else "moe" if model.num_experts > 1 else "dense"


@dataclass(frozen=True, slots=True)
class SpeedupSpread:
    """The published speedups' spread (σ of log(published / predicted)) by class, as profiles/speedup-error.json
    states it."""

    sigma: dict  # class -> σ used (its own, or borrowed from a neighbour)
    borrowed: dict  # class -> the class it borrowed from, or None
    widest: float  # the widest σ of any class: an unseen class or method takes it
    classes_seen: tuple[str, ...]  # classes with a published run as vLLM 0.32 runs it
    methods_seen: tuple[str, ...]  # methods with a published run
    median_error: dict  # class -> median |predicted / published - 1|
    rows: dict  # class -> published speedups

    def __post_init__(self) -> None:
        if set(self.sigma) != set(CLASSES) or any(not 0.0 <= s <= self.widest for s in self.sigma.values()):
            raise ValueError(f"a speedup spread needs a σ in [0, widest] for each of {CLASSES}, got {self.sigma}")


def spread_for(spread: SpeedupSpread, cls: str, method: str) -> tuple[float, str]:
    """(σ on the speedup, the line the report prints first when no published run supports it: "" when one does)."""
    missing = [what for what, seen in ((f"a {cls} target as vLLM 0.32 runs it", cls in spread.classes_seen),
                                       (f"--method {method}", method in spread.methods_seen)) if not seen]
    if missing:
        return spread.widest, (f"{UNPUBLISHED}: no published speedup of {' or of '.join(missing)}; its interval "
                               f"takes the widest published spread (×/÷ {_factor(spread.widest)}), and it is at most "
                               "MARGINAL until a run of your own measures it")
    return spread.sigma[cls], ""


def describe(spread: SpeedupSpread, cls: str) -> str:
    """Where a class's σ came from, in words (the report's "how sure" source)."""
    rows, med = spread.rows[cls], spread.median_error[cls]
    own = f"{rows} published {cls} speedups, median error {med:.0%}" if rows else f"no published {cls} speedup"
    borrowed = spread.borrowed[cls]
    return own + (f"; under {MIN_ROWS} rows: {borrowed}'s spread" if borrowed else "")


def _factor(sigma: float) -> str:
    return f"{math.exp(Z80 * sigma):.2f}"
