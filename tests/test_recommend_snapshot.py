"""`recommend`'s output on the README's examples (and a few more shapes), compared with a stored snapshot.

The snapshot pins behaviour across refactors: a change that moves code must leave every number and word here as it
was. It pins what the user sees, not the last bits of a float: text and markdown reports are compared as printed at
the 80 columns pinned here, and a JSON report with each float rounded to 9 significant digits on both sides, so
another CPU or numpy build (which differ in the 14th-16th digit) passes while a number the report shows that moves
fails. A change that is meant to alter the model or the report regenerates it, deliberately, and says so:

    PYTHONPATH=. python tests/test_recommend_snapshot.py --write
"""

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).parent / "data" / "recommend_snapshot.json"
BASE = ["recommend", "--prompt-len", "8000", "--out-len", "200"]
CASES = {
    "readme-default": BASE,
    "readme-default-text": [*BASE, "--format", "text"],
    "readme-default-markdown": [*BASE, "--format", "markdown"],
    "readme-rag-batch-64": [*BASE, "--batch", "64"],
    "readme-long-outputs-batch-64": ["recommend", "--prompt-len", "200", "--out-len", "2000", "--batch", "64"],
    "readme-long-outputs": ["recommend", "--prompt-len", "200", "--out-len", "2000"],
    "readme-ngram-code": ["recommend", "--prompt-len", "1000", "--out-len", "500", "--method", "ngram", "--task", "code"],
    "readme-eagle-70b-tp4": ["recommend", "--prompt-len", "2000", "--out-len", "500", "--target",
                             "llama-3.3-70b-instruct", "--method", "eagle", "--gpu", "h100-sxm", "--num-gpus", "4",
                             "--acceptance-length", "3.1", "--measured-k", "4"],
    "readme-local-configs": ["recommend", "--prompt-len", "4000", "--out-len", "300", "--target",
                             "profiles/models/llama-3.1-8b-instruct.json", "--draft",
                             "profiles/models/llama-3.2-1b-instruct.json"],
    "readme-tiny-calibrated": ["recommend", "--target", "tiny-llama-target", "--draft", "tiny-llama-draft", "--gpu",
                               "cpu-xeon-icelake-2vcpu", "--prompt-len", "256", "--out-len", "64"],
    "readme-tiny-calibrated-text": ["recommend", "--target", "tiny-llama-target", "--draft", "tiny-llama-draft",
                                    "--gpu", "cpu-xeon-icelake-2vcpu", "--prompt-len", "256", "--out-len", "64",
                                    "--format", "text"],
    "readme-metrics-file": ["recommend", "--prompt-len", "2000", "--out-len", "300", "--metrics",
                            "tests/data/vllm_metrics_ngram.prom", "--method", "ngram"],
    "readme-plot-batch-shape": ["recommend", "--prompt-len", "500", "--out-len", "500"],
    "readme-plot-memory-shape": ["recommend", "--prompt-len", "8000", "--out-len", "500", "--batch", "128"],
    "per-position-fixed-k": ["recommend", "--prompt-len", "200", "--out-len", "2000", "--batch", "8", "--method",
                             "ngram", "--acceptance-per-pos", "0.9,0.8,0.7"],
    "fixed-k-temperature": ["recommend", "--prompt-len", "300", "--out-len", "300", "--k", "5", "--temperature",
                            "0.7", "--alpha", "0.8"],
    "mixtral-tp2": ["recommend", "--prompt-len", "1000", "--out-len", "400", "--target", "mixtral-8x7b-instruct-v0.1",
                    "--method", "ngram", "--gpu", "h100-sxm", "--num-gpus", "2", "--batch", "16"],
    "does-not-fit": ["recommend", "--prompt-len", "20000", "--out-len", "500", "--gpu", "rtx-4090", "--alpha", "0.8"],
}


def render(args: list[str], main) -> str:
    """What `specadvisor ARGS` prints (JSON unless the case names a format), run from the repository root."""
    if "--format" not in args:
        args = [*args, "--format", "json"]
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            code = main(args)
    finally:
        os.chdir(here)
    assert code == 0, f"exit {code}"
    return out.getvalue().replace(str(ROOT), "<repo>")  # local directories print as absolute paths


SIGNIFICANT = 9  # far above any figure a report prints (3-4 digits), far below where numpy builds differ (14+)


def rounded(value):
    """`value` (parsed JSON) with every float rounded to SIGNIFICANT significant digits."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return value


def comparable(name: str, output: str):
    """What the snapshot keeps of an output: a JSON report parsed, its floats rounded; other formats as printed."""
    return rounded(json.loads(output)) if "--format" not in CASES[name] else output


def _main():
    from advisor.cli.app import main

    return main


@pytest.mark.parametrize("name", sorted(CASES))
def test_recommend_output_is_the_snapshot(name, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")  # the text report wraps to the terminal: pin one
    stored = json.loads(SNAPSHOT.read_text())
    assert comparable(name, render(CASES[name], _main())) == rounded(stored[name])


def test_the_comparison_ignores_last_digits_and_catches_shown_ones():
    """The rounding's two promises, on a stored report: noise in the 14th digit passes, a shown digit moved fails."""
    stored = json.loads(SNAPSHOT.read_text())["readme-default"]
    speedup = stored["speedup"]["e2e_latency"]
    noisy = json.loads(json.dumps(stored))
    noisy["speedup"]["e2e_latency"] = speedup * (1 + 3e-14)
    assert noisy["speedup"]["e2e_latency"] != speedup and rounded(noisy) == rounded(stored)
    moved = json.loads(json.dumps(stored))
    moved["speedup"]["e2e_latency"] = speedup + 0.01  # 1.47x -> 1.48x in the report
    assert rounded(moved) != rounded(stored)


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    os.environ["NO_COLOR"] = "1"
    os.environ["COLUMNS"] = "80"
    SNAPSHOT.write_text(json.dumps({name: comparable(name, render(args, _main())) for name, args in CASES.items()},
                                   indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {SNAPSHOT}")
