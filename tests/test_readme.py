"""README.md cannot drift from the program: every output block and marked number in it is what
docs/regenerate.py computes now (run it after a change that moves them), and every output block is marked.
The commands themselves are run by tests/readme_commands.py in CI, from a fresh `pip install .`."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regenerate = _load(ROOT / "docs/regenerate.py")
readme_commands = _load(ROOT / "tests/readme_commands.py")


def test_readme_quotes_what_the_program_prints():
    diff = regenerate.differences(README)
    assert not diff, f"README.md is out of date: run `python docs/regenerate.py`\n{diff}"


def test_every_quoted_command_output_is_generated():
    blocks = re.findall(r"(?:^(<!-- output[^\n]*-->)\n)?```[^\n]*\n\$ (specadvisor [^\n]*)", README, re.MULTILINE)
    assert blocks  # the README does quote output
    assert [command for marker, command in blocks if not marker] == []
    assert all(f": {command} -->" in marker for marker, command in blocks)


def test_every_inline_number_has_a_recipe():
    names = re.findall(r"<!--=([\w.]+)-->", README)
    assert names and set(names) <= set(regenerate.VALUES)
    assert set(regenerate.VALUES) <= set(names)  # no recipe left behind for a number the README no longer shows


def test_the_ci_script_finds_the_readme_commands():
    commands = readme_commands.readme_commands(README)
    assert any(c.startswith("python3 -m venv .venv && .venv/bin/pip install .") for c in commands)
    assert sum(c.startswith("specadvisor plot ") for c in commands) == 4
    assert not [c for c in commands if c.endswith("\\")]  # continuation lines are joined
    assert readme_commands.variants("specadvisor x [--a 1] [--format json|markdown]") == [
        "specadvisor x", "specadvisor x --a 1 --format json", "specadvisor x --a 1 --format markdown"]


def test_every_stand_in_still_has_its_readme_command():
    commands = readme_commands.readme_commands(README)
    stale = [prefix for prefix in readme_commands.QUICK if not any(c.startswith(prefix) for c in commands)]
    assert not stale, f"QUICK stands in for commands the README no longer has: {stale}"
