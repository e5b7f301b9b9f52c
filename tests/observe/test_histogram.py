"""advisor/observe/histogram.py: lengths and times from a window's buckets, the mean exact."""

import numpy as np
import pytest
from observe_windows import hist, scrape

from advisor.observe.histogram import histogram
from advisor.observe.snapshot import OUTPUT, PROMPT, TPOT, snapshot


def test_bucket_lengths_keep_the_exact_mean_inside_their_buckets():
    snap = snapshot(scrape([0, 0, 4, 0, 0], 4 * 37, [0, 3, 1, 0, 0], 3 * 15 + 40, 4), "t")
    prompt, output = histogram(snap, PROMPT), histogram(snap, OUTPUT)
    assert prompt.values.tolist() == pytest.approx([37.0])  # one bucket: its length is the mean itself
    assert (output.counts * output.values).sum() / output.counts.sum() == pytest.approx(output.mean)
    assert np.all((output.lo <= output.values) & (output.values <= output.hi))
    assert output.quantile(0.5) == output.values[0] and output.quantile(0.9) == output.values[1]
    assert output.quantile_bound(0.5) == 20.0 and output.quantile_bound(0.9) == 50.0
    assert prompt.spread() == pytest.approx(30 / np.sqrt(12) * np.sqrt(4 / 3))  # one bucket: its width, uniform


def test_one_token_requests_do_not_pull_the_measured_tpot_down():
    """vLLM observes TPOT 0 for a request with one output token (no decode); those zeros are not decode speed."""
    lines = scrape([0, 0, 4, 0, 0], 160, [4, 0, 0, 0, 0], 4, 4).splitlines()  # (0, 10] holds them here
    lines += hist(TPOT, [4, 0, 0, 0, 0], 0.0)
    lines += hist(TPOT, [2, 0, 0, 0, 0], 0.1, engine="1")
    snap = snapshot("\n".join(lines) + "\n", "t")
    zeros = 4.0  # the four one-token requests: what the output histogram's first bucket counts
    assert histogram(snap, TPOT, zeros=zeros).total == 2
