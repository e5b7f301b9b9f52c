"""benchmarks/speedup_errors.py: the cost model's error on published speedups it was not fitted to, recomputed from
the committed file's leave-one-source-out fits, and the 80% interval's coverage by group (issue 46)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from advisor.model.error.speedup import CLASSES, MIN_ROWS  # noqa: E402
from advisor.model.uncertainty import Z80  # noqa: E402
from benchmarks import speedup_errors as se  # noqa: E402
from benchmarks import speedup_rows as sr  # noqa: E402


@pytest.fixture(scope="module")
def committed():
    return json.loads(se.OUT.read_text())


@pytest.fixture(scope="module")
def recomputed(committed):
    return se.evaluate(sr.rows(), committed["loso_values"])


def test_the_committed_file_speaks_of_todays_rows(committed):
    # rows added or changed since the file was written: rerun `python -m benchmarks.speedup_errors --fits F.json`
    rows = sr.rows()
    assert [r["id"] for r in committed["rows"]] == [row.id for row in rows]
    assert [(r["class"], r["method"], r["engine"], r["gpu"], r["as_served"]) for r in committed["rows"]] == \
        [(row.model_class, row.method, row.engine, row.gpu, row.as_served) for row in rows]


def test_each_speedup_is_predicted_by_the_fit_that_never_saw_its_source(committed, recomputed):
    # the leave-one-source-out fits are in the file; a row of a source the datasheet fit never trained on (§8.1)
    # takes the shipped defaults: out of sample already
    fitted = {row.source for row in sr.rows()} & set(committed["loso_values"])
    assert fitted == {"S5", "S6", "S7", "S9", "S12"}
    assert np.allclose(recomputed["predicted"], [r["predicted"] for r in committed["rows"]], rtol=2e-3)
    for c in CLASSES:
        assert recomputed["classes"][c]["sigma_log"] == pytest.approx(committed["classes"][c]["sigma_log"], abs=2e-3)
    assert recomputed["widest"] == pytest.approx(committed["widest"], abs=2e-3)
    assert recomputed["seen"] == committed["seen"]


def test_the_80_interval_holds_70_to_90_percent_in_every_group_of_8_rows_or_more(recomputed, committed):
    checked = 0
    for group, members in recomputed["groups"].items():
        for name, g in members.items():
            assert g == committed["groups"][group][name]
            if g["rows"] >= MIN_ROWS:
                checked += 1
                assert 0.70 <= g["coverage_own"] <= 0.90, f"{group} {name}: {g['coverage_own']:.0%} of {g['rows']}"
    assert checked >= 3  # the method, engine and GPU generation most rows share


def test_a_class_under_8_rows_borrows_the_widest_of_itself_and_its_neighbours(recomputed, committed):
    for c, entry in recomputed["classes"].items():
        if entry["rows"] >= MIN_ROWS:
            assert entry["borrowed_from"] is None
            continue
        neighbours = [recomputed["classes"][n]["sigma_own"] for n in (c, *se.NEIGHBOURS[c])]
        assert entry["sigma_log"] == pytest.approx(max(s for s in neighbours if s is not None), abs=1e-4)
    sigma = np.array([recomputed["classes"][r["class"]]["sigma_log"] for r in committed["rows"]])
    near = np.abs(np.abs(recomputed["r"]) - Z80 * sigma) < 1e-3  # on the edge: the file's rounding decides
    inside = np.abs(recomputed["r"]) <= Z80 * sigma
    assert list(inside[~near]) == [r["inside"] for r, edge in zip(committed["rows"], near) if not edge]
