"""The review's pictures: GPUs and $ per million output tokens per workload and deployment, and each pair's
latency-vs-load curve with its SLOs."""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from advisor.render import plot_style as st
from advisor.review.evaluate import Review, totals

BAR_W = 0.38


def _bars(ax, r: Review, deployment: str, metric: str) -> None:
    cells = [c for c in r.cells if c.deployment == deployment]
    names = [c.workload for c in cells]
    values = {"base": [], "spec": []}
    for c in cells:
        for side in ("base", "spec"):
            got = getattr(c, side)
            values[side].append(None if got is None else (got.gpus if metric == "gpus" else got.usd_per_mtok))
    if metric == "gpus" and len(cells) > 1:
        total = next(t for t in totals(r) if t["deployment"] == deployment)
        names.append("all workloads" if not total["left_out"] else
                     f"total, without {', '.join(x.split(' (')[0] for x in total['left_out'])}")
        values["base"].append(total["gpus_base"])
        values["spec"].append(total["gpus_spec"])
    x = np.arange(len(names))
    top = max([v for vs in values.values() for v in vs if v is not None] + [1])
    for offset, side, colour in ((-BAR_W / 2, "base", st.BASELINE), (BAR_W / 2, "spec", st.SPEC)):
        for xi, v in zip(x + offset, values[side]):
            if v is None:  # the SLOs cannot be met (or the pair is broken): the review's Problems section says why
                ax.text(xi, 0, "n/a", ha="center", va="bottom", fontsize=7.5, color=st.LOSS)
                continue
            ax.bar(xi, v, BAR_W * 0.95, color=colour)
            ax.text(xi, v, f"{v:.0f}" if metric == "gpus" else f"${v:.2f}", ha="center", va="bottom", fontsize=8)
    if metric == "gpus":
        pool = next(d.count for d in r.plan.deployment if d.name == deployment)
        ax.axhline(pool, color=st.MARK, lw=1, ls="--")
        ax.text(0.0, pool, f" pool: {pool} GPUs", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
                fontsize=8)
        top = max(top, pool)
    ax.set_xticks(x, [textwrap.fill(n, 12) for n in names], fontsize=8.5)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(0, top * 1.22)
    ax.grid(axis="x", visible=False)


def overview_figure(r: Review):
    """GPUs needed (top row) and $ per million output tokens (bottom row, when prices are given)."""
    deployments = [d.name for d in r.plan.deployment]
    priced = any(d.usd_per_gpu_hour is not None for d in r.plan.deployment)
    rows = 2 if priced else 1
    fig = st.figure(width=max(4.2 * len(deployments), 8.0), height=3.4 * rows + 0.8)
    for j, name in enumerate(deployments):
        ax = st.axes(fig, rows, len(deployments), j + 1)
        _bars(ax, r, name, "gpus")
        ax.set_title(name, loc="left", fontsize=10)
        if j == 0:
            ax.set_ylabel("GPUs needed within the SLOs")
            ax.legend(handles=[Patch(color=st.BASELINE, label="without speculation"),
                               Patch(color=st.SPEC, label="with speculation")], loc="upper left")
        if priced:
            ax2 = st.axes(fig, rows, len(deployments), len(deployments) + j + 1)
            _bars(ax2, r, name, "usd")
            if j == 0:
                ax2.set_ylabel("$ per million output tokens\n(at the SLO-bound load)")
    fig.suptitle("GPUs and cost to serve the plan, with and without speculation", x=0.01, ha="left",
                 fontsize=12.5, fontweight="bold")
    return fig


def _planned_load(ax, rate: float, replicas: int) -> float:
    """Mark the load the plan puts on one replica (its rate spread over the pool's replicas); returns it (0: the
    pool holds no replica)."""
    if replicas < 1:
        return 0.0
    load = rate / replicas
    ax.axvline(load, color=st.MARK, lw=1.0, ls="-.", zorder=1)
    # high up: the curves start low on the left, where most plans put their load
    ax.text(load, 0.78, f" planned {load:.2g} req/s", transform=ax.get_xaxis_transform(), ha="left", va="center",
            fontsize=7.5, color=st.MARK, bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
    return load


def curves_figure(r: Review):
    """Per pair: TPOT against the request rate one replica carries; dotted where TTFT misses its SLO; the
    planned per-replica load marked."""
    workloads = [w for w in r.plan.workload]
    deployments = [d.name for d in r.plan.deployment]
    fig = st.figure(width=max(4.0 * len(deployments), 8.0), height=2.7 * len(workloads) + 0.9)
    for i, w in enumerate(workloads):
        for j, name in enumerate(deployments):
            c = r.cell(w.name, name)
            ax = st.axes(fig, len(workloads), len(deployments), i * len(deployments) + j + 1)
            ax.set_title(f"{w.name} on {name}", loc="left", fontsize=9.5)
            if c.base is None:
                ax.text(0.5, 0.5, textwrap.fill(f"{c.recommendation}: {c.reason}", 50), ha="center", va="center",
                        transform=ax.transAxes, fontsize=8, color=st.LOSS)
                ax.set_xticks([])
                ax.set_yticks([])
                continue
            tpot_slo, ttft_slo = w.slo.tpot_ms, w.slo.ttft_ms / 1e3
            for side, colour, label in ((c.base, st.BASELINE, "without"), (c.spec, st.SPEC, "with speculation")):
                cv = side.curve
                ok = cv.ttft <= ttft_slo
                y = cv.tpot * 1e3
                ax.plot(cv.rate, np.where(ok, y, np.nan), color=colour, lw=1.8, label=label)
                ax.plot(cv.rate, np.where(ok, np.nan, y), color=colour, lw=1.2, ls=":")
                if side.best.rate > 0:
                    ax.plot([side.best.rate], [side.best.tpot * 1e3], "o", color=colour, ms=6, mec="white")
            ax.axhline(tpot_slo, color=st.LOSS, lw=1, ls="--")
            ax.text(0.99, tpot_slo, f"TPOT SLO {tpot_slo:g} ms", transform=ax.get_yaxis_transform(), ha="right",
                    va="bottom", fontsize=7.5, color=st.LOSS)
            lowest = min(c.base.curve.tpot[0], c.spec.curve.tpot[0]) * 1e3
            ax.set_ylim(0, max(tpot_slo * 2.0, lowest * 1.6))
            if c.base.best.rate == 0 and c.spec.best.rate == 0:
                ax.text(0.5, 0.92, "no load meets both SLOs", transform=ax.transAxes, ha="center", va="top",
                        fontsize=8.5, color=st.LOSS)
            d = next(x for x in r.plan.deployment if x.name == name)
            planned = _planned_load(ax, w.rate, d.count // d.tensor_parallel)
            xmax = max(c.base.best.rate, c.spec.best.rate)
            right = xmax * 1.6 if xmax > 0 else max(c.base.curve.rate.max(), c.spec.curve.rate.max())
            ax.set_xlim(0, max(right, planned * 1.25))
            if i == len(workloads) - 1:
                ax.set_xlabel("requests/s per replica")
            if j == 0:
                ax.set_ylabel("TPOT, ms")
    fig.suptitle("Latency vs load per replica\n", x=0.01, ha="left", fontsize=12.5, fontweight="bold")
    fig.legend(handles=[Line2D([], [], color=st.BASELINE, lw=1.8, label="without speculation"),
                        Line2D([], [], color=st.SPEC, lw=1.8, label="with speculation")],
               loc="upper right", ncol=2, fontsize=8.5)
    fig.text(0.01, 1.0, "\n\ndots: the most load within both SLOs; dotted: TTFT over its SLO; dash-dot: the "
             "planned load per replica (rate / replicas)",
             ha="left", va="top", fontsize=8.5, color="#4a4f55")
    return fig


FIGURES = {"overview": overview_figure, "curves": curves_figure}
