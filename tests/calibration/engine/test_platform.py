"""The engine the GPU path runs, resolved for a simulated CUDA platform without a GPU: vLLM's own decisions (model
runner, async scheduling) read from the installed 0.32 source, the arguments this project passes, the recorded
`vllm_config`, and the wait for a closed engine's memory."""

import types
from typing import get_args

import pytest

from advisor.vllm.runner import ASYNC_SPECULATIVE_METHODS, async_scheduling_default, sync_penalty
from calibration.engine import memory, platform
from calibration.engine.arguments import engine_arguments

vllm_config_module = pytest.importorskip("vllm.config.vllm")
from simulated_cuda import cuda, v2_decision  # noqa: E402,F401  (the fixture)


def test_gpu_or_cpu_is_vllms_platform_not_pynvml(cuda, monkeypatch):
    from advisor.profiles import visible_gpu

    monkeypatch.setattr(visible_gpu, "pynvml", None)
    assert not platform.on_cpu()
    assert platform.device_name() == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize("method", [None, "draft_model", "ngram"])
def test_on_a_gpu_the_engine_runs_the_model_runner_vllm_serve_picks(cuda, monkeypatch, method):
    """No VLLM_USE_V2_MODEL_RUNNER=0 on a GPU: with the environment open_engine sets there, vLLM's own rule picks
    Model Runner V2 for the baseline, draft_model and ngram, as `vllm serve` does (needs Triton, as on CUDA)."""
    import vllm.config.vllm as source

    monkeypatch.setattr(source, "HAS_TRITON", True)
    for key, value in platform.engine_env(cpu=platform.on_cpu()).items():
        monkeypatch.setenv(key, value)
    assert v2_decision(method) is True
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "0")  # what the engine layer used to force everywhere
    assert v2_decision(method) is False


def test_vllm_cpu_keeps_its_v1_runner():
    assert platform.engine_env(cpu=True)["VLLM_USE_V2_MODEL_RUNNER"] == "0"


def test_async_scheduling_default_is_vllms():
    """The methods async scheduling runs with are the ones vllm/config/vllm.py lets through (EagleModelTypes,
    NgramGPUTypes, draft_model, dspark, dflash); every other speculative method turns it off."""
    from vllm.config import speculative

    allowed = {*get_args(speculative.EagleModelTypes), *get_args(speculative.NgramGPUTypes), "draft_model",
               "dspark", "dflash"}
    allowed = {m for a in allowed for m in (get_args(a) or (a,))}  # MTPModelTypes nests a Literal
    for method in {m for a in get_args(speculative.SpeculativeMethod) for m in (get_args(a) or (a,))}:
        assert async_scheduling_default(method, cpu=False) == (method in allowed), method
        assert async_scheduling_default(method, cpu=True) is False
    assert async_scheduling_default(None, cpu=False) and ASYNC_SPECULATIVE_METHODS <= allowed | {"mtp"}


def test_arguments_on_a_gpu_pass_what_vllm_serve_resolves():
    base, env = engine_arguments("m", cpu=False, max_model_len=512)
    draft, _ = engine_arguments("m", cpu=False, speculative_config={"method": "draft_model", "model": "d",
                                                                   "num_speculative_tokens": 3})
    ngram, _ = engine_arguments("m", cpu=False, speculative_config={"method": "ngram", "num_speculative_tokens": 3},
                                gpu_memory_utilization=0.4)
    assert env == {} and base["enforce_eager"] is False  # CUDA graphs, as vllm serve
    assert base["worker_extension_cls"] == "calibration.engine.allreduce_worker.AllReduceTimer"  # names the backend
    assert base["async_scheduling"] is True and draft["async_scheduling"] is True
    assert ngram["async_scheduling"] is False and ngram["gpu_memory_utilization"] == 0.4
    served, _ = engine_arguments("m", cpu=False, serve_limits=(8192, 1024))
    assert (served["max_num_batched_tokens"], served["max_num_seqs"]) == (8192, 1024)  # not the LLM class's 16384
    mine, _ = engine_arguments("m", cpu=False, serve_limits=(8192, 1024), max_num_seqs=64)
    assert mine["max_num_seqs"] == 64
    assert "max_num_seqs" not in base  # no GPU memory known: vLLM's own default
    cpu, _ = engine_arguments("m", cpu=True)
    assert cpu["async_scheduling"] is False and cpu["enforce_eager"] is True and "gpu_memory_utilization" not in cpu
    assert "worker_extension_cls" not in cpu  # vllm-cpu at TP=1 starts as it always did


def test_sync_penalty_is_charged_to_ngram_on_a_gpu_only():
    assert sync_penalty("ngram", 0.002, cpu=False) == 0.002
    assert sync_penalty("draft_model", 0.002, cpu=False) == 0.0
    assert sync_penalty("ngram", 0.002, cpu=True) == 0.0


def test_resolved_config_records_runner_async_graphs_backend():
    config = types.SimpleNamespace(
        use_v2_model_runner=True, scheduler_config=types.SimpleNamespace(async_scheduling=True),
        compilation_config=types.SimpleNamespace(cudagraph_mode=types.SimpleNamespace(name="FULL_AND_PIECEWISE"),
                                                 max_cudagraph_capture_size=512),
        attention_config=types.SimpleNamespace(backend=types.SimpleNamespace(name="FLASHINFER")),
        cache_config=types.SimpleNamespace(block_size=16), model_config=types.SimpleNamespace(enforce_eager=False),
        speculative_config=types.SimpleNamespace(method="draft_model", num_speculative_tokens=3))
    assert platform.resolved_config(config) == {
        "model_runner": "v2", "async_scheduling": True, "cudagraph_mode": "FULL_AND_PIECEWISE",
        "attention_backend": "FLASHINFER", "block_size": 16, "enforce_eager": False,
        "max_cudagraph_capture_size": 512, "speculative_method": "draft_model", "num_speculative_tokens": 3}


def test_close_waits_until_the_memory_is_back():
    frees = iter([(10,), (20,), (60,), (99,)])
    clock = iter(range(100))
    assert memory.wait_for_memory((100,), lambda: next(frees), slack=2, sleep=lambda _: None,
                                  clock=lambda: next(clock))
    frees = iter([(10,)] * 100)
    assert not memory.wait_for_memory((100,), lambda: next(frees), timeout=3, slack=2, sleep=lambda _: None,
                                      clock=lambda: next(clock))


def test_at_tp_2_close_waits_for_every_gpu():
    """The first GPU is back at once; the second still holds the closed engine's memory for two polls."""
    polls = []
    frees = iter([(100, 10), (100, 40), (100, 99)])
    assert memory.wait_for_memory((100, 100), lambda: polls.append(1) or next(frees), slack=2,
                                  sleep=lambda _: None, clock=lambda: 0)
    assert len(polls) == 3


def test_without_the_nvml_extra_vllms_own_nvml_answers(cuda, monkeypatch):
    """No pynvml installed: the engine layer reads the GPUs through the NVML copy vLLM ships, so it still takes vllm
    serve's batch limits (8,192 tokens on an H100, not the LLM class's 16,384) and waits for every GPU's memory."""
    import vllm.third_party
    from simulated_nvml import GIB, fake_nvml

    from advisor.profiles import visible_gpu
    from calibration.engine.vllm_engine import serve_limits

    monkeypatch.setattr(visible_gpu, "pynvml", None)
    monkeypatch.setattr(vllm.third_party, "pynvml", fake_nvml({0: ("NVIDIA H100 80GB HBM3", 80 * GIB, 70 * GIB),
                                                               1: ("NVIDIA H100 80GB HBM3", 80 * GIB, 60 * GIB)}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    free, total = memory.device_memory()
    assert (free, total) == (60 * GIB, 80 * GIB)
    assert serve_limits() == (8192, 1024)
    assert memory.free_bytes(2) == (60 * GIB, 70 * GIB)


def test_test_servers_share_a_gpu(cuda):
    """On a GPU the test servers run what `vllm serve` runs (no runner forced, CUDA graphs on) and two fit side by
    side; what they run is asked of the platform when they start, so no other test's platform decides it."""
    import vllm_server

    from advisor.vllm.defaults import GPU_MEMORY_UTILIZATION

    assert "VLLM_USE_V2_MODEL_RUNNER" not in vllm_server.server_env()
    flags = vllm_server.platform_flags()
    assert "--enforce-eager" not in flags and 2 * float(flags[flags.index("--gpu-memory-utilization") + 1]) <= 0.9
    assert vllm_server.engine_share()["gpu_memory_utilization"] < GPU_MEMORY_UTILIZATION


def test_test_servers_on_vllm_cpu_run_eagerly():
    import vllm_server

    assert vllm_server.platform_flags() == ["--enforce-eager"] and vllm_server.engine_share() == {}
    assert vllm_server.server_env()["VLLM_USE_V2_MODEL_RUNNER"] == "0"


def test_close_reads_the_memory_of_the_gpu_cuda_sees(monkeypatch):
    from simulated_nvml import GIB, fake_nvml

    from advisor.profiles import visible_gpu

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml({0: ("NVIDIA A10G", 23 * GIB, 20 * GIB),
                                                           1: ("NVIDIA H100 80GB HBM3", 80 * GIB, 70 * GIB)}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert memory.device_memory() == (70 * GIB, 80 * GIB) and memory.free_bytes() == (70 * GIB,)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU to wait for
    assert memory.device_memory() is None and memory.free_bytes() is None
    monkeypatch.setattr(visible_gpu, "pynvml", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert memory.device_memory() is None


def test_the_recorded_graph_mode_is_the_workers():
    """The V2 worker resolves the CUDA-graph mode against its attention backends after the front end's config is
    made (vllm/v1/worker/gpu/model_runner.py, resolve_cudagraph_mode_and_sizes): the record takes the worker's."""
    from vllm.config.compilation import CUDAGraphMode

    from calibration.engine.allreduce_worker import AllReduceTimer
    from calibration.engine.vllm_engine import GRAPHS_METHOD, worker_graphs

    worker = types.SimpleNamespace(
        vllm_config=types.SimpleNamespace(compilation_config=types.SimpleNamespace(
            cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE, max_cudagraph_capture_size=512)),
        model_runner=types.SimpleNamespace(cudagraph_manager=types.SimpleNamespace(
            cudagraph_mode=CUDAGraphMode.FULL_DECODE_ONLY)))
    answer = AllReduceTimer.specadvisor_cudagraph_mode(worker)
    assert answer == {"cudagraph_mode": "FULL_DECODE_ONLY", "max_cudagraph_capture_size": 512}
    llm = types.SimpleNamespace(collective_rpc=lambda method: [getattr(AllReduceTimer, method)(worker)])
    assert worker_graphs(llm) == answer and GRAPHS_METHOD == "specadvisor_cudagraph_mode"
    assert worker_graphs(types.SimpleNamespace()) == {}  # no RPC: the front end's record stays
