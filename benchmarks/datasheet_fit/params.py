"""The parameters fitted: how they map onto EngineCost, their priors, and the two stages that fit them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.model import enginecost as ec
from advisor.model.enginecost import EngineCost
from advisor.model.hardware import Hardware
from advisor.model.kernels import generation


@dataclass(frozen=True)
class Param:
    name: str  # an EngineCost field, or <rate>_efficiency (a fraction of the datasheet peak)
    log: bool  # fitted as its logarithm
    prior: float  # the value shipped before this fit (or a weak physical guess for a new field)
    sigma: float  # in log units (log) or the value's own unit
    bounds: tuple[float, float]
    unit: str = ""
    scale: float = 1.0  # display: value × scale in `unit`
    default: float = 0.0  # what advisor/model/enginecost.py ships (DEFAULT_*)


PARAMS = (
    # issue 24: each prior is the default shipped before this refit (issue 13's fit), so rows that see a parameter
    # move it and the others leave it where the earlier sources put it
    Param("bandwidth_efficiency", True, 0.75, 0.3, (0.3, 1.0), default=ec.DEFAULT_BANDWIDTH_EFFICIENCY),
    Param("kv_bandwidth_efficiency", True, 0.85, 0.3, (0.3, 1.0), default=ec.DEFAULT_KV_BANDWIDTH_EFFICIENCY),
    Param("flops_efficiency", True, 0.57, 0.5, (0.1, 1.0), default=ec.DEFAULT_FLOPS_EFFICIENCY),
    Param("overlap_exponent", True, 1.4, 1.5, (1.0, 50.0), default=ec.DEFAULT_OVERLAP_EXPONENT),
    # held near 0 (sigma 20 µs): free, the other engines' per-step costs (which the generation floors carry) leak
    # into every vLLM step through it and put §1's H100 steps 8-10% too slow
    Param("step_overhead", False, 0.0, 2.0e-5, (0.0, 5e-3), "ms", 1e3, ec.DEFAULT_STEP_OVERHEAD_S),
    Param("seq_overhead", False, 0.0, 2.0e-5, (0.0, 5e-4), "µs", 1e6, 0.0),
    Param("token_overhead", False, 0.0, 5.0e-6, (0.0, 1e-4), "µs", 1e6, ec.DEFAULT_TOKEN_OVERHEAD_S),
    Param("draft_pass_overhead", False, 7.2e-5, 5.0e-4, (0.0, 3e-3), "ms", 1e3, ec.DEFAULT_DRAFT_PASS_OVERHEAD_S),
    Param("layer_floor_piecewise", False, 1.05e-4, 5.0e-5, (0.0, 5e-4), "µs", 1e6, ec.DEFAULT_LAYER_FLOOR_PIECEWISE_S),
    # per 6 small kernels now (a dense layer's; issue 24): it was per 10 kernels, GEMMs included, at 4.2 µs
    Param("layer_floor_graph", False, 4.2e-6, 2.0e-5, (0.0, 2e-4), "µs", 1e6, ec.DEFAULT_LAYER_FLOOR_GRAPH_S),
    Param("spec_overhead", False, 1.2e-3, 1.0e-3, (0.0, 5e-3), "ms", 1e3, ec.DEFAULT_SPEC_OVERHEAD_S),
    Param("spec_seq_overhead", False, 0.0, 2.0e-5, (0.0, 5e-4), "µs", 1e6, 0.0),
    Param("ngram_overhead", False, 3.5e-5, 5.0e-5, (0.0, 1e-3), "µs", 1e6, ec.DEFAULT_NGRAM_OVERHEAD_S),
    Param("ngram_seq_overhead", False, 6e-7, 2.0e-5, (0.0, 2e-4), "µs", 1e6, ec.DEFAULT_NGRAM_SEQ_OVERHEAD_S),
    # issue 24: MoE dispatch kernels' floor, and the generations' floors relative to Hopper's. Priors from first
    # principles: a kernel with a grid-wide step over a few tokens takes a few µs; every generation like Hopper until
    # a row says otherwise (data-center Blackwell stays there: vLLM's B300 rows fit at Hopper's floors). The
    # all-reduce's latency is not fitted: every multi-GPU row is TP4/TP8 on a fully connected link, where it cannot
    # be told from the kernel floors (a free fit puts it at 0 and the rest in them).
    Param("moe_kernel_floor", False, 5.0e-6, 5.0e-6, (0.0, 1e-4), "µs", 1e6, ec.DEFAULT_MOE_KERNEL_FLOOR_S),
    Param("floor_scale_ampere", True, 1.0, 1.0, (0.2, 50.0), default=ec.DEFAULT_FLOOR_SCALE["ampere"]),
    Param("floor_scale_cdna3", True, 1.0, 1.0, (0.2, 50.0), default=ec.DEFAULT_FLOOR_SCALE["cdna3"]),
    # the share of the datasheet's matmul peak CDNA3 reaches, relative to the NVIDIA GPUs' (`flops_efficiency`)
    Param("flops_scale_cdna3", True, 1.0, 0.5, (0.01, 2.0), default=ec.DEFAULT_FLOPS_SCALE["cdna3"]),
    # the share of its peak graphics memory (GDDR) streams, relative to HBM's (`bandwidth_efficiency`)
    Param("bandwidth_scale_gddr", True, 1.0, 0.3, (0.3, 1.5), default=ec.DEFAULT_GDDR_BANDWIDTH_SCALE),
)
SCALED = ("layer_floor_graph", "moe_kernel_floor")  # kernels.generation scales these
PRIOR_WEIGHT = 0.05  # a one-sigma move from the prior costs as much as a 5% miss on one row
SHIPPED = {p.name: p.default for p in PARAMS}
PRIORS = {p.name: p.prior for p in PARAMS}
# The fit runs in two stages. The first fits what every engine shares on vLLM's own rows on NVIDIA GPUs (VLLM_V1:
# §1 on H100, the A100 PRs, §6's B300): rates, overlap, floors (the small kernels' and the MoE kernels', by §6's B300
# DeepSeek-V3.2, whose layers are mostly floors), Ampere's floor scale, the drafter's and the bookkeeping's costs.
# Held at 0: per-step, per-sequence and per-token host terms, which these rows put at 0 when free (issue 13). The
# second fits the scales of a kind no first-stage row has (CDNA3's on S8, GDDR's on S5) with the first stage's values
# held: a joint fit let those rows pull the shared ones (A40's with them: §1's H100 steps up to 9% too slow).
HELD_AT_PRIOR = frozenset({"step_overhead", "seq_overhead", "token_overhead", "spec_seq_overhead"})
STAGE_TWO_NAMES = frozenset({"floor_scale_cdna3", "flops_scale_cdna3", "bandwidth_scale_gddr"})
STAGE_ONE = tuple(p for p in PARAMS if p.name not in HELD_AT_PRIOR | STAGE_TWO_NAMES)
STAGE_TWO = tuple(p for p in PARAMS if p.name in STAGE_TWO_NAMES)


def engine_cost(hw: Hardware, v: dict, dtype: str = "bf16", max_num_seqs: int | None = None) -> EngineCost:
    """The EngineCost `from_datasheet` builds on `hw`, with the parameters `v` instead of the shipped defaults
    (and `floor_exponent` from `v` when it has one: the sensitivity study below)."""
    memory = hw.bandwidth_bytes_per_s * (v["bandwidth_scale_gddr"] if hw.gddr else 1.0)
    rates = {"bandwidth": memory * v["bandwidth_efficiency"], "kv_bandwidth": memory * v["kv_bandwidth_efficiency"],
             "flops": hw.peak_flops(dtype) * v["flops_efficiency"] * v.get(f"flops_scale_{generation(hw)}", 1.0)}
    scale = v.get(f"floor_scale_{generation(hw)}", 1.0)
    rest = {p.name: v[p.name] * (scale if p.name in SCALED else 1.0) for p in PARAMS
            if not p.name.endswith("_efficiency") and "_scale_" not in p.name}
    floor = {"floor_exponent": v["floor_exponent"]} if "floor_exponent" in v else {}
    return replace(EngineCost.from_datasheet(hw, dtype), **rates, **rest, **floor).for_hardware(hw, max_num_seqs)

