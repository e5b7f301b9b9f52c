"""A length (or time) distribution from a window's Prometheus histogram buckets: per bucket its count and a
representative value, placed so the counts' weighted mean is the exact observed mean (`_sum / _count`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.observe.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Histogram:
    """A length (or time) distribution from Prometheus buckets: per bucket (lo, hi] its count and a
    representative value, placed so the counts' weighted mean is the exact observed mean (`_sum / _count`)."""

    lo: np.ndarray
    hi: np.ndarray  # +inf for the last bucket
    counts: np.ndarray
    values: np.ndarray  # representative value per bucket
    mean: float  # exact: the histogram's _sum / _count

    @property
    def total(self) -> int:
        return int(round(self.counts.sum()))

    def share(self) -> np.ndarray:
        return self.counts / self.counts.sum()

    def quantile(self, q: float) -> float:
        """The representative value of the bucket that holds the q-quantile (as a plan's bucket list reads it)."""
        cum = np.cumsum(self.counts) / self.counts.sum()
        return float(self.values[min(int(np.searchsorted(cum, q - 1e-12)), len(cum) - 1)])

    def quantile_bound(self, q: float) -> float:
        """The upper edge of the bucket that holds the q-quantile: what the histogram vouches the q-quantile is
        under (its representative for the open last bucket)."""
        cum = np.cumsum(self.counts) / self.counts.sum()
        i = min(int(np.searchsorted(cum, q - 1e-12)), len(cum) - 1)
        return float(self.hi[i] if math.isfinite(self.hi[i]) else self.values[i])

    def spread(self) -> float:
        """Standard deviation of the values, each bucket's spread about its representative plus a uniform spread
        over its width (what the buckets do not show is taken as wide as they allow)."""
        if self.total < 2:
            return 0.0
        width = np.where(np.isfinite(self.hi), self.hi - self.lo, self.lo)
        square = (self.values - self.mean) ** 2 + width ** 2 / 12.0
        return float(np.sqrt((self.counts * square).sum() / (self.counts.sum() - 1)))


def histogram(snap: Snapshot, name: str, zeros: float = 0.0) -> Histogram:
    """The window's histogram `name`; representatives lo + t·(hi − lo) with one t for all buckets, solved so the
    mean is exact (clipped to the buckets: t ∈ [0, 1]). The open last bucket is taken as (lo, 2·lo]. `zeros`
    observations of 0 are taken out of the first bucket (vLLM records a TPOT of 0 for one-token requests)."""
    cum = snap.buckets.get(name, {})
    bounds = np.array(sorted(cum), dtype=float)
    per = np.diff(np.concatenate([[0.0], [cum[b] for b in bounds]]))
    if per.size:
        per[0] = max(per[0] - zeros, 0.0)
    lo = np.concatenate([[0.0], bounds[:-1]])
    n, total = per.sum(), snap.values.get(name + "_sum", 0.0)
    keep = per > 0.5
    lo, hi, per = lo[keep], bounds[keep], per[keep]
    if n < 0.5:
        return Histogram(lo, hi, per, lo.copy(), float("nan"))
    width = np.where(np.isfinite(hi), hi - lo, lo)
    t = (total - (per * lo).sum()) / max((per * width).sum(), 1e-300)
    values = lo + float(np.clip(t, 0.0, 1.0)) * width
    return Histogram(lo, hi, per, values, total / n)
