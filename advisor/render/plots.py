"""The four pictures of one scenario: speedup vs α, speedup vs concurrency, the go/no-go map over lengths, and
the VRAM budget. Each takes an Advice and returns a matplotlib Figure; numbers come from `sweeps`."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from advisor.advice import sweeps
from advisor.advice.advise import Advice
from advisor.advice.verdict import ENABLE_THRESHOLD
from advisor.model.uncertainty import LEVEL
from advisor.render import plot_style as st

KINDS = ("alpha", "batch", "lengths", "memory")
NO_ROOM = "#aab2ba"  # hatching over what memory cannot hold


def describe(a: Advice) -> str:
    """The scenario in one line: pair, hardware, batch, lengths, acceptance."""
    s, acc = a.scenario, a.scenario.acceptance
    pair = f"{s.setup.target.name} + {s.setup.draft.name}" if s.setup.draft else s.setup.target.name
    gpus = f"{s.setup.tp}x {s.hardware.name}" if s.setup.tp > 1 else s.hardware.name
    alpha = f"α {acc.alpha:.2f}" + (f" ({acc.low:.2f}-{acc.high:.2f})" if acc.high > acc.low else "")
    return (f"{pair} ({s.setup.method}) on {gpus}\n"
            f"batch {s.batch} · {s.prompt_len}→{s.out_len} tokens · T={s.temperature:g} · {alpha} · "
            f"costs: {s.cost_source.split(' (')[0]}")


def _speedup_axis(ax, top: float) -> None:
    ax.axhline(1.0, color=st.LOSS, lw=1.1, ls="--", zorder=1)
    ax.axhspan(0, 1.0, color=st.LOSS, alpha=0.06, lw=0, zorder=0)
    ax.set_ylim(0, max(top * 1.08, 1.3))
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}x")


def alpha_figure(a: Advice):
    sw = sweeps.alpha_sweep(a)
    s, acc = a.scenario, a.scenario.acceptance
    fig = st.figure()
    ax = st.axes(fig)
    for k, colour, curve in zip(sw.ks, st.k_colours(len(sw.ks)), sw.tpot):
        ax.plot(sw.alphas, curve, color=colour, lw=1.4, label=f"k = {k}")
    k_shown = sw.shown_k  # the report's row: its interval is the band drawn here
    if sw.tpot_band is not None:  # none where that k does not fit, as in the report
        ax.fill_between(sw.alphas, *sw.tpot_band, color=st.k_colours(len(sw.ks))[min(k_shown, len(sw.ks)) - 1],
                        alpha=0.18, lw=0, label=f"the cost model's 80% interval,\nk = {k_shown} (grey: end to end)")
    ax.plot(sw.alphas, sw.e2e_best, color=st.MARK, lw=1.6, ls=(0, (4, 2)),
            label=f"end to end, k = {k_shown}\n(prefill included)")
    if sw.e2e_band is not None:
        ax.fill_between(sw.alphas, *sw.e2e_band, color=st.MARK, alpha=0.10, lw=0)
    if acc.high > acc.low:
        ax.axvspan(acc.low, acc.high, color=st.RANGE, alpha=0.35, lw=0, label="your α range")
    if a.break_even_alpha is not None:
        ax.axvline(a.break_even_alpha, color=st.LOSS, lw=1, ls=":")
        ax.annotate(f"break-even\nα {a.break_even_alpha:.2f}", (a.break_even_alpha, 0.0), xytext=(4, 6),
                    textcoords="offset points", color=st.LOSS, fontsize=8.5, va="bottom")
    tpot_here = float(a.tpot_speedup[k_shown])
    e2e_here = float(a.e2e_speedup[k_shown])
    verb = "advised" if a.best_k else "off; shown"
    if a.runs(k_shown):
        ax.plot([acc.alpha], [tpot_here], marker="*", ms=15, color=st.MARK, mec="white", zorder=5, ls="none",
                label="your operating point")
        you = f"you: k = {k_shown} ({verb})\n{tpot_here:.2f}x decode, {e2e_here:.2f}x end to end"
    else:  # nothing runs there: no operating point on the curves
        you = f"you: k = {k_shown}\ndoes not fit in memory"
    ax.annotate(you, (acc.alpha, tpot_here), xytext=(-12, 14), textcoords="offset points", ha="right", fontsize=9,
                bbox=dict(boxstyle="round,pad=0.3", fc="white", ec="#c9ced4"))
    tops = [sw.tpot.max(), sw.e2e_best.max()] + ([sw.tpot_band[1].max()] if sw.tpot_band is not None else [])
    _speedup_axis(ax, float(max(tops)))
    ax.set_xlim(0, 1)
    ax.set_xlabel("α: per-token acceptance probability (Leviathan et al. 2023)")
    ax.set_ylabel("decode speedup (time per output token, baseline / speculative)")
    st.legend_right(ax)
    st.title(fig, ax, f"Speedup vs acceptance: speculation pays above the red line (batch {s.batch})", describe(a))
    return fig


def _memory_limits(ax, sw: sweeps.BatchSweep, top: float) -> None:
    """Shade the batches the speculative KV cache cannot hold, hatch those the baseline's cannot hold either."""
    if sw.fits_spec < min(sw.fits_baseline, top):
        ax.axvspan(max(sw.fits_spec, 0.85), min(sw.fits_baseline, top), color=st.BASELINE, alpha=0.10, lw=0,
                   label=f"KV cache full with\nspeculation (> {sw.fits_spec})")
    if sw.fits_baseline < top:
        ax.axvspan(max(sw.fits_baseline, 0.85), top, facecolor="none", edgecolor=NO_ROOM, hatch="//", lw=0,
                   label="nothing fits, even\nwithout speculation" if sw.fits_baseline == 0 else
                   f"does not fit even without\nspeculation (> {sw.fits_baseline})")


def batch_figure(a: Advice):
    sw = sweeps.batch_sweep(a)
    s = a.scenario
    fig = st.figure()
    ax = st.axes(fig)
    top = sw.batches[-1]
    if sw.fits_baseline == 0:
        ax.text(0.5, 0.6, f"one request of {s.prompt_len + s.out_len} tokens needs more KV cache\nthan memory "
                "holds after the weights, even without speculation", transform=ax.transAxes, ha="center",
                va="center", fontsize=10, color=st.LOSS, bbox=dict(boxstyle="round,pad=0.4", fc="white", ec="none"))
    else:  # the curves stop where the baseline's KV cache is full: past it there is no baseline to beat
        runs = np.where(sw.batches <= sw.fits_baseline, 1.0, np.nan)
        for k, colour, curve in zip(sw.ks, st.k_colours(len(sw.ks)), sw.tpot):
            ax.plot(sw.batches, curve * runs, color=colour, lw=1.2, alpha=0.9, label=f"k = {k}")
        ax.plot(sw.batches, sw.envelope * runs, color=st.MARK, lw=2.2, label="best k per batch\n(the vLLM schedule)")
        ax.fill_between(sw.batches, sw.envelope_band[0] * runs, sw.envelope_band[1] * runs, color=st.MARK,
                        alpha=0.15, lw=0, label="its 80% interval\n(acceptance and cost)")
    _memory_limits(ax, sw, top)
    cb = a.critical_batch
    if cb:
        ax.axvline(cb, color=st.LOSS, lw=1.2, ls=":")
        ax.annotate(f"critical batch {cb}", (cb, 1.0), xytext=(5, 8), textcoords="offset points",
                    color=st.LOSS, fontsize=9, rotation=90, va="bottom")
    here = float(a.tpot_speedup[a.best_k]) if a.best_k else 1.0
    off = ("\n(does not fit)" if sw.fits_baseline == 0 else
           f"\n(off: end to end {a.e2e_speedup[1:].max():.2f}x\nat best)")
    ax.plot([s.batch], [here], marker="*", ms=15, color=st.MARK, mec="white", zorder=5, ls="none",
            label=f"you: batch {s.batch}, k = {a.best_k}" + ("" if a.best_k else off))
    _speedup_axis(ax, float(sw.tpot.max()))
    ax.set_xscale("log")
    ax.set_xlim(0.85, top)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.set_xlabel("concurrent sequences per instance (batch), log scale")
    ax.set_ylabel("decode speedup (time per output token, baseline / speculative)")
    st.legend_right(ax)
    where = ("not one request fits in memory" if sw.fits_baseline == 0 else
             "decode gains at every batch that fits in memory" if cb is None else
             "no batch gains in decode" if cb == 0 else f"decode gains up to batch {cb}")
    st.title(fig, ax, f"Speedup vs concurrency: {where}", describe(a))
    return fig


def lengths_figure(a: Advice):
    s = a.scenario
    P = np.unique(np.round(np.geomspace(min(32, s.prompt_len), max(32768, s.prompt_len), 46)))
    O = np.unique(np.round(np.geomspace(min(16, s.out_len), max(8192, s.out_len), 40)))
    lm = sweeps.length_map(s, P, O)
    fig = st.figure()
    ax = st.axes(fig)
    cmap = ListedColormap(st.VERDICT_COLOURS)
    ax.pcolormesh(lm.prompt_lens, lm.out_lens, lm.verdict, cmap=cmap, norm=BoundaryNorm(np.arange(-0.5, 4), 4),
                  shading="nearest", rasterized=True)
    if lm.vram_blocked.any():
        ax.contourf(lm.prompt_lens, lm.out_lens, lm.vram_blocked.astype(float), levels=[0.5, 1.5], colors="none",
                    hatches=["///"])
    levels = [lv for lv in (ENABLE_THRESHOLD, 1.25, 1.5, 2.0, 3.0, 4.0) if lv < lm.e2e.max()]
    if levels:  # contours only where speculation is on: the jump to "off" is the map's colour edge already
        on = np.ma.masked_where(lm.best_k == 0, lm.e2e)
        cs = ax.contour(lm.prompt_lens, lm.out_lens, on, levels=levels, colors="#30363d", linewidths=0.8)
        ax.clabel(cs, fmt=lambda v: f"{v:g}x", fontsize=8)
    ax.plot([s.prompt_len], [s.out_len], marker="*", ms=16, color=st.MARK, mec="white", ls="none", zorder=5)
    ax.annotate(f"you: {a.verdict}, {a.at_best(a.e2e_speedup):.2f}x", (s.prompt_len, s.out_len), xytext=(9, 6),
                textcoords="offset points", fontsize=9, bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="#c9ced4"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(False)
    ax.set_xlabel("prompt length, tokens (log scale)")
    ax.set_ylabel("output length, tokens (log scale)")
    shown = sorted(set(lm.verdict.ravel().tolist()))
    handles = [Patch(color=st.VERDICT_COLOURS[c], label=sweeps.CLASS_NAMES[c]) for c in shown]
    if lm.vram_blocked.any():
        handles.append(Patch(facecolor="none", edgecolor="#30363d", hatch="///", label="the draft's memory\n"
                             "runs fewer requests\nat once than without"))
    st.legend_right(ax, handles=handles, title="verdict", title_fontsize=9)
    ax.text(1.01, 0.0, f"contours: end-to-end\nspeedup at the best k\n\nenable: ≥ {ENABLE_THRESHOLD:.2f}x\n"
            f"even at the low end\nof its {LEVEL:.0%} interval\n(α range and the\ncost model's error)",
            transform=ax.transAxes, fontsize=8, va="bottom", color="#4a4f55")
    st.title(fig, ax, f"Go / no-go by request shape at batch {s.batch}", describe(a))
    return fig


SEGMENT_COLOURS = ("#2f4b7c", "#6a9fd4", "#9aa3ab", "#e07b39", "#f4b183", st.LOSS, "#cfe8d5", "#eceff2")


def _fixed_over(side: sweeps.MemorySplit, total: float) -> float:
    """GB by which weights and runtime alone exceed what vLLM may use (> 0: no KV cache at all)."""
    fixed = side.parts["target weights"] + side.parts["draft weights"] + side.parts["activations + runtime"]
    return fixed - (total - side.parts["outside vLLM"])


def _memory_bar(ax, y: float, side: sweeps.MemorySplit, total: float, span: float) -> None:
    """One side's memory as stacked segments, then the KV that does not fit. What ends past `total` does not fit:
    the KV the batch needs beyond the budget, or weights larger than vLLM's share (then "outside vLLM" is pushed
    past the GPU's end); the excess is written after the bar. Segments narrower than ~4% of the axis (`span`)
    go unlabelled: their numbers would overlap."""
    left = 0.0
    for (name, gb), colour in zip(side.parts.items(), SEGMENT_COLOURS):
        if gb <= 0:
            continue
        hatch = "//" if name == "outside vLLM" else None
        ax.barh(y, gb, left=left, color=colour, edgecolor="white" if hatch is None else "#b0b7be", lw=0.6,
                hatch=hatch, height=0.55)
        if gb / span > 0.045:
            ax.text(left + gb / 2, y, f"{gb:.1f}", ha="center", va="center", fontsize=8.5,
                    color="white" if colour in SEGMENT_COLOURS[:2] else "#222")
        left += gb
    if side.overflow > 0:
        ax.barh(y, side.overflow, left=left, color="none", edgecolor=st.LOSS, hatch="xx", height=0.55)
        left += side.overflow
    if left > total * 1.0005:  # past the GPU by more than rounding
        ax.text(left, y, f" {left - total:.1f} GB over", ha="left", va="center", fontsize=8.5, color=st.LOSS)


def _memory_note(side: sweeps.MemorySplit, s, total: float) -> str:
    over = _fixed_over(side, total)
    if over > 0:
        return f"weights and runtime exceed what vLLM may use by {over:.1f} GB; no request fits"
    return (f"holds {side.max_concurrency} requests of {s.prompt_len + s.out_len} tokens"
            + (f"; batch {s.batch} does NOT fit" if side.overflow > 0 else ""))


def memory_figure(a: Advice):
    base, spec = sweeps.memory_split(a)
    s = a.scenario
    total = s.hardware.memory_bytes / 1e9
    fig = st.figure(height=4.2)
    ax = st.axes(fig)
    rows = [spec, base]  # top to bottom: baseline on top reads first
    span = max(total, *(sum(side.parts.values()) + side.overflow for side in rows))
    for y, side in enumerate(rows):
        _memory_bar(ax, y, side, total, span)
        ax.text(0.0, y + 0.36, f"{side.label}: {_memory_note(side, s, total)}", fontsize=9, va="bottom")
    if span > total:  # where the GPU ends, so what sticks out reads as what does not fit
        ax.axvline(total, color=st.LOSS, lw=1.2, ymin=0.05, ymax=0.8)
    ax.set_yticks([])
    ax.set_ylim(-0.55, 1.75)
    ax.set_xlim(0, span * (1.12 if span > total else 1.01))
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(f"GB per GPU (10⁹ bytes; the GPU has {s.hardware.memory_gib:g} GiB = {total:.1f} GB, "
                  f"vLLM may use {s.gpu_memory_utilization:.0%})")
    handles = [Patch(facecolor=colour, edgecolor="#b0b7be" if name == "outside vLLM" else colour,
                     hatch="//" if name == "outside vLLM" else None, label=name)
               for name, colour in zip(sweeps.SEGMENTS, SEGMENT_COLOURS) if base.parts[name] > 0 or spec.parts[name] > 0]
    if base.overflow > 0 or spec.overflow > 0:
        handles.append(Patch(facecolor="none", edgecolor=st.LOSS, hatch="xx", label="KV needed beyond\nthe budget"))
    if span > total:
        handles.append(Line2D([], [], color=st.LOSS, lw=1.2, label="end of GPU memory"))
    st.legend_right(ax, handles=handles)
    used_by_draft = spec.parts["draft weights"] + spec.parts["draft KV"] + spec.parts["lookahead slots"]
    ax.text(0.0, -0.42, f"speculation adds: draft weights {spec.parts['draft weights']:.2f} GB, draft KV "
            f"{spec.parts['draft KV']:.2f} GB, lookahead slots {spec.parts['lookahead slots']:.3f} GB "
            f"(batch {s.batch})", fontsize=8.5, color="#4a4f55", va="top")
    cost = ("the weights alone do not fit" if _fixed_over(base, total) > 0 else
            f"batch {s.batch} does not fit" if base.overflow > 0 or spec.overflow > 0 else
            f"speculation takes {used_by_draft:.{1 if used_by_draft >= 1 else 2}f} GB at batch {s.batch}")
    st.title(fig, ax, f"VRAM per GPU: {cost}; max concurrency {base.max_concurrency} → {spec.max_concurrency}",
             describe(a))
    return fig


FIGURES = {"alpha": alpha_figure, "batch": batch_figure, "lengths": lengths_figure, "memory": memory_figure}
