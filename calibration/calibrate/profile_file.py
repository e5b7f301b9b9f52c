"""Calibration profiles on disk: a versioned JSON document holding the raw timings, the fits, and what was measured.

Raw samples are kept so a fit can be redone without the device (`fit` again from the file), and so a run that was
killed resumes where it stopped: the file is rewritten atomically after every measured point.

`costs_for` is what `recommend` calls on every run. Without --calibration it scans profiles/calibrations/*.json
with the standard json module only (no pydantic import unless a file matches), and a profile applies when its
hardware slug equals the --gpu profile's and its target's (and draft's) architecture numbers equal the models'.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from advisor.errors import InputError

SCHEMA_VERSION = 1
KIND = "specadvisor-calibration"
ARCH_FIELDS = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size", "vocab_size",
               "num_experts")


def arch_of(spec) -> dict[str, int]:
    """The numbers that decide what a forward step costs (ModelSpec fields): two models with the same numbers
    time the same, whatever they are called or whatever their weights."""
    return {name: int(getattr(spec, name)) for name in ARCH_FIELDS}


@cache
def schema() -> SimpleNamespace:
    """The pydantic classes (Profile, ModelRun, Measurement, FittedCost), built on first use so importing this
    module stays cheap."""
    from pydantic import BaseModel, ConfigDict, Field

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")

    class Measurement(Strict):
        kind: Literal["prefill", "decode", "verify"]
        batch: int = Field(ge=1)
        new_tokens: int = Field(ge=1)
        context: int = Field(ge=0)
        heldout: bool  # never seen by the fit; the reported error is measured on these
        samples: list[float] = []  # seconds, one per round

    class FittedCost(Strict):
        bandwidth: float  # bytes/s
        flops: float  # FLOP/s
        step_overhead: float  # s
        token_overhead: float  # s
        seq_overhead: float  # s
        multi_token_overhead: float = 0.0  # s, steps that carry more than one token (GEMM, not GEMV)
        weight_dtype: str
        admission_step: float = 0.0  # s a step admitting new requests pays on top (measurement-only, see fit.py)
        admission_seq: float = 0.0  # s per admitted sequence
        train_median_error: float  # |predicted/measured - 1|
        train_worst_error: float
        heldout_median_error: float
        heldout_worst_error: float
        outliers: list[str] = []  # keys of training points dropped as gross outliers

    class ModelRun(Strict):
        name: str
        source: str  # what --target/--draft said
        arch: dict[str, int]
        config: dict[str, Any]  # the config.json measured, so the run can be reproduced
        engine: dict[str, Any] = {}  # engine args and what vLLM allocated (dtype, block size, KV capacity)
        chunk_tokens: int = 8192  # max_num_batched_tokens: where chunked prefill splits a step
        points: list[Measurement]
        engine_seconds: float = 0.0  # time spent measuring (engine start excluded)
        fit: FittedCost | None = None

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
        note: str = ""  # why it is unfit, when it is

    return SimpleNamespace(Profile=Profile, ModelRun=ModelRun, Measurement=Measurement, FittedCost=FittedCost)


def load(path: str | Path):
    """Read and validate a profile; InputError (one line) when it is not one."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(f"calibration profile {path} does not exist") from None
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"calibration profile {path} is not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise InputError(f"{path} is not a specadvisor calibration profile")
    if raw.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{path} has calibration schema version {raw.get('schema_version')}; this specadvisor "
                         f"reads version {SCHEMA_VERSION}: recalibrate")
    from pydantic import ValidationError

    try:
        return schema().Profile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"calibration profile {path} is malformed at {where}: {first['msg']}") from None


def save(profile, path: str | Path) -> Path:
    from advisor.atomic_write import write_atomic

    return write_atomic(path, profile.model_dump_json(indent=1) + "\n")


def new(**fields):
    return schema().Profile.model_validate({"schema_version": SCHEMA_VERSION, **fields})


def calibrations_dir() -> Path:
    from advisor.profiles.catalog import profiles_dir

    return profiles_dir() / "calibrations"


def _matches(raw: dict, target_arch: dict, draft_arch: dict | None) -> bool:
    """Models match on architecture; a profile with a draft also serves the target alone (ngram)."""
    if raw.get("target", {}).get("arch") != target_arch:
        return False
    return draft_arch is None or (raw.get("draft") or {}).get("arch") == draft_arch


def _fitted_on(slug: str):
    """(created, path, raw dict) of every fitted profile in profiles/calibrations measured on hardware `slug`."""
    folder = calibrations_dir()
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # a broken file in the shipped folder must not break every recommend
        if isinstance(raw, dict) and raw.get("kind") == KIND and raw.get("status") == "fitted" \
                and raw.get("hardware") == slug:
            yield str(raw.get("created", "")), path, raw


def find(target, draft, hw) -> Path | None:
    """The newest fitted profile in profiles/calibrations measured on `hw` for these models, or None."""
    want_target, want_draft = arch_of(target), (arch_of(draft) if draft is not None else None)
    found = [(created, path) for created, path, raw in _fitted_on(hw.slug) if _matches(raw, want_target, want_draft)]
    return max(found)[1] if found else None


def newest_fit_on(slug: str):
    """(EngineCost of the newest target fit on this hardware, a description) or None: used to size a grid."""
    found = max(_fitted_on(slug), default=None, key=lambda item: item[0])
    if found is None:
        return None
    return _cost(found[2]["target"]["fit"]), f"the fit in {found[1].name}"


def costs_for(path: str | None, target, draft, hw):
    """(target cost, draft cost or None, cost_source) from a calibration, or None when none applies.

    Given a path, the profile must be fitted and its models must match (InputError otherwise); it is used even if
    it was measured on other hardware than --gpu, and cost_source says so. Given None, profiles/calibrations is
    searched for one measured on `hw` for these models."""
    auto = path is None
    if auto:
        path = find(target, draft, hw)
        if path is None:
            return None
    profile = load(path)
    if profile.status != "fitted" or profile.target.fit is None:
        raise InputError(f"calibration profile {path} has no fit ({profile.status}"
                         + (f": {profile.note}" if profile.note else "") + "); rerun `specadvisor calibrate --resume`")
    if profile.target.arch != arch_of(target):
        raise InputError(f"calibration profile {path} was measured for {profile.target.name}, whose architecture "
                         f"differs from {target.name}'s")
    if draft is not None and (profile.draft is None or profile.draft.fit is None or profile.draft.arch != arch_of(draft)):
        measured = profile.draft.name if profile.draft is not None else "no draft"
        raise InputError(f"calibration profile {path} was measured with {measured}, not {draft.name}: "
                         "calibrate this pair, or drop --calibration")
    target_cost = _cost(profile.target.fit.model_dump())
    draft_cost = _cost(profile.draft.fit.model_dump()) if draft is not None else None
    worst = max([profile.target.fit.heldout_median_error]
                + ([profile.draft.fit.heldout_median_error] if draft is not None else []))
    where = profile.device.get("gpu") or profile.device.get("cpu") or profile.hardware
    source = (f"calibration {shown(path)} ({'matched automatically; ' if auto else ''}measured "
              f"{profile.created[:10]} on {where} with vLLM {profile.vllm_version}, held-out median error "
              f"{100 * worst:.1f}%)")
    if profile.hardware != hw.slug:
        source += f"; measured on {profile.hardware}, not on {hw.slug}: memory limits still come from {hw.slug}"
    return target_cost, draft_cost, source


def _cost(fit: dict):
    """The EngineCost a stored fit describes (the admission cost is a property of the benchmark, not kept)."""
    from advisor.model.costmodel import EngineCost

    names = ("bandwidth", "flops", "step_overhead", "token_overhead", "seq_overhead", "multi_token_overhead",
             "weight_dtype")
    return EngineCost(**{name: fit[name] for name in names if name in fit})


def shown(path: str | Path) -> str:
    """The path relative to the working directory when it is inside it (as in profiles/calibrations/x.json)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
