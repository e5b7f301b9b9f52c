"""Calibration profiles end to end: written by the schema (calibration/calibrate/profile_file.py), fitted
(calibration/calibrate/fit.py), then found and used by `recommend` (advisor/profiles/calibrated.py)."""

import json
from dataclasses import replace

import numpy as np
import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.model.cost.enginecost import EngineCost, calibrated_fields
from advisor.model.shape.config_reader import spec_from_config
from advisor.profiles import calibrated
from advisor.profiles.calibrated import cost_of, costs_for
from advisor.profiles.catalog import load_hardware
from calibration.calibrate import profile_file as prof
from calibration.calibrate.allreduce import ladder, ring_bytes
from calibration.calibrate.bench import predict
from calibration.calibrate.fit import fit_profile
from calibration.calibrate.grid import Grid
from calibration.calibrate.measure import point_of
from calibration.calibrate.run import _run
from calibration.engine.tinymodels import TINY_DRAFT, TINY_TARGET, write_tiny_pair

CPU = EngineCost(bandwidth=9e9, flops=3.5e10, step_overhead=11e-3, token_overhead=40e-6, seq_overhead=1.2e-3)
DRAFT_CPU = EngineCost(bandwidth=3e9, flops=2e10, step_overhead=4e-3, token_overhead=5e-6, seq_overhead=2e-4)
HW = "cpu-xeon-icelake-2vcpu"
LINK = {"allreduce_latency": 15e-6, "link_bandwidth": 2.5e9}  # what a TP=2 profile's all-reduce ladder says


@pytest.fixture(scope="module")
def specs():
    return {"target": spec_from_config(TINY_TARGET, "tiny-llama-target"),
            "draft": spec_from_config(TINY_DRAFT, "tiny-llama-draft")}


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return write_tiny_pair(tmp_path_factory.mktemp("models"))


def _profile(specs, pair_dirs, noise=0.01, seed=0, tp=1):
    """A profile as `calibrate` would leave it, with samples drawn around known costs (1% noise, 5 rounds); at
    tp > 1 with every step's all-reduces (LINK) and the all-reduce ladder measured exactly."""
    grid = Grid(max_batch=16, max_context=1024, max_k=7, dummy_weights=True, seed=0, tensor_parallel_size=tp)
    profile = prof.new(status="measured", created="2026-11-30T12:00:00+00:00", hardware=HW,
                       device={"gpu": None, "cpu": "Intel(R) Xeon(R) Processor @ 2.80GHz"}, vllm_version="0.32.0",
                       settings=grid.settings(), target=_run(str(pair_dirs[0]), specs["target"], grid.points("target")),
                       draft=_run(str(pair_dirs[1]), specs["draft"], grid.points("draft")))
    rng = np.random.default_rng(seed)
    if tp > 1:  # the ladder over the target's hidden states (512 × 2 bytes per token): LINK exactly
        message = [t * 1024 for t in ladder(2048)]
        seconds = LINK["allreduce_latency"] + ring_bytes(message, tp) / LINK["link_bandwidth"]
        profile.allreduce = prof.AllReduce(tensor_parallel_size=tp, points=[
            {"tokens": t, "bytes": b, "samples": [s] * 3} for t, b, s in zip(ladder(2048), message, seconds)])
    for run, spec, cost in ((profile.target, specs["target"], CPU), (profile.draft, specs["draft"], DRAFT_CPU)):
        run.chunk_tokens = 4096
        times = predict(spec, replace(cost, **LINK), [point_of(m) for m in run.points], 4096, tp)
        for m, t in zip(run.points, times):
            m.samples = list(t * rng.lognormal(0.0, noise, 5))
    return profile


@pytest.fixture
def saved(specs, pair_dirs, tmp_path):
    path = tmp_path / "cal.json"
    fit_profile(_profile(specs, pair_dirs), specs, path)
    return path


def test_fit_of_a_stored_run_recovers_its_costs_and_is_saved_fitted(saved, specs):
    profile = prof.load(saved)
    assert profile.status == "fitted"
    assert profile.target.fit.heldout_median_error < 0.02
    target_cost, draft_cost, source = costs_for(str(saved), specs["target"], specs["draft"], cpu_hw())
    assert target_cost.bandwidth == pytest.approx(CPU.bandwidth, rel=0.1)
    assert draft_cost.step_overhead == pytest.approx(DRAFT_CPU.step_overhead, rel=0.1)
    assert "calibration" in source and "held-out median error" in source


def cpu_hw():
    return load_hardware(HW)


def test_raw_samples_survive_the_round_trip(saved):
    raw = json.loads(saved.read_text())
    assert raw["schema_version"] == calibrated.SCHEMA_VERSION
    assert all(len(p["samples"]) == 5 for p in raw["target"]["points"])
    assert raw["target"]["config"]["hidden_size"] == TINY_TARGET["hidden_size"]


def test_too_noisy_to_fit_is_refused_but_the_raw_data_is_kept(specs, pair_dirs, tmp_path):
    path = tmp_path / "noisy.json"
    with pytest.raises(InputError, match="too noisy to fit.*raw data is kept"):
        fit_profile(_profile(specs, pair_dirs, noise=0.6, seed=3), specs, path)
    profile = prof.load(path)
    assert profile.status == "unfit" and "held-out median error" in profile.note
    assert all(len(m.samples) == 5 for m in profile.target.points)
    with pytest.raises(InputError, match="has no fit"):
        costs_for(str(path), specs["target"], specs["draft"], cpu_hw())


def test_explicit_profile_for_other_models_is_an_input_error(saved, specs, llama8b, llama1b):
    with pytest.raises(InputError, match="architecture differs"):
        costs_for(str(saved), llama8b, specs["draft"], cpu_hw())
    with pytest.raises(InputError, match="not Llama-3.2-1B"):
        costs_for(str(saved), specs["target"], llama1b, cpu_hw())


def test_a_stored_fit_holds_every_calibrated_engine_cost_field_and_reads_back_as_the_fitted_cost(saved):
    fit = json.loads(saved.read_text())["target"]["fit"]
    names = [f.name for f in calibrated_fields()]
    assert list(fit)[:len(names)] == names  # the JSON keys, in EngineCost's order (fitted first)
    cost = cost_of(fit)
    assert [getattr(cost, name) for name in names] == [fit[name] for name in names]


def test_profiles_from_before_a_parameter_existed_still_load_with_its_default(saved):
    fit = json.loads(saved.read_text())["target"]["fit"]
    later = [f for f in calibrated_fields() if not f.how.required]
    for f in later:
        del fit[f.name]
    stored, cost = prof.FittedCost.model_validate(fit), cost_of(fit)
    assert all(getattr(stored, f.name) == f.default for f in later)
    # ... and read back as EngineCost's own defaults (kv_bandwidth's, 0, is "the same as bandwidth")
    assert cost == EngineCost(**{f.name: fit[f.name] for f in calibrated_fields() if f.how.required})
    del fit[next(f.name for f in calibrated_fields() if f.how.required)]
    with pytest.raises(ValueError, match="Field required"):
        prof.FittedCost.model_validate(fit)


def test_auto_detection_matches_hardware_and_architecture(saved, specs, monkeypatch, rtx6000, tmp_path):
    folder = tmp_path / "calibrations"
    folder.mkdir()
    (folder / "cal.json").write_text(saved.read_text())
    (folder / "broken.json").write_text("{")  # a broken file must not break every recommend
    monkeypatch.setattr(calibrated, "calibrations_dir", lambda: folder)
    found = costs_for(None, specs["target"], specs["draft"], cpu_hw())
    assert found is not None and "matched automatically" in found[2]
    assert costs_for(None, specs["target"], None, cpu_hw())[1] is None  # ngram: target alone
    assert costs_for(None, specs["target"], specs["draft"], rtx6000) is None  # other hardware
    assert costs_for(None, specs["draft"], specs["target"], cpu_hw()) is None  # other models


def test_recommend_uses_the_calibration_and_says_so(saved, pair_dirs, capsys):
    code = main(["recommend", "--target", str(pair_dirs[0]), "--draft", str(pair_dirs[1]), "--gpu", HW,
                 "--prompt-len", "256", "--out-len", "64", "--calibration", str(saved), "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cost_source"].startswith("calibration ") and "cal.json" in out["cost_source"]


def test_a_tp2_profile_fits_its_all_reduce_first_then_the_steps_with_it_and_recommend_gets_both(specs, pair_dirs,
                                                                                                 tmp_path):
    path = tmp_path / "tp2.json"
    fit_profile(_profile(specs, pair_dirs, tp=2), specs, path)
    profile = prof.load(path)
    assert profile.status == "fitted" and profile.settings["tensor_parallel_size"] == 2
    assert profile.allreduce.fit.allreduce_latency == pytest.approx(15e-6, rel=1e-6)
    assert profile.allreduce.fit.link_bandwidth == pytest.approx(2.5e9, rel=1e-6)
    # the steps were measured with 2 · 8 layers of all-reduces in them: fitted at TP=2 with those terms held, the
    # target's rates come back as if there were none
    assert profile.target.fit.heldout_median_error < 0.02
    target_cost, draft_cost, source = costs_for(str(path), specs["target"], specs["draft"], cpu_hw(), tp=2)
    assert target_cost.bandwidth == pytest.approx(CPU.bandwidth, rel=0.1)
    assert (draft_cost.allreduce_latency, draft_cost.link_bandwidth) == pytest.approx((15e-6, 2.5e9), rel=1e-6)
    assert source.endswith("; measured at TP=2 (all-reduce 15 µs + message at 2.5 GB/s)")


def test_a_tp2_profile_whose_all_reduce_was_not_measured_is_unfit(specs, pair_dirs, tmp_path):
    profile = _profile(specs, pair_dirs, tp=2)
    profile.allreduce = None
    with pytest.raises(InputError, match="all-reduce: the all-reduce was not measured"):
        fit_profile(profile, specs, tmp_path / "tp2.json")
