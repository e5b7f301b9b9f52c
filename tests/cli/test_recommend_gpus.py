"""`specadvisor recommend` and `list hardware` on issue 39's GPUs, through typer's runner: each resolves by its name
and by an alias, and the report says which figures behind its costs are derived and whose kernel floors it borrows."""

import pytest
from typer.testing import CliRunner

from advisor.advice.recommendation_json import from_json
from advisor.cli.app import app
from advisor.profiles.catalog import load_hardware
from tests.profiles.test_hardware_profiles import NEW_GPUS

runner = CliRunner()
ARGS = ["recommend", "--prompt-len", "2000", "--out-len", "300"]

# whose kernel floors each family of issue 39's GPUs borrows (None: its own were measured)
BORROWS = {"cdna4": "CDNA3", "ada": "Ampere", "blackwell-client": "Hopper", "hopper": None}


@pytest.mark.parametrize("slug, alias, architecture, family", NEW_GPUS)
def test_each_new_gpu_resolves_by_name_and_alias_and_says_what_is_derived(slug, alias, architecture, family):
    by_name = runner.invoke(app, [*ARGS, "--gpu", slug, "--format", "json"])
    by_alias = runner.invoke(app, [*ARGS, "--gpu", alias, "--format", "json"])
    assert by_name.exit_code == 0 and by_alias.exit_code == 0, by_name.output + by_alias.output
    assert by_name.output == by_alias.output
    rec = from_json(by_name.output)
    bf16 = load_hardware(slug).bf16_tflops  # no new GPU's sources state a bf16 rate: each is derived
    assert f"{bf16:g} TFLOP/s (derived)" in rec.cost_source  # the default pair's bf16 costs run at it
    assert rec.gpu_caveats[0].startswith(f"{slug}'s bf16 peak {bf16:g} TFLOP/s is derived: ")
    floors = [line for line in rec.gpu_caveats if "kernel floors" in line]
    if BORROWS[family] is None:
        assert floors == []
    else:
        assert len(floors) == 1 and f" are {BORROWS[family]}'s " in floors[0]
    text = runner.invoke(app, [*ARGS, "--gpu", slug, "--format", "text"], env={"COLUMNS": "400"})
    assert text.exit_code == 0
    assert f"note: {rec.gpu_caveats[0]}" in text.output


def test_a_stated_rate_is_not_marked_and_an_fp8_checkpoint_names_the_fp8_rate():
    stated = from_json(runner.invoke(app, [*ARGS, "--gpu", "h100-sxm", "--format", "json"]).output)
    assert "(derived)" not in stated.cost_source and stated.gpu_caveats == ()
    fp8 = from_json(runner.invoke(app, [*ARGS, "--gpu", "h20", "--target", "qwen3-30b-a3b", "--method", "ngram",
                                        "--quantization", "fp8", "--format", "json"]).output)
    assert "296 TFLOP/s (fp8) (derived)" in fp8.cost_source
    assert fp8.gpu_caveats[0].startswith("h20's fp8 peak 296 TFLOP/s is derived: twice FP16")


def test_unified_memory_is_said_whatever_the_costs():
    rec = from_json(runner.invoke(app, [*ARGS, "--gpu", "dgx-spark", "--format", "json"]).output)
    assert any("shared with the CPU" in line for line in rec.gpu_caveats)
    assert any(line.startswith("LPDDR5X streams at GDDR's share") for line in rec.gpu_caveats)


def test_list_hardware_shows_each_new_gpu_with_its_family_and_derived_figures():
    result = runner.invoke(app, ["list", "hardware"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert set(slug for slug, *_ in NEW_GPUS) <= set(lines)
    assert "CDNA4 gfx950, floors CDNA3's; derived: fp8, bf16, fp4, interconnect" in lines["mi355x"]
    assert "128 GiB unified LPDDR5X" in lines["dgx-spark"] and "derived:" not in lines["h100-sxm"]
