"""`specadvisor recommend --method compare` (advisor/cli/compare.py, advisor/render/comparison.py)."""

import contextlib
import io
import json

from advisor.advice.recommendation_json import from_json
from advisor.cli.app import main

DONE_WHEN = ["--target", "llama-3.1-8b-instruct", "--method", "compare", "--prompt-len", "1000", "--out-len", "200",
             "--batch", "8", "--task", "code"]


def run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["recommend", *args]) == 0
    return out.getvalue()


def test_the_done_when_command_prints_four_methods_with_intervals_and_a_decision():
    out = run(*DONE_WHEN)
    table = out.split("every method at its best k:", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    with_interval = [line for line in table if "x (" in line]
    assert len(with_interval) >= 4
    assert "pick: " in out or "tie: " in out


def test_each_row_is_what_recommend_says_for_that_method():
    data = json.loads(run(*DONE_WHEN, "--format", "json"))
    rec = from_json(json.dumps(data))  # the extended JSON validates against the dataclasses
    assert rec.comparison is not None and rec.comparison.decision in ("pick", "tie")
    for r in rec.comparison.rows[:3]:
        args = [r.method if a == "compare" else a for a in DONE_WHEN]
        single = json.loads(run(*args, *(["--draft", r.draft] if r.draft else []), "--format", "json"))
        assert single["interval"]["e2e"] == {"point": r.e2e.point, "low": r.e2e.low, "high": r.e2e.high}
        assert single["verdict"] == r.verdict and single["comparison"] is None
    picked = rec.comparison.picked
    assert rec.inputs.method == picked.split(" ")[0]  # the recommendation below the table is the picked one's


def test_markdown_has_the_table():
    out = run(*DONE_WHEN, "--format", "markdown")
    assert out.startswith("## Every method at its best k") and "| method | k | verdict |" in out


def test_acceptance_of_one_drafter_is_refused_in_one_line(capsys):
    assert main(["recommend", *DONE_WHEN, "--alpha", "0.7"]) == 2
    err = capsys.readouterr().err
    assert "--alpha" in err and "one drafter" in err and len(err.strip().splitlines()) == 1


def test_plot_does_not_take_compare(capsys):
    assert main(["plot", "alpha", "--method", "compare", "--prompt-len", "10", "--out-len", "10"]) == 2
    assert "works with `recommend` only" in capsys.readouterr().err
