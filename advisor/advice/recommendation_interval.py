"""The `interval` part of a recommendation (how sure its speedups are), and the base every part of it shares.

Kept beside advisor/advice/recommendation.py, which imports both; the numbers come from advisor/advice/confidence.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.advice.advise import Advice


class Closed:
    """Base of every part: JSON validation (pydantic reads this) refuses keys a part does not declare."""

    __slots__ = ()
    __pydantic_config__ = {"extra": "forbid"}


@dataclass(frozen=True, slots=True)
class Band(Closed):
    """One metric at the shown k: its central estimate and the interval of the given level around it."""

    point: float  # the central estimate (acceptance at its estimate, costs as predicted)
    low: float  # low end of the interval
    high: float  # high end of the interval


@dataclass(frozen=True, slots=True)
class Interval(Closed):
    """How sure: the speedups at the shown k (the row the report shows: `Advice.shown_k`) over the acceptance range
    alone (e2e_low/e2e_high), and the 80% intervals that combine it with the cost model's own error
    (advisor/model/uncertainty.py); the verdict reads e2e.low. Null where that row does not fit, as its speedups."""

    e2e_low: float | None  # e2e speedup at the shown k at the low end of the acceptance range (acceptance alone)
    e2e_high: float | None  # ... at its high end
    alpha_low: float  # low end of the acceptance range
    alpha_high: float  # high end of the acceptance range
    level: float  # the intervals' coverage (0.8)
    tpot: Band | None  # TPOT speedup at the shown k
    e2e: Band | None  # end-to-end speedup at the shown k: ENABLE needs e2e.low >= 1.10
    throughput: Band | None  # throughput speedup at the shown k
    break_even_alpha_low: float | None  # break-even α where the costs err in speculation's favour (None: none)
    break_even_alpha_high: float | None  # ... and against it
    critical_batch_low: int | None  # critical_batch at the interval's low end (as critical_batch)
    critical_batch_high: int | None  # ... at its high end
    sources: tuple[str, ...]  # what the intervals combine: the acceptance's source, the cost error's source
    sigma_acceptance: float  # spread of log e2e speedup from the acceptance (the wider side)
    sigma_cost: float  # spread of log e2e speedup from the cost model
    dominant: str  # acceptance | cost model: the wider term at the shown k
    narrow: str  # what would narrow the interval most, ranked; empty when it has no width


def optional(kind, value):
    """`value` as `kind`, None kept."""
    return None if value is None else kind(value)


def interval_of(a: Advice) -> Interval:
    """How sure the Advice is, as plain Python numbers: the bands at the k its report shows (`shown_k`: the asked or
    best k, k = 1 when off), None where that k does not fit (nothing runs there, so no speedup to be sure of)."""
    acc, k, b = a.scenario.acceptance, a.shown_k, a.bands
    err, ran = a.scenario.cost_error, a.runs(k)
    band = lambda x: Band(point=float(x.point[k]), low=float(x.low[k]), high=float(x.high[k]))  # noqa: E731
    tpot, e2e, throughput = (band(x) if ran else None for x in (b.tpot, b.e2e, b.throughput))
    e2e_low, e2e_high = (float(x) if ran else None for x in sorted(a.e2e_range))
    ends = a.critical_range
    return Interval(
        e2e_low=e2e_low, e2e_high=e2e_high, alpha_low=float(acc.low), alpha_high=float(acc.high),
        level=float(b.level), tpot=tpot, e2e=e2e, throughput=throughput,
        break_even_alpha_low=optional(float, a.break_even_range[0]),
        break_even_alpha_high=optional(float, a.break_even_range[1]), critical_batch_low=optional(int, ends[0]),
        critical_batch_high=optional(int, ends[1]),
        sources=(f"acceptance: {acc.source}", f"cost: {err.source if err else 'taken as exact'}"),
        sigma_acceptance=float(b.e2e.sigma_acceptance[k]), sigma_cost=float(b.e2e.sigma_cost[k]),
        dominant=str(b.e2e.dominant[k]) if float(b.e2e.high[k] - b.e2e.low[k]) > 0 else "",
        narrow=a.narrow)
