"""The cost model's error is read from data (profiles/model-error.json, a calibration's held-out error)."""

import json

import pytest

from advisor.errors import InputError
from advisor.model.uncertainty import TARGET_REGIMES
from advisor.profiles.calibrated import calibrations_dir
from advisor.profiles.catalog import profiles_dir
from advisor.profiles.model_error import FILE, datasheet, from_calibration


def test_the_shipped_error_file_gives_every_regime_a_spread_from_its_rows():
    raw = json.loads((profiles_dir() / FILE).read_text())
    err = datasheet()
    for name in (*TARGET_REGIMES, "drafter"):
        assert err.sigma[name] == raw["regimes"][name]["sigma_log"] > 0
    assert 0.7 <= raw["coverage"]["training_fraction"] <= 0.9  # issue 27's bar for the 80% interval


def test_a_calibration_carries_its_held_out_error():
    path = sorted(calibrations_dir().glob("*.json"))[0]
    raw = json.loads(path.read_text())
    err = from_calibration(path)
    assert err.kind == "calibration"
    assert f"{100 * raw['target']['fit']['heldout_median_error']:.1f}%" in err.source
    # narrower than the datasheet's in every regime: what a calibration on this engine buys (a regime against
    # another is no comparison: the datasheet's compute-bound rows are few and close, its drafter rows far apart)
    shipped = datasheet().sigma
    assert all(err.sigma[name] < shipped[name] for name in err.sigma), (err.sigma, shipped)


def test_a_missing_error_file_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "hardware").mkdir()
    monkeypatch.setattr("advisor.profiles.model_error.profiles_dir", lambda: tmp_path)
    datasheet.cache_clear()
    try:
        with pytest.raises(InputError, match="model-error.json"):
            datasheet()
    finally:
        datasheet.cache_clear()
