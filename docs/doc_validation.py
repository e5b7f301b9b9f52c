"""The figures the pages quote from the committed validation runs (docs/validation/, qwen2/, tp2/: each a
validation.json that `specadvisor validate` wrote): name -> how to say it, read from the file, never typed in."""

from __future__ import annotations

import json
import statistics
from functools import cache

from doc_pages import ROOT

from advisor.model.acceptance import truncation
from calibration.validation.markdown import TARGETS, TP_TARGETS
from calibration.validation.report import DECISION_TOLERANCE

# key prefix -> (folder, the summary figures quoted as percentages): the Llama pair at TP 1, the Qwen2-style pair,
# the Llama pair at TP 2, the two sparse MoE pairs (32 experts top-4; 8 experts top-2). "per_instance"/"per_call"
# are instance_spread's parts.
_HEADLINE = ("tpot_median_abs_error", "tpot_p90_abs_error", "k_choice_agreement", "verdict_agreement")
MOE = {"validation_moe": "docs/validation/moe", "validation_moe_wide": "docs/validation/moe-wide"}  # issue 46's pairs
VALIDATIONS = {
    "validation": ("docs/validation", _HEADLINE + ("gain_agreement", "draft_model_k_choice_agreement",
                                                   "draft_model_verdict_agreement", "per_instance", "per_call",
                                                   "pass_spread")),
    "validation_qwen2": ("docs/validation/qwen2", _HEADLINE + ("per_instance", "per_call")),
    "validation_tp2": ("docs/validation/tp2", _HEADLINE + ("per_instance",)),
    **{key: (folder, ("tpot_median_abs_error", "tpot_p90_abs_error", "verdict_agreement",
                      "baseline_tpot_median_abs_error", "baseline_tpot_worst_abs_error", "pass_spread",
                      "baseline_drift")) for key, folder in MOE.items()},
}
LLAMA = VALIDATIONS["validation"][0]


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


@cache
def _run(folder: str) -> dict:
    return json.loads((ROOT / folder / "validation.json").read_text())


def _summary(folder: str) -> dict:
    summary = _run(folder)["summary"]
    return {**summary, **(summary.get("instance_spread") or {})}


def _k_misses(folder: str) -> list[dict]:
    """The scenarios whose predicted best k was not within the margin of the measured fastest."""
    return [d for d in _run(folder)["decisions"] if not d["chosen_ok"]]


def _verdict_misses(folder: str) -> list[dict]:
    return [d for d in _run(folder)["decisions"] if d["predicted_enable"] != d["measured_enable"]]


def _at(decision: dict, side: str, k_of: str) -> float:
    """A decision's end-to-end speedup, predicted or measured, at its chosen or its fastest k."""
    return decision[f"{side}_e2e"][decision["ks"].index(decision[f"{k_of}_k"])]


def _ties(folder: str) -> str:
    """How close the model rated each missed k to the measured fastest one: 'chosen vs fastest', predicted."""
    return "; ".join(f"{_at(d, 'predicted', 'chosen'):.3f}x vs {_at(d, 'predicted', 'fastest'):.3f}x"
                     for d in _k_misses(folder))


def _gaps(folder: str) -> str:
    """How much faster the measured fastest k ran than the chosen one, per miss."""
    return " and ".join(pct(_at(d, "measured", "fastest") / _at(d, "measured", "chosen") - 1)
                        for d in _k_misses(folder))


def _losses(folder: str) -> str:
    """The range of how much end to end each k miss lost against the measured fastest k."""
    losses = sorted(_at(d, "measured", "fastest") / _at(d, "measured", "chosen") - 1 for d in _k_misses(folder))
    return f"{100 * losses[0]:.0f}-{100 * losses[-1]:.0f}%"


def _signed_median(folder: str) -> str:
    """The median signed error of the predicted TPOT speedup (predicted / measured − 1) over the measured points."""
    errors = sorted(c["tpot_error"] for c in _run(folder)["comparison"]
                    if not c["calibration"] and c["tpot_error"] is not None)
    middle = len(errors) // 2
    median = errors[middle] if len(errors) % 2 else (errors[middle - 1] + errors[middle]) / 2
    return f"{100 * median:+.1f}%"


def _target(name: str, targets: dict = TARGETS) -> str:
    """The validation's own target for a summary figure, as its table states it (≤ for errors, ≥ for agreement)."""
    return f"{'≤' if name.endswith('error') else '≥'} {targets[name]:.0%}"


def _met(folder: str, name: str) -> str:
    value, target = _summary(folder)[name], TARGETS[name]
    return "met" if (value <= target if name.endswith("error") else value >= target) else "missed"


# The point docs/model.md follows through the cut last step: the quietest pair at k = 5, batch 1, prompt 32.
_QUIET = {"method": "draft_model", "scale": 0.01, "k": 5, "batch": 1, "prompt_len": 32}


def _quiet(what: str) -> str:
    """At _QUIET: the request's length ('out_len'), and its tokens per step: E from the measured per-position rates
    ('rates'), the model's count with the last step cut ('model', over out_len - 1 decode tokens), or measured."""
    same = lambda row: all(row[key] == value for key, value in _QUIET.items())  # noqa: E731
    point = next(c for c in _run(LLAMA)["comparison"] if same(c) and not c["calibration"])
    if what == "out_len":
        return str(point["out_len"])
    runs = [r for r in _run(LLAMA)["runs"] if same(r)]
    rates = [sum(r["per_position"][i] for r in runs) / sum(r["drafts"] for r in runs) for i in range(_QUIET["k"])]
    value = {"rates": 1 + sum(rates), "measured": point["tokens_per_step"],
             "model": float(truncation.tokens_per_step([1.0, *rates], point["out_len"] - 1))}[what]
    return f"{value:.2f}"


# The shape docs/validation.md follows at TP = 2: batch 1, prompt 32; its steps at scale 0.01.
_SHAPE = {"batch": 1, "prompt_len": 32}
TP2 = VALIDATIONS["validation_tp2"][0]


def _key(row: dict) -> tuple:
    return row["method"], row["scale"], row["k"], row["batch"], row["prompt_len"]


@cache
def _tpots(folder: str) -> dict[tuple, list[float]]:
    """Every run's TPOT, s, by point."""
    found: dict[tuple, list[float]] = {}
    for row in _run(folder)["runs"]:
        if row["error"] is None and row["tpot_s"]:
            found.setdefault(_key(row), []).append(row["tpot_s"])
    return found


def _points(folder: str, method: str) -> list[dict]:
    return [c for c in _run(folder)["comparison"] if c["method"] == method and not c["calibration"]
            and c["tpot_error"] is not None]


def _slowdowns(folder: str, method: str) -> list[float]:
    """Median run's time over the predicted one: a plain decode step (baseline, per shape) or a speculative step
    (draft_model, per point; a step is TPOT times the measured tokens per step, on both sides)."""
    if method == "baseline":
        shapes = {(c["batch"], c["prompt_len"]): c["predicted_base_tpot_s"] for c in _points(folder, "draft_model")}
        return [statistics.median(_tpots(folder)[("baseline", None, 0, b, p)]) / t for (b, p), t in shapes.items()]
    return [statistics.median(_tpots(folder)[_key(c)]) / c["predicted_tpot_s"] for c in _points(folder, method)]


def _shape_point(folder: str, k: int) -> dict:
    """The draft_model point at scale 0.01, draft length k and _SHAPE."""
    return next(c for c in _points(folder, "draft_model") if c["scale"] == 0.01 and c["k"] == k
                and all(c[key] == value for key, value in _SHAPE.items()))


def _step_ms(folder: str, k: int, side: str) -> float:
    """One speculative step at scale 0.01 and _SHAPE, ms: the median run's ('measured') or the model's."""
    point = _shape_point(folder, k)
    tpot = statistics.median(_tpots(folder)[_key(point)]) if side == "measured" else point["predicted_tpot_s"]
    return 1e3 * tpot * point["tokens_per_step"]


def _step_within(folder: str) -> float:
    """The largest gap between measured and predicted steps at scale 0.01 and _SHAPE, over its draft lengths."""
    ks = _run(folder)["grid"]["ks"]
    return max(abs(_step_ms(folder, k, "measured") / _step_ms(folder, k, "predicted") - 1) for k in ks)


def _quiet_errors(folder: str) -> str:
    """The signed TPOT-speedup errors of the scale-0.01 points, lowest to highest."""
    errors = sorted(c["tpot_error"] for c in _points(folder, "draft_model") if c["scale"] == 0.01)
    return f"{100 * errors[0]:+.0f}% to {100 * errors[-1]:+.0f}%"


def _baseline_ms(folder: str) -> list[float]:
    return sorted(1e3 * t for t in _tpots(folder)[("baseline", None, 0, _SHAPE["batch"], _SHAPE["prompt_len"])])


def _drafting_share(folder: str) -> float:
    """The largest share of steps that drafted anything in the runs of the verdict misses (n-gram at batch 1: a
    request of T tokens takes T - 1 - accepted decode steps)."""
    misses = [(d["batch"], d["prompt_len"], d["chosen_k"]) for d in _verdict_misses(folder)]
    return max(r["drafts"] / (r["tokens"] - r["batch"] - r["accepted"]) for r in _run(folder)["runs"]
               if r["method"] == "ngram" and r["error"] is None and (r["batch"], r["prompt_len"], r["k"]) in misses)


def _worst_cell_median(folder: str) -> float:
    """The largest |median signed TPOT-speedup error| over the draft_model points of one (batch, k)."""
    cells: dict[tuple, list[float]] = {}
    for c in _points(folder, "draft_model"):
        cells.setdefault((c["batch"], c["k"]), []).append(c["tpot_error"])
    return max(abs(statistics.median(errors)) for errors in cells.values())


def _span(values) -> str:
    values = sorted(values)
    return f"{values[0]:.2f}-{values[-1]:.2f}x"


def _ngram_span(folder: str) -> str:
    """The measured end-to-end speedups of every n-gram point."""
    return _span(c["measured_e2e"] for c in _run(folder)["comparison"] if c["method"] == "ngram"
                 and not c["calibration"] and c["measured_e2e"] is not None)


VALIDATION_VALUES = {
    **{f"{key}.{name}": (lambda folder=folder, name=name: pct(_summary(folder)[name]))
       for key, (folder, names) in VALIDATIONS.items() for name in names},
    **{f"{key}.passes": (lambda folder=folder: str(_summary(folder)["passes_run"][0]))
       for key, (folder, _) in VALIDATIONS.items() if key != "validation_moe_wide"},  # passes_run: (passes, done)
    **{f"{key}.{count}": (lambda folder=folder, count=count: str(_summary(folder)[count]))
       for key, (folder, _) in VALIDATIONS.items() for count in ("measured_points", "scenarios")},
    **{f"target.{name}": (lambda name=name: _target(name)) for name in TARGETS},
    **{f"target_tp.{name}": (lambda name=name: _target(name, TP_TARGETS)) for name in TP_TARGETS},
    **{f"validation.met.{name}": (lambda name=name: _met(LLAMA, name)) for name in TARGETS},
    **{f"validation.quiet.{what}": (lambda what=what: _quiet(what))
       for what in ("out_len", "rates", "model", "measured")},
    "validation_tp2.quiet_errors": lambda: _quiet_errors(TP2),
    "validation_tp2.baseline_runs": lambda: str(len(_baseline_ms(TP2))),
    "validation_tp2.baseline_range": lambda: f"{_baseline_ms(TP2)[0]:.1f} to {_baseline_ms(TP2)[-1]:.1f}",
    "validation_tp2.baseline_median": lambda: f"{statistics.median(_baseline_ms(TP2)):.1f}",
    "validation_tp2.calibrated_ms": lambda: f"{1e3 * _shape_point(TP2, 1)['predicted_base_tpot_s']:.1f}",
    **{f"{key}.slowdown.{method}": (lambda folder=folder, method=method: _span(_slowdowns(folder, method)))
       for key, folder in (("validation_tp2", TP2),) for method in ("baseline", "draft_model")},
    **{f"{key}.step.k{k}.{side}": (lambda folder=folder, k=k, side=side: f"{_step_ms(folder, k, side):.1f}")
       for key, folder, ks in (("validation_tp2", TP2, (1, 5)), ("validation", LLAMA, (1,)))
       for k in ks for side in ("measured", "predicted")},
    "validation.step_within": lambda: pct(_step_within(LLAMA)),
    "rule.k_within": lambda: f"{DECISION_TOLERANCE:.0%}",
    "validation_qwen2.k_misses": lambda: str(len(_k_misses(VALIDATIONS["validation_qwen2"][0]))),
    **{f"{key}.signed_median": (lambda folder=folder: _signed_median(folder))
       for key, (folder, _) in VALIDATIONS.items() if key != "validation_tp2"},
    "validation_qwen2.k_miss_losses": lambda: _losses(VALIDATIONS["validation_qwen2"][0]),
    "validation.k_misses": lambda: str(len(_k_misses(LLAMA))),
    "validation.k_miss_ties": lambda: _ties(LLAMA),
    "validation.k_miss_gaps": lambda: _gaps(LLAMA),
    "validation.verdict_misses": lambda: str(len(_verdict_misses(LLAMA))),
    "validation.verdict_miss_span": lambda: _span(_at(d, "measured", "chosen") for d in _verdict_misses(LLAMA)),
    "validation_qwen2.worst_cell": lambda: pct(_worst_cell_median(VALIDATIONS["validation_qwen2"][0])),
    "validation.verdict_miss_drafting": lambda: pct(_drafting_share(LLAMA)),
    "validation.ngram_span": lambda: _ngram_span(LLAMA),
    **{f"{key}.k_right": (lambda folder=folder: str(sum(d["chosen_ok"] for d in _run(folder)["decisions"])))
       for key, folder in MOE.items()},
    "validation_moe_wide.k_noise_misses": lambda: str(_summary(MOE["validation_moe_wide"])["k_misses_within_noise"]),
    **{f"{key}.steps.{method}": (lambda folder=folder, method=method: _span(_slowdowns(folder, method)))
       for key, folder in MOE.items() for method in ("baseline", "draft_model")},
}
