"""GPU or CPU is vLLM's platform's call: a GPU without pynvml is still recorded (and sized, and fitted) as a GPU."""

import pytest

from calibration.calibrate import bench, machine

pytest.importorskip("vllm")


class FakeCuda:
    def is_cpu(self):
        return False

    def get_device_name(self, device_id=0):
        return "NVIDIA H100 80GB HBM3"


class FakeCpu(FakeCuda):
    def is_cpu(self):
        return True


@pytest.fixture
def no_nvml(monkeypatch):
    from advisor.profiles import localgpu

    monkeypatch.setattr(bench, "pynvml", None)
    monkeypatch.setattr(localgpu, "pynvml", None)


@pytest.mark.parametrize("gpu", ["h100-sxm", "auto"])
def test_a_gpu_without_pynvml_is_recorded_as_a_gpu(monkeypatch, no_nvml, gpu):
    import vllm.platforms

    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    hardware, device = machine.detect_hardware(gpu)
    assert hardware == "h100-sxm"
    assert device["gpu"] == "NVIDIA H100 80GB HBM3" and device["vllm_platform"] == "gpu"
    cost, basis = machine.planning_cost(hardware, on_cpu=device.get("gpu") is None)  # as run_calibration asks
    assert basis == "the h100-sxm datasheet" and cost.layer_floor_graph > 0  # a GPU's CUDA-graph floors, not 0


def test_vllm_cpu_is_a_cpu_run_whatever_nvml_says(monkeypatch):
    import types

    import vllm.platforms

    from advisor.profiles import localgpu

    nvml = types.SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: i,
                                 nvmlDeviceGetName=lambda h: "NVIDIA A10G", nvmlSystemGetDriverVersion=lambda: "1",
                                 nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=24 * 1024**3))
    monkeypatch.setattr(bench, "pynvml", nvml)
    monkeypatch.setattr(localgpu, "pynvml", nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCpu())
    _, device = machine.detect_hardware("auto")
    assert device["gpu"] is None and device["vllm_platform"] == "cpu"
