"""vLLM's current_platform as an H100 answers it (vllm/platforms/cuda.py), without one: `cuda` puts it in place for a
test, so vLLM's own functions and this project's engine layer take the GPU path."""

import pytest


class FakeCuda:
    """What vLLM's current_platform answers on an H100, without one."""

    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "NVIDIA H100 80GB HBM3"


@pytest.fixture
def cuda(monkeypatch):
    import vllm.platforms

    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    monkeypatch.delenv("VLLM_USE_V2_MODEL_RUNNER", raising=False)
