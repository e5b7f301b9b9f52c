"""vLLM's current_platform as an H100 answers it (vllm/platforms/cuda.py), without one: `cuda` puts it in place for a
test, so vLLM's own functions and this project's engine layer take the GPU path. `v2_decision` is vLLM's own choice
of model runner there."""

import types

import pytest


class FakeCuda:
    """What vLLM's current_platform answers on an H100, without one."""

    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "NVIDIA H100 80GB HBM3"


@pytest.fixture
def cuda(monkeypatch):
    import vllm.config.vllm
    import vllm.platforms

    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    monkeypatch.setattr(vllm.config.vllm, "HAS_TRITON", True)  # Triton ships with every CUDA build of vLLM
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)


def v2_decision(method: str | None) -> bool:
    """vLLM 0.32's `VllmConfig.use_v2_model_runner` evaluated on a config holding only what it reads."""
    from vllm.config.vllm import VllmConfig

    spec = None if method is None else types.SimpleNamespace(method=method, parallel_drafting=False,
                                                              use_heterogeneous_vocab=False)
    config = types.SimpleNamespace(
        attention_config=types.SimpleNamespace(hisparse_config=None), speculative_config=spec,
        parallel_config=types.SimpleNamespace(distributed_executor_backend="mp", pipeline_parallel_size=1,
                                              use_ubatching=False))
    config._get_v2_model_runner_unsupported_features = (
        lambda: VllmConfig._get_v2_model_runner_unsupported_features(config))
    return VllmConfig.use_v2_model_runner.fget(config)
