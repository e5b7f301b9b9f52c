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
    alone = errors.df.extrapolated(table, np.ones(len(table), bool))
    assert [r["regime"] for r in committed["rows"]] == [errors.regime(row, errors.df.SHIPPED, x)
                                                       for row, x in zip(table, alone)]
    assert committed["covered"] == errors.covered(table)


def test_a_regime_is_the_first_that_applies(errors):
    table = errors.df.rows()
    alone = errors.df.extrapolated(table, np.ones(len(table), bool))
    by_id = {row.id: errors.regime(row, errors.df.SHIPPED, x) for row, x in zip(table, alone)}
    assert by_id["1.target.B1.q1"] == "dense_memory_bound" and by_id["1.target.B64.q4"] == "compute_bound"
    assert by_id["6.a100.eagle.k1.gt4k"] == "long_context" and by_id["1.eagle.B1.k3"] == "drafter"
    # another engine's row is judged by its physics: its engine carries its own terms
    assert by_id["2.sglang.h100.8b.B1"] == "dense_memory_bound" and by_id["8.mi300x.dsv3.base.c1"] == "moe"
    # TensorRT-LLM (S12) and the SSD engine (S13) each ran on one source: left out, their terms stand on none
    assert by_id["12.b200.dsr1.mtp0"] == "extrapolating" and by_id["13.mi300x.l70.tp1"] == "extrapolating"
    assert by_id["5.a40.base.B1"] == "extrapolating"  # vLLM 0.6.3 and GDDR: S5 alone


def test_a_source_stands_alone_only_while_no_other_source_shares_its_engine_or_gpu_kind(errors):
    table = errors.df.rows()
    every = np.ones(len(table), bool)
    alone = dict(zip((row.source_id for row in table), errors.df.extrapolated(table, every)))
    assert not alone["S8"] and not alone["S4"]  # SGLang: S2, S4, S8, S10; CDNA3: S8 and S13
    without_s13 = np.array([row.source_id != "S13" for row in table])
    alone = dict(zip((row.source_id for row in table), errors.df.extrapolated(table, without_s13)))
    # SGLang's terms still stand on S2, S4 and S10, but without S13 CDNA3's scales stand on S8 alone
    assert alone["S8"] and not alone["S4"]


def test_sigma_is_the_spread_whose_80_percent_interval_holds_80_percent(errors):
    r = np.random.default_rng(1).normal(0.0, 0.2, 20_000)
    assert errors.sigma_of(r) == pytest.approx(0.2, rel=0.03)
    kinds = np.array(["drafter"] * 10)
    inside = errors.coverage(np.linspace(-1, 1, 10), kinds, np.array(["nvidia"] * 10))
    assert inside.mean() == pytest.approx(0.8, abs=0.1)


def test_the_stricter_coverage_judges_each_row_by_the_other_sources_rows(errors):
    r = np.array([0.01, -0.02, 0.03, 0.5, -0.6, 0.7])
    kinds, sources = np.array(["drafter"] * 6), np.array(["S1"] * 3 + ["S2"] * 3)
    vendor = np.array(["nvidia"] * 6)
    assert errors.coverage(r, kinds, vendor).tolist() == [True] * 5 + [False]  # sigma from all six: only 0.7 is out
    # S1's rows under S2's wide sigma, S2's under S1's narrow one
    assert errors.coverage(r, kinds, vendor, sources).tolist() == [True] * 3 + [False] * 3


def test_a_vendor_with_enough_rows_beside_another_vendors_gets_its_own_spread(errors):
    n = errors.VENDOR_MIN_ROWS
    # a regime of n narrow AMD rows beside n wide NVIDIA ones: each vendor's rows judged by their own spread
    r = np.concatenate([np.linspace(-0.05, 0.05, n), np.linspace(-0.5, 0.5, n)])
    kinds, vendor = np.array(["moe"] * 2 * n), np.array(["amd"] * n + ["nvidia"] * n)
    spread = errors.sigmas(r, kinds, np.ones(2 * n, bool), vendor)["moe"]
    assert spread["amd"] < spread[errors.ALL] < spread["nvidia"]
    assert errors.coverage(r, kinds, vendor).tolist() == errors.coverage(r[:n], kinds[:n], vendor[:n]).tolist() + \
        errors.coverage(r[n:], kinds[n:], vendor[n:]).tolist()
    # one row fewer: the regime's spread for both
    few = errors.sigmas(r[1:], kinds[1:], np.ones(2 * n - 1, bool), vendor[1:])["moe"]
    assert set(few) == {errors.ALL, "nvidia"}
    # a vendor alone in a regime has no spread of its own: it is the regime's
    assert set(errors.sigmas(r[n:], kinds[n:], np.ones(n, bool), vendor[n:])["moe"]) == {errors.ALL}


def test_the_coverage_section_is_replaced_not_repeated(errors):
    d = json.loads(errors.OUT.read_text())
    doc = "# t\n\n## Summary\n\nx\n\n## Parameters\n\ny\n"
    once = errors.with_section(doc, d)
    assert once.index(errors.SECTION) < once.index("## Parameters") and errors.with_section(once, d) == once
