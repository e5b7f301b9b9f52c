"""The GPU CUDA will use, as NVML describes it: the one reader of NVML (pynvml, the optional `nvml` extra: a plain
`pip install .` has none) behind `--gpu auto` (advisor/profiles/localgpu.py), the device a calibration records
(calibration/calibrate/bench.py `system_info`) and the wait for a closed engine's memory
(calibration/engine/memory.py).

The GPU asked about is the one vLLM will use: the first of CUDA_VISIBLE_DEVICES (an index, a GPU-… UUID or a
MIG-… UUID, as CUDA reads it), else NVML's device 0. NVML, not torch: torch would open a CUDA context in this
process.
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


def visible_handle():
    """NVML's handle of the first GPU CUDA_VISIBLE_DEVICES names (index or UUID), else device 0; InputError when
    it hides every GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        first = visible.split(",")[0].strip()
        if not first or first.startswith("-"):
            raise InputError(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU; name one with --gpu")
        if first.isdigit():
            return pynvml.nvmlDeviceGetHandleByIndex(int(first))
        return pynvml.nvmlDeviceGetHandleByUUID(first)  # GPU-… or MIG-…
    return pynvml.nvmlDeviceGetHandleByIndex(0)


def read() -> VisibleGpu | None:
    """The visible GPU, or None without pynvml. NvmlError when NVML cannot describe it; InputError when
    CUDA_VISIBLE_DEVICES hides every GPU."""
    if pynvml is None:
        return None
    try:
        pynvml.nvmlInit()
        handle = visible_handle()
        name = pynvml.nvmlDeviceGetName(handle)
        memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
        return VisibleGpu(_text(name), int(memory.total), int(memory.free), _mig(handle), _driver())
    except pynvml.NVMLError as exc:
        raise NvmlError(str(exc)) from None


def read_or_none() -> VisibleGpu | None:
    """`read()`, or None whatever keeps NVML from answering (no pynvml, no driver, CUDA_VISIBLE_DEVICES hiding every
    GPU or naming one NVML does not know): for callers that carry on without it."""
    try:
        return read()
    except Exception:
        return None


def _mig(handle) -> bool:
    try:
        return bool(pynvml.nvmlDeviceIsMigDeviceHandle(handle))
    except (pynvml.NVMLError, AttributeError):  # a driver or pynvml without MIG: a whole GPU
        return False


def _driver() -> str | None:
    try:
        return _text(pynvml.nvmlSystemGetDriverVersion())
    except (pynvml.NVMLError, AttributeError):
        return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value  # older pynvml releases return bytes
