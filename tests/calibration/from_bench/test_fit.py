"""Fitting EngineCost to bench runs (calibration/from_bench/fit.py): what a set of runs identifies, and that a fit
to numbers the model itself produced gives them back."""

from dataclasses import replace

import numpy as np
import pytest

from advisor.measured.counts import Counts
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.speculative import Setup
from calibration.from_bench.fit import candidates, fit_runs, identified
from calibration.from_bench.predict import predict
from calibration.from_bench.runs import BenchRun, Load, Measured

COUNTS = Counts(drafts=100, draft_tokens=300, accepted=210, per_position=(85, 70, 55))


def _measured_by(setup: Setup, run: BenchRun) -> BenchRun:
    """`run` with the timings `setup` predicts for it, as if a bench had measured them."""
    got = predict(setup, run)
    return replace(run, measured=Measured(e2e=got.e2e, ttft=got.ttft, tpot=got.tpot, itl=got.itl,
                                          throughput=got.throughput, request_rate=got.request_rate))


def _runs(setup: Setup) -> list[BenchRun]:
    shapes = [("serve", Load(2000.0, 256.0, 1.0), None), ("serve", Load(2000.0, 256.0, 16.0), None),
              ("serve", Load(2000.0, 256.0, 1.0), COUNTS), ("latency", Load(8000.0, 128.0, 1.0), None),
              ("latency", Load(128.0, 512.0, 32.0), None)]
    return [_measured_by(setup, BenchRun(f"{i}.json", kind, "m", load, Measured(e2e=1.0), counts))
            for i, (kind, load, counts) in enumerate(shapes)]


def test_a_fit_to_the_models_own_numbers_gives_them_back(llama8b, llama1b, rtx6000):
    start = EngineCost.from_datasheet(rtx6000)
    truth = replace(start, bandwidth=start.bandwidth * 0.6, step_overhead=4e-3, spec_overhead=3e-3)
    runs = _runs(Setup(llama8b, truth, "draft_model", llama1b, truth))
    fit = fit_runs(runs, llama8b, llama1b, "draft_model", start)
    assert len(fit.observations) == 8 and 2 <= len(fit.fitted) <= 7  # TTFT and TPOT of 3 serve runs, 2 latencies
    assert np.abs(fit.errors).max() < 0.02
    assert all(np.isfinite(fit.loo_errors)) and len(fit.loo_errors) == 8
    assert set(fit.fitted).isdisjoint(fit.kept) and len(fit.fitted) + len(fit.kept) == len(candidates({}))
    for name in set(fit.kept):  # kept fields keep the start's values
        assert getattr(fit.cost, name) == getattr(start, name)


def test_what_runs_cannot_see_is_named_with_the_reason(llama8b, llama1b, rtx6000):
    start = EngineCost.from_datasheet(rtx6000)
    runs = _runs(Setup(llama8b, start, "draft_model", llama1b, start))
    fit = fit_runs(runs[:1], llama8b, llama1b, "draft_model", start, fixed={"flops": "told so"})
    assert len(fit.fitted) == 1 and len(fit.loo_errors) == 2  # one TTFT, one TPOT: one parameter
    assert fit.kept["flops"] == "told so"
    assert fit.kept["ngram_overhead"] == "these runs do not depend on it"  # a draft-model run
    assert fit.kept["spec_overhead"] == "these runs do not depend on it"  # a run without speculation


def test_identified_picks_independent_effects_and_names_the_rest():
    fields = candidates({})
    names = [f.name for f in fields]
    cost = EngineCost(bandwidth=1e12, flops=1e14, step_overhead=1e-3)
    jac = np.zeros((4, len(fields)))
    jac[:, names.index("bandwidth")] = [1.0, 1.0, 0.5, 0.2]  # the largest share of the time
    jac[:, names.index("step_overhead")] = [0.2, 0.2, 0.1, 0.04]  # the same pattern: confounded
    jac[:, names.index("flops")] = [0.0, 0.0, 0.3, 0.9]
    chosen, why = identified(jac, cost, fields, most=3)
    assert chosen == ("bandwidth", "flops")
    assert why["step_overhead"] == "confounded with bandwidth in these runs"
    assert why["kv_bandwidth"] == "these runs do not depend on it"
    chosen, why = identified(jac, cost, fields, most=1)
    assert chosen == ("bandwidth",) and why["flops"] == "4 measured numbers fit at most 1 parameters"


def test_times_that_are_not_positive_are_refused(llama8b, rtx6000):
    start = EngineCost.from_datasheet(rtx6000)
    run = BenchRun("x.json", "latency", "m", Load(100.0, 100.0, 1.0), Measured(e2e=0.0))
    with pytest.raises(ValueError, match="not a positive number"):
        fit_runs([run], llama8b, None, "draft_model", start)
