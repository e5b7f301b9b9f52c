"""`specadvisor check`'s output: text, Markdown, or JSON (kind "specadvisor-check", version 1; keys only added)."""

from __future__ import annotations

import json

from calibration.from_bench.check import Check

VERSION = 1


def as_dict(check: Check) -> dict:
    acc = check.acceptance
    return {
        "kind": "specadvisor-check", "version": VERSION,
        "baseline": check.baseline.describe(), "spec": check.spec.describe(),
        "method": check.method, "k": check.spec.k,
        "acceptance": {"alpha": acc.alpha, "alpha_low": acc.low, "alpha_high": acc.high,
                       "per_position": list(acc.per_position or ()), "source": acc.source},
        "cost_source": check.cost_source,
        "rows": [{"run": r.run, "metric": r.metric, "unit": r.unit, "predicted": r.predicted,
                  "measured": r.measured, "error": r.error} for r in check.rows],
        "verdict": {"predicted": check.predicted_verdict, "measured": check.measured_verdict,
                    "right": check.verdict_right},
    }


def to_json(check: Check) -> str:
    return json.dumps(as_dict(check), indent=1)


def _value(x: float, unit: str) -> str:
    return f"{x:.2f}x" if unit == "x" else f"{x:.4g} {unit}"


def _verdict_line(check: Check) -> str:
    right = "right" if check.verdict_right else "WRONG"
    return (f"verdict: predicted {check.predicted_verdict.upper()}, measured {check.measured_verdict.upper()}: "
            f"the advisor would have been {right}")


def text(check: Check) -> str:
    lines = [_verdict_line(check), f"baseline    {check.baseline.describe()}",
             f"speculative {check.spec.describe()} [{check.method}]",
             f"acceptance  {check.acceptance.source}", f"costs       {check.cost_source}", "",
             f"{'run':<12} {'metric':<18} {'predicted':>14} {'measured':>14} {'error':>8}"]
    for r in check.rows:
        lines.append(f"{r.run:<12} {r.metric:<18} {_value(r.predicted, r.unit):>14} {_value(r.measured, r.unit):>14} "
                     f"{100 * r.error:>+7.1f}%")
    return "\n".join(lines) + "\n"


def markdown(check: Check) -> str:
    lines = [f"**{_verdict_line(check)}**", "", f"- baseline: {check.baseline.describe()}",
             f"- speculative: {check.spec.describe()} [{check.method}]",
             f"- acceptance: {check.acceptance.source}", f"- costs: {check.cost_source}", "",
             "| run | metric | predicted | measured | error |", "|---|---|---:|---:|---:|"]
    lines += [f"| {r.run} | {r.metric} | {_value(r.predicted, r.unit)} | {_value(r.measured, r.unit)} | "
              f"{100 * r.error:+.1f}% |" for r in check.rows]
    return "\n".join(lines) + "\n"
