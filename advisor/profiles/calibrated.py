"""Calibrated costs: the read side of calibration profiles (`specadvisor calibrate` writes them).

`costs_for` is what `recommend` asks on every run (as `profile_for` then `costs_from`: the profile read for the
costs also gives their error, `model_error.from_profile`). Without --calibration it scans profiles/calibrations/*.json,
and a profile applies when its hardware slug equals the --gpu profile's and its target's (and draft's) architecture
numbers equal the models'; of those, the one measured at the tensor-parallel size asked for, else at the nearest
(its per-GPU rates and measured all-reduce carry over; cost_source says it extrapolates). Profiles are read with
the json module alone: the pydantic schema that writes them (calibration/calibrate/profile_file.py) would add
~0.2 s to every recommend's start-up, so the few values read here are type-checked here.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from advisor.errors import InputError
from advisor.fileio.json_input import read_json
from advisor.model.cost.enginecost import DEFAULT_ALLREDUCE_LATENCY_S, EngineCost, calibrated_fields
from advisor.model.gpu.hardware import Hardware
from advisor.model.shape.modelspec import ModelSpec
from advisor.profiles.catalog import profiles_dir

# 2: tensor parallelism (settings.tensor_parallel_size, the measured `allreduce` block). Version 1 profiles were all
# measured at TP = 1 and read as such; a reader of version 1 alone would take a TP profile for a TP = 1 one.
SCHEMA_VERSION = 2
READS = (1, 2)
KIND = "specadvisor-calibration"
ARCH_FIELDS = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size", "vocab_size",
               "num_experts")
_NUMBER = (int, float)
_OPTIONAL_OBJECT = (dict, type(None))
_KIND_NAMES = {_NUMBER: "number", str: "string", dict: "dictionary", _OPTIONAL_OBJECT: "dictionary or null"}


def arch_of(spec: ModelSpec) -> dict[str, int]:
    """The numbers that decide what a forward step costs (ModelSpec fields): two models with the same numbers
    time the same, whatever they are called or whatever their weights."""
    return {name: int(getattr(spec, name)) for name in ARCH_FIELDS}


def calibrations_dir() -> Path:
    return profiles_dir() / "calibrations"


def shown(path: str | Path) -> str:
    """The path relative to the working directory when it is inside it (as in profiles/calibrations/x.json)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read(path: str | Path) -> dict:
    """A calibration profile's JSON, once it says it is one, of this schema version; InputError (one line) if not."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"calibration profile {path} does not exist")
    return _readable(read_json(path, "a calibration profile (JSON)"), path)


def _readable(raw, path: str | Path) -> dict:
    """`raw`, once it says it is a calibration profile of a schema version this reads; InputError if not."""
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise InputError(f"{path} is not a specadvisor calibration profile")
    if raw.get("schema_version") not in READS:
        raise InputError(f"{path} has calibration schema version {raw.get('schema_version')}; this specadvisor "
                         f"reads versions {', '.join(map(str, READS))}: recalibrate")
    return raw


def profile_for(path: str | None, target: ModelSpec, draft: ModelSpec | None, hw: Hardware | None,
                tp: int = 1) -> tuple[str | Path, dict] | None:
    """(path, JSON) of the calibration profile that applies, read once: the one given, else `find`'s for `tp` GPUs;
    None when none is found. `costs_from` takes the costs from it, `model_error.from_profile` their error."""
    if path is not None:
        return path, read(path)
    found = find(target, draft, hw, tp)
    return None if found is None else (found[0], _readable(found[1], found[0]))


def cost_of(fit: dict) -> EngineCost:
    """The EngineCost a stored fit describes (its admission cost belongs to the benchmark and is not kept)."""
    return EngineCost(**{f.name: f.type(fit[f.name]) for f in calibrated_fields() if f.name in fit})


def costs_for(path: str | None, target: ModelSpec, draft: ModelSpec | None, hw: Hardware | None,
              tp: int = 1) -> tuple[EngineCost, EngineCost | None, str] | None:
    """(target cost, draft cost or None, cost_source) from a calibration, or None when none applies, for `tp`
    GPUs of tensor parallelism.

    Given a path, the profile must be fitted and its models must match (InputError otherwise); it is used even if
    it was measured on other hardware than --gpu, or at another TP, and cost_source says so. Given None,
    profiles/calibrations is searched for one measured on `hw` for these models (`find`)."""
    found = profile_for(path, target, draft, hw, tp)
    return None if found is None else costs_from(*found, target, draft, hw, tp, auto=path is None)


def costs_from(path: str | Path, raw: dict, target: ModelSpec, draft: ModelSpec | None, hw: Hardware | None, tp: int,
               *, auto: bool) -> tuple[EngineCost, EngineCost | None, str]:
    """`costs_for` on a profile already read (`profile_for`); `auto`: it was found, not given."""
    profile = _checked(raw, path)
    fitted, measured_draft = profile["target"].get("fit"), profile.get("draft")
    if profile["status"] != "fitted" or fitted is None:
        note = profile.get("note", "")
        raise InputError(f"calibration profile {path} has no fit ({profile['status']}"
                         + (f": {note}" if note else "") + "); rerun `specadvisor calibrate --resume`")
    if profile["target"]["arch"] != arch_of(target):
        raise InputError(f"calibration profile {path} was measured for {profile['target']['name']}, whose "
                         f"architecture differs from {target.name}'s")
    if draft is not None and (measured_draft is None or measured_draft.get("fit") is None
                              or measured_draft["arch"] != arch_of(draft)):
        measured = measured_draft["name"] if measured_draft is not None else "no draft"
        raise InputError(f"calibration profile {path} was measured with {measured}, not {draft.name}: "
                         "calibrate this pair, or drop --calibration")
    fits = [fitted] + ([measured_draft["fit"]] if draft is not None else [])
    worst = max(fit["heldout_median_error"] for fit in fits)
    device = profile["device"]
    where = device.get("gpu") or device.get("cpu") or profile["hardware"]
    source = (f"calibration {shown(path)} ({'matched automatically; ' if auto else ''}measured "
              f"{profile['created'][:10]} on {where} with vLLM {profile['vllm_version']}, held-out median error "
              f"{100 * worst:.1f}%)")
    if hw is not None and profile["hardware"] != hw.slug:  # None: a re-analysis, on whatever machine
        source += f"; measured on {profile['hardware']}, not on {hw.slug}: memory limits still come from {hw.slug}"
    link, note = allreduce_terms(profile, hw, tp)
    return (replace(cost_of(fitted), **link), (replace(cost_of(fits[1]), **link) if draft is not None else None),
            source + note)


def tp_of(raw: dict) -> int:
    """The tensor-parallel size a profile was measured at (1 for version-1 profiles, which predate the setting);
    0 when it is not a positive whole number (`_checked` says so; `find` passes over such a file)."""
    settings = raw.get("settings")
    value = settings.get("tensor_parallel_size", 1) if isinstance(settings, dict) else 1
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def allreduce_terms(raw: dict, hw: Hardware | None, tp: int) -> tuple[dict[str, float], str]:
    """(EngineCost's link_bandwidth and allreduce_latency, what cost_source adds) for a profile used at `tp`: the
    all-reduce it measured, else (a TP = 1 profile used at TP > 1) the datasheet link and the default latency."""
    measured = tp_of(raw)
    fit = (raw.get("allreduce") or {}).get("fit")
    if fit is not None:
        link = {"link_bandwidth": float(fit["link_bandwidth"]), "allreduce_latency": float(fit["allreduce_latency"])}
        said = (f"; measured at TP={measured} (all-reduce {link['allreduce_latency'] * 1e6:.3g} µs + message at "
                f"{link['link_bandwidth'] / 1e9:.3g} GB/s)")
    elif tp > 1 and hw is not None:
        link = {"link_bandwidth": hw.interconnect_gbs * 1e9}
        said = (f"; measured at TP={measured}: its all-reduce from the datasheet ({hw.interconnect_gbs:g} GB/s link, "
                f"{DEFAULT_ALLREDUCE_LATENCY_S * 1e6:g} µs per call)")
    else:
        return {}, ""
    if measured != tp:
        said += f", extrapolated to TP={tp}"
    return link, said


def newest_fit_on(slug: str) -> tuple[EngineCost, str] | None:
    """(EngineCost of the newest target fit on this hardware, a description) or None: used to size a grid."""
    found = max(_fitted_on(slug), default=None, key=lambda item: item[0])
    if found is None:
        return None
    _, path, raw = found
    return cost_of(_checked(raw, path)["target"]["fit"]), f"the fit in {path.name}"


def find(target: ModelSpec, draft: ModelSpec | None, hw: Hardware, tp: int = 1) -> tuple[Path, dict] | None:
    """(path, JSON) of the fitted profile in profiles/calibrations measured on `hw` for these models at the
    tensor-parallel size nearest `tp` (by ratio: TP=2 is as near to 4 as 8 is), the newest of those; or None."""
    want_target, want_draft = arch_of(target), (arch_of(draft) if draft is not None else None)
    found = [(-abs(math.log2(tp_of(raw) / tp)), created, path, raw) for created, path, raw in _fitted_on(hw.slug)
             if tp_of(raw) and _matches(raw, want_target, want_draft)]
    return max(found, key=lambda item: item[:3])[2:] if found else None


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


def _checked(raw: dict, path: str | Path) -> dict:
    """`raw`, once every value `costs_for` reads has the JSON type a profile gives it, and every fit makes an
    EngineCost; InputError (one line) naming the first that does not."""
    def need(doc: dict, where: str, kind, optional: bool = False) -> None:
        key = where.rsplit(".", 1)[-1]
        if optional and key not in doc:
            return
        value = doc.get(key)
        if not isinstance(value, kind) or (kind is _NUMBER and isinstance(value, bool)):
            problem = "Field required" if key not in doc else f"Input should be a valid {_KIND_NAMES[kind]}"
            raise InputError(f"calibration profile {path} is malformed at {where}: {problem}")

    for key, kind in (("status", str), ("created", str), ("hardware", str), ("device", dict),
                      ("vllm_version", str), ("target", dict)):
        need(raw, key, kind)
    need(raw, "note", str, optional=True)
    need(raw, "draft", _OPTIONAL_OBJECT, optional=True)
    need(raw, "settings", dict, optional=True)
    if not tp_of(raw):
        raise InputError(f"calibration profile {path} is malformed at settings.tensor_parallel_size: Input should be "
                         "a positive integer")
    need(raw, "allreduce", _OPTIONAL_OBJECT, optional=True)
    if (raw.get("allreduce") or {}).get("fit") is not None:
        need(raw["allreduce"], "allreduce.fit", dict)
        for key in ("allreduce_latency", "link_bandwidth"):
            need(raw["allreduce"]["fit"], f"allreduce.fit.{key}", _NUMBER)
        link = raw["allreduce"]["fit"]
        if link["link_bandwidth"] <= 0 or link["allreduce_latency"] < 0:
            raise InputError(f"calibration profile {path} is malformed at allreduce.fit: the link bandwidth must be "
                             "positive and the latency not negative")
    for role in ("target", "draft"):
        run = raw.get(role)
        if run is None:
            continue
        need(run, f"{role}.name", str)
        need(run, f"{role}.arch", dict)
        need(run, f"{role}.fit", _OPTIONAL_OBJECT, optional=True)
        fit = run.get("fit")
        if fit is None:
            continue
        need(fit, f"{role}.fit.heldout_median_error", _NUMBER)
        for f in calibrated_fields():
            need(fit, f"{role}.fit.{f.name}", _NUMBER if f.type is float else f.type, optional=not f.how.required)
        try:
            cost_of(fit)
        except ValueError as exc:
            raise InputError(f"calibration profile {path} is malformed at {role}.fit: {exc}") from None
    return raw
