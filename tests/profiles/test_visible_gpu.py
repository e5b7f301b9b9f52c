"""The one NVML reader: the GPU CUDA_VISIBLE_DEVICES gives vLLM (index or UUID), what NVML says of it, and what a
missing pynvml, a missing driver or a hidden GPU come to, through a simulated NVML."""

import pytest
from simulated_nvml import GIB, fake_nvml

from advisor.errors import InputError
from advisor.profiles import localgpu, visible_gpu

GPUS = {0: ("NVIDIA A10G", 23 * GIB, 20 * GIB), 1: ("NVIDIA H100 80GB HBM3", int(79.6 * GIB), 70 * GIB)}


@pytest.mark.parametrize("text", [False, True])
def test_the_visible_gpu_as_nvml_describes_it(monkeypatch, text):
    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml(GPUS, uuids={"GPU-abc": 1}, text=text))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpu.read() == visible_gpu.VisibleGpu("NVIDIA A10G", 23 * GIB, 20 * GIB, False, "570.86.15")
    for visible in ("1", " 1,0", "GPU-abc"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        gpu = visible_gpu.read()
        assert (gpu.name, gpu.memory_bytes, gpu.free_bytes) == ("NVIDIA H100 80GB HBM3", int(79.6 * GIB), 70 * GIB)


def test_a_pynvml_without_mig_or_driver_calls_reads_a_whole_gpu(monkeypatch):
    nvml = fake_nvml(GPUS)
    del nvml.nvmlDeviceIsMigDeviceHandle, nvml.nvmlSystemGetDriverVersion
    monkeypatch.setattr(visible_gpu, "pynvml", nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    gpu = visible_gpu.read()
    assert gpu.mig is False and gpu.driver is None and gpu.name == "NVIDIA A10G"


def test_what_nvml_cannot_answer(monkeypatch):
    monkeypatch.setattr(visible_gpu, "pynvml", None)
    assert visible_gpu.read() is None and visible_gpu.read_or_none() is None
    with pytest.raises(InputError, match=r"needs pynvml: pip install 'specadvisor\[nvml\]'"):
        localgpu.resolve_gpu("auto")
    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml(GPUS))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # a device NVML does not know
    with pytest.raises(visible_gpu.NvmlError, match="no device 7"):
        visible_gpu.read()
    with pytest.raises(InputError, match=r"NVML sees no GPU \(no device 7\)"):
        localgpu.resolve_gpu("auto")
    assert visible_gpu.read_or_none() is None
    for hidden in ("", "-1"):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        with pytest.raises(InputError, match="hides every GPU"):
            visible_gpu.read()
        assert visible_gpu.read_or_none() is None
