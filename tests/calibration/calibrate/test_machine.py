"""GPU or CPU is vLLM's platform's call: a GPU without pynvml is still recorded (and sized, and fitted) as a GPU."""

import pytest
from simulated_nvml import GIB, fake_nvml

from advisor.profiles import visible_gpu
from calibration.calibrate import machine

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
    monkeypatch.setattr(visible_gpu, "pynvml", None)


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
    import vllm.platforms

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml({0: ("NVIDIA A10G", 24 * GIB)}))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCpu())
    _, device = machine.detect_hardware("auto")
    assert device["gpu"] is None and device["vllm_platform"] == "cpu"


def test_nvml_names_the_gpu_the_calibration_records(monkeypatch):
    import vllm.platforms

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml({0: ("NVIDIA A10G", 23 * GIB),
                                                           1: ("NVIDIA H100 80GB HBM3", int(79.6 * GIB))}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    hardware, device = machine.detect_hardware("auto")
    assert hardware == "h100-sxm" and device["gpu"] == "NVIDIA H100 80GB HBM3" and device["driver"] == "570.86.15"
    assert device["gpu_memory_bytes"] == int(79.6 * GIB) and device["gpu_mig"] is False


MIG = {0: ("NVIDIA H100 80GB HBM3", int(79.6 * GIB)), 1: ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", 10 * GIB)}


def test_a_mig_slice_is_refused_as_recommend_refuses_it(monkeypatch):
    """calibrate --gpu auto on a MIG slice: the refusal `recommend --gpu auto` gives (advisor.profiles.localgpu)."""
    import vllm.platforms

    from advisor.errors import InputError
    from advisor.profiles.localgpu import resolve_gpu

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml(MIG, uuids={"MIG-abc": 1}, mig=(1,)))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-abc")
    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    with pytest.raises(InputError) as recommend:
        resolve_gpu("auto")
    with pytest.raises(InputError) as calibrate:
        machine.detect_hardware("auto")
    assert str(calibrate.value) == str(recommend.value) and "MIG slice" in str(calibrate.value)
    assert machine.detect_hardware("h100-sxm")[0] == "h100-sxm"  # a profile named with --gpu is the user's call


def test_calibrate_on_a_mig_slice_exits_2_with_one_line(monkeypatch, tmp_path, capsys):
    import vllm.platforms

    from advisor.cli.app import main

    monkeypatch.setattr(visible_gpu, "pynvml", fake_nvml(MIG, uuids={"MIG-abc": 1}, mig=(1,)))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-abc")
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "ERROR")  # calibrate sets both when absent: not past this test
    monkeypatch.setenv("PYTHONWARNINGS", "ignore::FutureWarning")
    monkeypatch.setattr(vllm.platforms, "_current_platform", FakeCuda())
    code = main(["calibrate", "--target", "llama-3.2-1b-instruct", "--dummy-weights", "--gpu", "auto",
                 "--out", str(tmp_path / "cal.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip().count("\n") == 0 and "MIG slice" in err and "--gpu h100-sxm" in err
    assert not (tmp_path / "cal.json").exists()
