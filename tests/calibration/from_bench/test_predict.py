"""The advisor's model of a bench run (calibration/from_bench/predict.py): its limits and its agreement with the
capacity model and `request_times`, which it rests on."""

import numpy as np
import pytest

from advisor.measured.counts import Counts
from advisor.model.cost import capacity
from advisor.model.cost.speculative import request_times
from calibration.from_bench.predict import _prefill, predict, survival_of
from calibration.from_bench.runs import BenchRun, Load, Measured

COUNTS = Counts(drafts=100, draft_tokens=300, accepted=210, per_position=(85, 70, 55))


def _serve(clients=1.0, rate=None, counts=None, prompt=1000.0, out=200.0) -> BenchRun:
    return BenchRun("run.json", "serve", "m", Load(prompt, out, clients, rate), Measured(e2e=1.0), counts)


def test_one_client_prefills_alone_and_decodes_uninterrupted(default_setup):
    for counts in (None, COUNTS):
        run = _serve(counts=counts)
        got = predict(default_setup, run)
        k = run.k
        step = float(default_setup.iteration_time(k, got.decoding, 1100.0) if k else
                     default_setup.decode_step(got.decoding, 1100.0))
        assert got.ttft == pytest.approx(_prefill(default_setup, k, 1000.0))
        assert got.tpot == pytest.approx(step / got.tokens_per_step)
        assert got.e2e == pytest.approx(got.ttft + 199 * got.tpot)
        assert got.throughput == pytest.approx(200 / got.e2e)  # one client: one request at a time
        assert got.itl == pytest.approx(got.tpot * got.tokens_per_step)
    assert predict(default_setup, _serve(counts=COUNTS)).tokens_per_step > 2.5  # 1 + 210/100, less the cut last step


def test_closed_loop_keeps_littles_law_and_slows_with_clients(default_setup):
    found = [predict(default_setup, _serve(clients=c)) for c in (1.0, 4.0, 16.0)]
    for clients, got in zip((1.0, 4.0, 16.0), found):
        assert got.request_rate * got.e2e == pytest.approx(clients, rel=1e-3)
        assert got.decoding < clients  # some clients are waiting for their first token
    assert found[0].tpot < found[1].tpot < found[2].tpot
    assert found[0].throughput < found[1].throughput < found[2].throughput


def test_open_loop_is_the_capacity_model(default_setup):
    shape = capacity.Shape(prompt_mean=1000.0, prompt_p90=1000.0, out_mean=200.0)
    curve = capacity.load_curve(default_setup, np.ones(1), shape, max_batch=32, speculative=False)
    i = len(curve.batch) // 3
    got = predict(default_setup, _serve(clients=64.0, rate=float(curve.rate[i])))
    assert got.decoding == pytest.approx(curve.batch[i], rel=1e-3)
    assert got.tpot == pytest.approx(curve.tpot[i], rel=1e-3)
    assert got.ttft == pytest.approx(curve.ttft[i], rel=1e-3)


def test_latency_runs_are_request_times(default_setup):
    run = BenchRun("lat.json", "latency", "m", Load(512.0, 128.0, 8.0), Measured(e2e=1.0))
    expected = request_times(default_setup, 1.0, 0, 8.0, 512.0, 128.0).e2e_baseline
    assert predict(default_setup, run).e2e == pytest.approx(float(expected))


def test_survival_is_the_measured_per_position_curve():
    assert survival_of(_serve()).tolist() == [1.0]
    assert survival_of(_serve(counts=COUNTS)) == pytest.approx([1.0, 0.85, 0.70, 0.55])
