"""The GPU CUDA will use, as NVML describes it: the one reader of NVML (pynvml, the optional `nvml` extra: a plain
`pip install .` has none) behind `--gpu auto` (advisor/profiles/localgpu.py), the device a calibration records
(calibration/calibrate/bench.py `system_info`) and the wait for a closed engine's memory
(calibration/engine/memory.py).

The GPU asked about is the one vLLM will use: the first of CUDA_VISIBLE_DEVICES (an index, a GPU-… UUID or a
MIG-… UUID, as CUDA reads it), else NVML's device 0; `read_all` gives the first N (the GPUs of a TP=N engine).
NVML, not torch: torch would open a CUDA context in this process. The bindings are the `nvml` extra's
(nvidia-ml-py, module pynvml); a caller holding others (vLLM's own copy) passes them as `nvml`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from advisor.errors import InputError

try:
    import pynvml
except ImportError:
    pynvml = None


@dataclass(frozen=True, slots=True)
class VisibleGpu:
    """The GPU vLLM will run on, as NVML describes it."""

    name: str  # the driver's name, e.g. 'NVIDIA H100 80GB HBM3'
    memory_bytes: int  # total device memory
    free_bytes: int  # device memory free when read
    mig: bool = False  # a MIG slice (a fraction of the GPU's memory, bandwidth and compute)
    driver: str | None = None  # the driver's version, when NVML gives it


class NvmlError(Exception):
    """NVML cannot describe the visible GPU: no driver, or no device by the index or UUID CUDA_VISIBLE_DEVICES
    gives."""


def visible_handles(count: int = 1, nvml=None) -> list:
    """NVML's handles of the first `count` GPUs CUDA_VISIBLE_DEVICES names (indices or UUIDs), else devices
    0..count-1; InputError when it hides every GPU."""
    nvml = nvml or pynvml
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    names = [v.strip() for v in visible.split(",")][:count]
    if not names[0] or names[0].startswith("-"):
        raise InputError(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU; name one with --gpu")
    return [nvml.nvmlDeviceGetHandleByIndex(int(n)) if n.isdigit()
            else nvml.nvmlDeviceGetHandleByUUID(n) for n in names]  # GPU-… or MIG-…


def visible_handle(nvml=None):
    """NVML's handle of the GPU vLLM will use (the first visible one)."""
    return visible_handles(1, nvml)[0]


def read_all(count: int = 1, nvml=None) -> list[VisibleGpu] | None:
    """The first `count` visible GPUs, or None without NVML bindings. NvmlError when NVML cannot describe them;
    InputError when CUDA_VISIBLE_DEVICES hides every GPU."""
    nvml = nvml or pynvml
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
        gpus = []
        for handle in visible_handles(count, nvml):
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(VisibleGpu(_text(nvml.nvmlDeviceGetName(handle)), int(memory.total), int(memory.free),
                                   _mig(handle, nvml), _driver(nvml)))
        return gpus
    except nvml.NVMLError as exc:
        raise NvmlError(str(exc)) from None


def read(nvml=None) -> VisibleGpu | None:
    """The visible GPU, or None without NVML bindings (see `read_all`)."""
    gpus = read_all(1, nvml)
    return None if gpus is None else gpus[0]


def read_or_none(nvml=None) -> VisibleGpu | None:
    """`read()`, or None whatever keeps NVML from answering (no bindings, no driver, CUDA_VISIBLE_DEVICES hiding
    every GPU or naming one NVML does not know): for callers that carry on without it."""
    try:
        return read(nvml)
    except Exception:
        return None


def _mig(handle, nvml) -> bool:
    try:
        return bool(nvml.nvmlDeviceIsMigDeviceHandle(handle))
    except (nvml.NVMLError, AttributeError):  # a driver or bindings without MIG: a whole GPU
        return False


def _driver(nvml) -> str | None:
    try:
        return _text(nvml.nvmlSystemGetDriverVersion())
    except (nvml.NVMLError, AttributeError):
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value  # older pynvml releases return bytes
