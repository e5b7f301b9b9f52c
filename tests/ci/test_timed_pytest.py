""".ci/timed_pytest, which .ci/run wraps the test suite in: it prints the test count and pytest's own time, and fails
on a failed test, on no tests at all (pytest's exit 5), and on a run slower than its limit. Each case runs the real
pytest on a one-file suite written here."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "timed_pytest"
SUITES = {"passing": "def test_a():\n    assert 1 + 1 == 2\n\ndef test_b():\n    assert 'a' < 'b'\n",
          "failing": "def test_a():\n    assert 1 + 1 == 3\n",
          "empty": "def helper():\n    return 1\n"}


def _timed(tmp_path: Path, suite: str, limit: str, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_suite.py").write_text(SUITES[suite])
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-c", "/dev/null",
              "--rootdir", str(tmp_path), *extra, str(tmp_path / "test_suite.py")]
    return subprocess.run(["bash", str(SCRIPT), limit, *pytest],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)


def test_a_passing_run_within_the_limit_passes_and_says_count_and_time(tmp_path):
    run = _timed(tmp_path, "passing", "600")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "pytest: 2 tests in " in run.stdout and "limit 600 s" in run.stdout


def test_a_coloured_summary_is_read_too(tmp_path):
    run = _timed(tmp_path, "passing", "600", "--color=yes")  # what PY_COLORS / FORCE_COLOR give a CI log
    assert run.returncode == 0 and "pytest: 2 tests in " in run.stdout, run.stdout + run.stderr


def test_a_run_over_the_limit_fails(tmp_path):
    run = _timed(tmp_path, "passing", "0")
    assert run.returncode == 1 and "over the 0 s limit" in run.stderr, run.stdout + run.stderr


def test_a_failed_test_fails_with_pytests_exit_code(tmp_path):
    run = _timed(tmp_path, "failing", "600", "-q")  # -q: pytest's summary without its rules
    assert run.returncode == 1 and "pytest: 1 tests in " in run.stdout and "pytest failed (exit 1)" in run.stderr


def test_no_tests_collected_fails(tmp_path):
    run = _timed(tmp_path, "empty", "600")
    assert run.returncode == 5 and "pytest: 0 tests in " in run.stdout, run.stdout + run.stderr


def test_no_summary_line_fails(tmp_path):
    run = subprocess.run(["bash", str(SCRIPT), "600", "true"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert run.returncode == 1 and "no pytest summary line" in run.stderr
