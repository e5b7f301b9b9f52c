"""Device memory between engines: a closed engine's memory must be back before the next one starts.

`Engine.close()` stops vLLM's engine core, but the killed process's CUDA context is released by the driver a moment
later; the next engine's start-up check (free ≥ gpu_memory_utilization × total, vllm/v1/worker/utils.py
`request_memory`) can then fail, and its error reads like a model too large. So close() waits, polling NVML on
the GPU CUDA sees (advisor/profiles/visible_gpu.py), until the free memory is within a margin of what it was
before the engine started.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from advisor.profiles import visible_gpu

WAIT_S = 60.0  # the longest a close waits for its memory
POLL_S = 0.25
SLACK_BYTES = 512 * 1024**2  # other processes come and go: back within 512 MiB counts as back


def device_memory() -> tuple[int, int] | None:
    """(free, total) bytes of the visible GPU from NVML, or None when NVML cannot say (no pynvml, no driver)."""
    gpu = visible_gpu.read_or_none()
    return None if gpu is None else (gpu.free_bytes, gpu.memory_bytes)


def free_bytes() -> int | None:
    memory = device_memory()
    return None if memory is None else memory[0]


def wait_for_memory(free_before: int, free_now: Callable[[], int | None], *, timeout: float = WAIT_S,
                    poll: float = POLL_S, slack: int = SLACK_BYTES, sleep: Callable[[float], None] = time.sleep,
                    clock: Callable[[], float] = time.monotonic) -> bool:
    """Poll `free_now()` until it is within `slack` of `free_before` (True), or `timeout` s pass (False, said on
    stderr: the next engine may then fail to start for want of memory)."""
    deadline = clock() + timeout
    while True:
        free = free_now()
        if free is None or free >= free_before - slack:
            return True
        if clock() >= deadline:
            print(f"the closed engine's GPU memory is not back after {timeout:.0f} s ({(free_before - free) / 1024**3:.1f}"
                  " GiB still held): the next engine may not start", file=sys.stderr)
            return False
        sleep(poll)
