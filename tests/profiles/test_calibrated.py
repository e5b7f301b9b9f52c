"""The read side of calibration profiles (advisor/profiles/calibrated.py): what `recommend` finds, read without
pydantic, and one line for a profile that is not one."""

import json
import subprocess
import sys

import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.model.cost.enginecost import DEFAULT_ALLREDUCE_LATENCY_S, calibrated_fields
from advisor.model.shape.config_reader import spec_from_config
from advisor.profiles import calibrated
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
    code = ("import sys; from advisor.advice.resolve import engine_costs; "
            "from advisor.profiles.catalog import load_model, load_hardware; "
            "t, d, s, _ = engine_costs(load_hardware('h100-sxm'), load_model('llama-3.1-8b-instruct'), "
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


def _tp_folder(tmp_path, monkeypatch, sizes: dict[str, int]) -> dict[str, str]:
    """profiles/calibrations replaced by copies of the shipped profile measured at the given TP sizes (name -> TP), each
    TP > 1 one with an all-reduce of 12 µs per call and a 3 GB/s link; recommend's search then sees only them."""
    folder = tmp_path / "calibrations"
    folder.mkdir()
    for name, tp in sizes.items():
        raw = json.loads(SHIPPED.read_text())
        if tp > 1:
            raw.update(schema_version=2, allreduce={"tensor_parallel_size": tp, "points": [], "fit": {
                "allreduce_latency": 12e-6, "link_bandwidth": 3e9, "median_error": 0.02, "worst_error": 0.05}})
            raw["settings"]["tensor_parallel_size"] = tp
        raw["created"] = f"2026-12-0{tp}T00:00:00+00:00"  # the TP=2 one is the newest: matching must not pick by date
        (folder / f"{name}.json").write_text(json.dumps(raw))
    monkeypatch.setattr(calibrated, "calibrations_dir", lambda: folder)
    return {name: str(folder / f"{name}.json") for name in sizes}


def _tiny():
    return spec_from_config(json.loads(SHIPPED.read_text())["target"]["config"], "t")


def test_recommend_at_a_tp_uses_the_profile_measured_at_it(tmp_path, monkeypatch):
    paths = _tp_folder(tmp_path, monkeypatch, {"tp1": 1, "tp2": 2})
    hw = load_hardware(HW)
    cost, _, source = costs_for(None, _tiny(), None, hw, tp=1)
    assert paths["tp1"] in source and "TP=" not in source  # a TP=1 profile at TP=1: as before
    cost, _, source = costs_for(None, _tiny(), None, hw, tp=2)
    assert paths["tp2"] in source and source.endswith("; measured at TP=2 (all-reduce 12 µs + message at 3 GB/s)")
    assert (cost.allreduce_latency, cost.link_bandwidth) == (12e-6, 3e9)


def test_at_a_tp_nobody_measured_the_nearest_profile_is_used_and_it_says_it_extrapolates(tmp_path, monkeypatch):
    paths = _tp_folder(tmp_path, monkeypatch, {"tp1": 1, "tp2": 2})
    _, _, source = costs_for(None, _tiny(), None, load_hardware(HW), tp=4)  # log2 distance 1 to TP=2, 2 to TP=1
    assert paths["tp2"] in source
    assert source.endswith("; measured at TP=2 (all-reduce 12 µs + message at 3 GB/s), extrapolated to TP=4")


def test_a_tp1_profile_at_a_larger_tp_takes_its_all_reduce_from_the_datasheet(tmp_path, monkeypatch):
    _tp_folder(tmp_path, monkeypatch, {"tp1": 1})
    hw = load_hardware(HW)
    cost, _, source = costs_for(None, _tiny(), None, hw, tp=2)
    # the CPU profile's interconnect_gbs is 1 (a placeholder), the latency EngineCost's datasheet default
    assert (cost.link_bandwidth, cost.allreduce_latency) == (1e9, DEFAULT_ALLREDUCE_LATENCY_S)
    assert source.endswith(f"; measured at TP=1: its all-reduce from the datasheet (1 GB/s link, "
                           f"{DEFAULT_ALLREDUCE_LATENCY_S * 1e6:g} µs per call), extrapolated to TP=2")


def test_a_malformed_tp_size_is_one_line(tmp_path):
    path = _shipped_with(tmp_path, lambda raw: raw["settings"].update(tensor_parallel_size="two"))
    with pytest.raises(InputError, match="malformed at settings.tensor_parallel_size: Input should be a positive"):
        costs_for(path, spec_from_config(TINY_TARGET, "t"), None, load_hardware(HW))
