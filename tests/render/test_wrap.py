"""advisor/render/wrap.py: the terminal width, and a `vllm serve` command broken into lines that bash still reads
as the same command (checked by bash itself, not by re-implementing its quoting)."""

import json
import shlex
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.render.wrap import MIN_WIDTH, shell_command, terminal_width

SERVE = ("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8200 --gpu-memory-utilization 0.9 "
         "--speculative-config '{\"method\":\"draft_model\",\"model\":\"meta-llama/Llama-3.2-1B-Instruct\","
         "\"num_speculative_tokens\":4}'")
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="bash checks what the lines mean")


def _argv_in_bash(lines: list[str]) -> list[str]:
    """The arguments bash passes to `vllm` when the lines are pasted (vllm defined as a function that prints them)."""
    script = "vllm() { printf '%s\\0' \"$@\"; }\n" + "\n".join(lines) + "\n"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout
    return out.split("\0")[:-1]


@needs_bash
@pytest.mark.parametrize("width", [40, 60, 80, 100, 300])
def test_the_lines_are_the_same_command_to_bash(width):
    lines = shell_command(SERVE, width)
    if width >= 60:  # at 40, `--speculative-config '{"method":"draft_model",` is one piece longer than a line
        assert all(len(line) <= width for line in lines)
    argv = _argv_in_bash(lines)
    original = shlex.split(SERVE)[1:]
    assert argv[:-1] == original[:-1]
    # the JSON may carry newlines between its members: the same object to json.loads, hence to vLLM
    assert json.loads(argv[-1]) == json.loads(original[-1])


def test_a_command_that_fits_is_left_alone():
    assert shell_command("vllm serve m --max-model-len 100", 80) == ["vllm serve m --max-model-len 100"]


@needs_bash
@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(st.characters(codec="ascii", exclude_categories=("Cc",)), min_size=1, max_size=30),
                min_size=1, max_size=12),
       st.integers(MIN_WIDTH, 120))
def test_any_words_survive_the_round_trip(words, width):
    command = " ".join(shlex.quote(w) for w in ["vllm", "serve", *words])
    assert _argv_in_bash(shell_command(command, width)) == ["serve", *words]


def test_terminal_width_follows_columns_and_has_a_floor(monkeypatch):
    monkeypatch.setenv("COLUMNS", "132")
    assert terminal_width() == 132
    monkeypatch.setenv("COLUMNS", "12")
    assert terminal_width() == MIN_WIDTH
