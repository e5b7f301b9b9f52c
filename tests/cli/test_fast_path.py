"""`recommend`'s flags read without typer's coercion (advisor/cli/fast_path.py) give what typer gives, and
anything but plain flags is left to typer."""

import contextlib
import io

import pytest

from advisor.cli import app as app_module
from advisor.cli.app import main, recommend
from advisor.cli.fast_path import parse

PLAIN = [
    ["--prompt-len", "8000", "--out-len", "200"],
    ["--prompt-len=300", "--out-len", "64", "--batch", "8", "--method", "eagle", "--temperature", "0.7",
     "--format", "json"],
    ["--prompt-len", "1000", "--out-len", "300", "--alpha", "0.6", "--k", "3", "--format", "markdown"],
]


def _run(args, fast: bool, monkeypatch) -> tuple[int, str, str]:
    if not fast:
        monkeypatch.setattr(app_module.fast_path, "parse", lambda *_: None)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["recommend", *args])
    monkeypatch.undo()
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", PLAIN)
def test_the_fast_path_prints_what_typer_prints(args, monkeypatch):
    assert parse(recommend, args) is not None
    assert _run(args, True, monkeypatch) == _run(args, False, monkeypatch)


@pytest.mark.parametrize("args", [["--help"], ["--prompt-len", "10"], ["--prompt-len", "1.5", "--out-len", "2"],
                                  ["--prompt-len", "10", "--out-len", "2", "--bogus", "1"],
                                  ["--prompt-len", "10", "--out-len"], ["--prompt-len", "10", "--out-len", "2", "x"],
                                  ["--prompt-len", "10", "--out-len", "2", "--format", "yaml"]])
def test_anything_but_plain_flags_is_left_to_typer(args, monkeypatch):
    assert parse(recommend, args) is None
    code, _, err = _run(args, True, monkeypatch)
    assert (code, err.count("\n")) in ((0, 0), (2, 1))  # help, or one line on stderr


def test_values_convert_to_the_declared_types():
    got = parse(recommend, ["--prompt-len", "10", "--out-len", "2", "--alpha", "0.5", "--format", "json"])
    assert got["prompt_len"] == 10 and got["alpha"] == 0.5 and got["format"].value == "json"
    assert got["batch"] == 1 and got["draft"] is None
