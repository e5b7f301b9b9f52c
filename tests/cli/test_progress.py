"""advisor/cli/progress.py: a long job's progress on a terminal, gone when it ends; nothing where stderr is a pipe
(issue 49: a 3,000-workload review ran with no progress shown)."""

import io

from advisor.cli.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_rewritten_in_place_and_erased_at_the_end():
    now = [0.0]
    stream = Terminal()
    with Progress(stream, every_s=0.5, clock=lambda: now[0]) as shown:
        shown("review: 0 of 3 pairs done")
        shown("review: 1 of 3 pairs done")  # within 0.5 s: skipped
        now[0] = 1.0
        shown("review: 2 of 3\n pairs done")
    text = stream.getvalue()
    assert text.count("\r") == 4 and "1 of 3" not in text and "\n" not in text
    assert text.endswith("\r" + " " * len("review: 2 of 3? pairs done") + "\r")


def test_nothing_is_written_where_stderr_is_not_a_terminal():
    stream = io.StringIO()
    with Progress(stream) as shown:
        shown("watching")
    assert stream.getvalue() == ""


def test_a_review_shows_its_pairs_on_a_terminal(tmp_path, monkeypatch, capsys):
    from advisor.cli.app import main

    stream = Terminal()
    monkeypatch.setattr("sys.stderr", stream)
    plan = tmp_path / "p.toml"
    plan.write_text("""
[[workload]]
name = "chat"
rate = 1
prompt = { mean = 500 }
output = { mean = 100 }
acceptance = { alpha = 0.7 }
slo = { ttft_ms = 2000, tpot_ms = 100 }
[[deployment]]
name = "l4"
gpu = "l4"
count = 2
target = "llama-3.1-8b-instruct"
""")
    monkeypatch.setattr("advisor.render.review_files.FIGURES", {"overview": lambda r: _figure(),
                                                                "curves": lambda r: _figure()})
    assert main(["review", str(plan), "--out", str(tmp_path / "out")]) == 0
    assert "review: 0 of 1 pairs done; now chat on l4" in stream.getvalue()


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, _ = plt.subplots()
    return figure
