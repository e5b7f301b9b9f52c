"""The `calibrate` command's module (advisor/cli/calibrate.py): registered without importing calibration, which
loads only when the command runs."""

import subprocess
import sys

from typer.testing import CliRunner

from advisor.cli.app import app


def test_help_lists_calibrate_without_importing_calibration():
    code = ("import sys; from advisor.cli.app import main; main(['--help']); "
            "print([m for m in sys.modules if m.startswith('calibration') or m in ('scipy', 'pydantic')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "calibrate" in out and out.strip().endswith("[]")


def test_calibrate_help_lists_its_flags():
    result = CliRunner().invoke(app, ["calibrate", "--help"])
    assert result.exit_code == 0
    for flag in ("--target", "--draft", "--dummy-weights", "--max-batch", "--max-context", "--max-k", "--repeats",
                 "--min-seconds", "--budget-seconds", "--out", "--resume", "--gpu"):
        assert flag in result.output
