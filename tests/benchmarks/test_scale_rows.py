"""The scale model against scale-notes.md §2.4's per-GPU decode rows (benchmarks/scale_rows.py): what it measures
today. Every row is held out (nothing is fitted to them) and every one is over-predicted, 1.4-2.3x, median 106%
error: the issue's target (<= 25%) is not met. The likely cause, from the notes: in-situ all-to-all is slower than
DeepEP's unit test (SGLang: 0.17 ms vs 0.06 ms dispatch per layer) and EPLB imbalance is not modelled."""

from benchmarks.scale_rows import ROWS, predict, table


def test_every_expressible_row_is_over_predicted_by_the_measured_factor():
    ratios = [predict(gpu, ranks, nodes, per_rank, prompt, out, dbo) / published
              for _, _, gpu, ranks, nodes, per_rank, prompt, out, dbo, published in ROWS]
    assert all(1.3 < r < 2.4 for r in ratios), ratios


def test_table_reports_the_median_error():
    lines, median = table()
    assert len(lines) == 2 + len(ROWS) and 1.0 < median < 1.1
