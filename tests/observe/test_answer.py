"""The advice for a mix: the schedule's k per batch is the decode-best one for the mix, and the weights are the
traffic's."""

import numpy as np
import pytest

from advisor.model.acceptance.truncation import tokens_per_step
from advisor.model.cost.speculative import tpot_speedup
from advisor.observe.answer import Mix, best_per_batch, decode_gain, gains, runs


def _mix(prompt, output, weight, levels=(1.0,), shares=(1.0,)) -> Mix:
    return Mix(np.array(prompt, float), np.array(output, float), np.array(weight, float), np.array(levels, float),
               np.array(shares, float), 0.0)


def test_one_workload_gains_what_tpot_speedup_says(default_setup):
    mix = _mix([1000], [200], [1.0])
    ks = np.arange(0, 6)
    E = tokens_per_step(np.array([0.8 ** np.arange(6) * (np.arange(6) <= k) for k in ks]), 199)[None, :]
    batches = np.array([1.0, 16.0, 256.0])
    got = decode_gain(default_setup, E, ks, batches, mix)
    want = tpot_speedup(default_setup, E[0][None, :], ks[None, :], batches[:, None], 1100.0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_mix_weighs_its_workloads_by_their_decode_time(default_setup):
    ks = np.arange(0, 4)
    E = np.array([[1.0, 1.9, 2.7, 3.4], [1.0, 1.2, 1.3, 1.35]])
    one = decode_gain(default_setup, E[:1], ks, np.array([4.0]), _mix([500], [400], [1.0]))
    other = decode_gain(default_setup, E[1:], ks, np.array([4.0]), _mix([500], [400], [1.0]))
    both = decode_gain(default_setup, E, ks, np.array([4.0]), _mix([500, 500], [400, 400], [0.5, 0.5]))
    assert np.all((np.minimum(one, other) <= both + 1e-12) & (both <= np.maximum(one, other) + 1e-12))


def test_the_schedule_is_vllms_run_length_list_with_k_0_where_nothing_pays():
    gain = np.array([[1.0, 1.3, 1.5], [1.0, 1.2, 1.1], [1.0, 0.9, 0.8], [1.0, 0.9, 0.7]])
    best = best_per_batch(gain, np.arange(3), np.array([False, True, True]))
    assert best.tolist() == [2, 1, 0, 0]
    assert runs(best) == [(1, 1, 2), (2, 2, 1), (3, 4, 0)]
    assert best_per_batch(gain, np.arange(3), np.array([False, True, False])).tolist() == [1, 1, 0, 0]


def test_gains_are_weighted_by_the_time_at_each_level_and_k_0_is_plain_decoding():
    mix = _mix([100], [10], [1.0], levels=(1.0, 8.0), shares=(0.25, 0.75))
    table = np.ones((2, 1, 3, 3))
    table[0, 0, :, 2] = (2.0, 1.5, 1.5)
    table[1, 0, :, 2] = (0.5, 0.8, 0.8)
    g = gains(mix, table, np.array([2, 2]))
    assert g.e2e == pytest.approx(0.25 * 1.5 + 0.75 * 0.8) and g.cost_share == pytest.approx(0.75)
    off = gains(mix, table, np.array([2, 0]))
    assert off.e2e == pytest.approx(0.25 * 1.5 + 0.75) and off.cost_share == 0.0
