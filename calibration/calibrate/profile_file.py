"""Calibration profiles on disk: a versioned JSON document holding the raw timings, the fits, and what was measured.

Raw samples are kept so a fit can be redone without the device (`fit_profile` again from the file), and so a run
that was killed resumes where it stopped: the file is rewritten atomically after every measured point. This is the
schema that writes and validates them; `recommend` reads them without it (advisor/profiles/calibrated.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from advisor.errors import InputError
from advisor.fileio.atomic_write import write_atomic
from advisor.model.cost.enginecost import calibrated_fields
from advisor.profiles.calibrated import KIND, SCHEMA_VERSION, read
from advisor.vllm.defaults import MAX_NUM_BATCHED_TOKENS


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Measurement(Strict):
    kind: Literal["prefill", "decode", "verify"]
    batch: int = Field(ge=1)
    new_tokens: int = Field(ge=1)
    context: int = Field(ge=0)
    heldout: bool  # never seen by the fit; the reported error is measured on these
    uniform: bool = False  # verify timed as a uniform decode of q tokens per sequence (calibrate/bench.py)
    graph_mode: Literal["", "FULL", "PIECEWISE", "NONE"] = ""  # how vLLM ran the step ("": not recorded)
    samples: list[float] = []  # seconds, one per round


# The fitted EngineCost (its calibrated fields, required or defaulted as they say), then how well it predicts.
FittedCost = create_model(
    "FittedCost", __base__=Strict,
    **{f.name: (f.type, ... if f.how.required else f.default) for f in calibrated_fields()},
    admission_step=(float, 0.0),  # s a step admitting new requests pays on top (measurement-only, see fit.py)
    admission_seq=(float, 0.0),  # s per admitted sequence
    train_median_error=(float, ...),  # |predicted/measured - 1|
    train_worst_error=(float, ...),
    heldout_median_error=(float, ...),
    heldout_worst_error=(float, ...),
    outliers=(list[str], []),  # keys of training points dropped as gross outliers
    unfitted=(dict[str, str], {}),  # EngineCost fields the grid does not identify (kept at their defaults) -> why
)


class ModelRun(Strict):
    name: str
    source: str  # what --target/--draft said
    arch: dict[str, int]
    config: dict[str, Any]  # the config.json measured, so the run can be reproduced
    engine: dict[str, Any] = {}  # engine args and what vLLM allocated (dtype, block size, KV capacity)
    chunk_tokens: int = MAX_NUM_BATCHED_TOKENS  # max_num_batched_tokens: where chunked prefill splits a step
    points: list[Measurement]
    engine_seconds: float = 0.0  # time spent measuring (engine start excluded)
    fit: FittedCost | None = None


class AllReducePoint(Strict):
    tokens: int = Field(ge=1)  # rows of the hidden-state tensor all-reduced
    bytes: int = Field(ge=1)  # its size: tokens × hidden × bytes per element
    samples: list[float] = []  # seconds per call over the ranks (engine/allreduce_paths.combine_ranks), one per burst
    timed: Literal["eager", "graph", "fused"] = "eager"  # how (engine/allreduce_paths.timing_path); profiles before: eager


class AllReduceFitted(Strict):
    allreduce_latency: float = Field(ge=0)  # s per call (EngineCost.allreduce_latency)
    link_bandwidth: float = Field(gt=0)  # bytes/s (EngineCost.link_bandwidth)
    median_error: float  # |predicted/measured - 1| over the ladder
    worst_error: float


class AllReduce(Strict):
    """vLLM's tensor-parallel all-reduce timed in the target's engine (calibration/calibrate/allreduce.py)."""

    tensor_parallel_size: int = Field(ge=2)
    points: list[AllReducePoint]
    fit: AllReduceFitted | None = None


class Profile(Strict):
    kind: Literal["specadvisor-calibration"] = KIND
    schema_version: int
    status: Literal["partial", "measured", "fitted", "unfit"]
    created: str  # ISO 8601, UTC
    hardware: str  # hardware profile slug the timings belong to
    device: dict[str, Any]  # GPU/driver (NVML) or CPU model, platform, library versions
    vllm_version: str
    settings: dict[str, Any]  # the grid's parameters and flags, for --resume and for reproduction
    target: ModelRun
    draft: ModelRun | None = None
    allreduce: AllReduce | None = None  # measured when settings.tensor_parallel_size > 1
    note: str = ""  # why it is unfit, when it is


def load(path: str | Path) -> Profile:
    """Read and validate a profile; InputError (one line) when it is not one."""
    raw = read(path)
    try:
        return Profile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"calibration profile {path} is malformed at {where}: {first['msg']}") from None


def save(profile: Profile, path: str | Path) -> Path:
    return write_atomic(path, profile.model_dump_json(indent=1) + "\n")


def new(**fields) -> Profile:
    return Profile.model_validate({"schema_version": SCHEMA_VERSION, **fields})
