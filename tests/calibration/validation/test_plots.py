"""The validation's pictures (calibration/validation/plots.py)."""

from calibration.validation.plots import parity_figure


def _row(k: int, batch: int, method: str = "draft_model") -> dict:
    return dict(method=method, k=k, batch=batch, measured_tpot=1.4, predicted_tpot=1.5, tpot_error=0.07, error=None)


def test_the_parity_legend_names_only_the_batch_sizes_measured():
    fig = parity_figure([_row(1, 1), _row(3, 4), _row(3, 32, "ngram")])
    ax = fig.axes[0]
    labels = [t.get_text() for legend in (*ax.artists, ax.get_legend()) for t in legend.get_texts()]  # k's, the rest
    assert [label for label in labels if label.startswith("batch")] == ["batch 1", "batch 4", "batch 32"]
    assert [label for label in labels if label.startswith("k =")] == ["k = 1", "k = 3"]
