"""One time per point from its samples, with the machine's drift between rounds taken out.

Every round visits every point once (`measure.measure_run`), so sample r of every point was taken during round r.
On a shared machine the speed of whole rounds moves together: in one CI-like run of the tiny target (16 rounds of
31 points) rounds 7-10 ran every step ~30% faster than rounds 1-6 (steal time, frequency), while within a round the
points kept their order. A plain per-point median over a few rounds then inherits whichever rounds each point
happened to keep, and the fit's held-out error reached 8-19% on windows of 5-10 rounds where the machine drifted.

The additive two-way model in log time, log s[p, r] = log t[p] + d[r] + e[p, r], separates the two: t[p] the
point's time, d[r] the round's slowdown. Tukey's median polish (Tukey 1977, *Exploratory Data Analysis*, ch. 11)
fits it robustly, by alternately sweeping out row and column medians; a point disturbed in one round moves neither
its own estimate nor the round's. On the same run's samples, 57 windows of 5, 7 and 10 consecutive rounds per model:
the fit's held-out median error was 3.9% typical and 18.6% at worst from per-point medians, 2.7% and 8.6% from this.
"""

from __future__ import annotations

import numpy as np

MAX_SWEEPS = 200  # median polish can creep for dozens of sweeps when a row has an outlier; it stops once still
STILL = 1e-9  # ... i.e. when no sweep moves a log time by more than this


def point_times(samples: list[list[float]]) -> np.ndarray:
    """Seconds per point from its samples (samples[p][r]: point p in round r), at the median round's speed.
    Points with unequal sample counts (an interrupted round not yet finished) use their first complete rounds;
    a single round has no drift to separate, so it is returned as measured."""
    rounds = min(len(s) for s in samples)
    if rounds == 0:
        raise ValueError("point_times: a point has no samples")
    logs = np.log(np.array([s[:rounds] for s in samples], dtype=float))
    if rounds == 1:
        return np.exp(logs[:, 0])
    point = np.zeros(len(samples))
    round_ = np.zeros(rounds)
    residual = logs.copy()
    for _ in range(MAX_SWEEPS):
        row = np.median(residual, axis=1)
        point += row
        residual -= row[:, None]
        col = np.median(residual, axis=0)
        round_ += col
        residual -= col[None, :]
        if max(np.abs(row).max(), np.abs(col).max()) < STILL:
            break
    # Centre the round effects on the median round, so times stay at the machine's typical speed.
    return np.exp(point + np.median(round_))

