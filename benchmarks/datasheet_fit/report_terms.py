"""The report's sections on what the fit stands on: each engine's rows, each fitted rate and floor against its
physical range, and §7's checks (Hy3 on H20, Llama-3.1-70B on MI300X, DeepSeek-R1's MTP step growth on B200)."""

from __future__ import annotations

import numpy as np

from advisor.model.cost.engines import ENGINES

from .fit import median_abs
from .params import efficiencies, for_engine
from .s7_rows import dsr1_step_ms
from .sources import DSR1_B200_MTP, ENGINE, FITTED, vendor

ENGINE_NAMES = {slug: e.name for slug, e in ENGINES.items()}


def engine_lines(table, published, fit_pred, loso) -> list[str]:
    """One line per engine: its sources, rows, median |error| of the fit and of the leave-one-source-out."""
    lines = ["", "## By engine", "",
             "Each engine's own terms (`params.ENGINE_TERMS`) are fitted on its rows; the physics is shared. "
             "`recommend` ships vLLM's terms (`advisor/model/cost/enginecost.py`); the other engines' are in the "
             "Parameters table.",
             "", "| engine | sources | rows | median abs error (fit) | LOSO median |", "|---|---|---|---|---|"]
    for engine, name in ENGINE_NAMES.items():
        mask = np.array([r.engine == engine for r in table])
        sources = ", ".join(s for s, e in ENGINE.items() if e == engine)
        lo = median_abs(loso[mask] / published[mask] - 1) if loso is not None else float("nan")
        fit_median = median_abs(fit_pred[mask] / published[mask] - 1)
        lines.append(f"| {name} | {sources} | {int(mask.sum())} | {fit_median:.1%} | {lo:.1%} |")
    for v in ("nvidia", "amd"):
        mask = np.array([vendor(r.source_id) == v for r in table])
        lo = median_abs(loso[mask] / published[mask] - 1) if loso is not None else float("nan")
        lines.append(f"| all engines, {v.upper()} GPUs | | {int(mask.sum())} | "
                     f"{median_abs(fit_pred[mask] / published[mask] - 1):.1%} | {lo:.1%} |")
    alone = [f"{ENGINE_NAMES[e]} ({', '.join(s for s, x in ENGINE.items() if x == e)})" for e in ENGINE_NAMES
             if sum(x == e for x in ENGINE.values()) == 1]
    lines += ["", "Engines whose terms one source alone fixes: " + "; ".join(alone) + ". Left out, such an engine "
              "is one no row ran, and pays each of its terms at the median over the engines fitted without it, "
              "vLLM's included (`params.unseen_engine_terms`): its LOSO error is that of a new engine's, and its "
              "rows form the `extrapolating` regime of the intervals below, with S5's (GDDR's bandwidth scale "
              "stands on S5 alone; CDNA3's scales on S8 and S13)."]
    worst = max(FITTED, key=lambda s: median_abs(_of(table, loso, published, s))) if loso is not None else None
    if worst:
        lines += ["", f"Worst fitted source by LOSO median: {worst}, "
                  f"{median_abs(_of(table, loso, published, worst)):.1%}."]
    return lines


def _of(table, predicted, published, source) -> np.ndarray:
    mask = np.array([r.source_id == source for r in table])
    return predicted[mask] / published[mask] - 1


def efficiency_lines(fitted: dict, shipped: dict) -> list[str]:
    """Every rate and floor the parameters imply, fitted and shipped, against its physical range
    (`params.efficiencies`; the ranges' sources are in params.py)."""
    def show(x):
        return f"{x * 1e6:.2f} µs" if x < 1e-3 else f"{x:.3f}"
    lines = ["", "## Fitted efficiencies against their physical ranges", "",
             "A large GEMM reaches 0.4-0.85 of the dense peak (§1: an 8B token's matmuls at 77% of the H100's); "
             "weight streaming 0.6-0.95 of the bandwidth (§1: the 8B decode step streams at >= 0.81 of it); a small "
             "kernel takes 1.5-10 µs, an MoE dispatch kernel 2-25 µs (§7's FusedMoE layers, 42-75 µs over 4 "
             "tokens), one small all-reduce over 2-8 GPUs 4-40 µs (a one-shot all-reduce over NVLink a few µs, "
             "NCCL's or RCCL's over 8 GPUs 15-40). The fit holds each inside its range by a penalty "
             "(`params.range_residuals`); the per-"
             "generation matmul scale (CDNA3's 0.054) is gone.", "",
             "| quantity | fit | shipped | range | fit inside |", "|---|---|---|---|---|"]
    for (what, x, (lo, hi)), (_, y, _) in zip(efficiencies(fitted), efficiencies(shipped)):
        inside = "yes" if lo * (1 - 1e-3) <= x <= hi * (1 + 1e-3) else "**no**"  # the penalty's give: < 0.1%
        lines.append(f"| {what.replace(' (s)', '')} | {show(x)} | {show(y)} | {show(lo)} .. {show(hi)} | {inside} |")
    return lines


def s7_lines(table, shipped_pred, loso, fitted: dict) -> list[str]:
    """§7's checks: each row's error (shipped and LOSO), and DeepSeek-R1's step growth per MTP draft (the fit's
    TensorRT-LLM terms: `recommend` ships vLLM's)."""
    lines = ["", "## §7: Hy3 on 8×H20, Llama-3.1-70B on MI300X, DeepSeek-R1 MTP on 8×B200", "",
             "| row | published | shipped error | LOSO error |", "|---|---|---|---|"]
    for i, r in enumerate(table):
        if r.source_id in ("S11", "S12", "S13"):
            lo = f"{loso[i] / r.published - 1:+.1%}" if loso is not None else ""
            lines.append(f"| `{r.id}` | {r.published:.4g} {r.unit} | {shipped_pred[i] / r.published - 1:+.1%} | {lo} |")
    base_pub = DSR1_B200_MTP[0][1] / DSR1_B200_MTP[0][2] * 1e3
    trtllm = for_engine(fitted, "trtllm")
    base = dsr1_step_ms(trtllm, 0)
    lines += ["", "DeepSeek-R1's step growth over the k = 0 step, ms (the fit, TensorRT-LLM's terms: one MTP pass per "
              "draft, "
              "`draft_pass_overhead@trtllm` per launch):", "",
              "| MTP k | published | predicted | error |", "|---|---|---|---|"]
    for k, al, tok_s in DSR1_B200_MTP[1:]:
        pub = al / tok_s * 1e3 - base_pub
        pred = dsr1_step_ms(trtllm, k) - base
        lines.append(f"| {k} | {pub:.2f} | {pred:.2f} | {pred / pub - 1:+.1%} |")
    return lines

