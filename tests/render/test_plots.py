"""`specadvisor plot`: files of the right type and size, and the numbers behind the pictures (`sweeps`) agree
with `advise` point by point."""

import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from typer.testing import CliRunner

from advisor.advice import sweeps
from advisor.advice.advise import advise
from advisor.advice.resolve import AcceptanceInput, build_scenario
from advisor.cli.app import app, main
from advisor.render import plots

runner = CliRunner()
KINDS = ("alpha", "batch", "lengths", "memory")
SCENARIO = ["--prompt-len", "8000", "--out-len", "200"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    return struct.unpack(">II", data[16:24])  # IHDR: width, height


@pytest.mark.parametrize("kind", KINDS)
def test_plot_writes_a_png(kind, tmp_path):
    out = tmp_path / f"{kind}.png"
    result = runner.invoke(app, ["plot", kind, *SCENARIO, "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    width, height = _png_size(data)
    assert width >= 1000 and 400 <= height <= width  # landscape, sharp enough to read on a laptop
    assert 20_000 < len(data) < 1_000_000
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # the atomic write left no temp file


@pytest.mark.parametrize("kind", KINDS)
def test_plot_writes_an_svg_with_text_kept_as_text(kind, tmp_path):
    out = tmp_path / f"{kind}.svg"
    result = runner.invoke(app, ["plot", kind, *SCENARIO, "--target", "llama-3.3-70b-instruct", "--method",
                                 "eagle", "--gpu", "h100-sxm", "--num-gpus", "4", "--batch", "16", "--out", str(out)])
    assert result.exit_code == 0, result.output
    root = ET.parse(out).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = out.read_text()
    assert "Llama-3.3-70B-Instruct" in text and "EAGLE3" in text  # the subtitle names the pair
    assert 10_000 < len(text) < 3_000_000


def test_plot_rejects_an_unknown_suffix_in_one_line(tmp_path, capsys):
    code = main(["plot", "alpha", *SCENARIO, "--out", str(tmp_path / "a.jpg")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and ".png or .svg" in err
    assert not list(tmp_path.iterdir())


def test_plot_takes_the_same_scenario_flags_as_recommend():
    plot_help = runner.invoke(app, ["plot", "--help"]).output
    recommend_help = runner.invoke(app, ["recommend", "--help"]).output
    for flag in ("--prompt-len", "--target", "--acceptance-rate", "--measured-k", "--calibration", "--num-gpus"):
        assert flag in plot_help and flag in recommend_help
    assert "--out" in plot_help


def test_cli_import_does_not_load_matplotlib():
    code = "import sys, advisor.cli.app; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.fixture(scope="module")
def default_advice():
    return advise(build_scenario(prompt_len=8000, out_len=200, acceptance=AcceptanceInput(task="structured")))


def test_alpha_sweep_passes_through_the_operating_point(default_advice):
    a = default_advice
    acc = a.scenario.acceptance
    sw = sweeps.alpha_sweep(a, alphas=np.array([acc.alpha]))
    assert sw.tpot[a.best_k - 1, 0] == pytest.approx(a.tpot_speedup[a.best_k], rel=1e-9)
    assert sw.e2e_best[0] == pytest.approx(a.e2e_speedup[a.best_k], rel=1e-9)
    # every k crosses 1.0 at or above the break-even α, and the best one crosses right there
    be = sweeps.alpha_sweep(a, alphas=np.array([a.break_even_alpha - 1e-6, a.break_even_alpha + 1e-6]))
    assert (be.tpot[:, 0] < 1.0).all() and (be.tpot[:, 1] > 1.0).any()


def test_batch_sweep_envelope_turns_at_the_critical_batch():
    # a draft model (EAGLE's bookkeeping now hides under the step with async scheduling, and its gain outlasts every
    # batch memory holds here)
    a = advise(build_scenario(prompt_len=500, out_len=500, target="llama-3.3-70b-instruct", method="draft_model",
                              gpu="h100-sxm", num_gpus=4, batch=16, acceptance=AcceptanceInput(task="chat")))
    assert a.critical_batch is not None and a.critical_batch > 16
    sw = sweeps.batch_sweep(a, max_batch=4 * a.critical_batch)
    below, above = sw.batches <= a.critical_batch, sw.batches > a.critical_batch
    assert (sw.envelope[below] > 1.0).all() and (sw.envelope[above] == 1.0).all()
    assert (sw.best_k[above] == 0).all() and (sw.best_k[below] > 0).all()


@pytest.mark.parametrize("gpu,batch", [("rtx-pro-6000-blackwell", 1), ("rtx-pro-6000-blackwell", 64), ("l4", 4)])
def test_length_map_agrees_with_advise(gpu, batch):
    s = build_scenario(prompt_len=1000, out_len=100, gpu=gpu, batch=batch, acceptance=AcceptanceInput(task="chat"))
    prompts, outs = np.array([64, 900, 4000, 16000, 30000]), np.array([16, 120, 700, 4000])
    lm = sweeps.length_map(s, prompts, outs)
    for i, o in enumerate(outs):
        for j, p in enumerate(prompts):
            a = advise(build_scenario(prompt_len=int(p), out_len=int(o), gpu=gpu, batch=batch,
                                      acceptance=AcceptanceInput(task="chat")))
            expected = a.verdict if a.memory.fits else "does not fit"
            assert sweeps.CLASS_NAMES[lm.verdict[i, j]] == expected, (p, o)
            if a.memory.fits:
                assert lm.best_k[i, j] == a.best_k, (p, o)
                # blocked: with the draft loaded no k runs as many requests at once as the baseline does
                assert lm.vram_blocked[i, j] == (not (a.concurrency[1:] >= a.concurrency[0]).any()), (p, o)
    assert len(set(lm.verdict.ravel().tolist())) >= 2  # the grid crosses at least one verdict boundary


def test_memory_split_adds_up_to_the_gpu(default_advice):
    a = default_advice
    base, spec = sweeps.memory_split(a)
    total_gb = a.scenario.hardware.memory_bytes / 1e9
    for side in (base, spec):
        assert side.overflow == 0
        assert sum(side.parts.values()) == pytest.approx(total_gb, rel=1e-9)
    assert base.parts["draft weights"] == 0 and spec.parts["draft weights"] == pytest.approx(a.memory.draft_weights / 1e9)
    assert (base.max_concurrency, spec.max_concurrency) == (a.memory.max_concurrency_baseline,
                                                           a.memory.max_concurrency_spec)


def test_memory_split_shows_a_batch_that_does_not_fit():
    a = advise(build_scenario(prompt_len=8000, out_len=500, batch=128, acceptance=AcceptanceInput(task="structured")))
    base, spec = sweeps.memory_split(a)
    total_gb = a.scenario.hardware.memory_bytes / 1e9
    for side in (base, spec):
        assert side.max_concurrency < 128 and side.overflow > 0 and side.parts["free KV (headroom)"] == 0
        assert sum(side.parts.values()) == pytest.approx(total_gb, rel=1e-9)  # the part that fits fills the GPU


def _overlapping_texts(fig) -> list[tuple[str, str]]:
    """Pairs of texts in the axes whose drawn boxes overlap (what "10+0.0" was)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for ax in fig.axes for t in ax.texts if t.get_text()]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


def _ends(ax) -> float:
    return max(p.get_x() + p.get_width() for p in ax.patches if hasattr(p, "get_width"))


def test_memory_figure_draws_weights_that_do_not_fit():
    # Mixtral's 93 GB of bf16 weights on one 96 GB GPU at 90%: no KV cache at all
    a = advise(build_scenario(prompt_len=200, out_len=8, target="mixtral-8x7b-instruct-v0.1", method="ngram",
                              acceptance=AcceptanceInput(task="code")))
    assert not a.memory.fits
    fig = plots.memory_figure(a)
    ax = fig.axes[0]
    total = a.scenario.hardware.memory_bytes / 1e9
    over = (a.memory.target_weights + a.memory.reserve - a.memory.usable) / 1e9
    assert "the weights alone do not fit" in fig._suptitle.get_text()
    texts = [t.get_text() for t in ax.texts]
    assert sum(f"exceed what vLLM may use by {over:.1f} GB" in t for t in texts) == 2  # both rows say so
    assert _ends(ax) > total + over - 0.05  # the bars stick out past the GPU by at least the excess
    assert [t for t in texts if t.endswith("GB over")] == [f" {_ends(ax) - total:.1f} GB over"] * 2
    assert any(line.get_xdata()[0] == total for line in ax.lines)  # the GPU's end is drawn
    assert not _overlapping_texts(fig)


def test_memory_figure_labels_do_not_overlap_when_the_batch_overflows():
    a = advise(build_scenario(prompt_len=8000, out_len=500, batch=300, acceptance=AcceptanceInput(task="structured")))
    fig = plots.memory_figure(a)
    assert "batch 300 does not fit" in fig._suptitle.get_text()
    assert not _overlapping_texts(fig)


def _hatched_from(ax) -> list[float]:
    return [p.get_x() if hasattr(p, "get_x") else p.get_xy()[:, 0].min() for p in ax.patches if p.get_hatch()]


def test_batch_figure_stops_where_the_baseline_no_longer_fits():
    a = advise(build_scenario(prompt_len=500, out_len=500, acceptance=AcceptanceInput(task="structured")))
    sw = sweeps.batch_sweep(a)
    assert sw.fits_baseline < sw.batches[-1]  # the sweep runs past what memory holds
    ax = plots.batch_figure(a).axes[0]
    curves = [line for line in ax.lines if line.get_label().startswith(("k = ", "best k"))]
    assert len(curves) == len(sw.ks) + 1
    for line in curves:
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        assert np.isfinite(y[x <= sw.fits_baseline]).all() and np.isnan(y[x > sw.fits_baseline]).all()
    assert _hatched_from(ax) == [sw.fits_baseline]


def test_batch_figure_says_so_when_not_one_request_fits():
    a = advise(build_scenario(prompt_len=120000, out_len=100, gpu="rtx-4090", acceptance=AcceptanceInput(task="code")))
    assert a.memory.max_concurrency_baseline == 0
    fig = plots.batch_figure(a)
    assert fig._suptitle.get_text() == "Speedup vs concurrency: not one request fits in memory"
    ax = fig.axes[0]
    assert not [line for line in ax.lines if line.get_label().startswith("k = ")]
    assert _hatched_from(ax) == [0.85]  # all of it


def test_alpha_figure_draws_the_shown_k_and_no_band_where_it_does_not_fit(squeezed):
    # k = 12 asked where only k = 1 fits: the curve and the label are k = 12's, with no interval (as the report), not
    # k = 1's band and operating point
    a = advise(build_scenario(k=12, **squeezed))
    assert a.concurrency[1] >= 1 > a.concurrency[12]
    sw = sweeps.alpha_sweep(a)
    assert sw.tpot_band is None and sw.e2e_band is None
    ax = plots.alpha_figure(a).axes[0]
    labels = [h.get_label() for h in ax.get_legend_handles_labels()[0]]
    assert "end to end, k = 12\n(prefill included)" in labels
    assert not [label for label in labels if "80% interval" in label or label == "your operating point"]
    assert [t.get_text() for t in ax.texts if t.get_text().startswith("you:")] == ["you: k = 12\ndoes not fit in memory"]


def test_alpha_figure_bands_the_asked_k_where_it_fits():
    a = advise(build_scenario(prompt_len=8000, out_len=200, k=5))
    sw = sweeps.alpha_sweep(a, alphas=np.array([a.scenario.acceptance.alpha]))
    assert sw.shown_k == 5 and sw.tpot_band[0][0] < a.tpot_speedup[5] < sw.tpot_band[1][0]
    labels = plots.alpha_figure(a).axes[0].get_legend_handles_labels()[1]
    assert "the cost model's 80% interval,\nk = 5 (grey: end to end)" in labels and "your operating point" in labels
