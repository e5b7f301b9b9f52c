"""What an answer takes for a GPU from elsewhere than its own pages and measured rows: figures its sources do not
state (`Hardware.derived`), another generation's kernel floors and bandwidth share (`kernels.floors_borrowed_from`),
another memory kind's share of peak (`enginecost.streams_like`); and, said with them, memory the GPU shares with its
CPU. `caveats` words them for the report's notes and the JSON's `gpu_caveats`; `mark` tags a figure where the costs
line shows it. `synchronous_host` says where a synchronous method's host step is the scheduler's alone, timed on a
CPU, not measured beside the GPU.
"""

from __future__ import annotations

from advisor.model.cost.enginecost import DEFAULT_BANDWIDTH_SCALE, streams_like
from advisor.model.cost.speculative import Setup
from advisor.model.gpu.hardware import FAMILY_NAMES, Hardware
from advisor.model.gpu.kernels import MEASURED_ON, floors_borrowed_from

LABELS = {"memory_gib": "memory", "memory_bandwidth_gbs": "memory bandwidth", "bf16_tflops": "bf16 peak",
          "fp8_tflops": "fp8 peak", "fp4_tflops": "fp4 peak", "interconnect_gbs": "link", "tdp_watts": "power"}
UNITS = {"memory_gib": "GiB", "memory_bandwidth_gbs": "GB/s", "bf16_tflops": "TFLOP/s", "fp8_tflops": "TFLOP/s",
         "fp4_tflops": "TFLOP/s", "interconnect_gbs": "GB/s", "tdp_watts": "W"}


def mark(hw: Hardware, figure: str) -> str:
    """" (derived)" or " (borrowed from <slug>)" after a figure the sources do not state; "" after one they do."""
    how = hw.derivation(figure)
    if how is None:
        return ""
    return f" (borrowed from {how.borrowed})" if how.borrowed else " (derived)"


def _figure(hw: Hardware, figure: str) -> str | None:
    """A derived figure in words: its value, what it is and how it was obtained; None when the sources state it."""
    how = hw.derivation(figure)
    if how is None:
        return None
    kind = f"borrowed from {how.borrowed}" if how.borrowed else "derived"
    return f"{hw.slug}'s {LABELS[figure]} {getattr(hw, figure):g} {UNITS[figure]} is {kind}: {how.how}"


def floors(hw: Hardware) -> str | None:
    """Whose kernel floors (and bandwidth share, where that generation's was fitted apart) a GPU takes, in words, when
    no row measured its own family; None when one did."""
    gen = floors_borrowed_from(hw)
    if gen is None:
        return None
    what = "kernel floors" + (" and bandwidth share" if DEFAULT_BANDWIDTH_SCALE[gen] != 1.0 else "")
    return f"{what} are {FAMILY_NAMES[gen]}'s ({MEASURED_ON[gen]}): {FAMILY_NAMES[hw.family]} has no measured rows"


def caveats(hw: Hardware, compute: str, *, datasheet: bool, tp: int = 1) -> tuple[str, ...]:
    """What the answer on `hw` takes beyond its sources and measurements, in words: with datasheet costs (not a
    calibration's), the derived rates they run at (the bandwidth, the `compute` dtype's peak, the link at tp > 1),
    borrowed kernel floors and a borrowed memory share; always, a derived memory size and memory shared with the
    CPU."""
    figures = ["memory_gib"]
    if datasheet:
        figures += ["memory_bandwidth_gbs", hw.rate_field(compute)] + (["interconnect_gbs"] if tp > 1 else [])
    said = [line for line in map(lambda f: _figure(hw, f), figures) if line]
    borrowed = floors(hw) if datasheet else None
    if borrowed:
        said.append(borrowed)
    if datasheet and streams_like(hw) != hw.memory_kind:
        said.append(f"{hw.memory} streams at {streams_like(hw)}'s share of its peak (the A40's rows): no measured "
                    "rows on it")
    if hw.unified_memory:
        said.append(f"its {hw.memory_gib:g} GiB of {hw.memory} is shared with the CPU: vLLM sizes "
                    "--gpu-memory-utilization on all of it and will not start unless that much is free "
                    "(vllm/utils/mem_utils.py reads the OS's available memory on an integrated GPU), so the OS "
                    "and the server's own process must fit in the rest")
    return tuple(said)


def synchronous_host(setup: Setup) -> str | None:
    """Where vLLM runs `setup`'s method synchronously beside an async baseline (ngram on a GPU) and the host step it
    waits for is the default, in words: vLLM's scheduler alone (timed on a CPU by benchmarks/bench_host_step.py), a
    lower bound (advisor.vllm.runner `SYNC_UNPRICED`); None where no such wait is priced or it was measured."""
    cost = setup.target_cost
    if setup.sync_penalty is not None or not float(setup.sync_cost(1.0)) > 0:
        return None
    return (f"{setup.method} runs synchronously here: each step waits for the host, priced as vLLM's scheduler alone "
            f"({cost.host_step_overhead * 1e6:.0f} µs + {cost.host_seq_overhead * 1e6:.0f} µs per request), a lower "
            "bound: the step's input staging and the sampled tokens' copy back are not in it (`specadvisor "
            "validate` on this GPU measures the whole wait)")
