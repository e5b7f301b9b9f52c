"""`specadvisor observe --plot`: the traffic the server got (lengths and running requests) and the predicted gain
per concurrency, with the schedule's k."""

from __future__ import annotations

import numpy as np

from advisor.observe.answer import CURVE_KS, Answer
from advisor.observe.histogram import Histogram
from advisor.render import plot_style as st


def _lengths(ax, h: Histogram, label: str, colour) -> None:
    """Each bucket as a bar over its own (lo, hi] on a log axis; the open last bucket drawn to its representative."""
    lo = np.maximum(h.lo, 1.0)
    hi = np.where(np.isfinite(h.hi), h.hi, np.maximum(h.values, lo * 2))
    ax.bar(lo, h.share(), hi - lo, align="edge", color=colour, alpha=0.6, edgecolor=colour,
           label=f"{label} (mean {h.mean:.0f})")


def figure(a: Answer):
    t = a.traffic
    fig = st.figure(11.0, 4.6)
    lengths, running, gain = (st.axes(fig, 1, 3, i) for i in (1, 2, 3))
    st.title(fig, lengths, f"Observed traffic and predicted gain: {a.verdict}",
             f"{t.requests} requests in {t.seconds:.0f} s, {t.model.rsplit('/', 1)[-1]}")
    _lengths(lengths, t.prompt, "prompt", st.BASELINE)
    _lengths(lengths, t.output, "output", st.SPEC)
    lengths.set_xscale("log")
    lengths.set_xlabel("tokens (vLLM's histogram buckets)")
    lengths.set_ylabel("share of requests")
    lengths.legend(loc="upper right")
    levels = [c for c, _ in t.concurrency]
    running.bar([str(c) for c in levels], [s for _, s in t.concurrency], color=st.RANGE)
    running.set_xlabel("running requests")
    running.set_ylabel("share of the window")
    running.set_title("concurrency", loc="left", fontsize=9)
    b = a.curve_batches
    colours = st.k_colours(len(CURVE_KS))
    for i, k in enumerate(CURVE_KS[:a.curve_gain.shape[1] - 1]):
        gain.plot(b, a.curve_gain[:, i + 1], color=colours[i], lw=1, label=f"k = {k}")
    gain.plot(b, a.curve_gain[:, 0], color=st.MARK, lw=2, label="schedule")
    gain.axhline(1.0, color=st.LOSS, lw=0.8)
    ks = np.array([next(k for lo, hi, k in a.schedule if lo <= batch <= hi) for batch in b])
    right = gain.twinx()
    right.step(b, ks, where="mid", color=st.MARK, lw=0.8, ls=":", label="schedule's k (right)")
    right.set_ylabel("schedule's k")
    right.set_ylim(0, max(ks.max(), 1) * 2.2)  # keep the k steps in the lower part, under the curves
    right.grid(False)
    right.spines["right"].set_visible(True)
    for c in a.mix.levels:
        gain.axvline(c, color=st.RANGE, lw=2, alpha=0.5)
    gain.set_xlabel("running requests (batch)")
    gain.set_ylabel("decode speedup over this mix")
    gain.set_title("predicted gain (bands: observed)", loc="left", fontsize=9)
    handles = gain.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    gain.legend(handles=handles, loc="upper right")
    return fig
