"""The read side of calibration profiles (advisor/profiles/calibrated.py): what `recommend` finds, read without
pydantic, and one line for a profile that is not one."""

import json
import subprocess
import sys

import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.model.costmodel import calibrated_fields
from advisor.model.modelspec import spec_from_config
from advisor.profiles.calibrated import calibrations_dir, costs_for, newest_fit_on, read
from advisor.profiles.catalog import load_hardware
from calibration.engine.tinymodels import TINY_TARGET

HW = "cpu-xeon-icelake-2vcpu"
SHIPPED = calibrations_dir() / "cpu-xeon-icelake-2vcpu__tiny-llama-target__tiny-llama-draft.json"


def _shipped_with(tmp_path, change) -> str:
    raw = json.loads(SHIPPED.read_text())
    change(raw)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(raw))
    return str(path)


@pytest.mark.parametrize("content, match", [("{", "not valid JSON"), ('{"kind": "x"}', "not a specadvisor"),
                                            ('{"kind": "specadvisor-calibration", "schema_version": 99}', "version 99"),
                                            ('{"kind": "specadvisor-calibration", "schema_version": 1}',
                                             "malformed at status: Field required")])
def test_malformed_profiles_are_one_line_errors(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(InputError, match=match):
        costs_for(str(path), spec_from_config(TINY_TARGET, "t"), None, load_hardware(HW))


@pytest.mark.parametrize("change, match", [
    (lambda raw: raw["target"].update(arch=[1]), "at target.arch: Input should be a valid dictionary"),
    (lambda raw: raw["target"]["fit"].update(bandwidth="fast"), "at target.fit.bandwidth: Input should be a valid number"),
    (lambda raw: raw["target"]["fit"].pop("step_overhead"), "at target.fit.step_overhead: Field required"),
    (lambda raw: raw["draft"]["fit"].update(seq_overhead=-1.0), "at draft.fit: EngineCost: overheads cannot be negative"),
])
def test_values_recommend_reads_are_checked_without_the_schema(tmp_path, change, match):
    with pytest.raises(InputError, match=match):
        costs_for(_shipped_with(tmp_path, change), spec_from_config(TINY_TARGET, "t"), None, load_hardware(HW))


def test_the_shipped_fits_store_the_calibrated_fields_in_their_order():
    fit = json.loads(SHIPPED.read_text())["target"]["fit"]
    names = [f.name for f in calibrated_fields()]
    assert [name for name in names if name in fit] == [key for key in fit if key in names]


def test_a_profile_missing_a_parameter_added_later_still_applies(tmp_path):
    path = _shipped_with(tmp_path, lambda raw: raw["target"]["fit"].pop("multi_token_overhead"))
    target = spec_from_config(json.loads(SHIPPED.read_text())["target"]["config"], "t")
    cost, _, _ = costs_for(path, target, None, load_hardware(HW))
    assert cost.multi_token_overhead == 0.0
    assert read(path)["kind"] == "specadvisor-calibration"


def test_the_newest_fit_on_a_machine_sizes_its_next_grid():
    cost, basis = newest_fit_on(HW)
    assert cost.bandwidth > 0 and basis.startswith("the fit in ")
    assert newest_fit_on("h100-sxm") is None


def test_recommend_without_a_matching_calibration_stays_on_the_datasheet_and_does_not_load_pydantic():
    code = ("import sys; from advisor.resolve import engine_costs; from advisor.profiles.catalog import load_model, "
            "load_hardware; t, d, s = engine_costs(load_hardware('h100-sxm'), load_model('llama-3.1-8b-instruct'), "
            "load_model('llama-3.2-1b-instruct'), None, 'bf16'); print(s.split()[0], 'pydantic' in sys.modules, "
            "any(m.startswith('calibration') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["datasheet", "False", "False"]


def test_the_shipped_cpu_calibration_is_found_for_the_tiny_pair_on_its_hardware(capsys):
    code = main(["recommend", "--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", HW,
                 "--prompt-len", "256", "--out-len", "64", "--format", "json"])
    assert code == 0
    source = json.loads(capsys.readouterr().out)["cost_source"]
    assert "profiles/calibrations/" in source and "matched automatically" in source
