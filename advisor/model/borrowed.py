"""What an answer takes for a GPU from elsewhere than its own pages and measured rows: figures its sources do not
state (`Hardware.derived`), another generation's kernel floors (`kernels.borrowed_floors`), another memory kind's
share of peak; and, said with them, memory the GPU shares with its CPU. `caveats` words them for the report's notes
and the JSON's `gpu_caveats`; `mark` tags a figure where the costs line shows it.
"""

from __future__ import annotations

from advisor.model.hardware import Hardware
from advisor.model.kernels import borrowed_floors

# Memory kinds no published row measures, and the measured kind whose share of peak they stream at. LPDDR (DGX
# Spark's unified LPDDR5X: DRAM on a board-level bus, not stacked beside the die) takes GDDR's, the A40's rows: the
# nearest kind measured, not a measurement of LPDDR.
MEMORY_FROM = {"LPDDR": "GDDR"}
LABELS = {"memory_gib": "memory", "memory_bandwidth_gbs": "memory bandwidth", "bf16_tflops": "bf16 peak",
          "fp8_tflops": "fp8 peak", "fp4_tflops": "fp4 peak", "interconnect_gbs": "link", "tdp_watts": "power"}
UNITS = {"memory_gib": "GiB", "memory_bandwidth_gbs": "GB/s", "bf16_tflops": "TFLOP/s", "fp8_tflops": "TFLOP/s",
         "fp4_tflops": "TFLOP/s", "interconnect_gbs": "GB/s", "tdp_watts": "W"}


def streams_like(hw: Hardware) -> str:
    """The measured memory kind whose share of its peak `hw`'s memory streams at: "HBM", "GDDR" (or "DDR")."""
    return MEMORY_FROM.get(hw.memory_kind, hw.memory_kind)


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


def caveats(hw: Hardware, compute: str, *, datasheet: bool, tp: int = 1) -> tuple[str, ...]:
    """What the answer on `hw` takes beyond its sources and measurements, in words: with datasheet costs (not a
    calibration's), the derived rates they run at (the bandwidth, the `compute` dtype's peak, the link at tp > 1),
    borrowed kernel floors and a borrowed memory share; always, a derived memory size and memory shared with the
    CPU."""
    figures = ["memory_gib"]
    if datasheet:
        figures += ["memory_bandwidth_gbs", hw.rate_field(compute)] + (["interconnect_gbs"] if tp > 1 else [])
    said = [line for line in map(lambda f: _figure(hw, f), figures) if line]
    floors = borrowed_floors(hw) if datasheet else None
    if floors:
        said.append(floors)
    if datasheet and streams_like(hw) != hw.memory_kind:
        said.append(f"no measured rows on {hw.memory}: it streams at {streams_like(hw)}'s share of its peak (the "
                    "A40's rows), the nearest kind measured")
    if hw.unified_memory:
        said.append(f"its {hw.memory_gib:g} GiB of {hw.memory} is shared with the CPU: vLLM sizes "
                    "--gpu-memory-utilization on all of it and will not start unless that much is free "
                    "(vllm/utils/mem_utils.py reads the OS's available memory on an integrated GPU), so the OS "
                    "and the server's own process must fit in the rest")
    return tuple(said)
