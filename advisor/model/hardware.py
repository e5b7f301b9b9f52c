"""GPU datasheets (profiles/hardware/*.toml) as validated, frozen records.

A plain dataclass rather than pydantic: every `specadvisor recommend` loads one, and pydantic's import alone
would take a quarter of the half-second start-up budget.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from advisor.errors import InputError

GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Hardware:
    """One accelerator as its vendor's datasheet describes it. Rates are peak, dense, per GPU."""

    slug: str  # file name without .toml; the canonical key
    name: str  # display name
    vendor: str  # nvidia | amd
    memory_gib: float  # on-board memory, GiB
    memory_bandwidth_gbs: float  # peak memory bandwidth, GB/s (1e9 B/s)
    memory: str  # its kind, as the datasheet names it ("HBM3e", "GDDR7", "DDR4"): GDDR streams less of its peak
    bf16_tflops: float  # dense bf16/fp16 tensor throughput, TFLOP/s (no sparsity)
    interconnect: str  # what links GPUs for tensor parallelism
    interconnect_gbs: float  # per-GPU, one-direction link bandwidth, GB/s
    source: str  # datasheet URL
    fp8_tflops: float | None = None  # dense fp8, TFLOP/s; None without fp8 tensor cores
    fp4_tflops: float | None = None  # dense fp4 (NVFP4/MXFP4 tensor cores, Blackwell), TFLOP/s; None without them
    aliases: tuple[str, ...] = ()  # other names users type
    tdp_watts: float | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        for name in ("memory_gib", "memory_bandwidth_gbs", "bf16_tflops", "interconnect_gbs"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise InputError(f"hardware profile {self.slug!r}: {name} must be a positive number, got {value!r}")
        for name in ("fp8_tflops", "fp4_tflops"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise InputError(f"hardware profile {self.slug!r}: {name} must be a positive number when given")

    @classmethod
    def from_dict(cls, slug: str, data: dict) -> "Hardware":
        unknown = set(data) - {f.name for f in fields(cls)}
        missing = {f.name for f in fields(cls) if f.default is MISSING and f.name not in data and f.name != "slug"}
        if unknown or missing:
            raise InputError(f"hardware profile {slug!r}: " + "; ".join(
                filter(None, [f"unknown keys {sorted(unknown)}" if unknown else "",
                              f"missing keys {sorted(missing)}" if missing else ""])))
        return cls(slug=slug, **{**data, "aliases": tuple(data.get("aliases", ()))})

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbs * 1e9

    @property
    def gddr(self) -> bool:
        """Graphics memory (GDDR6/6X/7: workstation and gaming cards, L4/L40/A10/A40) rather than stacked HBM."""
        return self.memory.upper().startswith("GDDR")

    def peak_flops(self, dtype: str) -> float:
        """Dense tensor FLOP/s for a matmul compute dtype: "fp4", "fp8", else 16-bit. Without fp4 (fp8) tensor
        cores vLLM runs such weights through a weight-only Marlin kernel that dequantizes to 16 bit, so the bf16 rate
        applies (vllm/model_executor/layers/quantization/utils/marlin_utils_fp4.py, marlin_utils_fp8.py); weight-only
        int4 computes in 16 bit too (callers pass the compute dtype: `quantization.compute_dtype`)."""
        if dtype == "fp4" and self.fp4_tflops:
            return self.fp4_tflops * 1e12
        if dtype == "fp8" and self.fp8_tflops:
            return self.fp8_tflops * 1e12
        return self.bf16_tflops * 1e12
