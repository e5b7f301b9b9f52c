"""Device memory between engines: a closed engine's memory must be back before the next one starts.

`Engine.close()` stops vLLM's engine core, but the killed process's CUDA context is released by the driver a moment
later; the next engine's start-up check (free ≥ gpu_memory_utilization × total, vllm/v1/worker/utils.py
`request_memory`) can then fail, and its error reads like a model too large. So close() waits, polling NVML on
every GPU the engine ran on (the first tensor_parallel_size that CUDA sees: advisor/profiles/visible_gpu.py), until
each one's free memory is within a margin of what it was before the engine started.

NVML is read through the `nvml` extra's bindings, else through the copy vLLM ships (vllm/third_party/pynvml.py, what
its CUDA platform reads the device with): a GPU machine without the extra still knows its memory, so the engine
still takes `vllm serve`'s batch limits (advisor.vllm.defaults `batch_defaults`, by memory class) and still waits.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

from advisor.profiles import visible_gpu
from calibration.engine.platform import nvml_bindings

WAIT_S = 60.0  # the longest a close waits for its memory
POLL_S = 0.25
SLACK_BYTES = 512 * 1024**2  # other processes come and go: back within 512 MiB counts as back


def device_memory() -> tuple[int, int] | None:
    """(free, total) bytes of the visible GPU from NVML, or None when NVML cannot say (no bindings, no driver)."""
    gpu = visible_gpu.read_or_none(nvml_bindings())
    return None if gpu is None else (gpu.free_bytes, gpu.memory_bytes)


def free_bytes(count: int = 1) -> tuple[int, ...] | None:
    """Free bytes of each of the first `count` visible GPUs (a TP=count engine's), or None when NVML cannot say."""
    try:
        gpus = visible_gpu.read_all(count, nvml_bindings())
    except Exception:  # no driver, a hidden or unknown device: nothing to wait for
        return None
    return None if gpus is None else tuple(g.free_bytes for g in gpus)


def wait_for_memory(free_before: Sequence[int], free_now: Callable[[], Sequence[int] | None], *,
                    timeout: float = WAIT_S, poll: float = POLL_S, slack: int = SLACK_BYTES,
                    sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> bool:
    """Poll `free_now()` (free bytes per GPU) until every GPU is within `slack` of `free_before` (True), or `timeout`
    s pass (False, said on stderr: the next engine may then fail to start for want of memory)."""
    deadline = clock() + timeout
    while True:
        free = free_now()
        if free is None or all(now >= before - slack for now, before in zip(free, free_before)):
            return True
        if clock() >= deadline:
            held = max(before - now for now, before in zip(free, free_before))
            print(f"the closed engine's GPU memory is not back after {timeout:.0f} s ({held / 1024**3:.1f} GiB still "
                  "held on a GPU): the next engine may not start", file=sys.stderr)
            return False
        sleep(poll)
