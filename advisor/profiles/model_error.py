"""The cost model's error, read from data: profiles/model-error.json for the datasheet defaults (written by
benchmarks/datasheet_errors.py from the fit's leave-one-source-out residuals), or a calibration profile's held-out
error. Read with the json module alone; the math that uses it is advisor/model/uncertainty.py."""

from __future__ import annotations

import json
from functools import cache

from advisor.errors import InputError
from advisor.model.uncertainty import CostError, TARGET_REGIMES, from_median_error
from advisor.profiles.calibrated import read, shown
from advisor.profiles.catalog import profiles_dir

KIND = "specadvisor-model-error"
FILE = "model-error.json"
DATASHEET = "datasheet"  # --calibration datasheet: the datasheet costs even where a calibration would apply


@cache
def datasheet() -> CostError:
    """The datasheet defaults' error by regime (profiles/model-error.json); InputError (one line) if unreadable."""
    path = profiles_dir() / FILE
    try:
        raw = json.loads(path.read_text())
        regimes = raw["regimes"]
        sigma = {name: float(regimes[name]["sigma_log"]) for name in (*TARGET_REGIMES, "drafter")}
        long_context, compute_bound = float(raw["long_context_tokens"]), float(raw["compute_bound_ridge_share"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path} is missing or not a {KIND} file ({exc}): reinstall the package, or rerun "
                         "benchmarks/datasheet_errors.py") from None
    return CostError(sigma, f"datasheet fit, leave-one-source-out ({FILE})", "datasheet", long_context,
                     compute_bound)


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
