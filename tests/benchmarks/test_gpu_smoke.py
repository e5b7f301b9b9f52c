"""benchmarks/gpu_smoke.sh runs only on a GPU machine; here: it parses, every flag it gives a command is one that
command takes (a renamed flag would otherwise surface only on the GPU), and the engines it plans to start (on the
simulated CUDA platform) are the ones calibrate starts there and its header states."""

import re
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli.app import app
from calibration.calibrate.budget import START_SECONDS_GPU
from simulated_cuda import cuda  # noqa: F401  (the fixture)

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_smoke.sh"


def test_the_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def script_args(name: str) -> list[str]:
    """The flags the script keeps in its array `name` (CAL_ARGS, VAL_ARGS), as bash expands them."""
    body = re.search(rf"^{name}=\((.*?)\)$", SCRIPT.read_text(), flags=re.M | re.S).group(1)
    done = subprocess.run(["bash", "-c", f'OUT=/o; SHARE=0.5; A=({body}); printf "%s\\0" "${{A[@]}}"'],
                          capture_output=True, text=True, check=True)
    return done.stdout.split("\0")[:-1]


def test_every_flag_it_passes_exists():
    text = SCRIPT.read_text().replace("\\\n", " ")
    calls = re.findall(r"^step [a-z-]+ \"\$\{CLI\[@\]\}\" ([a-z-]+)(.*)$", text, flags=re.M)
    assert {c for c, _ in calls} == {"make-test-pair", "calibrate", "validate"}
    given = {"calibrate": " ".join(script_args("CAL_ARGS")), "validate": " ".join(script_args("VAL_ARGS"))}
    for command, args in calls:
        help_text = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        for flag in re.findall(r"--[a-z-]+", given.get(command, args)):
            assert flag in help_text, (command, flag)
    plan = re.search(r"^step plan .*gpu_smoke_plan.py\" calibrate \"\$\{CAL_ARGS\[@\]\}\" -- validate "
                     r"\"\$\{VAL_ARGS\[@\]\}\"$", text, flags=re.M)
    assert plan and text.index("step plan") < text.index("step versions")  # planned before anything starts


def test_it_states_its_estimate_first():
    head = SCRIPT.read_text().splitlines()[1]
    assert "10 minutes on one H200 with cold caches" in head


def test_a_failed_calibration_gate_still_prints_what_ran(tmp_path):
    """Calibrate against a stand-in engine whose times are noise: the real fit misses its 15% held-out gate and
    calibrate exits 2, yet the script goes on and prints what ran, each engine's start-up seconds and the held-out
    error; vLLM's log and each step's stderr stay in files."""
    import os
    import sys

    root = SCRIPT.parents[1]
    env = {**os.environ, "PYTHON": sys.executable, "SMOKE_MIN_SECONDS": "0", "PYTHONPATH": str(root),
           "SMOKE_CLI": f"{sys.executable} {root / 'tests' / 'benchmarks' / 'standin_cli.py'}"}
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path)], env=env, cwd=root, capture_output=True, text=True,
                          timeout=600)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "step calibrate: FAILED (exit 2)" in out and "step make-test-pair: ok" in out
    assert "step plan: ok" in out and "\nplan: 12 engine starts" in out  # said before the first engine starts
    assert "status unfit (target held-out median error" in out
    held = re.search(r"target: started in [\d.]+ s; runner v2, CUDA graphs FULL_AND_PIECEWISE, async scheduling "
                     r"True, attention FLASH_ATTN, block 16\n(?:    .*\n)*?    held-out error: median (\d+\.\d)%", out)
    assert held and float(held.group(1)) > 15, out
    assert "draft: started in" in out
    assert "step validate: FAILED (exit 2)" in out  # an unfit calibration is refused, in one line
    assert "too noisy to fit" in (tmp_path / "logs" / "calibrate.log").read_text()
    assert out.index("== summary") > out.index("== validate")  # the summary comes last, after every step


def test_it_plans_at_most_max_k_plus_one_verification_widths(cuda, tmp_path, monkeypatch):
    """Issue 46: calibrate, run as the script runs it on a (simulated) GPU, starts one engine per verification width
    of the target, none wider than max_k + 1 (q = 5 would verify k = 4 drafts, which --max-k 3 never asks about): the
    target, q = 2..4, the draft. The plan the script prints first counts the same engines, and its header says so."""
    from simulated_engine import StandInEngine

    from benchmarks.gpu_smoke_plan import calibration_engines, flags, plan, validation_engines
    from calibration.calibrate import measure
    from calibration.calibrate.run import run_calibration
    from calibration.engine.tinymodels import TINY_DRAFT, TINY_TARGET, write_model_dir

    cal, val = script_args("CAL_ARGS"), script_args("VAL_ARGS")
    f = flags("calibrate", cal)
    StandInEngine.opened = []
    monkeypatch.setattr(measure, "open_engine", StandInEngine)
    monkeypatch.setattr("calibration.calibrate.run.detect_hardware", lambda gpu: ("h100-sxm", {"gpu": "H100"}))
    monkeypatch.setattr("calibration.calibrate.run.fit_profile", lambda *a: None)  # the fit is not under test
    run_calibration(target=str(write_model_dir(tmp_path / "t", TINY_TARGET)),
                    draft=str(write_model_dir(tmp_path / "d", TINY_DRAFT)), dummy_weights=f["dummy_weights"],
                    max_batch=f["max_batch"], max_context=f["max_context"], max_k=f["max_k"], repeats=f["repeats"],
                    min_seconds=0.0, budget_seconds=f["budget_seconds"], out=str(tmp_path / "cal.json"),
                    resume=False, gpu="auto", gpu_memory_utilization=f["gpu_memory_utilization"])
    drafts = [e.vllm_config["num_speculative_tokens"] for e in StandInEngine.opened]
    widths = [k + 1 for k in drafts if k]
    assert f["max_k"] == 3 and widths == [2, 3, 4] and max(widths) <= f["max_k"] + 1
    assert calibration_engines(cal) == (len(StandInEngine.opened), widths) == (5, [2, 3, 4])
    engines = validation_engines(val)
    assert len(engines) == 7 and engines.count("baseline") == 2 and "baseline_sync" in engines
    head = " ".join(line.lstrip("# ") for line in SCRIPT.read_text().splitlines()[1:8])
    assert "12 engine starts" in head and "5 for calibrate" in head and "7 for validate" in head
    assert "q = 2..4" in head
    assert plan(cal, val).startswith(f"plan: 12 engine starts at ~{START_SECONDS_GPU:.0f} s each on a GPU")
