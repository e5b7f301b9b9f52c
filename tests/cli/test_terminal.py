"""What a user sees in an 80-column terminal: the text report and every command's --help fit it, nothing is cut
with "…", and `specadvisor list` without a kind says what to type."""

import pytest
import typer

from advisor.cli.app import app, main

WIDTH = 80
REPORTS = {
    "default": ["--prompt-len", "8000", "--out-len", "200"],
    "calibrated": ["--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu", "cpu-xeon-icelake-2vcpu",
                   "--prompt-len", "256", "--out-len", "64"],
    "eagle 70b tp4": ["--prompt-len", "2000", "--out-len", "500", "--target", "llama-3.3-70b-instruct", "--method",
                      "eagle", "--gpu", "h100-sxm", "--num-gpus", "4", "--acceptance-length", "3.1",
                      "--measured-k", "4"],
    "metrics file": ["--prompt-len", "2000", "--out-len", "300", "--metrics", "tests/data/vllm_metrics_ngram.prom",
                     "--method", "ngram"],
    "weights do not fit": ["--prompt-len", "200", "--out-len", "8", "--target", "mixtral-8x7b-instruct-v0.1",
                           "--method", "ngram"],
}


def _commands(command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the CLI, groups included: a new command is checked without editing this test. (Duck
    typing: newer typer vendors its own click, whose Group is not click.Group.)"""
    found = [path]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(typer.main.get_command(app))


@pytest.fixture(autouse=True)
def terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])


def _fits(out: str) -> None:
    too_long = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_long
    assert "…" not in out  # rich's truncation of option names and defaults
    # click's truncation of command summaries ("[ARGS]..." in a usage line is its notation for "more")
    assert not [line for line in out.splitlines() if line.endswith("...") and not line.startswith("Usage:")]


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_the_text_report_fits_80_columns(name, capsys):
    assert main(["recommend", *REPORTS[name]]) == 0
    out = capsys.readouterr().out
    _fits(out)
    assert "paste into vLLM:" in out or "speculation off" in out or "no vLLM command" in out


@pytest.mark.parametrize("args", [["from-metrics", "tests/data/vllm_metrics_ngram.prom"],
                                  ["ngram", "--corpus", "{corpus}", "--k", "3"]], ids=lambda a: a[0])
def test_the_acceptance_reports_fit_80_columns(args, tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"prompt": "a b c d e f a b c", "response": "d e f a b c d e f"}\n')
    assert main(["acceptance", *(a.format(corpus=corpus) for a in args)]) == 0
    out = capsys.readouterr().out
    _fits(out)
    assert "90% interval" in out


@pytest.mark.parametrize("folder", ["review", "r" * 150], ids=["short path", "150-character folder"])
def test_the_review_summary_fits_80_columns(folder, tmp_path, capsys):
    """However long the path (a temporary folder's length differs by machine), lines fit and name every file."""
    out_dir = tmp_path / folder
    assert main(["review", "profiles/plans/code-assistant.toml", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    _fits(out)
    unwrapped = "".join(out.split())  # a path longer than a line is cut anywhere, "wrote" may end a line
    for name in ("overview.png", "curves.png", "review.md", "review.html"):
        assert f"wrote{out_dir / name}" in unwrapped


def test_there_are_commands_to_check():
    assert {("recommend",), ("acceptance", "ngram"), ("calibrate",), ("list",)} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "specadvisor")
def test_every_help_fits_80_columns(path, capsys):
    assert main([*path, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: specadvisor")
    _fits(out)


def test_list_without_a_kind_says_what_to_type(capsys):
    assert main(["list"]) == 2
    err = capsys.readouterr().err
    assert err == ("specadvisor: error: say what to list: hardware, models, methods, drafters or tasks (e.g. "
                   "`specadvisor list hardware`)\n")


def test_usage_errors_are_one_line_without_tabs(capsys):
    assert main(["list", "gpus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\t" not in err and "'hardware', 'models', 'methods', 'tasks', 'drafters'" in err


def test_list_tasks_names_every_prior(capsys, monkeypatch):
    from advisor.model.acceptance.published import GENERAL, TASKS
    from advisor.profiles.drafters import all_kinds

    monkeypatch.setenv("COLUMNS", "400")  # one line per task
    assert main(["list", "tasks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == [GENERAL, *TASKS]
    assert all(line.count(" AL ") == len(all_kinds()) for line in lines[1:])  # every drafter kind's prior


def test_34_list_drafters_shows_at_least_15_with_a_cited_acceptance(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "2000")
    assert main(["list", "drafters"]) == 0
    drafters = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")]
    assert len(drafters) >= 15
    assert all(" AL " in line and "Source: " in line for line in drafters)


def test_34_a_measured_acceptance_far_below_published_prints_one_line_with_the_causes(capsys):
    assert main(["recommend", "--prompt-len", "1000", "--out-len", "200", "--target", "llama-3.3-70b-instruct",
                 "--gpu", "h100-sxm", "--num-gpus", "4", "--method", "eagle3", "--acceptance-length", "1.05",
                 "--measured-k", "3", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    warning = next(line for line in out.splitlines() if line.startswith("> **warning:**"))
    assert "acceptance far below published: AL 1.05 at k=3" in warning and "likely causes:" in warning
