"""Where a datasheet prediction leaves the published rows it was fitted on, and how much wider its interval is then.

The intervals of `recommend` come from the datasheet fit's leave-one-source-out residuals by regime
(advisor/model/uncertainty.py). A regime's spread says how far a prediction misses where other sources measured;
it says nothing of a setup no source measured. There the fit's own record is the spread of the rows it had to
predict from parameters no other source fixed (benchmarks/datasheet_errors.py, the "extrapolating" regime: an
engine or a GPU kind that one source alone ran), and an extrapolating answer takes the wider of the two. What the
published rows cover is data (profiles/model-error.json, "covered"); this module only compares. Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from advisor.model.cost.engines import ENGINES, VLLM
from advisor.model.uncertainty import CostError

KIND_NAMES = {"gddr": "GDDR", "cdna3": "AMD CDNA3/CDNA4 HBM", "nvidia-hbm": "NVIDIA HBM"}


@dataclass(frozen=True, slots=True)
class Covered:
    """What the datasheet fit's published rows measured, as far as `reasons` asks."""

    one_source_kinds: dict  # GPU kind (`gpu_kind`) -> the one source whose rows fix its bandwidth share and floors
    engine_vendors: dict  # engine (advisor.model.cost.engines) -> the GPU vendors its rows ran on ("nvidia", "amd")
    one_source_engines: dict  # engine -> the one source whose rows fix its terms
    moe_min_active_b: float  # the sparsest published MoE's active parameters, billions
    moe_max_batch: int  # the largest concurrency of a published MoE row
    max_context: int  # the longest context (prompt + output) a published row prices, tokens

    def __post_init__(self) -> None:
        if self.moe_min_active_b <= 0 or self.moe_max_batch < 1 or self.max_context < 1:
            raise ValueError(f"a coverage needs positive limits, got {self}")


def gpu_kind(gddr: bool, generation: str) -> str:
    """The kind of GPU memory and floors the fit scales apart (benchmarks/datasheet_fit/params.py)."""
    return "gddr" if gddr else "cdna3" if generation == "cdna3" else "nvidia-hbm"


def reasons(covered: Covered, *, kind: str, vendor: str, moe: bool, active_b: float, batch: int, context: int,
            engine: str = VLLM) -> tuple[str, ...]:
    """Each way a setup on `engine` leaves the published rows, in words (empty inside them). `active_b`: the
    target's active parameters per token, billions; `context`: prompt + output tokens; `batch`: concurrent
    requests."""
    out, name = [], ENGINES[engine].name.split(" (")[0]
    if engine in covered.one_source_engines:
        out.append(f"{name}'s terms rest on one source ({covered.one_source_engines[engine]})")
    if kind in covered.one_source_kinds:
        out.append(f"{KIND_NAMES[kind]}'s bandwidth share rests on one source ({covered.one_source_kinds[kind]})")
    if vendor not in covered.engine_vendors.get(engine, ()):
        out.append(f"no published {name} row on an {vendor.upper()} GPU (its rates come from other engines' rows)")
    if moe and batch > 1 and active_b < covered.moe_min_active_b / 2:
        out.append(f"no published row of an MoE this sparse at concurrency above 1 ({active_b:.1f}B active; the "
                   f"sparsest published: {covered.moe_min_active_b:g}B)")
    if moe and batch > covered.moe_max_batch:
        out.append(f"no published MoE row above concurrency {covered.moe_max_batch}")
    if context > covered.max_context:
        out.append(f"no published row prices a context over {covered.max_context} tokens")
    return tuple(out)


def widened(err: CostError, sigma: float) -> CostError:
    """The cost error of an extrapolating answer: every regime's σ at least `sigma` (log units), the spread of the
    published rows the fit predicted from parameters no other source fixed."""
    wider = {name: max(float(s), sigma) for name, s in err.sigma.items()}
    return replace(err, sigma=wider, source=f"{err.source}; extrapolating: σ at least {sigma:.2f}")
