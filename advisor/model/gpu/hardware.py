"""GPU datasheets (profiles/hardware/*.toml) as validated, frozen records.

A plain dataclass rather than pydantic: every `specadvisor recommend` loads one, and pydantic's import alone
would take a quarter of the half-second start-up budget.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields

from advisor.errors import InputError

GIB = 1024**3

# Each compiler target a profile may name (`Hardware.architecture`: NVIDIA's sm_XY is compute capability X.Y, what
# vLLM's platform checks read; AMD's gfx target) and the family it belongs to: what kernel floors, vLLM's CUDA-graph
# sizes and the borrowing of measured rows go by (advisor.model.gpu.kernels).
ARCHITECTURES = {"sm_80": "ampere", "sm_86": "ampere", "sm_89": "ada", "sm_90": "hopper", "sm_100": "blackwell",
                 "sm_103": "blackwell", "sm_120": "blackwell-client", "sm_121": "blackwell-client",
                 "gfx942": "cdna3", "gfx950": "cdna4", "x86_64": "cpu"}
FAMILY_NAMES = {"ampere": "Ampere", "ada": "Ada", "hopper": "Hopper", "blackwell": "data-center Blackwell",
                "blackwell-client": "client Blackwell", "cdna3": "CDNA3", "cdna4": "CDNA4", "cpu": "CPU"}
# The figures a profile states, each cited by its sources or derived (`Derived`)
FIGURES = ("memory_gib", "memory_bandwidth_gbs", "bf16_tflops", "fp8_tflops", "fp4_tflops", "interconnect_gbs",
           "tdp_watts")


@dataclass(frozen=True, slots=True)
class Derived:
    """A figure a GPU's sources do not state, and how it was obtained: figure = basis x factor. The basis is a
    stated number (`how` says whose), another figure of the same profile ("fp8_tflops"), or another profile's
    ("mi355x.bf16_tflops": borrowed); tests/profiles/test_hardware_profiles.py checks the arithmetic."""

    figure: str  # the Hardware field it fills
    basis: float | str  # a stated number, "field" or "slug.field"
    factor: float  # figure = basis x factor
    how: str  # the basis's source and why the factor holds, in a line

    def __post_init__(self) -> None:
        if self.figure not in FIGURES or not self.how.strip():
            raise InputError(f"derived figure {self.figure!r}: must be one of {', '.join(FIGURES)} and say how")
        basis_ok = isinstance(self.basis, str) and self.basis.rsplit(".", 1)[-1] in FIGURES \
            or not isinstance(self.basis, (str, bool)) and isinstance(self.basis, (int, float)) and self.basis > 0
        if not basis_ok or not isinstance(self.factor, (int, float)) or self.factor <= 0:
            raise InputError(f"derived figure {self.figure!r}: basis must be a positive number or a figure's name, "
                             f"factor a positive number; got {self.basis!r}, {self.factor!r}")

    @property
    def borrowed(self) -> str | None:
        """The profile it is borrowed from (its basis is another GPU's figure), or None."""
        return self.basis.split(".")[0] if isinstance(self.basis, str) and "." in self.basis else None


@dataclass(frozen=True, slots=True)
class Hardware:
    """One accelerator as its vendor's datasheet describes it (or, where none was found, third-party pages cited
    figure by figure, `cited`). Rates are peak, dense, per GPU; one no source states is `derived`, saying how."""

    slug: str  # file name without .toml; the canonical key
    name: str  # display name
    vendor: str  # nvidia | amd
    memory_gib: float  # on-board memory, GiB
    memory_bandwidth_gbs: float  # peak memory bandwidth, GB/s (1e9 B/s)
    memory: str  # its kind as the datasheet names it ("HBM3e", "GDDR7", "LPDDR5X"): GDDR streams less of its peak
    bf16_tflops: float  # dense bf16/fp16 tensor throughput, TFLOP/s (no sparsity)
    interconnect: str  # what links GPUs for tensor parallelism
    interconnect_gbs: float  # per-GPU, one-direction link bandwidth, GB/s
    source: str  # datasheet URL
    architecture: str  # compiler target (ARCHITECTURES: "sm_90", "gfx950"): its family sets floors and vLLM's paths
    fp8_tflops: float | None = None  # dense fp8, TFLOP/s; None without fp8 tensor cores
    fp4_tflops: float | None = None  # dense fp4 (NVFP4/MXFP4 tensor cores, Blackwell), TFLOP/s; None without them
    aliases: tuple[str, ...] = ()  # other names users type
    tdp_watts: float | None = None
    notes: str = ""
    # memory shared with the CPU (DGX Spark's LPDDR5X): the OS and the server's own process live in it too
    unified_memory: bool = False
    derived: tuple[Derived, ...] = ()  # figures the sources do not state, and how each was obtained
    # figure -> "what it says: URL", for profiles whose figures come from several pages; a figure is cited or
    # derived, never both, and a profile with citations cites or derives every figure it states
    cited: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        for name in ("memory_gib", "memory_bandwidth_gbs", "bf16_tflops", "interconnect_gbs"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value <= 0:
                raise InputError(f"hardware profile {self.slug!r}: {name} must be a positive number, got {value!r}")
        for name in ("fp8_tflops", "fp4_tflops"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, float)) or value <= 0):
                raise InputError(f"hardware profile {self.slug!r}: {name} must be a positive number when given")
        if self.architecture not in ARCHITECTURES:
            raise InputError(f"hardware profile {self.slug!r}: architecture must be one of "
                             f"{', '.join(ARCHITECTURES)}, got {self.architecture!r}")
        self._check_figures()

    def _check_figures(self) -> None:
        """Each derived or cited figure is one the profile states; none is both; with citations, none is neither;
        a citation names its page."""
        derived, cited = [d.figure for d in self.derived], dict(self.cited)
        stated = {name for name in FIGURES if getattr(self, name) is not None}
        problems = [f"{name} is derived and cited" for name in sorted(set(derived) & set(cited))]
        problems += [f"{name} is derived twice" for name in sorted({n for n in derived if derived.count(n) > 1})]
        problems += [f"{name} is derived or cited but not stated" for name in sorted((set(derived) | set(cited))
                                                                                     - stated)]
        problems += [f"{name}'s citation names no https:// page" for name, text in cited.items()
                     if "https://" not in text]
        if cited:
            problems += [f"{name} is neither cited nor derived" for name in sorted(stated - set(derived) - set(cited))]
        if problems:
            raise InputError(f"hardware profile {self.slug!r}: " + "; ".join(problems))

    @classmethod
    def from_dict(cls, slug: str, data: dict) -> "Hardware":
        unknown = set(data) - {f.name for f in fields(cls)}
        missing = {f.name for f in fields(cls) if f.default is MISSING and f.name not in data and f.name != "slug"}
        if unknown or missing:
            raise InputError(f"hardware profile {slug!r}: " + "; ".join(
                filter(None, [f"unknown keys {sorted(unknown)}" if unknown else "",
                              f"missing keys {sorted(missing)}" if missing else ""])))
        if not isinstance(data.get("derived", {}), dict) or not isinstance(data.get("cited", {}), dict):
            raise InputError(f"hardware profile {slug!r}: derived and cited must be tables keyed by figure")
        try:
            derived = tuple(Derived(figure=name, **how) for name, how in data.get("derived", {}).items())
        except TypeError as exc:
            raise InputError(f"hardware profile {slug!r}: a derived figure takes basis, factor and how "
                             f"({exc})") from None
        return cls(slug=slug, **{**data, "aliases": tuple(data.get("aliases", ())), "derived": derived,
                                 "cited": tuple(data.get("cited", {}).items())})

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.memory_bandwidth_gbs * 1e9

    @property
    def memory_kind(self) -> str:
        """The memory's kind without its generation: "HBM", "GDDR", "LPDDR" or "DDR"."""
        found = re.match(r"[A-Za-z]+?(?=\d|$)", self.memory)
        return (found.group(0) if found else self.memory).upper()

    @property
    def gddr(self) -> bool:
        """Graphics memory (GDDR6/6X/7: workstation and gaming cards, L4/L40/A10/A40) rather than stacked HBM."""
        return self.memory_kind == "GDDR"

    @property
    def family(self) -> str:
        """The architecture's family (ARCHITECTURES): "hopper", "cdna4", ..."""
        return ARCHITECTURES[self.architecture]

    def derivation(self, figure: str) -> Derived | None:
        """How `figure` was obtained when the sources do not state it; None when it is stated."""
        return next((d for d in self.derived if d.figure == figure), None)

    def peak_flops(self, dtype: str) -> float:
        """Dense tensor FLOP/s for a matmul compute dtype: "fp4", "fp8", else 16-bit. Without fp4 (fp8) tensor
        cores vLLM runs such weights through a weight-only Marlin kernel that dequantizes to 16 bit, so the bf16 rate
        applies (vllm/model_executor/layers/quantization/utils/marlin_utils_fp4.py, marlin_utils_fp8.py); weight-only
        int4 computes in 16 bit too (callers pass the compute dtype: `quantization.compute_dtype`)."""
        return getattr(self, self.rate_field(dtype)) * 1e12

    def rate_field(self, dtype: str) -> str:
        """The figure the matmuls of compute dtype `dtype` run at on this GPU (`peak_flops`)."""
        field = {"fp4": "fp4_tflops", "fp8": "fp8_tflops"}.get(dtype, "bf16_tflops")
        return field if getattr(self, field) else "bf16_tflops"
