"""The scale model against scale-notes.md §2.4's per-GPU decode rows (benchmarks/scale_rows.py), as measured: with
the overlap fitted to all rows the errors are +15%, +19%, +25%, -13%, -12% (in sample: median 15%, max 25%); left one
source out the median error is 32% (docs/scale.md), over the issue's 25%. The bounds leave room for the fitted
GPU constants (other branches) to move them a little."""

import statistics

from advisor.model.scale import DBO_OVERLAP
from benchmarks.scale_rows import PAGE, ROWS, predict


def test_rows_at_the_fitted_overlap():
    errors = [predict(row) / row[-1] - 1 for row in ROWS]
    assert all(abs(e) < 0.3 for e in errors), errors
    assert statistics.median(abs(e) for e in errors) < 0.2


def test_perfect_overlap_would_be_twice_too_fast():
    """Why the overlap is fitted: DBO hiding all of the shorter of compute and all-to-all over-predicts every row."""
    assert all(predict(row, 1.0) / row[-1] > 1.35 for row in ROWS)


def test_the_page_states_the_constant_in_force():
    assert f"`DBO_OVERLAP` = {DBO_OVERLAP:.2f}" in PAGE.read_text()
