"""`specadvisor recommend` stays quick to start: matplotlib and prometheus_client are core dependencies now (plots,
reviews, metrics), but only the commands that use them import them, and nothing on this path needs vLLM."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HEAVY = ("matplotlib", "prometheus_client", "scipy", "torch", "vllm", "rich")


def test_recommend_imports_none_of_the_heavy_packages():
    code = ("import contextlib, io, sys\n"
            "from advisor.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    code = main(['recommend', '--prompt-len', '8000', '--out-len', '200'])\n"
            f"print(code, sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "[]"]


def test_the_commands_that_draw_or_read_metrics_do_import_them():
    code = ("import contextlib, io, sys\n"
            "from advisor.cli.app import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    code = main(['acceptance', 'from-metrics', 'tests/data/vllm_metrics_ngram.prom'])\n"
            "print(code, 'prometheus_client' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.split() == ["0", "True"]
