"""benchmarks/gpu_smoke.sh runs only on a GPU machine; here: it parses, and every flag it gives a command is one
that command takes (a renamed flag would otherwise surface only on the GPU)."""

import re
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from advisor.cli.app import app

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_smoke.sh"


def test_the_script_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


def test_every_flag_it_passes_exists():
    text = SCRIPT.read_text().replace("\\\n", " ")
    calls = re.findall(r"^cli ([a-z-]+)(.*)$", text, flags=re.M)
    assert {c for c, _ in calls} == {"make-test-pair", "calibrate", "validate"}
    for command, args in calls:
        help_text = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        for flag in re.findall(r"--[a-z-]+", args):
            assert flag in help_text, (command, flag)
