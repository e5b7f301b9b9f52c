"""The parameters fitted: how they map onto EngineCost, their priors, and the two stages that fit them."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from advisor.model.cost import enginecost as ec
from advisor.model.cost.enginecost import EngineCost
from advisor.model.cost.engines import ENGINES, TERMS, VLLM
from advisor.model.gpu.hardware import Hardware
from advisor.model.gpu.kernels import generation

# The physical ranges every fitted rate and floor is held in (a penalty in the fit past them, `range_residuals`):
# issue 33's microbenchmark ranges, each checked against a measurement of the reference
# (../shared/reference/gpu-measurements.md):
# - a large GEMM reaches 0.4-0.85 of the dense peak; §1's H100 adds 21 µs per batched 8B token, 77% of bf16 peak;
# - weight streaming reaches 0.6-0.95 of the datasheet bandwidth; §1's 8B decode step (16 GB in 5.9 ms at batch 1,
#   the weights alone 4.8 ms at the 3.35 TB/s peak) streams at >= 0.81 of it, kernels included;
# - a small kernel takes a few µs (1.5-10 µs: one launch-bound grid step; §7's H20 decode attention over 8 × 1k KV
#   takes 19-35 µs, a kernel with real work), an MoE dispatch kernel 2-25 µs (§7's whole FusedMoE layer over 4
#   tokens, several kernels, is 42-75 µs on an H20).
GEMM_RANGE = (0.40, 0.85)
STREAM_RANGE = (0.60, 0.95)
SMALL_KERNEL_RANGE = (1.5e-6, 10e-6)
MOE_KERNEL_RANGE = (2e-6, 25e-6)
# one small all-reduce over 2-8 GPUs: a one-shot custom all-reduce over NVLink takes single-digit µs, NCCL's or
# RCCL's small-message all-reduce over 8 GPUs some 15-40 µs (nccl-tests' latency at 8 B)
ALLREDUCE_RANGE = (4e-6, 40e-6)
SMALL_KERNELS = 6  # a dense layer's small kernels, which `layer_floor_graph` is quoted per (advisor.model.gpu.kernels)


@dataclass(frozen=True)
class Param:
    name: str  # an EngineCost field, <rate>_efficiency (a fraction of the datasheet peak), or <term>@<engine>
    log: bool  # fitted as its logarithm
    prior: float  # the value shipped before this fit (or a weak physical guess for a new field)
    sigma: float  # in log units (log) or the value's own unit
    bounds: tuple[float, float]
    unit: str = ""
    scale: float = 1.0  # display: value × scale in `unit`
    default: float = 0.0  # what advisor/model/cost/enginecost.py ships (DEFAULT_*)


PHYSICS = (
    # issue 24: each prior is the default shipped before this refit (issue 13's fit), so rows that see a parameter
    # move it and the others leave it where the earlier sources put it; bounds are the physical ranges above
    Param("bandwidth_efficiency", True, 0.75, 0.3, STREAM_RANGE, default=ec.DEFAULT_BANDWIDTH_EFFICIENCY),
    Param("kv_bandwidth_efficiency", True, 0.85, 0.3, STREAM_RANGE, default=ec.DEFAULT_KV_BANDWIDTH_EFFICIENCY),
    Param("flops_efficiency", True, 0.57, 0.5, GEMM_RANGE, default=ec.DEFAULT_FLOPS_EFFICIENCY),
    Param("overlap_exponent", True, 1.4, 1.5, (1.0, 50.0), default=ec.DEFAULT_OVERLAP_EXPONENT),
    Param("layer_floor_piecewise", False, 1.05e-4, 5.0e-5, (0.0, 5e-4), "µs", 1e6, ec.DEFAULT_LAYER_FLOOR_PIECEWISE_S),
    # per 6 small kernels (a dense layer's; issue 24)
    Param("layer_floor_graph", False, 28e-6, 2.0e-5, tuple(SMALL_KERNELS * x for x in SMALL_KERNEL_RANGE), "µs", 1e6,
          ec.DEFAULT_LAYER_FLOOR_GRAPH_S),
    Param("ngram_overhead", False, 3.5e-5, 5.0e-5, (0.0, 1e-3), "µs", 1e6, ec.DEFAULT_NGRAM_OVERHEAD_S),
    Param("ngram_seq_overhead", False, 6e-7, 2.0e-5, (0.0, 2e-4), "µs", 1e6, ec.DEFAULT_NGRAM_SEQ_OVERHEAD_S),
    # issue 24: MoE dispatch kernels' floor, and the generations' floors relative to Hopper's (every generation like
    # Hopper until a row says otherwise). Issue 33: the all-reduce's latency, fitted in ALLREDUCE_RANGE: the TP1
    # rows (§1's H100, the A100 PRs) fix the floors, so the TP4/TP8 rows tell a step's all-reduces apart from them
    # (held at an 8 µs guess before, it left every TP8 step at low batch 10-24% fast: §6's B300 and MI300X rows).
    Param("moe_kernel_floor", False, 5.0e-6, 5.0e-6, MOE_KERNEL_RANGE, "µs", 1e6, ec.DEFAULT_MOE_KERNEL_FLOOR_S),
    Param("allreduce_latency", False, 8.0e-6, 8.0e-6, ALLREDUCE_RANGE, "µs", 1e6, ec.DEFAULT_ALLREDUCE_LATENCY_S),
    Param("floor_scale_ampere", True, 1.0, 1.0, (0.2, 50.0), default=ec.DEFAULT_FLOOR_SCALE["ampere"]),
    Param("floor_scale_cdna3", True, 1.0, 1.0, (0.2, 50.0), default=ec.DEFAULT_FLOOR_SCALE["cdna3"]),
    # the share of its peak a memory kind or generation streams, relative to HBM on NVIDIA's (`bandwidth_efficiency`):
    # held by `range_residuals` so that the product stays in STREAM_RANGE
    Param("bandwidth_scale_gddr", True, 1.0, 0.3, (0.3, 1.5), default=ec.DEFAULT_GDDR_BANDWIDTH_SCALE),
    Param("bandwidth_scale_cdna3", True, 1.0, 0.3, (0.3, 1.5), default=ec.DEFAULT_BANDWIDTH_SCALE["cdna3"]),
)
# What an engine build pays beyond the shared physics, per engine (sources.ENGINE): per engine step, per token per
# step and draft pass, per drafter launch, per speculative step (bookkeeping). vLLM's are the plain EngineCost
# fields (what `recommend` ships); another engine's are "<field>@<engine>", fitted on its rows only.
ENGINE_TERMS = TERMS
VLLM_TERMS = (
    # held near 0 (sigma 20 µs): free, the other engines' per-step costs leak into every vLLM step through it
    Param("step_overhead", False, 0.0, 2.0e-5, (0.0, 5e-3), "ms", 1e3, ec.DEFAULT_STEP_OVERHEAD_S),
    Param("seq_overhead", False, 0.0, 2.0e-5, (0.0, 5e-4), "µs", 1e6, 0.0),
    Param("token_overhead", False, 0.0, 5.0e-6, (0.0, 1e-4), "µs", 1e6, ec.DEFAULT_TOKEN_OVERHEAD_S),
    Param("draft_pass_overhead", False, 7.2e-5, 5.0e-4, (0.0, 3e-3), "ms", 1e3, ec.DEFAULT_DRAFT_PASS_OVERHEAD_S),
    Param("spec_overhead", False, 1.2e-3, 1.0e-3, (0.0, 5e-3), "ms", 1e3, ec.DEFAULT_SPEC_OVERHEAD_S),
    Param("spec_seq_overhead", False, 0.0, 2.0e-5, (0.0, 5e-4), "µs", 1e6, 0.0),
)


# The other engines' terms as fitted (rounded), s: the "shipped" column's for their rows, and what
# `recommend --engine` prices (advisor/model/cost/engines.py, where they live)
ENGINE_SHIPPED = {f"{t}@{e.slug}": x for e in ENGINES.values() for t, x in e.terms.items()}


def engine_terms(engine: str, terms: tuple[str, ...]) -> tuple[Param, ...]:
    """`terms` of another engine: priors at vLLM's (per step and per token: none), weak (a few rows fix them)."""
    vllm = {p.name: p for p in VLLM_TERMS}
    wide = {"step_overhead": 2e-3, "token_overhead": 2e-5, "draft_pass_overhead": 5e-4, "spec_overhead": 1e-3}
    return tuple(replace(vllm[t], name=f"{t}@{engine}", sigma=wide[t], default=ENGINE_SHIPPED[f"{t}@{engine}"])
                 for t in terms)


# The engines' own terms: those their rows can tell apart (sources.ENGINE; an engine without speculative rows has
# none of the speculative terms, and predicts them at vLLM's)
OTHER_ENGINES = tuple(p for e in ENGINES.values() if e.slug != VLLM for p in engine_terms(e.slug, tuple(e.terms)))
PARAMS = PHYSICS + VLLM_TERMS + OTHER_ENGINES
SCALED = ("layer_floor_graph", "moe_kernel_floor")  # kernels.generation scales these
PRIOR_WEIGHT = 0.05  # a one-sigma move from the prior costs as much as a 5% miss on one row
RANGE_WEIGHT = 100.0  # 1% (log) past a physical range costs as much as a 100% miss on one row
SHIPPED = {p.name: p.default for p in PARAMS}
PRIORS = {p.name: p.prior for p in PARAMS}
# The fit runs in two stages. The first fits the physics every engine shares, and vLLM's own terms, on vLLM's rows
# on NVIDIA HBM GPUs (sources.VLLM_V1): rates, overlap, floors, Ampere's floor scale, the drafter's and the
# bookkeeping's costs. Held at 0: vLLM's per-step, per-sequence and per-token host terms, which these rows put at 0
# when free (issue 13). The second fits, with the first stage's values held, what no first-stage row sees: the
# other engines' terms, and the scales of a GPU kind no first-stage row has (CDNA3's on S8 and S13, GDDR's on S5).
HELD_AT_PRIOR = frozenset({"step_overhead", "seq_overhead", "token_overhead", "spec_seq_overhead"})
STAGE_TWO_NAMES = frozenset({"floor_scale_cdna3", "bandwidth_scale_cdna3", "bandwidth_scale_gddr",
                             *(p.name for p in OTHER_ENGINES)})
STAGE_ONE = tuple(p for p in PARAMS if p.name not in HELD_AT_PRIOR | STAGE_TWO_NAMES)
STAGE_TWO = tuple(p for p in PARAMS if p.name in STAGE_TWO_NAMES)


def for_engine(v: dict, engine: str) -> dict:
    """The parameters as `engine`'s rows see them: its own terms in place of vLLM's where it has them."""
    own = {t: v[f"{t}@{engine}"] for t in ENGINE_TERMS if f"{t}@{engine}" in v}
    return {**v, **own} if own else v


def unseen_engine_terms(v: dict, engine: str, seen: set[str]) -> dict:
    """What an engine no training row ran pays beyond the physics: each of ENGINE_TERMS at the median over the
    engines whose rows fitted it (vLLM's own value included; an engine without the term is not counted). The engines
    are a population, each with its own build's costs; a new one is a draw from it, and how far it lands from the
    median is the leave-one-source-out error of the sources that stand alone in their engine."""
    out = {}
    for t in ENGINE_TERMS:
        values = [v[t]] + [v[f"{t}@{e}"] for e in sorted(seen) if f"{t}@{e}" in v]
        out[f"{t}@{engine}"] = float(np.median(values))
    return out


def efficiencies(v: dict) -> list[tuple[str, float, tuple[float, float]]]:
    """(what, value, physical range) of every rate and floor the parameters imply, on every GPU kind the rows have:
    what `range_residuals` holds inside its range and the report lists."""
    small = v["layer_floor_graph"] / SMALL_KERNELS
    out = [("weight streaming, HBM (NVIDIA)", v["bandwidth_efficiency"], STREAM_RANGE),
           ("KV streaming, HBM (NVIDIA)", v["kv_bandwidth_efficiency"], STREAM_RANGE),
           ("weight streaming, GDDR", v["bandwidth_efficiency"] * v["bandwidth_scale_gddr"], STREAM_RANGE),
           ("weight streaming, HBM (CDNA3)", v["bandwidth_efficiency"] * v["bandwidth_scale_cdna3"], STREAM_RANGE),
           ("KV streaming, HBM (CDNA3)", v["kv_bandwidth_efficiency"] * v["bandwidth_scale_cdna3"], STREAM_RANGE),
           ("large GEMM, every GPU", v["flops_efficiency"], GEMM_RANGE)]
    for gen in ("hopper", "ampere", "cdna3"):
        scale = v.get(f"floor_scale_{gen}", 1.0)
        out += [(f"small kernel, {gen} (s)", small * scale, SMALL_KERNEL_RANGE),
                (f"MoE dispatch kernel, {gen} (s)", v["moe_kernel_floor"] * scale, MOE_KERNEL_RANGE)]
    return out + [("one small all-reduce (s)", v["allreduce_latency"], ALLREDUCE_RANGE)]


def range_residuals(v: dict) -> list[float]:
    """RANGE_WEIGHT × how far (log) each of `efficiencies` lies outside its range; 0 inside."""
    return [RANGE_WEIGHT * max(0.0, math.log(lo / x), math.log(x / hi)) for _, x, (lo, hi) in efficiencies(v)]


def engine_cost(hw: Hardware, v: dict, dtype: str = "bf16", max_num_seqs: int | None = None) -> EngineCost:
    """The EngineCost `from_datasheet` builds on `hw`, with the parameters `v` instead of the shipped defaults
    (and `floor_exponent` from `v` when it has one: the sensitivity study). Cached: a fit builds the same few
    thousands of times per solve."""
    return _engine_cost(hw, tuple(sorted(v.items())), dtype, max_num_seqs)


@lru_cache(maxsize=4096)
def _engine_cost(hw: Hardware, items: tuple, dtype: str, max_num_seqs: int | None) -> EngineCost:
    v = dict(items)
    gen = generation(hw)
    memory = hw.bandwidth_bytes_per_s * (v["bandwidth_scale_gddr"] if hw.gddr else 1.0)
    memory *= v.get(f"bandwidth_scale_{gen}", 1.0)
    rates = {"bandwidth": memory * v["bandwidth_efficiency"], "kv_bandwidth": memory * v["kv_bandwidth_efficiency"],
             "flops": hw.peak_flops(dtype) * v["flops_efficiency"]}
    scale = v.get(f"floor_scale_{gen}", 1.0)
    rest = {p.name: v[p.name] * (scale if p.name in SCALED else 1.0) for p in PHYSICS + VLLM_TERMS
            if not p.name.endswith("_efficiency") and "_scale_" not in p.name}
    floor = {"floor_exponent": v["floor_exponent"]} if "floor_exponent" in v else {}
    return replace(EngineCost.from_datasheet(hw, dtype), **rates, **rest, **floor).for_hardware(hw, max_num_seqs)
