"""benchmarks/datasheet_fit/: the datasheet defaults against the published rows, and its committed table."""

import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fit_script():
    sys.path.insert(0, str(ROOT))  # the package imports as benchmarks.datasheet_fit, as `python -m` runs it
    return importlib.import_module("benchmarks.datasheet_fit")


@pytest.fixture(scope="module")
def shipped(fit_script):
    table = fit_script.rows()
    return table, fit_script.predictions(table, fit_script.SHIPPED)


def test_the_shipped_defaults_are_the_ones_the_script_reports(fit_script):
    from advisor.model.cost import enginecost

    assert fit_script.SHIPPED["overlap_exponent"] == enginecost.DEFAULT_OVERLAP_EXPONENT
    assert fit_script.SHIPPED["step_overhead"] == enginecost.DEFAULT_STEP_OVERHEAD_S
    assert len(fit_script.PARAMS) == len({p.name for p in fit_script.PARAMS})


def test_the_shipped_defaults_fit_the_vllm_rows_within_10_percent(shipped):
    table, predicted = shipped
    errors = np.array([p / r.published - 1 for r, p in zip(table, predicted)])
    assert float(np.median(np.abs(errors))) <= 0.10
    v1 = np.array([r.vllm_v1 for r in table])
    assert float(np.median(np.abs(errors[v1]))) <= 0.05  # the engine the advisor configures


def test_the_committed_table_is_what_the_model_predicts(shipped):
    """docs/datasheet-fit.md must be current: a cost-model change that moves a row needs the script rerun."""
    table, predicted = shipped
    doc = (ROOT / "docs" / "datasheet-fit.md").read_text()
    for row, value in zip(table, predicted):
        line = next(line for line in doc.splitlines() if line.startswith(f"| `{row.id}` |"))
        cells = [c.strip() for c in line.split("|")]
        assert float(cells[6]) == pytest.approx(value, rel=1e-3), row.id  # the "shipped" column, 4 significant digits
    summary = re.search(r"\| all expressed rows \| (\d+) \| ([\d.]+)% \|", doc)
    errors = [p / r.published - 1 for r, p in zip(table, predicted)]
    assert int(summary.group(1)) == len(table)
    assert float(summary.group(2)) == pytest.approx(100 * float(np.median(np.abs(errors))), abs=0.05)


def _moe_errors(shipped, prefixes):
    table, predicted = shipped
    errors = {r.id: p / r.published - 1 for r, p in zip(table, predicted)}
    return ([e for rid, e in errors.items() if rid.startswith(tuple(f"{p}.base" for p in prefixes))],
            [e for rid, e in errors.items() if rid.startswith(tuple(f"{p}.mtp" for p in prefixes))])


def test_the_b300_moe_rows_are_within_issue_24s_bounds(shipped):
    """§6: DeepSeek-V3.2 on 8×B300 (vLLM): baseline within 20%, MTP speedup within 15%."""
    base, speedups = _moe_errors(shipped, ("9.b300.dsv32",))
    assert len(base) == 1 and len(speedups) == 1
    assert max(map(abs, base)) <= 0.20
    assert max(map(abs, speedups)) <= 0.15


def test_the_mi300x_moe_rows_are_within_issue_24s_bounds(shipped):
    """§6: DeepSeek-V3 on 8×MI300X (SGLang) at concurrency 1-64: baselines within 20%, MTP speedups within 15%.
    Out of them (19-24% fast at concurrency 1-4) while the all-reduce's latency was an 8 µs guess; fitted (15.6 µs),
    back inside."""
    base, speedups = _moe_errors(shipped, ("8.mi300x.dsv3",))
    assert len(base) == 7 and len(speedups) == 7
    assert max(map(abs, base)) <= 0.20
    assert max(map(abs, speedups)) <= 0.15


def test_the_mi300x_mtp_speedup_falls_with_concurrency_as_published(fit_script):
    from benchmarks.datasheet_fit.params import for_engine
    from benchmarks.datasheet_fit.predict import mi300x_curve

    al, curve = mi300x_curve(for_engine(fit_script.SHIPPED, "sglang"))  # S8 ran SGLang: its own terms
    assert 1.0 < al <= 3.0
    predicted = [pred for _, _, pred in curve]
    assert predicted[0] > predicted[-1]
    for _, published, pred in curve:
        assert abs(pred / published - 1) <= 0.15


def test_every_shipped_rate_and_floor_sits_inside_its_physical_range(fit_script):
    """Issue 33: a large GEMM 0.4-0.85 of dense peak, streaming 0.6-0.95 of bandwidth, a small kernel 1.5-10 µs, on
    every GPU kind the rows have (no per-generation catch-all)."""
    from benchmarks.datasheet_fit.params import efficiencies

    found = efficiencies(fit_script.SHIPPED)
    assert len(found) >= 10
    for what, value, (low, high) in found:
        assert low <= value <= high, what


def test_each_engine_predicts_with_its_own_terms_and_shares_the_physics(fit_script):
    from benchmarks.datasheet_fit.params import ENGINE_TERMS, for_engine

    v = {**fit_script.SHIPPED, "step_overhead@sglang": 1e-3}
    sglang = for_engine(v, "sglang")
    assert sglang["step_overhead"] == 1e-3 and sglang["bandwidth_efficiency"] == v["bandwidth_efficiency"]
    assert for_engine(v, "vllm") is v
    assert all(t in v for t in ENGINE_TERMS)
