import numpy as np
import pytest

from calibration.calibrate.rounds import point_times


def test_drift_between_rounds_is_taken_out_where_a_median_keeps_it():
    rng = np.random.default_rng(0)
    truth = np.geomspace(2e-3, 0.5, 30)
    # Five rounds; the machine ran 40% slower in two of them, and each point kept a different subset of rounds
    # (one sample of every point lost to a burst elsewhere, as if half the slow rounds landed on it).
    slowdown = np.array([1.0, 1.4, 1.0, 1.4, 1.0])
    samples = truth[:, None] * slowdown[None, :] * np.exp(rng.normal(0, 0.01, (30, 5)))
    burst = rng.integers(0, 5, 30)
    samples[np.arange(30), burst] *= 3.0
    times = point_times(samples.tolist())
    assert np.max(np.abs(times / truth - 1)) < 0.03
    # the per-point median lands on a slow round whenever the burst took a fast one
    median = np.median(samples, axis=1)
    assert np.max(np.abs(median / truth - 1)) > 0.3


def test_one_round_is_returned_as_measured_and_unequal_counts_use_complete_rounds():
    assert point_times([[0.01], [0.02]]).tolist() == pytest.approx([0.01, 0.02])
    times = point_times([[0.01, 0.02, 99.0], [0.02, 0.04]])  # the third round of point 0 is not complete
    assert times[1] / times[0] == pytest.approx(2.0)


def test_a_point_without_samples_is_an_error():
    with pytest.raises(ValueError):
        point_times([[0.01], []])
