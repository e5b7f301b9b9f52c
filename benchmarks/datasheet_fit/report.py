"""The report: docs/datasheet-fit.md from the rows, the fits and the checks."""

from __future__ import annotations

import numpy as np

from advisor.model.cost import enginecost as ec

from .checks import _jump, best_k_by_batch, checks, islands, overlap_curve, yan_check
from .fit import median_abs, predictions
from .not_expressed import NOT_EXPRESSED
from .params import HELD_AT_PRIOR, PARAMS, SHIPPED, STAGE_TWO_NAMES, for_engine
from .predict import mi300x_curve, mtp_tokens
from .report_terms import efficiency_lines, engine_lines, s7_lines
from .sources import V1_FIT


def report(table, fitted, dropped, train, loso, loso_values, all_rows: bool, sensitivity=()) -> str:
    published = np.array([r.published for r in table])
    shipped = predictions(table, SHIPPED)
    fit_pred = predictions(table, fitted)
    err, fit_err = shipped / published - 1, fit_pred / published - 1
    lines = ["# Datasheet defaults fitted to published vLLM measurements", "",
             "Written by `python -m benchmarks.datasheet_fit` (do not edit by hand). Every row of "
             "`../shared/reference/gpu-measurements.md` that the model can express, predicted by the repo's own model "
             "(`advisor/model/cost/costmodel.py`, `speculative.py`) on the datasheet of its GPU. **shipped** is what "
             "`recommend` predicts with the defaults in `advisor/model/cost/enginecost.py` (the fit, rounded); "
             "**fit** the unrounded fit; **LOSO** the prediction of a fit that never saw the row's source (rows of "
             "unfitted sources are out of sample already). error = predicted / published − 1.",
             "",
             f"Fitted on {'every expressed row' if all_rows else V1_FIT}. "
             "fit column: T = fitted, - = not fitted, * = dropped by the fit's outlier rule. LOSO leaves a source "
             "out of both stages.", "",
             "| row | source | fit | what | published | shipped | error | fit error | LOSO error | assumptions |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(table):
        mark = ("T" if train[i] else "-") + ("*" if dropped[i] else "")
        lo = f"{loso[i] / r.published - 1:+.1%}" if loso is not None else ""
        lines.append(f"| `{r.id}` | {r.source_id} | {mark} | {r.what} | {r.published:.4g} {r.unit} | "
                     f"{shipped[i]:.4g} | {err[i]:+.1%} | {fit_err[i]:+.1%} | {lo} | {r.note} |")
    lines += ["", "## Summary", "", "| | rows | median abs error (shipped) | median abs error (fit) | LOSO median |",
              "|---|---|---|---|---|"]

    def line(label, mask):
        lo = median_abs(loso[mask] / published[mask] - 1) if loso is not None else float("nan")
        lines.append(f"| {label} | {int(mask.sum())} | {median_abs(err[mask]):.1%} | {median_abs(fit_err[mask]):.1%} "
                     f"| {lo:.1%} |")
    line("all expressed rows", np.ones(len(table), bool))
    line("fitted rows", train)
    if (~train).any():
        line("rows not fitted (other engines)", ~train)
    for s in sorted({r.source for r in table}, key=lambda s: int(s.split()[0][1:])):
        line(s, np.array([r.source == s for r in table]))
    lines += engine_lines(table, published, fit_pred, loso)
    rows8_9, cross, (growth, h100_token, b200_compute) = islands()
    lines += ["", "## What set S8 and S4 apart before engines had their own terms", "",
              "Before issue 33, S8 was the only CDNA3 source and S4 the only dense model on a Blackwell GPU under "
              "load, both under SGLang, and each pulled a catch-all into the shared rates (CDNA3's matmuls at 0.054 of "
              "peak; Blackwell's at 0.11). Now SGLang's per-step and per-token costs are its own terms, S13 is a "
              "second CDNA3 source, and the rates stay in their physical ranges. Their own numbers, for the record "
              "(ms per output token: the published baseline; weights: the fp8 layer's active bytes over 8 GPUs at the "
              "datasheet's peak bandwidth; the rest spread over the small and MoE kernels each layer launches, "
              "`advisor.model.gpu.kernels`):", "",
              "| source | setup | ms per output token | µs per layer | of it, weights | small and MoE kernels per "
              "layer | rest per kernel |", "|---|---|---|---|---|---|---|"]
    for source, what, per_token, layer, weights, kernels, rest in rows8_9:
        lines.append(f"| {source} | {what} | {per_token:.1f} | {layer:.0f} µs | {weights:.0f} µs | {kernels:.0f} | "
                     f"{rest:.1f} µs |")
    lines += ["", f"Priced at S9's time per kernel, S8's layer comes out {-cross[0]:.0%} short (S9's at S8's, "
              f"{cross[1]:.0%} long). S4's B200 SGLang step grows "
              f"{growth:.0f} µs per added sequence (concurrency 1 -> 32, §2), where an H100 under vLLM adds "
              f"{h100_token:.0f} µs per batched token (§1) and an 8B token's matmuls take {b200_compute:.1f} µs at "
              "B200's datasheet peak and the fitted efficiency: SGLang's per-token term (`token_overhead@sglang`) "
              "carries the difference."]
    lines += ["", "## Parameters", "",
              "The prior is the value before this fit (or a weak physical guess for a new parameter); **shipped** is "
              "`advisor/model/cost/enginecost.py`'s `DEFAULT_*`; efficiencies are fractions of the datasheet peak. "
              "*held*: kept at its prior (no fitted row wants it away from 0). *stage 2*: fitted on the rows of a "
              "kind no first-stage row has (S5's GDDR, S8's CDNA3) with the first stage's values held (a joint fit "
              "let those rows pull the shared parameters and put §1's H100 steps up to 9% too slow). "
              "`layer_floor_graph` is quoted per 6 small kernels, a dense layer's (`advisor.model.gpu.kernels`); GEMMs "
              "carry no floor. Before issue 24's refit it was 4.2 µs per 10 kernels, GEMMs included, and the "
              "generations carried catch-alls: Blackwell's floors 3.1x and matmuls 0.11x Hopper's (from S4), "
              "CDNA3's floors 7.9x.", "",
              "| parameter | prior | fit | shipped | range over the LOSO fits |", "|---|---|---|---|---|"]
    for p in PARAMS:
        rng = ""
        if loso_values:
            vals = [lv[p.name] * p.scale for lv in loso_values.values()]
            rng = f"{min(vals):.4g} .. {max(vals):.4g}"
        held = " (held)" if p.name in HELD_AT_PRIOR else " (stage 2)" if p.name in STAGE_TWO_NAMES else ""
        lines.append(f"| `{p.name}`{held} | {p.prior * p.scale:.4g} {p.unit} | {fitted[p.name] * p.scale:.4g} "
                     f"{p.unit} | {p.default * p.scale:.4g} {p.unit} | {rng} |")
    lines += efficiency_lines(fitted, SHIPPED)
    lines += s7_lines(table, shipped, loso, fitted)
    if sensitivity:
        lines += ["", "## How a piecewise pass's latency floor combines with its GPU time", "",
                  "A piecewise pass's floor (the host's eager attention and graph-piece launches) and its GPU time are "
                  f"combined by a p-norm of exponent m (`floor_exponent`; shipped: {ec.DEFAULT_FLOOR_EXPONENT:g}, not "
                  "fitted; the small kernels' floors are GPU time and add in every pass). The fit redone "
                  "at each m:", "",
                  "| m | median abs error, fitted rows | all rows | Llama-3.2-1B / 8B ratio "
                  "row | Qwen3-0.6B / 8B ratio row |", "|---|---|---|---|---|"]
        for m, fitted_rows, every, llama, qwen in sensitivity:
            lines.append(f"| {m:g} | {fitted_rows:.1%} | {every:.1%} | {llama:+.1%} | {qwen:+.1%} |")
        lines += ["", "Every published piecewise pass is short (a drafter's), where floor and GPU time are comparable, "
                  "and these rows prefer m = 1 (see the table). m = 2 "
                  "is shipped for the passes no row measures: on a long pass the host, which launches asynchronously, "
                  "runs ahead of the GPU and its latency hides under the GPU's work, which is why vLLM captures CUDA "
                  "graphs only up to 512 tokens (`config/vllm.py` `_set_cudagraph_sizes`). m = 1 charges every layer "
                  "of a step past the capture size (or of a long prefill) the whole floor on top of its GPU time: "
                  f"Llama-3.3-70B on 4 H100s, decode at batch 512 -> 513 (past the capture size), {_jump(1.0)} at "
                  f"m = 1, {_jump(2.0)} at m = 2 (at m = 1 an 8B verifying k = 3 drafts at batch 129, 516 tokens, "
                  "pays such a jump on every step). One measured step past the capture size would settle it."]
    lines += ["", "## Rows not expressed", ""] + [f"- {what}: {why}." for what, why in NOT_EXPRESSED]
    lines += ["", "## Checks on one H100 (Llama-3.1-8B, L = 512, shipped defaults)", "",
              "| check | predicted | reference | error | target |", "|---|---|---|---|---|"]
    for name, (got, ref, what) in checks(SHIPPED).items():
        lines.append(f"| {name} | {got:.3g} | {ref:.3g} | {got / ref - 1:+.1%} | {what} |")
    yan = yan_check(SHIPPED)
    lines += ["", f"§5 Yan et al. (not fitted): a 5-layer 4096-wide 0.8B draft's pass against a 24-layer 2048-wide "
              f"1.3B draft's: {yan[0]:+.0%} on H100, {yan[1]:+.0%} on A100 (published: −49%, GPU not given).",
              "", "## Compute that decode hides only in part", "",
              "The 8B target step on one H100 at N_kv = 4096 (8 sequences × 512 tokens) against §1's fitted formula, "
              "N batched tokens = 1 … 1024 (shipped defaults). §1's data reach N ≈ 64·(k+1); past that the "
              "formula is a linear extrapolation, and the model turns compute-bound.", "",
              "| N | §1 formula, ms | model, ms | error |", "|---|---|---|---|"]
    for n, f, t in overlap_curve(SHIPPED):
        lines.append(f"| {n} | {f:.2f} | {t:.2f} | {t / f - 1:+.1%} |")
    al, curve = mi300x_curve(for_engine(SHIPPED, "sglang"))
    lines += ["", "## MTP on 8×MI300X: the speedup against concurrency", "",
              f"S8 (DeepSeek-V3, MTP k = 2, random 1024/1024) at the one acceptance length that reproduces its "
              f"concurrency-1 speedup, AL {al:.2f} (shipped defaults; the rows above use the MTP prior's "
              f"{mtp_tokens(2):.2f}).", "", "| concurrency | published | predicted | error |", "|---|---|---|---|"]
    for b, pub, pred in curve:
        lines.append(f"| {b} | {pub:.2f}x | {pred:.2f}x | {pred / pub - 1:+.1%} |")
    lines += ["", "## Best k by batch", "",
              "An EAGLE-3 head (32k draft vocabulary) on Llama-3.1-8B, one H100, L = 1024, α = 0.8 i.i.d., best k in "
              "0..8 (shipped defaults), beside vLLM's dynamic-SD docs example for the same pair (k = 5 for batch 1-16, "
              "4 for 17-32, 3 for 33-64, 1 for 65-128, 0 beyond; a configuration example, not a measurement).", "",
              "| batch | best k | TPOT speedup |", "|---|---|---|"]
    for b, k, sp in best_k_by_batch(SHIPPED):
        lines.append(f"| {b} | {k} | {sp:.2f}x |")
    return "\n".join(lines) + "\n"
