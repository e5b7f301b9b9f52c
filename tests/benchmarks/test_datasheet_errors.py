"""benchmarks/datasheet_errors.py: the cost model's error by regime, its coverage, and the committed file."""

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def errors():
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("datasheet_errors", ROOT / "benchmarks" / "datasheet_errors.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_file_speaks_of_todays_rows_and_regimes(errors):
    committed = json.loads(errors.OUT.read_text())
    table = errors.df.rows()
    # rows added or reclassified since the file was written: rerun benchmarks/datasheet_errors.py
    assert [r["id"] for r in committed["rows"]] == [row.id for row in table]
    assert [r["regime"] for r in committed["rows"]] == [errors.regime(row, errors.df.SHIPPED) for row in table]
    assert {r["regime"] for r in committed["rows"] if r["source"] in errors.df.VLLM_V1} <= set(errors.APPLIED)


def test_a_regime_is_the_first_that_applies(errors):
    by_id = {row.id: errors.regime(row, errors.df.SHIPPED) for row in errors.df.rows()}
    assert by_id["1.target.B1.q1"] == "dense_memory_bound" and by_id["1.target.B64.q4"] == "compute_bound"
    assert by_id["6.a100.eagle.k1.gt4k"] == "long_context" and by_id["1.eagle.B1.k3"] == "drafter"
    assert by_id["2.sglang.h100.8b.B1"] == "other_engine"


def test_sigma_is_the_spread_whose_80_percent_interval_holds_80_percent(errors):
    r = np.random.default_rng(1).normal(0.0, 0.2, 20_000)
    assert errors.sigma_of(r) == pytest.approx(0.2, rel=0.03)
    kinds = np.array(["drafter"] * 10)
    inside = errors.coverage(np.linspace(-1, 1, 10), kinds)
    assert inside.mean() == pytest.approx(0.8, abs=0.1)


def test_the_stricter_coverage_judges_each_row_by_the_other_sources_rows(errors):
    r = np.array([0.01, -0.02, 0.03, 0.5, -0.6, 0.7])
    kinds, sources = np.array(["drafter"] * 6), np.array(["S1"] * 3 + ["S2"] * 3)
    assert errors.coverage(r, kinds).tolist() == [True] * 5 + [False]  # sigma from all six: only 0.7 is out
    # S1's rows under S2's wide sigma, S2's under S1's narrow one
    assert errors.coverage(r, kinds, sources).tolist() == [True] * 3 + [False] * 3


def test_the_coverage_section_is_replaced_not_repeated(errors):
    d = json.loads(errors.OUT.read_text())
    doc = "# t\n\n## Summary\n\nx\n\n## Parameters\n\ny\n"
    once = errors.with_section(doc, d)
    assert once.index(errors.SECTION) < once.index("## Parameters") and errors.with_section(once, d) == once
